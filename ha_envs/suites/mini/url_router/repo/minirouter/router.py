"""The router: route table, matching, method dispatch and reverse URL building."""

from urllib.parse import unquote, urlencode

from .exceptions import BuildError, MethodNotAllowed, NotFound, RouteError, RoutingException
from .http import Response
from .pattern import RoutePattern

_KNOWN_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}


class Route:
    """One route: a pattern, the methods it accepts, its endpoint name and its handler."""

    def __init__(self, pattern, handler, name=None, methods=None, defaults=None, converters=None):
        self.pattern = RoutePattern(pattern, converters)
        self.handler = handler
        self.name = name or getattr(handler, "__name__", None)
        if not self.name:
            raise RouteError(f"route {pattern!r} needs a name")
        methods = {m.upper() for m in (methods or ["GET"])}
        unknown = methods - _KNOWN_METHODS
        if unknown:
            raise RouteError(f"unknown HTTP methods {sorted(unknown)} for {pattern!r}")
        if "GET" in methods:
            methods.add("HEAD")
        self.methods = frozenset(methods)
        self.defaults = dict(defaults or {})
        overlap = set(self.defaults) & set(self.pattern.arguments)
        if overlap:
            raise RouteError(f"defaults {sorted(overlap)} shadow parameters of {pattern!r}")

    def match_path(self, raw_path):
        """Return the converted view arguments if the path matches, else None."""
        groups = self.pattern.match(raw_path)
        if groups is None:
            return None
        values = dict(self.defaults)
        for name, raw in groups.items():
            converter = self.pattern.converters[name]
            try:
                values[name] = converter.to_python(unquote(raw))
            except ValueError:
                return None
        return values

    def __repr__(self):
        return f"<Route {self.name} {self.pattern.pattern} {sorted(self.methods)}>"


class Match:
    """The result of matching a request: the route and its view arguments."""

    def __init__(self, route, view_args):
        self.route = route
        self.view_args = view_args

    @property
    def endpoint(self):
        return self.route.name

    def __iter__(self):
        yield self.route
        yield self.view_args

    def __repr__(self):
        return f"<Match {self.endpoint} {self.view_args!r}>"


