import pytest

from minirouter import Response, Router


@pytest.fixture
def router():
    r = Router()

    @r.route("/", name="index")
    def index(request):
        return "home"

    @r.route("/users/<int:user_id>", name="user")
    def show_user(request, user_id):
        return f"user {user_id}"

    @r.route("/users/<int:user_id>", name="update_user", methods=["PUT", "PATCH"])
    def update_user(request, user_id):
        return Response(f"updated {user_id}", status=200)

    @r.route("/users/new", name="new_user", methods=["GET", "POST"])
    def new_user(request):
        if request.method == "POST":
            return "created", 201
        return "form"

    @r.route("/blog/<int:year>/<slug:title>", name="post")
    def post(request, year, title):
        return f"{year}:{title}"

    @r.route("/tags/<tag>", name="tag")
    def tag(request, tag):
        return f"tag {tag}"

    @r.route("/files/<path:rest>", name="file")
    def file(request, rest):
        return f"file {rest}"

    @r.route("/files/<name>/meta", name="file_meta")
    def file_meta(request, name):
        return f"meta {name}"

    @r.route("/docs/", name="docs")
    def docs(request):
        return "docs"

    @r.route("/items/<int:item_id>", name="item", methods=["DELETE"])
    def delete_item(request, item_id):
        return None

    return r
