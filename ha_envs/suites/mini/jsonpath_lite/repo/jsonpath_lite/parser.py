"""Recursive-descent parser: tokens -> :class:`~jsonpath_lite.nodes.Path`."""

from . import nodes as n
from . import tokens as t
from .errors import JSONPathSyntaxError
from .lexer import tokenize


class Parser:
    def __init__(self, text):
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0

    # -- token helpers -------------------------------------------------------------------------

    @property
    def current(self):
        return self.tokens[self.i]

    def _peek_kind(self, offset=1):
        j = min(self.i + offset, len(self.tokens) - 1)
        return self.tokens[j].kind

    def _advance(self):
        tok = self.tokens[self.i]
        if tok.kind != t.EOF:
            self.i += 1
        return tok

    def _accept(self, kind):
        if self.current.kind == kind:
            return self._advance()
        return None

    def _expect(self, kind, what=None):
        if self.current.kind != kind:
            self._error(f"expected {what or kind}, found {self._describe(self.current)}")
        return self._advance()

    @staticmethod
    def _describe(tok):
        if tok.kind == t.EOF:
            return "end of expression"
        return repr(tok.value)

    def _error(self, message, tok=None):
        tok = tok or self.current
        raise JSONPathSyntaxError(message, self.text, tok.position)

    # -- paths ---------------------------------------------------------------------------------

    def parse(self):
        if self.current.kind != t.ROOT:
            self._error("a path must start with '$'")
        path = self._parse_path()
        if self.current.kind != t.EOF:
            self._error(f"unexpected {self._describe(self.current)}")
        return path

    def _parse_path(self):
        start = self._advance()  # ROOT or CURRENT
        segments = []
        while True:
            kind = self.current.kind
            if kind == t.DOT:
                self._advance()
                segments.append(n.ChildSegment((self._parse_dot_selector(),)))
            elif kind == t.DOTDOT:
                self._advance()
                if self.current.kind == t.LBRACKET:
                    segments.append(n.DescendantSegment(self._parse_bracket()))
                else:
                    segments.append(n.DescendantSegment((self._parse_dot_selector(),)))
            elif kind == t.LBRACKET:
                segments.append(n.ChildSegment(self._parse_bracket()))
            else:
                break
        return n.Path(absolute=start.kind == t.ROOT, segments=tuple(segments))

    def _parse_dot_selector(self):
        tok = self.current
        if tok.kind == t.STAR:
            self._advance()
            return n.WildcardSelector()
        if tok.kind in (t.NAME, t.TRUE, t.FALSE, t.NULL):
            self._advance()
            return n.NameSelector(tok.value)
        self._error(f"expected a member name after '.', found {self._describe(tok)}")

    def _parse_bracket(self):
        self._expect(t.LBRACKET, "'['")
        selectors = [self._parse_selector()]
        while self._accept(t.COMMA):
            selectors.append(self._parse_selector())
        self._expect(t.RBRACKET, "']'")
        return tuple(selectors)

    def _parse_selector(self):
        tok = self.current
        if tok.kind == t.STRING:
            self._advance()
            return n.NameSelector(tok.value)
        if tok.kind == t.STAR:
            self._advance()
            return n.WildcardSelector()
        if tok.kind == t.FILTER:
            self._advance()
            self._expect(t.LPAREN, "'(' after '?'")
            expr = self._parse_or()
            self._expect(t.RPAREN, "')' closing the filter")
            return n.FilterSelector(expr)
        if tok.kind in (t.NUMBER, t.COLON):
            return self._parse_index_or_slice()
        self._error(f"unexpected {self._describe(tok)} in brackets")

    def _parse_int(self):
        tok = self.current
        if tok.kind != t.NUMBER or not isinstance(tok.value, int):
            self._error(f"expected an integer, found {self._describe(tok)}")
        self._advance()
        return tok.value

    def _parse_index_or_slice(self):
        bounds = [None]
        if self.current.kind == t.NUMBER:
            bounds[0] = self._parse_int()
        if self.current.kind != t.COLON:
            return n.IndexSelector(bounds[0])
        while self._accept(t.COLON):
            if len(bounds) == 3:
                self._error("a slice has at most three parts")
            bounds.append(self._parse_int() if self.current.kind == t.NUMBER else None)
        while len(bounds) < 3:
            bounds.append(None)
        start, stop, step = bounds
        return n.SliceSelector(start, stop, step)

    # -- filter expressions --------------------------------------------------------------------

    def _parse_or(self):
        operands = [self._parse_and()]
        while self._accept(t.OR):
            operands.append(self._parse_and())
        return operands[0] if len(operands) == 1 else n.Or(tuple(operands))

    def _parse_and(self):
        operands = [self._parse_not()]
        while self._accept(t.AND):
            operands.append(self._parse_not())
        return operands[0] if len(operands) == 1 else n.And(tuple(operands))

    def _parse_not(self):
        if self._accept(t.NOT):
            return n.Not(self._parse_not())
        return self._parse_comparison()

    def _parse_comparison(self):
        left = self._parse_operand()
        if self.current.kind in t.COMPARISON_OPERATORS:
            op = t.COMPARISON_OPERATORS[self._advance().kind]
            right = self._parse_operand()
            if isinstance(left, n.Path) and not left.is_singular:
                self._error("a path compared with a value must select a single value")
            if isinstance(right, n.Path) and not right.is_singular:
                self._error("a path compared with a value must select a single value")
            return n.Comparison(op, left, right)
        if isinstance(left, n.Path):
            return n.Exists(left)
        if isinstance(left, n.Literal):
            self._error("a literal alone is not a test")
        return left

    def _parse_operand(self):
        tok = self.current
        if tok.kind in (t.ROOT, t.CURRENT):
            return self._parse_path()
        if tok.kind == t.NUMBER or tok.kind == t.STRING:
            self._advance()
            return n.Literal(tok.value)
        if tok.kind == t.TRUE:
            self._advance()
            return n.Literal(True)
        if tok.kind == t.FALSE:
            self._advance()
            return n.Literal(False)
        if tok.kind == t.NULL:
            self._advance()
            return n.Literal(None)
        if tok.kind == t.LPAREN:
            self._advance()
            expr = self._parse_or()
            self._expect(t.RPAREN, "')'")
            return expr
        self._error(f"unexpected {self._describe(tok)} in filter")


def parse(text):
    """Parse ``text`` into a :class:`~jsonpath_lite.nodes.Path`."""
    return Parser(text).parse()
