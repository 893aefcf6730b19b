import pytest

from jsonpath_lite import JSONPathSyntaxError, parse
from jsonpath_lite import nodes as n


def test_root_only():
    assert parse("$") == n.Path(absolute=True, segments=())


def test_dot_and_bracket_names():
    assert parse("$.a['b c']") == n.Path(True, (
        n.ChildSegment((n.NameSelector("a"),)),
        n.ChildSegment((n.NameSelector("b c"),)),
    ))


def test_keyword_as_member_name():
    assert parse("$.null.true").segments[0] == n.ChildSegment((n.NameSelector("null"),))


def test_index_and_slices():
    path = parse("$[0][-1][1:3][::2][:-1]")
    sels = [seg.selectors[0] for seg in path.segments]
    assert sels == [
        n.IndexSelector(0),
        n.IndexSelector(-1),
        n.SliceSelector(1, 3, None),
        n.SliceSelector(None, None, 2),
        n.SliceSelector(None, -1, None),
    ]


def test_union():
    path = parse("$[0, 2, 'x']")
    assert path.segments[0].selectors == (n.IndexSelector(0), n.IndexSelector(2), n.NameSelector("x"))


def test_descendant_segments():
    path = parse("$..price..[0]..*")
    assert all(isinstance(seg, n.DescendantSegment) for seg in path.segments)


def test_filter_ast():
    path = parse("$.book[?(@.price < 10 && !@.isbn)]")
    flt = path.segments[1].selectors[0]
    assert isinstance(flt, n.FilterSelector)
    expr = flt.expression
    assert isinstance(expr, n.And)
    cmp_, neg = expr.operands
    assert cmp_ == n.Comparison("<", n.Path(False, (n.ChildSegment((n.NameSelector("price"),)),)),
                                n.Literal(10))
    assert neg == n.Not(n.Exists(n.Path(False, (n.ChildSegment((n.NameSelector("isbn"),)),))))


def test_filter_literals():
    expr = parse("$[?(@.a == 'x' || @.b == true || @.c == null || @.d == 2.5)]") \
        .segments[0].selectors[0].expression
    lits = [node.value for node in n.walk(expr) if isinstance(node, n.Literal)]
    assert lits == ["x", True, None, 2.5]


def test_singular_path_required_in_comparison():
    with pytest.raises(JSONPathSyntaxError):
        parse("$[?(@.a[*] == 1)]")


def test_float_index_rejected():
    with pytest.raises(JSONPathSyntaxError):
        parse("$[1.5]")


SYNTAX_ERRORS = {
    "empty": "",
    "no_root": "a.b",
    "dangling_dot": "$.",
    "open_bracket": "$[",
    "unclosed_bracket": "$[1",
    "unclosed_filter": "$[?(@.a == 1]",
    "slice_too_long": "$[1:2:3:4]",
    "literal_test": "$[?(1)]",
    "trailing_name": "$.a b",
}


@pytest.mark.parametrize("bad", list(SYNTAX_ERRORS.values()), ids=list(SYNTAX_ERRORS))
def test_syntax_errors(bad):
    with pytest.raises(JSONPathSyntaxError):
        parse(bad)
