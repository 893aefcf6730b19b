"""Exceptions raised while defining, matching and building routes."""


class RouteError(ValueError):
    """A route pattern or route definition is invalid."""


class RoutingException(Exception):
    """Base class for errors raised while matching a request against the routes."""

    status = 500

    def __init__(self, path, message=None):
        self.path = path
        super().__init__(message or f"{self.status} for {path!r}")


class NotFound(RoutingException):
    """No route matches the requested path."""

    status = 404


class MethodNotAllowed(RoutingException):
    """Some route matches the path, but none of them accepts the method."""

    status = 405

    def __init__(self, path, method, allowed):
        self.method = method
        self.allowed = tuple(sorted(allowed))
        super().__init__(path, f"{method} not allowed for {path!r}; allowed: {', '.join(self.allowed)}")


class BuildError(LookupError):
    """A URL cannot be built for the requested endpoint and values."""

    def __init__(self, endpoint, message):
        self.endpoint = endpoint
        super().__init__(f"cannot build URL for {endpoint!r}: {message}")
