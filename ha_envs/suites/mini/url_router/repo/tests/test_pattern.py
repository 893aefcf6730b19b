import uuid

import pytest

from minirouter import BuildError, RouteError, RoutePattern


def test_static_pattern():
    p = RoutePattern("/about")
    assert p.is_static
    assert p.arguments == []
    assert p.match("/about") == {}
    assert p.match("/about/") is None


def test_parameters_in_order():
    p = RoutePattern("/blog/<int:year>/<slug:title>/<path:rest>")
    assert p.arguments == ["year", "title", "rest"]
    assert not p.is_static


def test_int_converter_matches_digits_only():
    p = RoutePattern("/n/<int:n>")
    assert p.match("/n/42") == {"n": "42"}
    assert p.match("/n/4x") is None
    assert p.match("/n/") is None


def test_slug_converter():
    p = RoutePattern("/p/<slug:s>")
    assert p.match("/p/hello-world-2") == {"s": "hello-world-2"}
    assert p.match("/p/Hello") is None
    assert p.match("/p/a--b") is None
    assert p.match("/p/-a") is None


def test_path_converter_spans_slashes():
    p = RoutePattern("/static/<path:rest>")
    assert p.match("/static/css/site.css") == {"rest": "css/site.css"}
    assert p.match("/static/") is None


def test_uuid_converter():
    p = RoutePattern("/o/<uuid:oid>")
    value = "12345678-1234-5678-1234-567812345678"
    assert p.match("/o/" + value) == {"oid": value}
    assert p.converters["oid"].to_python(value) == uuid.UUID(value)
    assert p.match("/o/1234") is None


def test_float_converter():
    p = RoutePattern("/price/<float:amount>")
    assert p.match("/price/3.50") == {"amount": "3.50"}
    assert p.match("/price/3") is None
    assert p.build({"amount": 2.5}) == "/price/2.5"


def test_pattern_must_start_with_slash():
    with pytest.raises(RouteError):
        RoutePattern("users/<int:id>")


def test_unknown_converter():
    with pytest.raises(RouteError):
        RoutePattern("/x/<hex:value>")


def test_duplicate_parameter():
    with pytest.raises(RouteError):
        RoutePattern("/x/<a>/<int:a>")


def test_malformed_parameter():
    with pytest.raises(RouteError):
        RoutePattern("/x/<int:>")


def test_build_simple():
    p = RoutePattern("/blog/<int:year>/<slug:title>")
    assert p.build({"year": 2024, "title": "new-year"}) == "/blog/2024/new-year"


def test_build_missing_value():
    p = RoutePattern("/blog/<int:year>")
    with pytest.raises(BuildError):
        p.build({})


def test_build_invalid_values():
    p = RoutePattern("/n/<int:n>/<slug:s>")
    with pytest.raises(BuildError):
        p.build({"n": -3, "s": "ok"})
    with pytest.raises(BuildError):
        p.build({"n": "7", "s": "ok"})
    with pytest.raises(BuildError):
        p.build({"n": 7, "s": "Not A Slug"})


def test_custom_converter():
    from minirouter import BaseConverter

    class HexConverter(BaseConverter):
        regex = r"[0-9a-f]+"

        def to_python(self, value):
            return int(value, 16)

        def to_url(self, value):
            return format(value, "x")

    p = RoutePattern("/c/<hex:color>", converters={"hex": HexConverter})
    assert p.match("/c/ff00ff") == {"color": "ff00ff"}
    assert p.build({"color": 255}) == "/c/ff"
