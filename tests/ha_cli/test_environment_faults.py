"""`ha eval`, `ha train` and `ha tasks validate` name each environment fault with its cause, one line
each, and count them apart from the other masked episodes; a healthy run prints none of it.

The broken environment is real: `ha` runs in a venv that imports its packages through a `.pth` line
naming a directory no sandbox shows, so inside the local sandbox the test command's `python` cannot
import pytest, with the gold patch and at base alike; in Docker, the task's image has no pytest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ha_envs.loaders import load_suite
from tests.conftest import require_bwrap, task_row
from tests.ha_envs.broken_envs import NO_PYTEST, borrowing_venv, broken_image

HA = Path(sys.executable).with_name("ha")
ROOT = Path(__file__).resolve().parents[2]
TASK = ["--suite", "mini", "--instances", "mini__ttl_cache"]
CAUSE = "the test runner failed to import what it needs ({python}: No module named pytest), with the patch and at base alike"


@pytest.fixture(scope="module")
def broken_python(tmp_path_factory):
    require_bwrap()
    return borrowing_venv(tmp_path_factory.mktemp("ha-venv") / "venv") / "bin" / "python"


def _ha(python, *args, timeout=600):
    proc = subprocess.run([str(python), str(HA), *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout, proc.stderr


def test_eval_names_the_fault_and_counts_it(broken_python, tmp_path):
    rc, out, err = _ha(broken_python, "eval", *TASK, "--policy", "oracle", "--no-progress", "--out", str(tmp_path / "o"))
    assert rc == 0, err
    assert "1 episodes masked" in out and "environment fault" not in out  # stdout keeps the table
    assert err.splitlines()[-2:] == [f"environment fault: mini__ttl_cache run 1: {CAUSE.format(python=broken_python)}",
                                     "masked: 1, environment faults: 1 (runner_import: 1)"]
    rec = json.loads((tmp_path / "o" / "trajectories.jsonl").read_text().splitlines()[0])
    assert (rec["termination"], rec["mask_sample"], rec["grade"]["fault"]) == ("grading_error", True, "runner_import")


def test_a_healthy_eval_prints_no_fault(tmp_path):
    require_bwrap()
    rc, out, err = _ha(sys.executable, "eval", *TASK, "--policy", "oracle", "--no-progress", "--out", str(tmp_path / "o"))
    assert rc == 0 and "| 100.0 |" in out, err
    assert "environment fault" not in err and "masked:" not in err


def test_validate_names_the_fault_and_counts_it(broken_python):
    rc, out, err = _ha(broken_python, "tasks", "validate", *TASK)
    assert rc == 1
    assert "cause=environment" in out
    assert err.splitlines()[-3:] == [f"environment fault: mini__ttl_cache: {CAUSE.format(python=broken_python)}",
                                     "masked: 1, environment faults: 1 (runner_import: 1)",
                                     "0/1 tasks valid; invalid: mini__ttl_cache"]


def test_train_names_each_fault_and_counts_them(broken_python, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    # a fresh tiny model never submits; at one turn each episode is truncated and graded as it stands
    rc, out, err = _ha(broken_python, "train", *TASK, "--model", str(tmp_path / "m"), "--init-model", "qwen",
                       "--updates", "1", "--tasks-per-update", "1", "--group-size", "2", "--max-tokens", "16",
                       "--context-tokens", "8192", "--max-turns", "1", "--no-progress", "--out", str(tmp_path / "o"))
    assert rc == 0, err
    cause = CAUSE.format(python=broken_python)
    assert [l for l in err.splitlines() if l.startswith(("environment fault", "masked:"))] == [
        f"environment fault: mini__ttl_cache run 1: {cause}", f"environment fault: mini__ttl_cache run 2: {cause}",
        "masked: 2, environment faults: 2 (runner_import: 2)"]


def test_eval_in_docker_names_a_broken_image(tmp_path):
    from ha_envs.sandbox.docker import docker_client
    from tests.ha_envs.test_real_envs import require_docker

    require_docker()
    image = broken_image(docker_client(timeout=60), "harnessadapt/test:no-pytest", NO_PYTEST)
    task = next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")
    rows = tmp_path / "tasks.jsonl"
    rows.write_text(json.dumps(task_row(task, image=image)) + "\n")
    rc, out, err = _ha(sys.executable, "eval", "--jsonl", str(rows), "--sandbox", "docker", "--policy", "oracle",
                       "--no-progress", "--out", str(tmp_path / "o"))
    assert rc == 0, err
    assert err.splitlines()[-2:] == [
        "environment fault: mini__ttl_cache run 1: the test runner failed to import what it needs "
        "(/usr/bin/python: No module named pytest), with the patch and at base alike",
        "masked: 1, environment faults: 1 (runner_import: 1)"]
