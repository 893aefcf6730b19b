"""Grading: parsers, patch filtering, verdicts, broken patches and tampering."""

from __future__ import annotations

import dataclasses

import pytest

from ha_envs.grading import Grader, GradingError, get_parser
from ha_envs.grading.patch_rules import filter_patch
from ha_envs.grading.patchfile import split_patch
from ha_envs.task import patch_paths

PYTEST_LOG = """\
tests/test_a.py::test_x PASSED
=========================== short test summary info ============================
PASSED tests/test_a.py::test_x
PASSED tests/test_a.py::TestK::test_y[a-1]
FAILED tests/test_a.py::test_z - AssertionError: boom
ERROR tests/test_b.py::test_e - fixture 'db' not found
SKIPPED [1] tests/test_c.py:3: no reason
XFAIL tests/test_a.py::test_known - bug 12
XPASS tests/test_a.py::test_lucky
PASSED tests/test_a.py::test_z
"""


def test_pytest_parser_statuses_and_worst_wins():
    got = get_parser("pytest")(PYTEST_LOG)
    assert got == {
        "tests/test_a.py::test_x": "PASSED",
        "tests/test_a.py::TestK::test_y[a-1]": "PASSED",
        "tests/test_a.py::test_z": "FAILED",  # reported twice: the failure stands
        "tests/test_b.py::test_e": "ERROR",
        "tests/test_a.py::test_known": "XFAIL",
        "tests/test_a.py::test_lucky": "FAILED",
    }


def test_node_tap_parser_nesting_and_skip():
    log = """TAP version 13
# Subtest: escapes quotes
ok 1 - escapes quotes
  ---
  duration_ms: 0.5
  ...
# Subtest: suite
    # Subtest: inner works
    ok 1 - inner works
    # Subtest: inner breaks
    not ok 2 - inner breaks
not ok 2 - suite
# Subtest: later
ok 3 - later # SKIP not today
1..3
"""
    assert get_parser("node_tap")(log) == {
        "escapes quotes": "PASSED", "suite > inner works": "PASSED", "suite > inner breaks": "FAILED",
        "suite": "FAILED", "later": "SKIPPED",
    }


def test_go_parser_counts_unreported_started_tests_as_failed():
    log = """=== RUN   TestA
--- PASS: TestA (0.00s)
=== RUN   TestB
=== RUN   TestB/sub
    --- FAIL: TestB/sub (0.00s)
--- FAIL: TestB (0.00s)
=== RUN   TestPanics
panic: runtime error
FAIL	example.com/x	0.01s
"""
    assert get_parser("go_test")(log) == {"TestA": "PASSED", "TestB": "FAILED", "TestB/sub": "FAILED",
                                          "TestPanics": "FAILED"}


def test_cargo_parser():
    log = """running 3 tests
test tests::merges ... ok
test tests::splits ... FAILED
test slow ... ignored
test result: FAILED. 1 passed; 1 failed; 1 ignored
"""
    assert get_parser("cargo_test")(log) == {"tests::merges": "PASSED", "tests::splits": "FAILED", "slow": "SKIPPED"}


def test_unknown_parser_names_the_available_ones():
    with pytest.raises(KeyError, match="pytest"):
        get_parser("nope")


def test_split_and_filter_patch(tiny_task):
    both = tiny_task.gold_patch + tiny_task.tests.test_patch
    assert len(split_patch(both)) == 2
    kept, dropped, _ = filter_patch(both, tiny_task)
    assert dropped == ["tests/test_hidden.py"]
    assert patch_paths(kept) == ("calc.py",)
    conftest = "--- a/conftest.py\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+x\n"
    kept, dropped, _ = filter_patch(conftest, tiny_task)
    assert kept == "" and dropped == ["conftest.py"]


def test_gold_resolves_and_empty_does_not(tiny_task):
    g = Grader()
    gold = g.grade(tiny_task, tiny_task.gold_patch)
    assert gold.resolved and gold.status == "resolved" and gold.reward == 1.0
    assert gold.fail_to_pass == {"tests/test_hidden.py::test_clamp_high": "PASSED"}
    empty = g.grade(tiny_task, "")
    assert not empty.resolved and empty.applied_with == "empty"
    assert empty.fail_to_pass == {"tests/test_hidden.py::test_clamp_high": "FAILED"}
    assert empty.pass_to_pass["tests/test_visible.py::test_add"] == "PASSED"


def test_broken_patch_is_patch_failed_not_a_crash(tiny_task):
    report = Grader().grade(tiny_task, "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n-no such line\n+x\n")
    assert report.status == "patch_failed" and not report.resolved and report.error
    garbage = Grader().grade(tiny_task, "this is not a patch at all")
    assert garbage.status == "patch_failed"


