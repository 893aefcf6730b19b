import pytest

from semverlite import InvalidRange, Range, satisfies


@pytest.mark.parametrize(
    "text, expected",
    [
        ("^1.2.3", ">=1.2.3 <2.0.0-0"),
        ("^0.2.3", ">=0.2.3 <0.3.0-0"),
        ("^0.0.3", ">=0.0.3 <0.0.4-0"),
        ("^1.x", ">=1.0.0 <2.0.0-0"),
        ("^0.x", ">=0.0.0 <1.0.0-0"),
        ("~1.2.3", ">=1.2.3 <1.3.0-0"),
        ("~1.2", ">=1.2.0 <1.3.0-0"),
        ("~1", ">=1.0.0 <2.0.0-0"),
        ("1.2.x", ">=1.2.0 <1.3.0-0"),
        ("*", "*"),
        (">1.2", ">=1.3.0"),
        ("<=1.2", "<1.3.0-0"),
        ("1.2.3 - 2.3", ">=1.2.3 <2.4.0-0"),
        ("1.2 - 2.3.4", ">=1.2.0 <=2.3.4"),
        (">= 1.0.0 < 2.0.0", ">=1.0.0 <2.0.0"),
        ("1.2.3 || ~2.0", "1.2.3||>=2.0.0 <2.1.0-0"),
    ],
    ids=["caret", "caret-zero-minor", "caret-zero-zero", "caret-x", "caret-zero-x", "tilde-full", "tilde-minor", "tilde-major", "x-patch", "star", "gt-partial", "lte-partial", "hyphen-partial-high", "hyphen-partial-low", "spaced-operators", "union"],
)
def test_desugaring(text, expected):
    assert Range(text).range == expected


@pytest.mark.parametrize(
    "rng, version",
    [
        ("^1.2.3", "1.9.9"),
        ("^0.2.3", "0.2.9"),
        ("~1.2", "1.2.7"),
        (">=1.0.0 <2.0.0", "1.5.0"),
        ("1.x || 3.x", "3.1.4"),
        ("*", "0.0.1"),
        ("1.2.3 - 1.4", "1.4.99"),
        ("^1.2.3-beta.2", "1.2.3-beta.4"),
        ("^1.2.3-beta.2", "1.3.0"),
    ],
    ids=["caret", "caret-zero", "tilde", "bounds", "union", "star", "hyphen", "caret-pre-same-tuple", "caret-pre-release"],
)
def test_satisfied(rng, version):
    assert satisfies(version, rng)


@pytest.mark.parametrize(
    "rng, version",
    [
        ("^1.2.3", "2.0.0"),
        ("^0.2.3", "0.3.0"),
        ("^0.0.3", "0.0.4"),
        ("~1.2", "1.3.0"),
        ("<1.0.0", "1.0.0"),
        ("1.x || 3.x", "2.0.0"),
        (">=1.0.0 <2.0.0", "1.5.0-beta"),
        ("*", "1.0.0-rc.1"),
        (">=1.0.0", "1.1.0-alpha"),
    ],
    ids=["caret-next-major", "caret-zero-next-minor", "caret-zero-zero-next-patch", "tilde-next-minor", "lt", "union-gap", "bounds-prerelease", "star-prerelease", "gte-prerelease"],
)
def test_not_satisfied(rng, version):
    assert not satisfies(version, rng)


def test_include_prerelease_flag():
    assert satisfies("1.1.0-alpha", ">=1.0.0", include_prerelease=True)


def test_invalid_input():
    with pytest.raises(InvalidRange):
        Range(">=")
    with pytest.raises(InvalidRange):
        Range("1.2.3.4")
    assert not satisfies("1.0.0", "not a range")
    assert not satisfies("garbage", "*")


def test_range_equality_and_contains():
    assert Range("~1.2") == Range("1.2.x")
    assert "1.2.5" in Range("~1.2")


def test_lower_bounds():
    assert [str(v) for v in Range("^1.2.3 || >2.0.0 <3").lower_bounds()] == ["1.2.3", "2.0.1"]
