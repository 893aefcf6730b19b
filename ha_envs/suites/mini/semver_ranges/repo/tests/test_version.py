import pytest

from semverlite import InvalidVersion, Version, compare, parse, sort_versions


def test_parse_full_version():
    v = parse("1.2.3-beta.11+build.7")
    assert (v.major, v.minor, v.patch) == (1, 2, 3)
    assert v.prerelease == ("beta", 11)
    assert v.build == ("build", "7")
    assert str(v) == "1.2.3-beta.11+build.7"


def test_parse_accepts_leading_v_and_equals():
    assert parse("v1.0.0") == Version(1, 0, 0)
    assert parse("=2.3.4") == Version(2, 3, 4)


@pytest.mark.parametrize(
    "text",
    ["1.2", "01.2.3", "1.2.3-", "1.2.3-01", "a.b.c", "1.2.3+", ""],
    ids=["partial", "leading-zero", "empty-pre", "pre-leading-zero", "letters", "empty-build", "empty"],
)
def test_parse_rejects_invalid(text):
    with pytest.raises(InvalidVersion):
        parse(text)


def test_precedence_example_from_spec():
    chain = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
    ]
    for lower, higher in zip(chain, chain[1:]):
        assert parse(lower) < parse(higher), (lower, higher)
        assert compare(higher, lower) == 1


def test_build_metadata_is_ignored_for_equality():
    assert parse("1.0.0+a") == parse("1.0.0+b")
    assert hash(parse("1.0.0+a")) == hash(parse("1.0.0"))


def test_bump():
    assert str(parse("1.2.3").bump("major")) == "2.0.0"
    assert str(parse("1.2.3").bump("minor")) == "1.3.0"
    assert str(parse("1.2.3").bump("patch")) == "1.2.4"
    assert str(parse("1.2.3").bump("prerelease", "rc")) == "1.2.4-rc.0"
    assert str(parse("1.2.4-rc.0").bump("prerelease")) == "1.2.4-rc.1"
    assert str(parse("2.0.0-rc.1").bump("major")) == "2.0.0"


def test_sort_versions_drops_invalid_and_orders():
    versions = ["1.10.0", "1.2.0", "junk", "1.2.0-rc.1", "0.9.9"]
    assert sort_versions(versions) == ["0.9.9", "1.2.0-rc.1", "1.2.0", "1.10.0"]
    assert sort_versions(versions, reverse=True)[0] == "1.10.0"


def test_versions_are_immutable():
    v = parse("1.0.0")
    with pytest.raises(AttributeError):
        v.major = 3
