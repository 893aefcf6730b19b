import pytest

from jsonpath_lite import JSONPathSyntaxError, tokenize


def kinds(text):
    return [tok.kind for tok in tokenize(text)]


def values(text):
    return [tok.value for tok in tokenize(text)][:-1]


def test_simple_path():
    assert kinds("$.store.book") == ["ROOT", "DOT", "NAME", "DOT", "NAME", "EOF"]


def test_recursive_descent_and_wildcard():
    assert kinds("$..book[*]") == ["ROOT", "DOTDOT", "NAME", "LBRACKET", "STAR", "RBRACKET", "EOF"]


def test_positions():
    toks = tokenize("$.a[10]")
    assert [tok.position for tok in toks] == [0, 1, 2, 3, 4, 6, 7]


def test_integers():
    assert values("[0, 12, -3]") == ["[", 0, ",", 12, ",", -3, "]"]
    assert all(isinstance(v, int) for v in values("0 12 -3"))


def test_decimals_and_exponents():
    assert values("8.95 12.5 1e3 2.5E-2") == [8.95, 12.5, 1000.0, 0.025]


def test_negative_decimal():
    assert values("-12.5") == [-12.5]


def test_leading_zero_rejected():
    with pytest.raises(JSONPathSyntaxError):
        tokenize("[01]")


def test_strings_and_escapes():
    assert values("'abc' \"d e\"") == ["abc", "d e"]
    assert values(r"'it\'s' " + r'"say \"hi\"" ' + r"'a\\b' '\u00e9'") == [
        "it's", 'say "hi"', "a\\b", "é"]


def test_unterminated_string():
    with pytest.raises(JSONPathSyntaxError) as info:
        tokenize("$['abc]")
    assert info.value.position == 2


def test_operators():
    assert kinds("== != < <= > >= && || !") == [
        "EQ", "NE", "LT", "LE", "GT", "GE", "AND", "OR", "NOT", "EOF"]


def test_keywords():
    assert kinds("true false null truthy") == ["TRUE", "FALSE", "NULL", "NAME", "EOF"]


def test_single_equals_rejected():
    with pytest.raises(JSONPathSyntaxError):
        tokenize("$[?(@.a = 1)]")


def test_unexpected_character():
    with pytest.raises(JSONPathSyntaxError) as info:
        tokenize("$.a#b")
    assert info.value.position == 3


def test_slice_tokens():
    assert values("[1:3]") == ["[", 1, ":", 3, "]"]
    assert values("[::-2]") == ["[", ":", ":", -2, "]"]
