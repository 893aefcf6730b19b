"""Parsing of route patterns such as ``/blog/<int:year>/<slug:title>``."""

import re
from urllib.parse import quote

from .converters import DEFAULT_CONVERTERS
from .exceptions import BuildError, RouteError

_PARAM_RE = re.compile(
    r"""
    <
      (?:(?P<converter>[a-zA-Z_][a-zA-Z0-9_]*):)?   # optional converter name
      (?P<name>[a-zA-Z_][a-zA-Z0-9_]*)              # parameter name
    >
    """,
    re.VERBOSE,
)

# Characters of a static part that stay as they are in the compiled pattern.
_STATIC_SAFE = "/-._~!$&'()*+,;=:@"


class RoutePattern:
    """A compiled route pattern.

    ``parts`` is a list of ``("static", text)`` and ``("param", name, converter)`` tuples, in
    order. ``regex`` matches a raw (still percent-encoded) request path.
    """

    def __init__(self, pattern, converters=None):
        if not pattern.startswith("/"):
            raise RouteError(f"route pattern must start with '/': {pattern!r}")
        self.pattern = pattern
        self._converter_types = dict(DEFAULT_CONVERTERS)
        if converters:
            self._converter_types.update(converters)
        self.parts = []
        self.converters = {}
        self._parse()
        self.regex = re.compile(self._build_regex())

    # -- parsing -------------------------------------------------------------------------------

    def _parse(self):
        pos = 0
        for m in _PARAM_RE.finditer(self.pattern):
            if m.start() > pos:
                self._add_static(self.pattern[pos:m.start()])
            name = m.group("name")
            conv_name = m.group("converter") or "default"
            if name in self.converters:
                raise RouteError(f"duplicate parameter {name!r} in {self.pattern!r}")
            try:
                conv_type = self._converter_types[conv_name]
            except KeyError:
                raise RouteError(f"unknown converter {conv_name!r} in {self.pattern!r}") from None
            converter = conv_type()
            self.converters[name] = converter
            self.parts.append(("param", name, converter))
            pos = m.end()
        if pos < len(self.pattern):
            self._add_static(self.pattern[pos:])
        leftover = "".join(p[1] for p in self.parts if p[0] == "static")
        if "<" in leftover or ">" in leftover:
            raise RouteError(f"malformed parameter in {self.pattern!r}")

    def _add_static(self, text):
        if self.parts and self.parts[-1][0] == "static":
            self.parts[-1] = ("static", self.parts[-1][1] + text)
        else:
            self.parts.append(("static", text))

    def _build_regex(self):
        out = ["^"]
        for part in self.parts:
            if part[0] == "static":
                out.append(re.escape(quote(part[1], safe=_STATIC_SAFE)))
            else:
                _, name, converter = part
                out.append(f"(?P<{name}>{converter.regex})")
        out.append("$")
        return "".join(out)

    # -- properties ----------------------------------------------------------------------------

    @property
    def arguments(self):
        """Names of the parameters, in pattern order."""
        return [p[1] for p in self.parts if p[0] == "param"]

    @property
    def is_static(self):
        return not self.converters

    @property
    def has_trailing_slash(self):
        return self.pattern.endswith("/") and self.pattern != "/"

    def sort_key(self):
        """Routes are tried most specific first: more static text, then lighter converters."""
        static_len = sum(len(p[1]) for p in self.parts if p[0] == "static")
        weights = tuple(p[2].weight for p in self.parts if p[0] == "param")
        return (not self.is_static, -len(self.parts), sum(weights), -static_len)

    # -- matching and building -----------------------------------------------------------------

    def match(self, raw_path):
        """Match a raw path; return the regex match's raw (undecoded) groups, or None."""
        m = self.regex.match(raw_path)
        if m is None:
            return None
        return m.groupdict()

    def build(self, values, endpoint="?"):
        """Build the path for ``values`` (a mapping of parameter name to Python value)."""
        missing = [name for name in self.arguments if name not in values]
        if missing:
            raise BuildError(endpoint, f"missing values for {', '.join(missing)}")
        out = []
        for part in self.parts:
            if part[0] == "static":
                out.append(quote(part[1], safe=_STATIC_SAFE))
                continue
            _, name, converter = part
            value = values[name]
            if not converter.validate(value):
                raise BuildError(endpoint, f"value {value!r} is not valid for parameter {name!r}")
            try:
                out.append(converter.to_url(value))
            except ValueError as exc:
                raise BuildError(endpoint, str(exc)) from None
        return "".join(out)

    def __repr__(self):
        return f"RoutePattern({self.pattern!r})"
