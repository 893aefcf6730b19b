"""Converters turn a URL segment into a Python value and back.

Every converter has a ``regex`` used when matching, ``to_python`` applied to the matched text
(already percent-decoded by the router) and ``to_url`` used by reverse URL building.
"""

import re
import uuid


class BaseConverter:
    """Matches a single path segment and keeps it as a string."""

    regex = r"[^/]+"
    #: Relative priority when two routes could match the same path: lower wins.
    weight = 100

    def __init__(self, *args):
        if args:
            raise TypeError(f"{type(self).__name__} takes no arguments, got {args!r}")

    def to_python(self, value):
        return value

    def to_url(self, value):
        return str(value)

    def validate(self, value):
        """Whether ``value`` (a Python value) can be used to build a URL with this converter."""
        text = self.to_url(value)
        return re.fullmatch(self.regex, text) is not None

    def __repr__(self):
        return f"<{type(self).__name__}>"


class StringConverter(BaseConverter):
    """The default converter: one non-empty path segment."""

    def validate(self, value):
        return bool(str(value))


class IntConverter(BaseConverter):
    """A non-negative integer written with ASCII digits."""

    regex = r"\d+"
    weight = 50

    def to_python(self, value):
        return int(value)

    def to_url(self, value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"int converter needs an int, got {value!r}")
        if value < 0:
            raise ValueError(f"int converter needs a non-negative int, got {value!r}")
        return str(value)

    def validate(self, value):
        try:
            self.to_url(value)
        except ValueError:
            return False
        return True


class FloatConverter(BaseConverter):
    """A non-negative decimal number such as ``3.5``."""

    regex = r"\d+\.\d+"
    weight = 50

    def to_python(self, value):
        return float(value)

    def to_url(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"float converter needs a number, got {value!r}")
        if value < 0:
            raise ValueError(f"float converter needs a non-negative number, got {value!r}")
        return repr(float(value))

    def validate(self, value):
        try:
            self.to_url(value)
        except ValueError:
            return False
        return True


class SlugConverter(BaseConverter):
    """Lowercase words joined by dashes: ``hello-world-2``."""

    regex = r"[a-z0-9]+(?:-[a-z0-9]+)*"
    weight = 80


class PathConverter(BaseConverter):
    """Everything up to the end of the path, slashes included."""

    regex = r"[^/].*?"
    weight = 200

    def validate(self, value):
        return bool(str(value))


class UUIDConverter(BaseConverter):
    """A canonical, lowercase or uppercase UUID."""

    regex = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    weight = 50

    def to_python(self, value):
        return uuid.UUID(value)

    def to_url(self, value):
        return str(value)


DEFAULT_CONVERTERS = {
    "default": StringConverter,
    "string": StringConverter,
    "str": StringConverter,
    "int": IntConverter,
    "float": FloatConverter,
    "slug": SlugConverter,
    "path": PathConverter,
    "uuid": UUIDConverter,
}
