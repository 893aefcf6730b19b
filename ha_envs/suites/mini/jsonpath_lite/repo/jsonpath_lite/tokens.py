"""Token kinds and the Token record produced by the lexer."""

from typing import Any, NamedTuple

ROOT = "ROOT"            # $
CURRENT = "CURRENT"      # @
DOT = "DOT"              # .
DOTDOT = "DOTDOT"        # ..
LBRACKET = "LBRACKET"    # [
RBRACKET = "RBRACKET"    # ]
LPAREN = "LPAREN"        # (
RPAREN = "RPAREN"        # )
STAR = "STAR"            # *
COMMA = "COMMA"          # ,
COLON = "COLON"          # :
FILTER = "FILTER"        # ?
NAME = "NAME"            # member name / bare word
NUMBER = "NUMBER"        # 12, -3, 4.5, 1e3
STRING = "STRING"        # 'abc' or "abc"
TRUE = "TRUE"
FALSE = "FALSE"
NULL = "NULL"
EQ = "EQ"                # ==
NE = "NE"                # !=
LT = "LT"                # <
LE = "LE"                # <=
GT = "GT"                # >
GE = "GE"                # >=
AND = "AND"              # &&
OR = "OR"                # ||
NOT = "NOT"              # !
EOF = "EOF"

COMPARISON_OPERATORS = {EQ: "==", NE: "!=", LT: "<", LE: "<=", GT: ">", GE: ">="}

KEYWORDS = {"true": TRUE, "false": FALSE, "null": NULL}


class Token(NamedTuple):
    kind: str
    value: Any
    position: int

    def __repr__(self):
        return f"Token({self.kind}, {self.value!r}, {self.position})"
