"""semverlite: semantic versions and npm-style ranges."""

from .errors import InvalidRange, InvalidVersion, SemverError
from .version import Version, compare, parse
from .comparator import Comparator
from .ranges import Range, satisfies
from .resolver import (
    ResolutionError,
    filter_satisfying,
    max_satisfying,
    min_satisfying,
    resolve_all,
    sort_versions,
)

__all__ = [
    "Comparator",
    "InvalidRange",
    "InvalidVersion",
    "Range",
    "ResolutionError",
    "SemverError",
    "Version",
    "compare",
    "filter_satisfying",
    "max_satisfying",
    "min_satisfying",
    "parse",
    "resolve_all",
    "satisfies",
    "sort_versions",
]

__version__ = "0.4.1"
