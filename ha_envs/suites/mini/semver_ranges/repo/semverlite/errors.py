"""Exception types raised by semverlite."""


class SemverError(ValueError):
    """Base class of all semverlite errors."""


class InvalidVersion(SemverError):
    """Raised when a version string cannot be parsed."""

    def __init__(self, text, reason="not a valid semantic version"):
        self.text = text
        self.reason = reason
        super().__init__(f"{text!r}: {reason}")


class InvalidRange(SemverError):
    """Raised when a range expression cannot be parsed."""

    def __init__(self, text, reason="not a valid range"):
        self.text = text
        self.reason = reason
        super().__init__(f"{text!r}: {reason}")
