"""jsonpath_lite: a small JSONPath implementation (tokenizer, parser, evaluator)."""

from .api import JSONPath, Match, compile, first, format_location, paths, query
from .errors import JSONPathError, JSONPathSyntaxError, JSONPathTypeError
from .lexer import tokenize
from .parser import parse

__all__ = [
    "JSONPath",
    "JSONPathError",
    "JSONPathSyntaxError",
    "JSONPathTypeError",
    "Match",
    "compile",
    "first",
    "format_location",
    "parse",
    "paths",
    "query",
    "tokenize",
]

__version__ = "0.4.0"
