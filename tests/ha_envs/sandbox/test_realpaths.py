"""Interpreters and toolchains reached through symlinks work inside the local sandbox: the bundled
``mini__ttl_cache``'s gold patch resolves with this project's venv behind a link into /tmp (issue 28:
it was graded 0, ``python: command not found``), and with a task venv under /tmp or behind a link."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ha_envs.grading.grader import Grader
from ha_envs.grading.sandboxes import local_sandbox_factory
from ha_envs.loaders import load_suite
from ha_envs.sandbox.local import LocalSandbox, LocalSandboxConfig
from ha_envs.sandbox.provision.realpaths import hidden_links, links_to, real_dirs, toolchain_prefixes
from tests.conftest import require_bwrap
from tests.ha_envs.broken_envs import runner_venv, through_link

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def ttl_cache():
    return next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")


def test_links_to_names_every_hop(tmp_path):
    real = tmp_path / "real"
    (real / "bin").mkdir(parents=True)
    (tmp_path / "mid").symlink_to("real")  # relative
    (tmp_path / "top").symlink_to(tmp_path / "mid")
    assert links_to(tmp_path / "top" / "bin") == [(str(tmp_path / "mid"), str(real)), (str(tmp_path / "top"), str(real))]
    assert links_to(real / "bin") == []
    assert real_dirs([str(tmp_path / "top" / "bin"), str(real / "bin"), str(tmp_path / "nothing")]) == [str(real / "bin")]
    # a link under a directory the sandbox shows is shown with it; one elsewhere must be made
    assert hidden_links([str(tmp_path / "top")], shown=[str(tmp_path)]) == []
    assert hidden_links([str(tmp_path / "top")], shown=[str(real)]) == [(str(tmp_path / "mid"), str(real)),
                                                                       (str(tmp_path / "top"), str(real))]


def test_toolchain_prefixes_are_real(tmp_path):
    prefix = tmp_path / "opt" / "go"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "go").write_text("#!/bin/sh\n")
    (prefix / "bin" / "go").chmod(0o755)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "go").symlink_to(prefix / "bin" / "go")
    assert toolchain_prefixes([str(tmp_path / "bin")], ("go",)) == [str(prefix)]


def test_gold_resolves_with_this_venv_behind_a_link_into_tmp(ttl_cache, tmp_path):
    """The issue's layout: the project's venv reached through a symlink in /tmp; the grader runs in
    that interpreter (sys.prefix is the link) and the sandbox picks `python` from sys.prefix/bin."""
    require_bwrap()
    link = through_link(Path(os.path.realpath(sys.prefix)), tmp_path / "venv-link")
    script = ("import json, sys\n"
              "from ha_envs.loaders import load_suite\n"
              "from ha_envs.grading.grader import Grader\n"
              "from ha_envs.sandbox.local import LocalSandbox\n"
              "t = next(t for t in load_suite('mini') if t.instance_id == 'mini__ttl_cache')\n"
              "r = Grader().grade(t, t.gold_patch)\n"
              "s = LocalSandbox(t)\n"
              "ask = 'python -c \"import sys; print(sys.prefix)\"; command -v python; '\n"
              "ask += sys.prefix + '/bin/python -c \"import sys; print(sys.prefix)\"'\n"
              "seen = s.run(ask).output.split()\n"
              "s.close()\n"
              "print(json.dumps({'prefix': sys.prefix, 'status': r.status, 'reward': r.reward, 'seen': seen}))\n")
    proc = subprocess.run([str(link / "bin" / "python"), "-c", script], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["prefix"] == str(link)
    assert (got["status"], got["reward"]) == ("resolved", 1.0)
    # inside, `python` is the venv's, by its real path; the link's path resolves there too
    real = os.path.realpath(sys.prefix)
    assert got["seen"] == [real, f"{real}/bin/python", str(link)]


@pytest.mark.parametrize("through", ["real path", "link"])
def test_gold_resolves_with_a_task_venv_under_tmp(ttl_cache, tmp_path, through):
    require_bwrap()
    venv = runner_venv(tmp_path / "venv")
    env = through_link(venv, tmp_path / "venv-link") if through == "link" else venv
    assert str(env).startswith("/tmp/")
    config = LocalSandboxConfig(python_env=str(env))
    box = LocalSandbox(ttl_cache, config=config)
    try:  # the shell's python is the task venv's, not the next one on PATH
        assert box.run("python -c 'import sys; print(sys.prefix)'").output.split() == [str(venv)]
    finally:
        box.close()
    report = Grader(local_sandbox_factory(config)).grade(ttl_cache, ttl_cache.gold_patch)
    assert (report.status, report.reward) == ("resolved", 1.0)


def test_docker_env_images_copy_a_venv_behind_a_link_where_it_is(tmp_path):
    """What ``images.env_image`` does with a task's venv: the real directory goes into the image at its
    real path (tarring the link copied a dangling link) and the link is made again there."""
    from ha_envs.sandbox.docker import docker_client
    from ha_envs.sandbox.provision.images import BASE_REPO, BASE_SUITE, _building, copy_dirs_into
    from ha_envs.sandbox.provision.realpaths import venv_paths
    from tests.ha_envs.test_real_envs import require_docker

    require_docker()
    real = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(real)], check=True)  # the image has it too
    link = through_link(real, tmp_path / "cache-link")
    with _building(docker_client(timeout=60), f"{BASE_REPO}:{BASE_SUITE}") as c:
        assert copy_dirs_into(c, [str(link), *venv_paths(link)]) == [str(real)]
        for exe in (link, real):
            code, out = c.exec_run([f"{exe}/bin/python", "-c", "import sys; print(sys.prefix)"])
            assert (code, out.decode().strip()) == (0, str(exe))
        code, out = c.exec_run(["readlink", str(link)])
        assert out.decode().strip() == str(real)