class Router:
    """A table of routes.

    ``strict_slashes`` (default True): ``/a/`` and ``/a`` are different paths. With
    ``strict_slashes=False``, a request for ``/a`` also matches a route ``/a/`` and the reverse.
    ``redirect_slashes`` (default False): with strict slashes, a request that would only match
    with the trailing slash added or removed is answered with a 308 redirect instead of a 404.
    """

    def __init__(self, strict_slashes=True, redirect_slashes=False, converters=None):
        self.strict_slashes = strict_slashes
        self.redirect_slashes = redirect_slashes
        self.converters = dict(converters or {})
        self._routes = []
        self._by_name = {}

    # -- defining routes -----------------------------------------------------------------------

    def add_route(self, pattern, handler, name=None, methods=None, defaults=None):
        route = Route(pattern, handler, name=name, methods=methods, defaults=defaults,
                      converters=self.converters)
        for other in self._by_name.get(route.name, []):
            if other.pattern.pattern == route.pattern.pattern and other.methods & route.methods:
                raise RouteError(
                    f"route {route.name!r} already defined for {pattern!r} "
                    f"with methods {sorted(other.methods & route.methods)}"
                )
        self._routes.append(route)
        self._routes.sort(key=lambda r: r.pattern.sort_key())
        self._by_name.setdefault(route.name, []).append(route)
        return route

    def route(self, pattern, name=None, methods=None, defaults=None):
        """Decorator form of :meth:`add_route`."""

        def decorator(handler):
            self.add_route(pattern, handler, name=name, methods=methods, defaults=defaults)
            return handler

        return decorator

    @property
    def routes(self):
        return list(self._routes)

    # -- matching ------------------------------------------------------------------------------

    def _candidates(self, raw_path):
        """Yield (route, view_args) for every route whose pattern matches the path."""
        paths = [raw_path]
        if not self.strict_slashes and raw_path != "/":
            paths.append(raw_path[:-1] if raw_path.endswith("/") else raw_path + "/")
        for route in self._routes:
            for path in paths:
                args = route.match_path(path)
                if args is not None:
                    yield route, args
                    break

    def match(self, method, raw_path):
        """Find the route for ``method`` and ``raw_path``.

        Raises :class:`NotFound` when no pattern matches, :class:`MethodNotAllowed` when some
        pattern matches but not for this method.
        """
        method = method.upper()
        allowed = set()
        for route, args in self._candidates(raw_path):
            if method in route.methods:
                return Match(route, args)
            allowed |= route.methods
        if allowed:
            if method == "OPTIONS":
                return None
            raise MethodNotAllowed(raw_path, method, allowed | {"OPTIONS"})
        raise NotFound(raw_path)

    def allowed_methods(self, raw_path):
        allowed = set()
        for route, _ in self._candidates(raw_path):
            allowed |= route.methods
        return allowed

    def _slash_redirect(self, method, raw_path):
        if not self.redirect_slashes or raw_path == "/":
            return None
        other = raw_path[:-1] if raw_path.endswith("/") else raw_path + "/"
        for route, _ in self._candidates(other):
            if method in route.methods:
                return other
        return None

    # -- dispatching ---------------------------------------------------------------------------

    def dispatch(self, request):
        """Call the matching handler and turn its result into a :class:`Response`."""
        try:
            match = self.match(request.method, request.path)
        except NotFound as exc:
            target = self._slash_redirect(request.method, request.path)
            if target is not None:
                if request.query_string:
                    target += "?" + request.query_string
                return Response.redirect(target)
            return self.handle_error(request, exc)
        except RoutingException as exc:
            return self.handle_error(request, exc)
        if match is None:  # automatic OPTIONS answer
            allowed = self.allowed_methods(request.path) | {"OPTIONS"}
            return Response("", status=204, headers={"Allow": ", ".join(sorted(allowed))})
        request.view_args = match.view_args
        request.endpoint = match.endpoint
        result = match.route.handler(request, **match.view_args)
        response = self._make_response(result)
        if request.method == "HEAD":
            response.body = ""
        return response

    def handle_error(self, request, exc):
        headers = {}
        if isinstance(exc, MethodNotAllowed):
            headers["Allow"] = ", ".join(exc.allowed)
            body = "Method Not Allowed"
        elif isinstance(exc, NotFound):
            body = "Not Found"
        else:
            body = "Internal Server Error"
        return Response(body, status=exc.status, headers=headers)

    @staticmethod
    def _make_response(result):
        if isinstance(result, Response):
            return result
        if isinstance(result, tuple):
            body, status = result
            return Response(body, status=status)
        if result is None:
            return Response("", status=204)
        return Response(str(result))

    # -- reverse URL building ------------------------------------------------------------------

    def url_for(self, endpoint, _method=None, _anchor=None, **values):
        """Build the URL of ``endpoint``.

        Values that are not parameters of the route go to the query string. When several routes
        share the endpoint name, the first one whose parameters are all given (and that accepts
        ``_method``, if given) is used.
        """
        routes = self._by_name.get(endpoint)
        if not routes:
            raise BuildError(endpoint, "no such endpoint")
        errors = []
        for route in routes:
            if _method is not None and _method.upper() not in route.methods:
                continue
            names = set(route.pattern.arguments)
            if not names <= set(values):
                errors.append(f"missing {sorted(names - set(values))}")
                continue
            try:
                path = route.pattern.build(values, endpoint)
            except BuildError as exc:
                errors.append(str(exc))
                continue
            query = [(k, v) for k, v in sorted(values.items())
                     if k not in names and k not in route.defaults and v is not None]
            url = path
            if query:
                url += "?" + urlencode(query, doseq=True)
            if _anchor:
                url += "#" + _anchor
            return url
        if not errors:
            raise BuildError(endpoint, f"no route accepts method {_method!r}")
        raise BuildError(endpoint, "; ".join(errors))
