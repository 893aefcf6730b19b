import pytest

from iniconf import DuplicateOptionError, DuplicateSectionError, ParseError, parse


def test_sections_and_options_in_order():
    parsed = parse("[b]\nx = 1\n[a]\ny: 2\n")
    assert parsed.section_names() == ["b", "a"]
    assert parsed.sections["b"] == {"x": "1"}
    assert parsed.sections["a"] == {"y": "2"}


def test_option_names_are_lowercased_and_stripped():
    parsed = parse("[s]\n  Some Key  =  value  \n")
    assert parsed.sections["s"] == {"some key": "value"}


def test_comments_and_inline_comments():
    text = "# top\n[s]\n; note\nkey = value  # trailing\nurl = http://x/#frag\n"
    parsed = parse(text)
    assert parsed.sections["s"] == {"key": "value", "url": "http://x/#frag"}


def test_inline_comments_can_be_disabled():
    parsed = parse("[s]\nkey = a ; b\n", inline_comments=False)
    assert parsed.sections["s"]["key"] == "a ; b"


def test_continuation_lines():
    parsed = parse("[s]\nhosts =\n    one\n    two\nnext = 3\n")
    assert parsed.sections["s"] == {"hosts": "one\ntwo", "next": "3"}


def test_default_section_is_separate():
    parsed = parse("[DEFAULT]\nbase = 1\n[s]\nx = 2\n")
    assert parsed.defaults == {"base": "1"}
    assert parsed.section_names() == ["s"]


def test_duplicate_section_strict():
    with pytest.raises(DuplicateSectionError) as info:
        parse("[s]\n[s]\n")
    assert info.value.lineno == 2


def test_duplicate_option_strict():
    with pytest.raises(DuplicateOptionError):
        parse("[s]\nx = 1\nX = 2\n")


def test_non_strict_last_value_wins():
    parsed = parse("[s]\nx = 1\n[s]\nx = 2\n", strict=False)
    assert parsed.sections["s"] == {"x": "2"}


def test_option_outside_section():
    with pytest.raises(ParseError):
        parse("x = 1\n")


def test_allow_no_value():
    parsed = parse("[s]\nflag\n", allow_no_value=True)
    assert parsed.sections["s"] == {"flag": None}
    with pytest.raises(ParseError):
        parse("[s]\nflag\n")
