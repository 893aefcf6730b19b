"""Snapshots: history ends at the base commit, nothing from the future survives."""

from __future__ import annotations

import subprocess

from ha_envs.sandbox.provision.workcopy import find_mirror, prepare_snapshot
from ha_envs.task import Task, TestSpec


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_snapshot_of_a_repo_drops_refs_reflog_and_future_objects(tmp_path, monkeypatch):
    up = tmp_path / "mirrors" / "acme+widget" / "repo"
    up.mkdir(parents=True)
    git(up, "init", "-q", "-b", "main")
    (up / "a.py").write_text("x = 1\n")
    git(up, "add", "-A")
    git(up, "commit", "-qm", "base")
    base = git(up, "rev-parse", "HEAD")
    (up / "a.py").write_text("x = 2  # THE FIX\n")
    git(up, "commit", "-qam", "fix")
    future = git(up, "rev-parse", "HEAD")
    git(up, "tag", "v1")
    git(up, "branch", "feature")
    monkeypatch.setenv("HA_REPOS_DIR", str(tmp_path / "mirrors"))
    assert find_mirror("acme/widget", None) == up
    task = Task(instance_id="acme__widget-1", benchmark="t", language="python", problem_statement="p",
                tests=TestSpec("", (), (), "true", "pytest"), repo="acme/widget", base_commit=base)
    snap = prepare_snapshot(task)
    assert snap.base_commit == base
    assert git(snap.path, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
    assert git(snap.path, "log", "--all", "--format=%H") == base
    assert subprocess.run(["git", "cat-file", "-e", future], cwd=snap.path).returncode != 0
    assert git(snap.path, "reflog") == "" and not (snap.path / ".git" / "logs").exists()
    assert "THE FIX" not in subprocess.run(["grep", "-r", "THE FIX", str(snap.path)], capture_output=True, text=True).stdout
    # built once, reused after
    assert prepare_snapshot(task).path == snap.path


def test_local_snapshot_is_one_deterministic_commit(tiny_task, tmp_path, monkeypatch):
    a = prepare_snapshot(tiny_task)
    monkeypatch.setenv("HA_CACHE_DIR", str(tmp_path / "other-cache"))
    b = prepare_snapshot(tiny_task)
    assert a.path != b.path and a.base_commit == b.base_commit
    assert git(b.path, "rev-list", "--all", "--count") == "1"


def test_mirror_layout_owner_name_git(tmp_path):
    (tmp_path / "acme" / "widget.git").mkdir(parents=True)
    assert find_mirror("acme/widget", tmp_path) == tmp_path / "acme" / "widget.git"
    assert find_mirror("acme/other", tmp_path) is None


def test_a_mirror_missing_old_objects_still_gives_the_base_tree(tmp_path, monkeypatch, caplog):
    """Fetched mirrors can lack large objects of the past; the snapshot keeps the base tree (one
    commit, with a warning) instead of failing the task."""
    up = tmp_path / "mirrors" / "acme+old" / "repo"
    up.mkdir(parents=True)
    git(up, "init", "-q", "-b", "main")
    (up / "big.bin").write_text("an old large file\n" * 100)
    git(up, "add", "-A")
    git(up, "commit", "-qm", "old")
    blob = git(up, "rev-parse", "HEAD:big.bin")
    git(up, "rm", "-q", "big.bin")
    (up / "a.py").write_text("x = 1\n")
    git(up, "add", "-A")
    git(up, "commit", "-qm", "base")
    base = git(up, "rev-parse", "HEAD")
    (up / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # the mirror lost it
    monkeypatch.setenv("HA_REPOS_DIR", str(tmp_path / "mirrors"))
    task = Task(instance_id="acme__old-1", benchmark="t", language="python", problem_statement="p",
                tests=TestSpec("", (), (), "true", "pytest"), repo="acme/old", base_commit=base)
    with caplog.at_level("WARNING"):
        snap = prepare_snapshot(task)
    assert "history is incomplete" in caplog.text
    assert (snap.path / "a.py").read_text() == "x = 1\n" and not (snap.path / "big.bin").exists()
    assert git(snap.path, "rev-list", "--count", "HEAD") == "1"
    assert git(snap.path, "status", "--porcelain") == ""
    assert snap.base_commit == git(snap.path, "rev-parse", "HEAD")


def test_submodules_come_from_mirrors_and_a_build_needs_no_network(tmp_path, monkeypatch):
    """jq's build starts with `git submodule update --init` (oniguruma, on GitHub). With a mirror of
    the submodule, the snapshot has it checked out at the recorded commit, and the build step, run
    offline by the grader, has nothing to fetch."""
    from ha_envs.grading.grader import Grader
    from ha_envs.grading.sandboxes import local_sandbox_factory
    from tests.conftest import require_bwrap

    require_bwrap()
    lib = tmp_path / "mirrors" / "acme+lib" / "repo"
    lib.mkdir(parents=True)
    git(lib, "init", "-q", "-b", "main")
    (lib / "VERSION").write_text("1\n")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "one")
    (lib / "VERSION").write_text("2\n")
    git(lib, "commit", "-qam", "two")  # the superproject records this commit
    up = tmp_path / "mirrors" / "acme+app" / "repo"
    up.mkdir(parents=True)
    git(up, "init", "-q", "-b", "main")
    (up / "run.sh").write_text("#!/bin/sh\n[ \"$(cat modules/lib/VERSION)\" = 2 ] && echo '[ok]: lib at 2' "
                               "|| echo '[err]: lib at 2'\n")
    git(up, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "modules/lib")
    git(up, "config", "-f", ".gitmodules", "submodule.modules/lib.url", "https://github.com/acme/lib.git")
    git(up, "add", "-A")
    git(up, "commit", "-qm", "base")
    base = git(up, "rev-parse", "HEAD")
    monkeypatch.setenv("HA_REPOS_DIR", str(tmp_path / "mirrors"))
    task = Task(instance_id="acme__app-1", benchmark="t", language="c", problem_statement="p",
                tests=TestSpec("", ("lib at 2",), (), "sh run.sh", "swebench:redis/redis",
                               build_command="git submodule update --init", timeout_s=120),
                repo="acme/app", base_commit=base, gold_patch="")
    snap = prepare_snapshot(task)
    assert (snap.path / "modules" / "lib" / "VERSION").read_text() == "2\n"
    assert git(snap.path, "status", "--porcelain") == ""
    report = Grader(local_sandbox_factory(network=False)).grade(task, "")
    assert report.status == "resolved", report.error or report.log_tail
    # without the mirror the same build has to fetch, and offline it cannot: named, not a crash
    monkeypatch.setenv("HA_REPOS_DIR", str(tmp_path / "elsewhere"))
    (tmp_path / "elsewhere" / "acme+app").mkdir(parents=True)
    subprocess.run(["cp", "-a", str(up), str(tmp_path / "elsewhere" / "acme+app" / "repo")], check=True)
    bare = Task(**{**task.__dict__, "instance_id": "acme__app-2"})
    report = Grader(local_sandbox_factory(network=False)).grade(bare, "")
    assert report.status == "build_failed" and "github.com" in report.error


def test_a_packed_snapshot_installs_elsewhere_as_a_copy(tiny_task, tmp_path, monkeypatch):
    """A snapshot moved to a machine that lacks it (another cache): the same tree and base commit,
    marked copied; the builder's own is marked built; a truncated or unsafe archive is a named error
    that leaves nothing behind."""
    import hashlib
    import io
    import tarfile

    import pytest

    from ha_envs.sandbox.provision.workcopy import (install_snapshot, pack_snapshot, snapshot_dest, snapshot_key,
                                            snapshot_origin)
    from ha_envs.task import TaskError

    built = prepare_snapshot(tiny_task)
    assert snapshot_origin(built.path) == "built"
    data = pack_snapshot(built.path)
    key = snapshot_key(tiny_task)
    monkeypatch.setenv("HA_CACHE_DIR", str(tmp_path / "other-node"))
    assert not snapshot_dest(tiny_task, key).exists()
    digest = hashlib.sha256(data).hexdigest()
    copy = install_snapshot(tiny_task, key, data, digest)
    assert copy.path == snapshot_dest(tiny_task, key) and copy.path != built.path
    assert copy.base_commit == built.base_commit and snapshot_origin(copy.path) == "copied"
    assert (copy.path / "calc.py").read_text() == (built.path / "calc.py").read_text()
    assert git(copy.path, "rev-parse", "HEAD") == built.base_commit and git(copy.path, "status", "--porcelain") == ""
    assert prepare_snapshot(tiny_task).path == copy.path  # found, not rebuilt
    assert install_snapshot(tiny_task, key, b"anything", "0").path == copy.path  # already there: kept

    other = Task(**{**tiny_task.__dict__, "instance_id": "tiny__other"})
    with pytest.raises(TaskError, match="cannot be installed"):
        install_snapshot(other, key, data[: len(data) // 3], digest)
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w") as tar:
        info = tarfile.TarInfo("../../escaped")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    with pytest.raises(TaskError, match="cannot be installed"):
        install_snapshot(other, key, evil.getvalue(), hashlib.sha256(evil.getvalue()).hexdigest())
    with pytest.raises(TaskError, match="holds no prepared snapshot"):
        empty = io.BytesIO()
        tarfile.open(fileobj=empty, mode="w").close()
        install_snapshot(other, key, empty.getvalue(), hashlib.sha256(empty.getvalue()).hexdigest())
    assert not snapshot_dest(other, key).exists() and not (tmp_path / "escaped").exists()
    assert not [p for p in snapshot_dest(other, key).parent.iterdir() if p.name.startswith(".copy-")]
