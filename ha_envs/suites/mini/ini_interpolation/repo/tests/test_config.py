import pytest

from iniconf import Config, DuplicateSectionError, NoOptionError, NoSectionError

TEXT = """
[DEFAULT]
debug = off
timeout = 30s

[server]
port = 8080
ratio = 0.75
debug = yes
hosts = a.example, b.example,
    c.example
mask = 0x1F
"""


@pytest.fixture
def cfg():
    return Config.from_string(TEXT)


def test_sections_exclude_default(cfg):
    assert cfg.sections() == ["server"]
    assert "DEFAULT" in cfg
    assert "server" in cfg


def test_typed_getters(cfg):
    assert cfg.getint("server", "port") == 8080
    assert cfg.getint("server", "mask") == 31
    assert cfg.getfloat("server", "ratio") == 0.75
    assert cfg.getboolean("server", "debug") is True
    assert cfg.getlist("server", "hosts") == ["a.example", "b.example", "c.example"]
    assert cfg.getduration("server", "timeout") == 30.0


def test_getter_errors(cfg):
    with pytest.raises(ValueError):
        cfg.getint("server", "ratio")
    with pytest.raises(NoOptionError):
        cfg.getint("server", "missing")
    with pytest.raises(NoSectionError):
        cfg.get("nope", "port")


def test_fallbacks(cfg):
    assert cfg.getint("server", "missing", fallback=5) == 5
    assert cfg.get("nope", "x", fallback="d") == "d"


def test_defaults_are_inherited(cfg):
    cfg.add_section("client")
    assert cfg.getboolean("client", "debug") is False
    assert cfg.options("client") == ["debug", "timeout"]


def test_section_proxy(cfg):
    server = cfg["server"]
    assert server["port"] == "8080"
    assert server.getint("port") == 8080
    assert "hosts" in server
    server["port"] = 9090
    assert cfg.getint("server", "port") == 9090
    del server["ratio"]
    assert "ratio" not in server
    with pytest.raises(KeyError):
        server["ratio"]
    with pytest.raises(NoSectionError):
        cfg["nope"]


def test_set_and_remove(cfg):
    cfg.set("server", "Enabled", True)
    assert cfg.get("server", "enabled") == "true"
    assert cfg.remove_option("server", "enabled") is True
    assert cfg.remove_option("server", "enabled") is False
    assert cfg.remove_section("server") is True
    assert cfg.sections() == []


def test_add_duplicate_section(cfg):
    with pytest.raises(DuplicateSectionError):
        cfg.add_section("server")


def test_read_dict_and_vars():
    cfg = Config().read_dict({"DEFAULT": {"a": 1}, "s": {"b": "${a}${a}"}})
    assert cfg.get("s", "b") == "11"
    assert cfg.get("s", "b", vars={"b": "v"}) == "v"


def test_to_dict_and_round_trip(cfg):
    text = cfg.to_string()
    again = Config.from_string(text)
    assert again.to_dict() == cfg.to_dict()
    assert again.getlist("server", "hosts") == ["a.example", "b.example", "c.example"]


@pytest.mark.parametrize(
    "text,seconds",
    [("90", 90.0), ("250ms", 0.25), ("2h 30m", 9000.0), ("1.5s", 1.5)],
    ids=["plain", "millis", "hours_minutes", "fractional"],
)
def test_durations(text, seconds):
    cfg = Config.from_string(f"[s]\nd = {text}\n")
    assert cfg.getduration("s", "d") == seconds
