"""Errors raised by jsonpath_lite."""


class JSONPathError(Exception):
    """Base class of all errors of this package."""


class JSONPathSyntaxError(JSONPathError):
    """The path expression is not valid; ``position`` is the offset of the offending character."""

    def __init__(self, message, expression="", position=None):
        self.expression = expression
        self.position = position
        if position is not None and expression:
            message = f"{message} at position {position}: {expression!r}"
        super().__init__(message)


class JSONPathTypeError(JSONPathError):
    """The query was given something that is not JSON-like data."""
