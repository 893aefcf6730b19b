"""`ha cache list` / `ha cache prune`: real snapshots made by the library, env entries laid out as the
builders leave them (an older format's record, a killed build's ``.tmp`` whose builder still holds
the lock), through the installed `ha` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ha_envs.sandbox.provision.cache import RECENT_S, current_formats
from ha_envs.loaders import load_suite
from ha_envs.sandbox.provision.workcopy import FORMAT_FILE, SNAPSHOT_FORMAT, mark_built, prepare_snapshot

HA = Path(sys.executable).with_name("ha")


def ha(cache: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(HA), "cache", *args, "--cache-dir", str(cache)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, HA_CACHE_DIR=str(cache)))


def listing(cache: Path) -> dict[str, dict]:
    proc = ha(cache, "list", "--json")
    assert proc.returncode == 0, proc.stderr
    return {Path(e["path"]).name: e for e in json.loads(proc.stdout)}


def env_entry(cache: Path, name: str, kind: str, fmt: int, ready: bool = True, kb: int = 64) -> Path:
    """An env directory as pyenv / nodeenv leave one: its files, format record, ready marker, lock."""
    path = cache / "envs" / ("layers/" if kind == "python-layer" else "") / name
    (path / "lib").mkdir(parents=True)
    (path / "lib" / "blob").write_bytes(os.urandom(kb * 1024))
    mark_built(path, kind, fmt)
    if ready:
        (path / ".ha-ready").write_text("x")
    path.with_name(name + ".lock").touch()
    return path


def aged(path: Path, days: float) -> None:
    t = time.time() - days * 86400
    os.utime(path, (t, t))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("HA_CACHE_DIR", str(root))
    return root


def test_list_names_each_entry_with_its_kind_format_and_status(cache):
    tasks = {t.instance_id: t for t in load_suite("mini")}
    snap = prepare_snapshot(tasks["mini__ttl_cache"])
    assert json.loads((snap.path / ".git" / FORMAT_FILE).read_text()) == {"kind": "snapshot", "format": SNAPSHOT_FORMAT}
    fmt = current_formats()["python-env"]
    env_entry(cache, "acme-3.9-aaaa", "python-env", fmt)
    env_entry(cache, "acme-3.9-bbbb", "python-env", fmt - 1)
    env_entry(cache, "acme-3.9-cccc", "python-layer", fmt)
    (cache / "envs" / "acme-3.9-dddd.tmp").mkdir()
    legacy = env_entry(cache, "acme-3.9-ffff", "python-env", fmt)
    (legacy / FORMAT_FILE).unlink()  # built before builders recorded their format

    got = listing(cache)
    assert got[snap.path.name]["kind"] == "snapshot" and got[snap.path.name]["status"] == "ok"
    assert got[snap.path.name]["bytes"] > 0
    assert (got["acme-3.9-aaaa"]["status"], got["acme-3.9-aaaa"]["format"]) == ("ok", fmt)
    assert got["acme-3.9-bbbb"]["status"] == "stale" and f"format {fmt - 1}" in got["acme-3.9-bbbb"]["why"]
    assert got["acme-3.9-cccc"]["kind"] == "python-layer"
    assert got["acme-3.9-dddd.tmp"]["status"] == "partial"
    assert got["acme-3.9-aaaa"]["bytes"] >= 64 * 1024
    assert (got["acme-3.9-ffff"]["status"], got["acme-3.9-ffff"]["format"]) == ("ok", None)
    assert "not recorded" in got["acme-3.9-ffff"]["why"]
    text = ha(cache, "list").stdout
    assert "6 entries" in text and "stale 1" in text and "partial 1" in text
    # --stale leaves an entry whose format it cannot know
    assert [Path(e["path"]).name for e in json.loads(ha(cache, "prune", "--stale", "--json").stdout)["removed"]] \
        == ["acme-3.9-bbbb"] and legacy.is_dir()


def test_prune_stale_and_partial_spares_what_a_builder_holds(cache):
    fmt = current_formats()["python-env"]
    keep = env_entry(cache, "acme-3.9-aaaa", "python-env", fmt)
    old = env_entry(cache, "acme-3.9-bbbb", "python-env", fmt - 1)
    building = cache / "envs" / "acme-3.9-eeee.tmp"
    building.mkdir(parents=True)
    (cache / "envs" / "acme-3.9-eeee.lock").touch()
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time\n"
                               f"f = open({str(cache / 'envs' / 'acme-3.9-eeee.lock')!r}, 'w')\n"
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        dry = ha(cache, "prune", "--stale", "--partial", "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        assert [Path(e["path"]).name for e in json.loads(dry.stdout)["removed"]] == ["acme-3.9-bbbb"]
        assert old.is_dir()  # a dry run removes nothing

        out = json.loads(ha(cache, "prune", "--stale", "--partial", "--json").stdout)
        assert [Path(e["path"]).name for e in out["removed"]] == ["acme-3.9-bbbb"] and out["freed_bytes"] >= 64 * 1024
        assert [s["reason"] for s in out["skipped"]] == ["a builder holds its lock"]
        assert not old.exists() and keep.is_dir() and building.is_dir()
    finally:
        holder.kill()
        holder.wait()
    # the builder is gone (killed): its leftover goes now
    out = json.loads(ha(cache, "prune", "--partial", "--json").stdout)
    assert [Path(e["path"]).name for e in out["removed"]] == ["acme-3.9-eeee.tmp"] and not building.exists()
    assert keep.is_dir()


def test_prune_by_age_and_size_takes_the_least_recently_used_and_never_a_recent_one(cache):
    fmt = current_formats()["python-env"]
    a = env_entry(cache, "acme-3.9-a", "python-env", fmt, kb=256)
    b = env_entry(cache, "acme-3.9-b", "python-env", fmt, kb=256)
    c = env_entry(cache, "acme-3.9-c", "python-env", fmt, kb=256)
    aged(a, 9), aged(b, 5), aged(c, 3)
    recent = env_entry(cache, "acme-3.9-r", "python-env", fmt, kb=1024)
    aged(recent, RECENT_S / 2 / 86400)

    out = json.loads(ha(cache, "prune", "--unused-days", "7", "--json").stdout)
    assert [Path(e["path"]).name for e in out["removed"]] == ["acme-3.9-a"]

    # what is left: b, c (about 260 KB each) and the recent one (about 1 MB); a cap below all of them
    # takes the oldest first and stops at the recent one however far over the cap it is
    sizes = {n: e["bytes"] for n, e in listing(cache).items()}
    cap = (sizes["acme-3.9-c"] + sizes["acme-3.9-r"] + 4096) / 1024 ** 3  # a page over: no rounding bites
    out = json.loads(ha(cache, "prune", "--max-gb", f"{cap:.12f}", "--json").stdout)
    assert [Path(e["path"]).name for e in out["removed"]] == ["acme-3.9-b"]
    out = json.loads(ha(cache, "prune", "--max-gb", "0", "--json").stdout)
    assert [Path(e["path"]).name for e in out["removed"]] == ["acme-3.9-c"] and recent.is_dir()


def test_an_entry_used_again_is_no_longer_unused(cache):
    task = [t for t in load_suite("mini") if t.instance_id == "mini__url_router"][0]
    snap = prepare_snapshot(task)
    aged(snap.path, 30)
    assert listing(cache)[snap.path.name]["used"] < time.time() - 29 * 86400
    prepare_snapshot(task)  # a sandbox of the task, or a grading, asks for it again
    assert listing(cache)[snap.path.name]["used"] > time.time() - 60
    out = json.loads(ha(cache, "prune", "--unused-days", "7", "--json").stdout)
    assert out["removed"] == [] and snap.path.is_dir()


def test_prune_refuses_without_a_rule_and_with_a_negative_one(cache):
    proc = ha(cache, "prune")
    assert proc.returncode == 2 and "say what to prune" in proc.stderr
    proc = ha(cache, "prune", "--unused-days", "-1")
    assert proc.returncode == 2 and "unused_days must be 0 or more" in proc.stderr
    proc = ha(cache, "prune", "--max-gb", "-1")
    assert proc.returncode == 2 and "max_bytes must be 0 or more" in proc.stderr


def test_lock_of_a_stale_entry_stays_for_a_waiting_builder(cache):
    old = env_entry(cache, "acme-3.9-s", "python-env", current_formats()["python-env"] - 1)
    lock = old.with_name(old.name + ".lock")
    assert ha(cache, "prune", "--stale").returncode == 0
    assert not old.exists() and lock.is_file()


def test_prune_with_images_takes_the_docker_images_made_from_what_went(cache):
    """`ha cache prune --images`: the snapshot image of an entry the age rule removes goes with it
    (the dry run names both and removes neither); an image made from a kept entry stays."""
    from ha_envs.sandbox.docker import docker_client
    from ha_envs.sandbox.provision.images import image_exists, snapshot_image
    from tests.ha_envs.test_real_envs import require_docker

    require_docker()  # the base image, built (or a failure in CI, a skip elsewhere)
    client = docker_client(timeout=30)
    tasks = {t.instance_id: t for t in load_suite("mini")}
    old_tag, old = snapshot_image(client, tasks["mini__ttl_cache"])
    new_tag, new = snapshot_image(client, tasks["mini__url_router"])
    aged(old.path, 30)

    dry = json.loads(ha(cache, "prune", "--unused-days", "7", "--images", "--dry-run", "--json").stdout)
    assert [e["path"] for e in dry["removed"]] == [str(old.path)]
    tags = [t for o in dry["images"]["removed"] for t in o["tags"]]
    assert old_tag in tags and new_tag not in tags
    assert old.path.is_dir() and image_exists(client, old_tag)

    out = json.loads(ha(cache, "prune", "--unused-days", "7", "--images", "--json").stdout)
    assert [e["path"] for e in out["removed"]] == [str(old.path)] and not old.path.exists()
    assert old_tag in [t for o in out["images"]["removed"] for t in o["tags"]]
    assert not image_exists(client, old_tag) and image_exists(client, new_tag) and new.path.is_dir()
    client.images.remove(new_tag)