def test_agent_cannot_flip_the_verdict_by_writing_the_hidden_tests(tiny_task):
    # the agent "fixes" nothing but plants a hidden-test file that passes, and a conftest that
    # turns every failure into a pass
    fake_hidden = ("diff --git a/tests/test_hidden.py b/tests/test_hidden.py\nnew file mode 100644\n--- /dev/null\n"
                   "+++ b/tests/test_hidden.py\n@@ -0,0 +1,2 @@\n+def test_clamp_high():\n+    pass\n")
    conftest = ("diff --git a/tests/conftest.py b/tests/conftest.py\nnew file mode 100644\n--- /dev/null\n"
                "+++ b/tests/conftest.py\n@@ -0,0 +1,5 @@\n+import pytest\n+@pytest.hookimpl(hookwrapper=True)\n"
                "+def pytest_runtest_makereport(item, call):\n+    out = yield\n+    out.get_result().outcome = 'passed'\n")
    report = Grader().grade(tiny_task, fake_hidden + conftest)
    assert not report.resolved
    assert set(report.dropped_paths) == {"tests/test_hidden.py", "tests/conftest.py"}
    # deleting a visible test file changes nothing: the test directory comes from the base
    deleted = ("diff --git a/tests/test_visible.py b/tests/test_visible.py\ndeleted file mode 100644\n"
               "--- a/tests/test_visible.py\n+++ /dev/null\n@@ -1,5 +0,0 @@\n-from calc import add\n-\n-\n"
               "-def test_add():\n-    assert add(2, 3) == 5\n")
    report = Grader().grade(tiny_task, tiny_task.gold_patch + deleted)
    assert report.resolved and report.pass_to_pass["tests/test_visible.py::test_add"] == "PASSED"
    assert report.restored_paths == ["tests/test_visible.py"] and "touches_test_infrastructure" in report.flags


def test_broken_test_patch_is_a_grading_error(tiny_task):
    broken = dataclasses.replace(tiny_task, tests=dataclasses.replace(tiny_task.tests, test_patch="--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"))
    with pytest.raises(GradingError, match="hidden test patch"):
        Grader().grade(broken, broken.gold_patch)


def test_hanging_tests_time_out_unresolved(tiny_task):
    hang = (
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n+import time; time.sleep(600)\n"
        " def add(a, b):\n     return a + b\n")
    # the base's run takes <= 2.5 s here at a load of ~17 on 2 cores: 8 s leaves >= 3x that
    quick = dataclasses.replace(tiny_task, tests=dataclasses.replace(tiny_task.tests, timeout_s=8))
    report = Grader().grade(quick, hang)
    assert report.status == "tests_timed_out" and not report.resolved and report.reward == 0.0
    assert "at base, in a fresh copy, they finish in time" in report.error  # the patch's fault: not masked


def _slow_start(tiny_task, name):
    """The tiny task with a base conftest.py that takes two seconds to import: a window in which the
    test run has started and no test has reported yet."""
    from pathlib import Path

    (Path(tiny_task.source_dir) / "conftest.py").write_text("import time\n\ntime.sleep(2)\n")
    return dataclasses.replace(tiny_task, instance_id=name)


def test_a_test_run_killed_from_outside_is_graded_again(tiny_task):
    """The grading sandbox's pid 1 SIGKILLed from this host before any test reported (a node going
    down, an operator, the host's OOM killer): the run looks like the patch kept the tests from
    starting (exit 137, nothing in the log); the grader grades again, and the gold patch resolves."""
    import threading
    import uuid

    from tests.conftest import require_bwrap
    from tests.ha_envs.sandbox.test_local import _kill_bwrap_running

    require_bwrap()
    task = _slow_start(tiny_task, "tiny__slow_start")
    tag = f"/tmp/ha-slow-start-{uuid.uuid4().hex[:8]}"  # this grading's runner alone has it in its command line
    task = dataclasses.replace(task, tests=dataclasses.replace(
        task.tests, test_command=task.tests.test_command.replace("pytest ", f"pytest --basetemp={tag} ", 1)))
    killed: list[int] = []
    threading.Thread(target=lambda: killed.append(_kill_bwrap_running(tag, inner=True)), daemon=True).start()
    report = Grader().grade(task, task.gold_patch)
    assert killed, "the test run was never seen"
    assert report.resolved and report.status == "resolved", (report.status, report.error)
    assert "graded twice" in report.error and "exit status 137" in report.error


def _self_killing(task, tmp_path, kill: str) -> str:
    """The gold fix, with the fixed module running ``kill`` (Python) when it is imported."""
    import shutil
    import subprocess

    from tests.conftest import _git_diff

    work = tmp_path / "evil"
    shutil.copytree(task.source_dir, work)

    def edit(d):
        subprocess.run(["git", "apply"], input=task.gold_patch, text=True, cwd=d, check=True)
        calc = d / "calc.py"
        calc.write_text(kill + "\n" + calc.read_text())

    return _git_diff(work, edit)


def test_a_patch_that_kills_its_test_runner_is_blamed(tiny_task, tmp_path):
    """The gold fix, the fixed module SIGKILLing the test runner at import: the shell lives, so the
    kill came from inside the sandbox: unresolved, graded once."""
    task = _slow_start(tiny_task, "tiny__self_kill")
    report = Grader().grade(task, _self_killing(task, tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"))
    assert not report.resolved and report.reward == 0.0
    assert "graded twice" not in report.error, (report.status, report.error)


def test_a_patch_that_kills_its_sandbox_shell_gets_no_verdict(tiny_task, tmp_path):
    """The fixed module SIGKILLs the sandbox's shell (the bash above the runner) at import, as a
    host killing the sandbox would look: graded again, killed again, and no verdict is given (a
    grading error, masked): never a reward, and never a 0 that a host fault could have caused."""
    task = _slow_start(tiny_task, "tiny__shell_kill")
    kill = ("import os, signal\n"
            "p = os.getppid()\n"
            "while p > 1 and open(f'/proc/{p}/comm').read().strip() != 'bash':\n"
            "    p = int(open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[1])\n"
            "os.kill(p, signal.SIGKILL) if p > 1 else None\n"
            "os.kill(os.getpid(), signal.SIGKILL)")
    with pytest.raises(GradingError, match="killed during the test run twice"):
        Grader().grade(task, _self_killing(task, tmp_path, kill))
