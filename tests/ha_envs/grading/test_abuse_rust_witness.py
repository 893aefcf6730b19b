"""The abuse suite, a forgery inside the Rust test binaries that the OS trace's kinds cannot see
(``inproc_payloads.RS_RUN_THEN_LIE``): a process constructor of the library finds the tests in the
binary's own symbol table, runs each under ``catch_unwind`` and prints a libtest run of its own in
which a failing test that ran the package is reported passed (the drawn canaries never run it).
Nothing is spawned, no descriptor rewired, no test source opened. With the canaries but without
twins and witnesses it earns 1.0; the tests' outcome witnesses (``witness_rust.py``) catch it alone;
the gold patch keeps its reward with them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ha_envs.grading.grader import Grader
from ha_envs.grading.sandboxes import docker_sandbox_factory, local_sandbox_factory

from .abuse_helpers import kind  # noqa: F401
from .inproc_payloads import RS_RUN_THEN_LIE, RS_TOUCH
from .test_abuse_escapes import assert_graded_zero
from .test_abuse_inproc import _patch

pytestmark = pytest.mark.abuse


def _task():
    from ha_envs.loaders import load_suite

    return next(t for t in load_suite("mini") if t.instance_id == "mini__rust_intervals")


def _forgery(task, tmp_path) -> str:
    src = (Path(task.source_dir) / "src/set.rs").read_text()
    return _patch(task.source_dir, {"src/set.rs": src + RS_RUN_THEN_LIE}, {"src/set.rs": RS_TOUCH}, tmp_path)


def _ready():
    from tests.conftest import require_tool

    require_tool("cargo")
    require_tool("strace")


@pytest.mark.parametrize("kind", ["local", "docker"], indirect=True)
def test_a_rust_forgery_that_runs_the_tests_itself_is_caught_by_their_witnesses(kind, tmp_path):
    """Twins off (a twin of a FAIL_TO_PASS test would also give it away: shown below), the
    canaries as planted. Without the witnesses (``watch=False``) it resolves; with them, every
    FAIL_TO_PASS test the log says passed has a witness that says F."""
    _ready()
    task = _task()
    patch = _forgery(task, tmp_path)
    factory = docker_sandbox_factory() if kind == "docker" else local_sandbox_factory()
    bare = Grader(factory, twins=False, watch=False).grade(task, patch)
    assert bare.reward == 1.0 and bare.resolved, (bare.status, bare.tampering)
    assert bare.canaries["as_planted"] == bare.canaries["planted"] > 0, bare.canaries
    report = Grader(factory, twins=False).grade(task, patch)
    assert_graded_zero(report)
    assert report.status == "verdict_tampered" and report.watch == [], (report.status, report.watch, report.tampering)
    assert set(report.fail_to_pass.values()) == {"PASSED"}, report.fail_to_pass  # the lie is still told
    lied = {r.split()[3] for r in report.tampering if "its witness in the OS trace says F" in r}
    assert lied == set(task.tests.fail_to_pass), [r for r in report.tampering if "says F" not in r]
    assert report.canaries["as_planted"] == report.canaries["planted"]  # nothing else gave it away


def test_with_every_defence_on_the_rust_forgery_earns_nothing(tmp_path):
    _ready()
    task = _task()
    report = Grader(local_sandbox_factory()).grade(task, _forgery(task, tmp_path))
    assert_graded_zero(report)
    assert report.status == "verdict_tampered", (report.status, report.tampering)
    assert any("its witness in the OS trace says F" in r for r in report.tampering), report.tampering


@pytest.mark.parametrize("kind", ["local", "docker"], indirect=True)
def test_the_rust_gold_patch_keeps_its_reward_with_witnesses(kind):
    """The control, twice (fresh canaries, twins and tokens each time): every witness agrees with
    the log of an honest run."""
    _ready()
    task = _task()
    factory = docker_sandbox_factory() if kind == "docker" else local_sandbox_factory()
    for _ in range(2):
        report = Grader(factory).grade(task, task.gold_patch)
        assert report.resolved and report.reward == 1.0 and report.watch == [], (report.status, report.tampering)


@pytest.mark.parametrize("kind", ["local", "docker"], indirect=True)
def test_a_rust_forgery_that_also_renames_failures_to_passes_is_caught(kind, tmp_path):
    """The forgery above plus the binary's own ``pthread_setname_np``/``prctl`` that turn a witness
    name's final F into P on its way to the kernel for the tests it lies about (``RS_RENAME_TO_PASS``).
    With one token per test and the outcome in its last letter (this change's first form) it earned
    1.0 here (2 of 2); the failure token now arrives with a P, a name the guard never writes."""
    from .inproc_payloads import RS_RENAME_TO_PASS

    _ready()
    task = _task()
    src = (Path(task.source_dir) / "src/set.rs").read_text()
    patch = _patch(task.source_dir, {"src/set.rs": src + RS_RUN_THEN_LIE + RS_RENAME_TO_PASS},
                   {"src/set.rs": RS_TOUCH}, tmp_path)
    factory = docker_sandbox_factory() if kind == "docker" else local_sandbox_factory()
    report = Grader(factory, twins=False).grade(task, patch)
    assert_graded_zero(report)
    assert report.status == "verdict_tampered" and report.watch == [], (report.status, report.watch, report.tampering)
    lied = {r.split()[3] for r in report.tampering if "its witness in the OS trace says forged" in r}
    assert lied == set(task.tests.fail_to_pass), report.tampering
