"""Minimal request and response objects."""

from urllib.parse import parse_qs, urlsplit


class Request:
    """An incoming request: method, raw path (percent-encoded) and query arguments."""

    def __init__(self, method, url, headers=None, body=b""):
        self.method = method.upper()
        split = urlsplit(url)
        self.path = split.path or "/"
        self.query_string = split.query
        self.args = {k: v[0] if len(v) == 1 else v for k, v in parse_qs(split.query).items()}
        self.headers = {k.lower(): v for k, v in (headers or {}).items()}
        self.body = body
        self.view_args = {}
        self.endpoint = None

    def __repr__(self):
        return f"<Request {self.method} {self.path!r}>"


class Response:
    """A response with a status, headers and a body (text)."""

    def __init__(self, body="", status=200, headers=None):
        self.body = body
        self.status = status
        self.headers = dict(headers or {})

    @property
    def ok(self):
        return 200 <= self.status < 400

    @classmethod
    def redirect(cls, location, status=308):
        return cls("", status=status, headers={"Location": location})

    def __eq__(self, other):
        if not isinstance(other, Response):
            return NotImplemented
        return (self.body, self.status, self.headers) == (other.body, other.status, other.headers)

    def __repr__(self):
        return f"<Response {self.status} {self.body!r}>"
