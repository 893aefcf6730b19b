import pytest

from minirouter import BuildError, Request


def test_url_for_static(router):
    assert router.url_for("index") == "/"
    assert router.url_for("docs") == "/docs/"
    assert router.url_for("new_user") == "/users/new"


def test_url_for_typed(router):
    assert router.url_for("user", user_id=12) == "/users/12"
    assert router.url_for("post", year=2021, title="spring-notes") == "/blog/2021/spring-notes"


def test_url_for_path(router):
    assert router.url_for("file", rest="img/logo.png") == "/files/img/logo.png"


def test_url_for_extra_values_go_to_query(router):
    assert router.url_for("user", user_id=3, tab="posts", page=2) == "/users/3?page=2&tab=posts"


def test_url_for_query_values_are_encoded(router):
    assert router.url_for("index", q="a&b c") == "/?q=a%26b+c"


def test_url_for_anchor(router):
    assert router.url_for("user", user_id=3, _anchor="bio") == "/users/3#bio"


def test_url_for_method(router):
    assert router.url_for("update_user", user_id=4, _method="PUT") == "/users/4"
    with pytest.raises(BuildError):
        router.url_for("update_user", user_id=4, _method="POST")


def test_url_for_unknown_endpoint(router):
    with pytest.raises(BuildError):
        router.url_for("nope")


def test_url_for_missing_param(router):
    with pytest.raises(BuildError):
        router.url_for("user")


def test_url_for_rejects_negative_int(router):
    with pytest.raises(BuildError):
        router.url_for("user", user_id=-1)


def test_url_for_round_trip(router):
    url = router.url_for("post", year=1999, title="party-like")
    resp = router.dispatch(Request("GET", url))
    assert resp.body == "1999:party-like"
