"""iniconf: a small INI-style configuration library."""

from .config import Config, SectionProxy
from .errors import (
    ConfigError,
    DuplicateOptionError,
    DuplicateSectionError,
    InterpolationDepthError,
    InterpolationError,
    InterpolationMissingOptionError,
    InterpolationSyntaxError,
    NoOptionError,
    NoSectionError,
    ParseError,
)
from .interpolation import MAX_DEPTH, Interpolator
from .parser import DEFAULT_SECTION, parse

__all__ = [
    "Config",
    "SectionProxy",
    "ConfigError",
    "DuplicateOptionError",
    "DuplicateSectionError",
    "InterpolationDepthError",
    "InterpolationError",
    "InterpolationMissingOptionError",
    "InterpolationSyntaxError",
    "NoOptionError",
    "NoSectionError",
    "ParseError",
    "Interpolator",
    "MAX_DEPTH",
    "DEFAULT_SECTION",
    "parse",
]
