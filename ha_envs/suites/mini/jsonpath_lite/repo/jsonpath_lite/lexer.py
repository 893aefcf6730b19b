"""Turns a path expression into a list of tokens."""

from . import tokens as t
from .errors import JSONPathSyntaxError

_SINGLE = {
    "$": t.ROOT,
    "@": t.CURRENT,
    "[": t.LBRACKET,
    "]": t.RBRACKET,
    "(": t.LPAREN,
    ")": t.RPAREN,
    "*": t.STAR,
    ",": t.COMMA,
    ":": t.COLON,
    "?": t.FILTER,
}

_ESCAPES = {
    "\\": "\\",
    "/": "/",
    "'": "'",
    '"': '"',
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}


class Lexer:
    """A hand-written scanner; call :meth:`tokenize` once per instance."""

    def __init__(self, text):
        if not isinstance(text, str):
            raise TypeError(f"path expression must be a str, not {type(text).__name__}")
        self.text = text
        self.pos = 0
        self.tokens = []

    # -- helpers -------------------------------------------------------------------------------

    def _peek(self, offset=0):
        i = self.pos + offset
        return self.text[i] if i < len(self.text) else ""

    def _error(self, message, position=None):
        raise JSONPathSyntaxError(message, self.text, self.pos if position is None else position)

    def _emit(self, kind, value, position):
        self.tokens.append(t.Token(kind, value, position))

    # -- scanning ------------------------------------------------------------------------------

    def tokenize(self):
        while self.pos < len(self.text):
            ch = self._peek()
            start = self.pos
            if ch.isspace():
                self.pos += 1
            elif ch == ".":
                if self._peek(1) == ".":
                    self.pos += 2
                    self._emit(t.DOTDOT, "..", start)
                else:
                    self.pos += 1
                    self._emit(t.DOT, ".", start)
            elif ch in _SINGLE:
                self.pos += 1
                self._emit(_SINGLE[ch], ch, start)
            elif ch in "'\"":
                self._emit(t.STRING, self._read_string(), start)
            elif ch.isdigit() or (ch == "-" and self._peek(1).isdigit()):
                self._emit(t.NUMBER, self._read_number(), start)
            elif ch.isalpha() or ch == "_":
                word = self._read_name()
                kind = t.KEYWORDS.get(word, t.NAME)
                self._emit(kind, word, start)
            else:
                self._read_operator()
        self._emit(t.EOF, None, self.pos)
        return self.tokens

    def _read_name(self):
        start = self.pos
        while self._peek() and (self._peek().isalnum() or self._peek() == "_"):
            self.pos += 1
        return self.text[start:self.pos]

    def _read_digits(self):
        start = self.pos
        while self._peek().isdigit():
            self.pos += 1
        return self.text[start:self.pos]

    def _read_number(self):
        """Read ``-?digits(.digits)?([eE][+-]?digits)?``.

        Integers stay ``int`` (they are used as indexes and slice bounds); numbers with a
        fraction or an exponent become ``float``.
        """
        start = self.pos
        sign = ""
        if self._peek() == "-":
            sign = "-"
            self.pos += 1
        whole = self._read_digits()
        if len(whole) > 1 and whole[0] == "0":
            self._error("leading zeros are not allowed in numbers", start)
        value = int(sign + whole)
        if self._peek() == "." and self._peek(1).isdigit():
            self.pos += 1
            fraction = self._read_digits()
            value = float(f"{value}.{fraction}")
        if self._peek() in ("e", "E") and (
            self._peek(1).isdigit() or (self._peek(1) in "+-" and self._peek(2).isdigit())
        ):
            self.pos += 1
            exp_sign = ""
            if self._peek() in "+-":
                exp_sign = self._peek()
                self.pos += 1
            exponent = self._read_digits()
            value = float(f"{value}e{exp_sign}{exponent}")
        if self._peek().isalpha() or self._peek() == "_":
            self._error("invalid character after number")
        return value

    def _read_string(self):
        quote = self._peek()
        start = self.pos
        self.pos += 1
        out = []
        while True:
            ch = self._peek()
            if ch == "":
                self._error("unterminated string literal", start)
            self.pos += 1
            if ch == quote:
                break
            if ch == "\\":
                esc = self._peek()
                self.pos += 1
                if esc in _ESCAPES:
                    out.append(_ESCAPES[esc])
                elif esc == "u":
                    digits = self.text[self.pos:self.pos + 4]
                    if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                        self._error("invalid \\u escape", self.pos - 2)
                    out.append(chr(int(digits, 16)))
                    self.pos += 4
                else:
                    self._error(f"invalid escape \\{esc}", self.pos - 2)
            else:
                out.append(ch)
        return "".join(out)

    def _read_operator(self):
        start = self.pos
        two = self.text[self.pos:self.pos + 2]
        if two in ("==", "!=", "<=", ">=", "&&", "||"):
            kind = {"==": t.EQ, "!=": t.NE, "<=": t.LE, ">=": t.GE, "&&": t.AND, "||": t.OR}[two]
            self.pos += 2
            self._emit(kind, two, start)
            return
        ch = self._peek()
        if ch in "<>!":
            kind = {"<": t.LT, ">": t.GT, "!": t.NOT}[ch]
            self.pos += 1
            self._emit(kind, ch, start)
            return
        if ch == "=":
            self._error("'=' is not an operator (use '==')")
        self._error(f"unexpected character {ch!r}")


def tokenize(text):
    """Return the list of tokens of ``text``, ending with an EOF token."""
    return Lexer(text).tokenize()
