import jsonpath_lite as jp


def test_member_access(store):
    assert jp.query(store, "$.store.bicycle.color") == ["red"]
    assert jp.query(store, "$['store']['bicycle']['price']") == [399]


def test_missing_member(store):
    assert jp.query(store, "$.store.car") == []
    assert jp.first(store, "$.store.car", default="none") == "none"


def test_index(store):
    assert jp.query(store, "$.store.book[0].author") == ["Nigel Rees"]
    assert jp.query(store, "$.store.book[-1].author") == ["J. R. R. Tolkien"]
    assert jp.query(store, "$.store.book[4]") == []
    assert jp.query(store, "$.store.book[-5]") == []


def test_slices():
    data = {"a": list(range(10))}
    assert jp.query(data, "$.a[1:4]") == [1, 2, 3]
    assert jp.query(data, "$.a[:3]") == [0, 1, 2]
    assert jp.query(data, "$.a[7:]") == [7, 8, 9]
    assert jp.query(data, "$.a[-2:]") == [8, 9]
    assert jp.query(data, "$.a[::3]") == [0, 3, 6, 9]
    assert jp.query(data, "$.a[::-3]") == [9, 6, 3, 0]
    assert jp.query(data, "$.a[1:2:0]") == []


def test_wildcards(store):
    assert jp.query(store, "$.store.bicycle.*") == ["red", 399]
    assert len(jp.query(store, "$.store.book[*]")) == 4
    assert jp.query(store, "$.expensive.*") == []


def test_union(store):
    assert jp.query(store, "$.store.book[0,2].title") == ["Sayings of the Century", "Moby Dick"]
    assert jp.query(store, "$.store.bicycle['color','price']") == ["red", 399]


def test_recursive_descent(store):
    assert jp.query(store, "$..author") == [
        "Nigel Rees", "Evelyn Waugh", "Herman Melville", "J. R. R. Tolkien"]
    assert jp.query(store, "$..price") == [8.95, 12.99, 8.99, 22.99, 399]
    assert jp.query(store, "$..book[2].title") == ["Moby Dick"]
    assert jp.query(store, "$..book[-1:].title") == ["The Lord of the Rings"]


def test_recursive_wildcard_counts(store):
    assert len(jp.query(store, "$..*")) == 28


def test_paths(store):
    assert jp.paths(store, "$.store.book[?(@.isbn)].title") == [
        "$['store']['book'][2]['title']",
        "$['store']['book'][3]['title']",
    ]


def test_path_quoting():
    assert jp.paths({"it's": 1}, "$.*") == ["$['it\\'s']"]


def test_scalar_root():
    assert jp.query(5, "$") == [5]
    assert jp.query("abc", "$[0]") == []


def test_compile_is_cached():
    assert jp.compile("$.a") is jp.compile("$.a")
    assert repr(jp.compile("$.a")) == "JSONPath('$.a')"
