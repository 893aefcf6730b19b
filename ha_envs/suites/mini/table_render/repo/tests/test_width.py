import pytest

from plaintable import display_width, pad, truncate


def test_display_width_ascii_and_multiline():
    assert display_width("") == 0
    assert display_width("hello") == 5
    assert display_width("ab\nabcd\nabc") == 4
    assert display_width(12.5) == 4


def test_pad_alignments():
    assert pad("ab", 5) == "ab   "
    assert pad("ab", 5, "right") == "   ab"
    assert pad("ab", 5, "center") == " ab  "
    assert pad("abcdef", 3) == "abcdef"
    assert pad("x", 3, fill=".") == "x.."


def test_pad_rejects_unknown_alignment():
    with pytest.raises(ValueError):
        pad("x", 3, "justify")


def test_truncate():
    assert truncate("hello world", 20) == "hello world"
    assert truncate("hello world", 8) == "hello w\u2026"
    assert truncate("hello world", 8, ellipsis="...") == "hello..."
    assert truncate("hello", 0) == ""
    assert truncate("hello", 1) == "\u2026"
