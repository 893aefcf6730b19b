from minirouter import Request, Response, Router


def test_dispatch_string_result(router):
    resp = router.dispatch(Request("GET", "/users/5"))
    assert resp.status == 200
    assert resp.body == "user 5"


def test_dispatch_tuple_result(router):
    resp = router.dispatch(Request("POST", "/users/new"))
    assert (resp.status, resp.body) == (201, "created")


def test_dispatch_none_result(router):
    resp = router.dispatch(Request("DELETE", "/items/9"))
    assert resp.status == 204


def test_dispatch_404(router):
    resp = router.dispatch(Request("GET", "/missing/page"))
    assert resp.status == 404
    assert resp.body == "Not Found"


def test_dispatch_405_with_allow_header(router):
    resp = router.dispatch(Request("DELETE", "/users/5"))
    assert resp.status == 405
    assert resp.headers["Allow"] == "GET, HEAD, OPTIONS, PATCH, PUT"


def test_dispatch_head_strips_body(router):
    resp = router.dispatch(Request("HEAD", "/users/5"))
    assert resp.status == 200
    assert resp.body == ""


def test_dispatch_options(router):
    resp = router.dispatch(Request("OPTIONS", "/users/new"))
    assert resp.status == 204
    assert resp.headers["Allow"] == "GET, HEAD, OPTIONS, POST"


def test_request_exposes_view_args_and_query(router):
    seen = {}

    def handler(request, name):
        seen["args"] = dict(request.view_args)
        seen["endpoint"] = request.endpoint
        seen["query"] = dict(request.args)
        return "ok"

    router.add_route("/hello/<name>", handler, name="hello")
    resp = router.dispatch(Request("GET", "/hello/ann?lang=fr&x=1"))
    assert resp.body == "ok"
    assert seen == {"args": {"name": "ann"}, "endpoint": "hello", "query": {"lang": "fr", "x": "1"}}


def test_redirect_slashes():
    r = Router(redirect_slashes=True)
    r.add_route("/docs/", lambda req: "docs", name="docs")
    resp = r.dispatch(Request("GET", "/docs?page=2"))
    assert resp.status == 308
    assert resp.headers["Location"] == "/docs/?page=2"


def test_redirect_slashes_off_gives_404():
    r = Router()
    r.add_route("/docs/", lambda req: "docs", name="docs")
    assert r.dispatch(Request("GET", "/docs")).status == 404


def test_handler_returning_response(router):
    resp = router.dispatch(Request("PUT", "/users/8"))
    assert resp == Response("updated 8", status=200)
