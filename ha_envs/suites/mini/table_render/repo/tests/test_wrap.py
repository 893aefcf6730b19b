import pytest

from plaintable import wrap_cell


def test_wrap_greedy():
    assert wrap_cell("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]


def test_wrap_keeps_explicit_newlines():
    assert wrap_cell("one two\nthree", 20) == ["one two", "three"]
    assert wrap_cell("a\n\nb", 5) == ["a", "", "b"]


def test_wrap_splits_long_words():
    assert wrap_cell("abcdefghij xy", 4) == ["abcd", "efgh", "ij", "xy"]
    assert wrap_cell("ab abcdefgh", 4) == ["ab", "abcd", "efgh"]


def test_wrap_collapses_whitespace():
    assert wrap_cell("  a    b  ", 10) == ["a b"]
    assert wrap_cell("", 3) == [""]


def test_wrap_rejects_zero_width():
    with pytest.raises(ValueError):
        wrap_cell("abc", 0)
