import pytest

from minirouter import MethodNotAllowed, NotFound, RouteError, Router


def test_match_typed_params(router):
    m = router.match("GET", "/blog/2023/hello-world")
    assert m.endpoint == "post"
    assert m.view_args == {"year": 2023, "title": "hello-world"}


def test_static_route_wins_over_param(router):
    assert router.match("GET", "/users/new").endpoint == "new_user"
    assert router.match("GET", "/users/7").endpoint == "user"


def test_more_specific_route_wins_over_path(router):
    assert router.match("GET", "/files/report/meta").endpoint == "file_meta"
    m = router.match("GET", "/files/report/2023/q1.pdf")
    assert m.endpoint == "file"
    assert m.view_args == {"rest": "report/2023/q1.pdf"}


def test_int_route_preferred_over_string_route():
    r = Router()
    r.add_route("/x/<name>", lambda req, name: name, name="by_name")
    r.add_route("/x/<int:num>", lambda req, num: num, name="by_num")
    assert r.match("GET", "/x/12").endpoint == "by_num"
    assert r.match("GET", "/x/abc").endpoint == "by_name"


def test_not_found(router):
    with pytest.raises(NotFound) as info:
        router.match("GET", "/nope")
    assert info.value.status == 404


def test_method_not_allowed_lists_methods(router):
    with pytest.raises(MethodNotAllowed) as info:
        router.match("POST", "/users/3")
    assert info.value.status == 405
    assert info.value.allowed == ("GET", "HEAD", "OPTIONS", "PATCH", "PUT")


def test_same_pattern_different_methods(router):
    assert router.match("GET", "/users/3").endpoint == "user"
    assert router.match("PUT", "/users/3").endpoint == "update_user"
    assert router.match("patch", "/users/3").endpoint == "update_user"


def test_head_follows_get(router):
    assert router.match("HEAD", "/users/3").endpoint == "user"


def test_strict_slashes_default(router):
    assert router.match("GET", "/docs/").endpoint == "docs"
    with pytest.raises(NotFound):
        router.match("GET", "/docs")
    with pytest.raises(NotFound):
        router.match("GET", "/users/3/")


def test_non_strict_slashes():
    r = Router(strict_slashes=False)
    r.add_route("/a/", lambda req: "a", name="a")
    r.add_route("/b", lambda req: "b", name="b")
    assert r.match("GET", "/a").endpoint == "a"
    assert r.match("GET", "/a/").endpoint == "a"
    assert r.match("GET", "/b/").endpoint == "b"


def test_percent_encoded_segment_is_decoded(router):
    m = router.match("GET", "/tags/c%2B%2B")
    assert m.view_args == {"tag": "c++"}


def test_defaults_are_passed():
    r = Router()
    r.add_route("/list", lambda req, page: page, name="first", defaults={"page": 1})
    r.add_route("/list/<int:page>", lambda req, page: page, name="page")
    assert r.match("GET", "/list").view_args == {"page": 1}
    assert r.match("GET", "/list/4").view_args == {"page": 4}


def test_defaults_cannot_shadow_parameters():
    r = Router()
    with pytest.raises(RouteError):
        r.add_route("/list/<int:page>", lambda req, page: page, name="p", defaults={"page": 1})


def test_duplicate_route_rejected():
    r = Router()
    r.add_route("/a", lambda req: "a", name="a")
    with pytest.raises(RouteError):
        r.add_route("/a", lambda req: "b", name="a")


def test_unknown_method_rejected():
    r = Router()
    with pytest.raises(RouteError):
        r.add_route("/a", lambda req: "a", name="a", methods=["FETCH"])
