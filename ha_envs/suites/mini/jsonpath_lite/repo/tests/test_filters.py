import jsonpath_lite as jp


def titles(store, expr):
    return jp.query(store, "$.store.book[?(" + expr + ")].title")


def test_less_than(store):
    assert titles(store, "@.price < 10") == ["Sayings of the Century", "Moby Dick"]


def test_compare_with_root(store):
    assert titles(store, "@.price > $.expensive") == ["Sword of Honour", "The Lord of the Rings"]


def test_existence(store):
    assert titles(store, "@.isbn") == ["Moby Dick", "The Lord of the Rings"]
    assert titles(store, "!@.isbn") == ["Sayings of the Century", "Sword of Honour"]


def test_string_equality(store):
    assert titles(store, "@.category == 'reference'") == ["Sayings of the Century"]
    assert titles(store, '@.author == "Herman Melville"') == ["Moby Dick"]


def test_and_or_parentheses(store):
    assert titles(store, "@.category == 'fiction' && @.price < 10") == ["Moby Dick"]
    assert titles(store, "@.price < 9 || @.price > 20") == [
        "Sayings of the Century", "Moby Dick", "The Lord of the Rings"]
    assert titles(store, "!(@.price < 9 || @.price > 20)") == ["Sword of Honour"]


def test_type_mismatch_is_false():
    data = [{"v": 1}, {"v": "1"}, {"v": True}, {"v": None}, {}]
    assert jp.query(data, "$[?(@.v == 1)]") == [{"v": 1}]
    assert jp.query(data, "$[?(@.v < 2)]") == [{"v": 1}]
    assert jp.query(data, "$[?(@.v == true)]") == [{"v": True}]
    assert jp.query(data, "$[?(@.v == null)]") == [{"v": None}]
    assert jp.query(data, "$[?(@.v != 1)]") == [{"v": "1"}, {"v": True}, {"v": None}, {}]


def test_null_member_exists():
    data = [{"v": None}, {"w": 1}]
    assert jp.query(data, "$[?(@.v)]") == [{"v": None}]


def test_filter_on_object_members():
    data = {"a": {"n": 1}, "b": {"n": 5}, "c": {"n": 3}}
    assert jp.paths(data, "$[?(@.n >= 3)]") == ["$['b']", "$['c']"]


def test_filter_with_index_into_nested_array():
    data = {"orders": [
        {"id": 1, "lines": [{"qty": 1}, {"qty": 4}]},
        {"id": 2, "lines": [{"qty": 3}]},
        {"id": 3, "lines": []},
    ]}
    assert jp.query(data, "$.orders[?(@.lines[0].qty > 2)].id") == [2]
    assert jp.query(data, "$.orders[?(@.lines[-1].qty > 2)].id") == [1, 2]
    assert jp.query(data, "$.orders[?(@.lines[1])].id") == [1]


def test_filter_on_array_of_arrays():
    data = {"rows": [[1, 2], [5, 0], [3, 9]]}
    assert jp.query(data, "$.rows[?(@[0] > 2)]") == [[5, 0], [3, 9]]
    assert jp.query(data, "$.rows[?(@[-1] >= 2)]") == [[1, 2], [3, 9]]


def test_negative_integer_literal():
    data = [{"t": -3}, {"t": 0}, {"t": -1}, {"t": 4}]
    assert jp.query(data, "$[?(@.t < -1)]") == [{"t": -3}]
    assert jp.query(data, "$[?(@.t >= -1 && @.t <= 0)]") == [{"t": 0}, {"t": -1}]


def test_nested_filter():
    data = {"teams": [
        {"name": "a", "members": [{"role": "lead"}, {"role": "dev"}]},
        {"name": "b", "members": [{"role": "dev"}]},
    ]}
    assert jp.query(data, "$.teams[?(@.members[?(@.role == 'lead')])].name") == ["a"]


def test_recursive_descent_filter(store):
    assert jp.query(store, "$..[?(@.price > 100)].color") == ["red"]


def test_deep_equality():
    data = [{"tags": ["a", "b"]}, {"tags": ["a"]}]
    assert jp.query(data, "$[?(@.tags[0] == 'a' && @.tags[1] == 'b')]") == [{"tags": ["a", "b"]}]


def test_string_ordering():
    data = [{"n": "apple"}, {"n": "pear"}, {"n": "fig"}]
    assert jp.query(data, "$[?(@.n < 'g')].n") == ["apple", "fig"]
