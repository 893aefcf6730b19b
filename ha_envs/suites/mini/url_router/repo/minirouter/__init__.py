"""minirouter: a tiny URL router with typed parameters and reverse URL building."""

from .converters import (
    BaseConverter,
    FloatConverter,
    IntConverter,
    PathConverter,
    SlugConverter,
    StringConverter,
    UUIDConverter,
    DEFAULT_CONVERTERS,
)
from .exceptions import BuildError, MethodNotAllowed, NotFound, RouteError, RoutingException
from .http import Request, Response
from .pattern import RoutePattern
from .router import Match, Route, Router

__all__ = [
    "BaseConverter",
    "BuildError",
    "DEFAULT_CONVERTERS",
    "FloatConverter",
    "IntConverter",
    "Match",
    "MethodNotAllowed",
    "NotFound",
    "PathConverter",
    "Request",
    "Response",
    "Route",
    "RouteError",
    "RoutePattern",
    "Router",
    "RoutingException",
    "SlugConverter",
    "StringConverter",
    "UUIDConverter",
]

__version__ = "0.3.1"
