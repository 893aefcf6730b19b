import pytest

from iniconf import (
    Config,
    InterpolationDepthError,
    InterpolationMissingOptionError,
    InterpolationSyntaxError,
)

BASIC = """
[DEFAULT]
home = /home/me

[paths]
root = /opt/app
bin = ${root}/bin
data = ${home}/data

[server]
host = localhost
port = 8080
url = http://${host}:${port}/
binary = ${paths:bin}/server
"""


def test_same_section_reference():
    cfg = Config.from_string(BASIC)
    assert cfg.get("paths", "bin") == "/opt/app/bin"
    assert cfg.get("server", "url") == "http://localhost:8080/"


def test_reference_to_default():
    cfg = Config.from_string(BASIC)
    assert cfg.get("paths", "data") == "/home/me/data"


def test_cross_section_reference_without_nested_refs():
    cfg = Config.from_string("[a]\nx = 1\n[b]\ny = ${a:x}2\n")
    assert cfg.get("b", "y") == "12"


def test_cross_section_reference_to_default_section():
    cfg = Config.from_string(BASIC + "\n[misc]\nwhere = ${DEFAULT:home}\n")
    assert cfg.get("misc", "where") == "/home/me"


def test_dollar_escape():
    cfg = Config.from_string("[s]\nprice = $$5\nmix = $${x}\n")
    assert cfg.get("s", "price") == "$5"
    assert cfg.get("s", "mix") == "${x}"


def test_raw_get_skips_interpolation():
    cfg = Config.from_string(BASIC)
    assert cfg.get("paths", "bin", raw=True) == "${root}/bin"


def test_interpolation_can_be_disabled():
    cfg = Config.from_string(BASIC, interpolation=False)
    assert cfg.get("server", "url") == "http://${host}:${port}/"


def test_missing_reference():
    cfg = Config.from_string("[s]\nx = ${nope}\n")
    with pytest.raises(InterpolationMissingOptionError) as info:
        cfg.get("s", "x")
    assert info.value.reference == "nope"
    assert info.value.ref_section == "s"


def test_missing_section_in_reference():
    cfg = Config.from_string("[s]\nx = ${other:y}\n")
    with pytest.raises(InterpolationMissingOptionError) as info:
        cfg.get("s", "x")
    assert info.value.ref_section == "other"


def test_self_reference_hits_depth_limit():
    cfg = Config.from_string("[s]\nx = ${x}\n")
    with pytest.raises(InterpolationDepthError) as info:
        cfg.get("s", "x")
    assert info.value.max_depth == 10


@pytest.mark.parametrize(
    "value",
    ["$x", "${}", "${a:b:c}", "${:x}", "trailing $"],
    ids=["bare_dollar", "empty_ref", "two_colons", "no_section", "trailing_dollar"],
)
def test_syntax_errors(value):
    cfg = Config.from_string("[s]\nx = 1\nv = " + value + "\n")
    with pytest.raises(InterpolationSyntaxError):
        cfg.get("s", "v")


def test_reference_option_name_is_case_insensitive():
    cfg = Config.from_string("[s]\nName = bob\ngreeting = hi ${NAME}\n")
    assert cfg.get("s", "greeting") == "hi bob"
