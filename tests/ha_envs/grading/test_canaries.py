"""Canary planning and checking (``ha_envs/grading/canaries.py``), the exit-status cross-check
(``consistency.py``) and the patch screen (``screen.py``): on the bundled suite's real hidden test
files, and with real runners where one is at hand (unittest, pytest)."""

from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest

from ha_envs.grading import canaries
from ha_envs.grading.consistency import exit_status_reasons, go_package_reasons
from ha_envs.grading.log_parsers import FAILED, PASSED, get_parser
from ha_envs.grading.screen import screen
from ha_envs.loaders import load_suite
from ha_envs.task import Task, TestSpec

SUITE = {t.instance_id: t for t in load_suite("mini")}


def hidden_sources(task: Task) -> dict[str, str]:
    """The hidden test files as the test patch creates them (the bundled suite's are all new)."""
    out = {}
    for sec in re.split(r"(?m)^diff --git ", task.tests.test_patch)[1:]:
        path = re.search(r"^\+\+\+ b/(\S+)", sec, re.M).group(1)
        out[path] = "\n".join(l[1:] for l in sec.splitlines() if l.startswith("+") and not l.startswith("+++")) + "\n"
    return out


@pytest.mark.parametrize("iid", sorted(SUITE))
def test_every_hidden_file_gets_canaries_that_must_fail_and_pass(iid):
    task = SUITE[iid]
    sources = hidden_sources(task)
    plan = canaries.plan(task, sources, random.Random(7))
    assert plan is not None
    hosts = {c.host for c in plan.canaries}
    assert hosts == {p for p in sources if canaries.kind_of(task, p, sources[p])} and hosts
    for host in hosts:
        mine = [c for c in plan.canaries if c.host == host]
        assert any(c.must_fail for c in mine) and any(not c.must_fail for c in mine)
    graded = set(task.tests.fail_to_pass) | set(task.tests.pass_to_pass)
    for c in plan.canaries:
        assert c.name not in sources[c.host]  # a fresh name ...
        assert not any(canaries._reported(c.name, c.title, t) for t in graded)  # ... that no graded test answers to
        if c.twin and not c.host.endswith(".py"):  # written beside its original (grader 17), the file rewritten
            assert c.name in plan.rewrites[c.host] and c.name not in plan.appends.get(c.host, "")
        else:
            assert c.name in plan.appends.get(c.host, "") or any(c.name in t for t in plan.appends.values())
    for path, text in plan.appends.items():
        if path.endswith(".py"):
            compile(sources.get(path, "") + text, path, "exec")


def test_canaries_are_drawn_fresh_for_every_grading():
    task = SUITE["mini__ttl_cache"]
    sources = hidden_sources(task)
    names = [tuple(c.name for c in canaries.plan(task, sources).canaries) for _ in range(5)]
    assert len(set(names)) == 5
    # names are built from the file's own test names, so they read like its other tests
    words = set(re.findall(r"[a-z]+", " ".join(canaries.own_tests("pytest", sources["tests/test_expiry.py"]))))
    assert all(set(n.split("_")[1:]) & words for ns in names for n in ns)


def _plan(iid: str = "mini__ttl_cache") -> canaries.CanaryPlan:
    task = SUITE[iid]
    return canaries.plan(task, hidden_sources(task), random.Random(3))


def _honest(plan: canaries.CanaryPlan) -> dict[str, str]:
    task = SUITE["mini__ttl_cache"]
    statuses = {t: PASSED for t in (*task.tests.fail_to_pass, *task.tests.pass_to_pass)}
    statuses.update({f"tests/test_expiry.py::{c.name}": FAILED if c.must_fail else PASSED for c in plan.canaries})
    return statuses


def test_an_honest_run_passes_the_check_and_canaries_leave_the_verdict():
    plan = _plan()
    statuses = _honest(plan)
    assert canaries.check(plan, statuses, exit_code=1, timed_out=False, simple=True) == []
    graded, results = canaries.split(plan, statuses)
    task = SUITE["mini__ttl_cache"]
    assert set(graded) == set(task.tests.fail_to_pass) | set(task.tests.pass_to_pass)
    assert all(results[c] == (FAILED if c.must_fail else PASSED) for c in plan.canaries)


def test_forged_missing_and_exit_zero_runs_are_caught():
    plan = _plan()
    forged = {k: PASSED for k in _honest(plan)}
    assert any("false assertion" in r for r in canaries.check(plan, forged, 0, False, True))
    missing = {k: s for k, s in _honest(plan).items() if not canaries.is_canary(plan, k)}
    assert any("reported missing" in r for r in canaries.check(plan, missing, 0, False, True))
    assert any("exited 0" in r for r in canaries.check(plan, _honest(plan), 0, False, True))
    assert canaries.check(plan, _honest(plan), 0, False, simple=False) == []


def test_a_file_that_never_ran_is_an_ordinary_failure():
    """An import or compile error in the hidden file: its canaries are missing with its tests."""
    plan = _plan()
    others = {"tests/test_store.py::test_get": PASSED}
    assert canaries.check(plan, others, 2, False, True) == []


def test_a_run_cut_short_by_its_timeout_is_not_tampering_for_missing_canaries():
    plan = _plan()
    missing = {k: s for k, s in _honest(plan).items() if not canaries.is_canary(plan, k)}
    assert canaries.check(plan, missing, -9, timed_out=True, simple=True) == []
    forged = {k: PASSED for k in _honest(plan)}
    assert canaries.check(plan, forged, -9, timed_out=True, simple=True)  # a passed false assertion still is


def test_names_are_redacted_from_the_kept_log():
    plan = _plan()
    log = "\n".join(f"PASSED tests/test_expiry.py::{c.name}" for c in plan.canaries)
    assert canaries.redact(plan, log).count("<canary>") == len(plan.canaries)


@pytest.mark.parametrize("command", ["python -m pytest -x tests/", "pytest --maxfail=1 tests",
                                     "cargo test --offline", "go test -failfast ./..."])
def test_runners_that_stop_at_the_first_failure_get_only_must_pass_canaries(command):
    import dataclasses

    task = SUITE["mini__rust_intervals" if "cargo" in command else "mini__go_ledger" if "go " in command
                 else "mini__ttl_cache"]
    task = dataclasses.replace(task, tests=dataclasses.replace(task.tests, test_command=command))
    plan = canaries.plan(task, hidden_sources(task))
    assert plan is not None and plan.canaries and not plan.must_fail


def test_unittest_style_canaries_run_under_unittest(tmp_path):
    """A TestCase file gets a TestCase of the same base; the real runner reports them as planned."""
    task = SUITE["mini__ttl_cache"]
    import dataclasses

    task = dataclasses.replace(task, tests=dataclasses.replace(
        task.tests, test_command="python -m unittest -v test_calc", log_parser="pytest"))
    src = ("import unittest\n\n\nclass CalcTests(unittest.TestCase):\n"
           "    def test_adds_small_numbers(self):\n        self.assertEqual(1 + 1, 2)\n")
    plan = canaries.plan(task, {"test_calc.py": src}, random.Random(5))
    assert plan is not None
    (tmp_path / "test_calc.py").write_text(src + plan.appends["test_calc.py"])
    out = subprocess.run([sys.executable, "-m", "unittest", "-v", "test_calc"], cwd=tmp_path,
                         capture_output=True, text=True)
    for c in plan.canaries:
        line = next(l for l in out.stderr.splitlines() if l.startswith(c.name + " "))
        assert line.endswith("FAIL" if c.must_fail else "ok"), line
    assert out.returncode == 1


def test_unittest_canaries_take_a_standard_base_not_the_projects(tmp_path):
    """A project's base class may need what only its own subclasses give (class attributes a
    ``setUp`` reads); the canaries' class subclasses unittest's own TestCase the file names."""
    import dataclasses

    task = dataclasses.replace(SUITE["mini__ttl_cache"], tests=dataclasses.replace(
        SUITE["mini__ttl_cache"].tests, test_command="python -m unittest -v test_calc", log_parser="pytest"))
    (tmp_path / "calc_base.py").write_text("import unittest\n\n\nclass CalcTestCase(unittest.TestCase):\n    FACTOR = None\n\n"
                                           "    def setUp(self):\n        self.unit = 10 // self.FACTOR\n")
    src = ("from calc_base import CalcTestCase\n\n\n"
           "class CalcTests(CalcTestCase):\n    FACTOR = 2\n\n    def test_unit(self):\n        assert self.unit == 5\n")
    plan = canaries.plan(task, {"test_calc.py": src}, random.Random(2))
    assert "(unittest.TestCase):" in plan.appends["test_calc.py"]  # not CalcTestCase, whose setUp fails alone
    (tmp_path / "test_calc.py").write_text(src + plan.appends["test_calc.py"])
    out = subprocess.run([sys.executable, "-m", "unittest", "-v", "test_calc"], cwd=tmp_path, capture_output=True, text=True)
    for c in plan.canaries:
        line = next(l for l in out.stderr.splitlines() if l.startswith(c.name + " "))
        assert line.endswith("FAIL" if c.must_fail else "ok"), line


def test_pytest_canaries_run_under_pytest(tmp_path):
    task = SUITE["mini__ttl_cache"]
    src = "def test_reads_do_not_extend_ttl():\n    pass\n"
    plan = canaries.plan(task, {"tests/test_expiry.py": src}, random.Random(11))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_expiry.py").write_text(src + plan.appends["tests/test_expiry.py"])
    out = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests/"], cwd=tmp_path,
                         capture_output=True, text=True)
    statuses = get_parser("pytest")(out.stdout)
    assert canaries.check(plan, statuses, out.returncode, False, True) == [], out.stdout[-2000:]
    assert statuses["tests/test_expiry.py::test_reads_do_not_extend_ttl"] == PASSED and out.returncode == 1


@pytest.mark.parametrize("seed", range(4))
def test_a_plain_class_named_like_a_testcase_gets_canaries_pytest_collects(tmp_path, seed):
    """pylint's ``CheckerTestCase`` is a plain class pytest collects by the subclass's ``Test*``
    name, without ``assertEqual``: a canary class named ``...Tests`` with ``self.assertEqual`` was
    never collected (pylint-4604's gold patch came out ``verdict_tampered`` in the re-validation)."""
    task = SUITE["mini__ttl_cache"]
    src = ("class CheckerTestCase:\n    def setup_method(self):\n        self.checker = 1\n\n\n"
           "class TestVariablesChecker(CheckerTestCase):\n    def test_bitbucket_issue(self):\n        assert self.checker\n")
    plan = canaries.plan(task, {"tests/unittest_variables.py": src}, random.Random(seed))
    assert plan is not None and plan.must_fail
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/unittest_variables.py").write_text(src + plan.appends["tests/unittest_variables.py"])
    out = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests/unittest_variables.py"],
                         cwd=tmp_path, capture_output=True, text=True)
    statuses = get_parser("pytest")(out.stdout)
    _, results = canaries.split(plan, statuses)
    assert all(results[c] == (FAILED if c.must_fail else PASSED) for c in plan.canaries), out.stdout[-2000:]
    assert canaries.check(plan, statuses, out.returncode, False, True) == []


# -- exit status and summary lines ---------------------------------------------------------------

GO_FORGED = """=== RUN   TestParse
--- PASS: TestParse (0.00s)
PASS
exit status 1
FAIL\texample.com/ledger/money\t0.004s
=== RUN   TestReport
--- PASS: TestReport (0.00s)
PASS
ok  \texample.com/ledger/report\t0.003s
"""


def test_go_package_failing_with_only_passes_printed_is_forged():
    assert go_package_reasons(GO_FORGED) == [
        "go reports package example.com/ledger/money FAIL, but all 1 of its tests printed PASS or SKIP"]
    assert go_package_reasons(GO_FORGED.replace("--- PASS: TestParse", "--- FAIL: TestParse")) == []
    assert go_package_reasons("FAIL\texample.com/ledger/money [build failed]\n") == []


def test_a_non_zero_exit_without_a_failure_is_not_a_pass():
    statuses = {"a": PASSED, "b": PASSED}
    assert exit_status_reasons("pytest tests", statuses, "", 1, False, True)
    assert not exit_status_reasons("pytest tests", {**statuses, "c": FAILED}, "", 1, False, True)
    assert not exit_status_reasons("pytest tests", statuses, "", 0, False, True)
    assert not exit_status_reasons("cd x && pytest | tee log", statuses, "", 1, False, False)
    assert not exit_status_reasons("cargo test", statuses, "error[E0425]: cannot find value", 101, False, True)


# -- the patch screen ----------------------------------------------------------------------------

def _patch(path: str, added: str) -> str:
    lines = added.splitlines()
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,0 +1,{len(lines)} @@\n"
            + "".join(f"+{l}\n" for l in lines))


@pytest.mark.parametrize("path,added,reason", [
    ("pkg/__init__.py", "import sys\nsys.meta_path.insert(0, Finder())", "import hook"),
    ("pkg/__init__.py", "exec(compile(src, '<x>', 'exec'))", "eval/exec/compile"),
    ("pkg/__init__.py", "Function.runtest = lambda self: None", "run method"),
    ("pkg/__init__.py", "import os\nos.dup2(w, 1)", "redirected"),
    ("src/index.js", "const a = require('node:assert');\na.strictEqual = () => {};", "assertion module"),
    ("src/index.js", "process.stdout.write = () => true;", "process output"),
    ("money/x.go", "func init() {\n\tos.Stdout = w\n}", "init function"),
    ("src/lib.rs", "#[link_section = \".init_array\"]\nstatic X: extern \"C\" fn() = f;", "constructor"),
])
def test_screen_names_runner_machinery(path, added, reason):
    found = screen(_patch(path, added))
    assert any(reason in f and f.startswith(path) for f in found), found


def test_screen_is_quiet_on_the_gold_patches_and_ordinary_code():
    assert all(screen(t.gold_patch) == [] for t in SUITE.values())
    assert screen(_patch("pkg/m.py", "pattern = re.compile(r'x+')\nvalue = eval_expr(node)")) == []
    assert screen(_patch("README.md", "sys.meta_path and os.dup2 are discussed here")) == []


def test_the_screen_is_a_flag_not_a_verdict():
    from ha_envs.grading.report import GradeReport

    report = GradeReport("x", "resolved", True)
    report.flag("suspicious", "pkg/__init__.py: an import hook")
    assert report.reward == 1.0


@pytest.mark.parametrize("kind,path,command,picks", [
    ("pytest", "tests/test_a.py", "python -m pytest -rA tests/", False),
    ("pytest", "tests/test_a.py", "pytest tests/test_a.py::test_one tests/test_b.py", True),
    ("pytest", "tests/test_a.py", "pytest -k 'one or two' tests", True),
    ("unittest", "tests/foo/tests.py", "./tests/runtests.py --verbosity 2 foo.tests", False),
    ("unittest", "tests/foo/tests.py", "./tests/runtests.py foo.tests.BarTests", True),
    ("go", "a/a_test.go", "go test -v -count=1 ./...", False),
    ("go", "a/a_test.go", "go test -v -run TestOne ./a", True),
    ("cargo", "tests/x.rs", "cargo test --offline --no-fail-fast -- --test-threads=1", False),
    ("cargo", "tests/x.rs", "cargo test --test x --no-fail-fast -- --test-threads 1", False),
    ("cargo", "tests/x.rs", "cargo test --no-fail-fast merge", True),
    ("cargo", "tests/x.rs", "cargo test --no-fail-fast -- --exact merge", True),
    ("node", "test/a.test.js", "node --test --test-name-pattern=one test/", True),
])
def test_commands_that_pick_tests_by_name_get_no_canaries_in_that_file(kind, path, command, picks):
    """Canaries appended to a file the command only runs some tests of would be reported missing
    while the file's other tests passed: a false ``verdict_tampered``. Such files get none."""
    assert canaries.selects_by_name(kind, path, command) is picks


def _with_command(iid: str, command: str) -> Task:
    import dataclasses

    task = SUITE[iid]
    return dataclasses.replace(task, tests=dataclasses.replace(task.tests, test_command=command))


@pytest.mark.parametrize("src", [
    "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n\n"
    "test('adds small numbers', () => {\n  assert.equal(1 + 1, 2);\n});\n",
    "'use strict';\nconst { describe, it } = require('node:test');\n\n"
    "describe('sums', () => {\n  it('adds small numbers', () => {\n    if (1 + 1 !== 2) throw new Error('no');\n  });\n});\n",
], ids=["esm-own-bindings", "cjs-without-assert"])
def test_node_canaries_run_under_node_test(tmp_path, src):
    from tests.conftest import require_tool

    require_tool("node")
    task = _with_command("mini__js_template", "node --test --test-reporter=tap test/")
    ext = ".mjs" if src.startswith("import") else ".js"
    plan = canaries.plan(task, {f"test/sums.test{ext}": src}, random.Random(9))
    (tmp_path / "test").mkdir()
    (tmp_path / f"test/sums.test{ext}").write_text(src + plan.appends[f"test/sums.test{ext}"])
    out = subprocess.run(["node", "--test", "--test-reporter=tap", "test/"], cwd=tmp_path, capture_output=True, text=True)
    statuses = get_parser("node_tap")(out.stdout)
    _, results = canaries.split(plan, statuses)
    assert all(results[c] == (FAILED if c.must_fail else PASSED) for c in plan.canaries), out.stdout[-2000:]
    assert canaries.check(plan, statuses, out.returncode, False, True) == [] and out.returncode == 1


def test_go_canaries_get_their_own_file_beside_a_helper_without_testing(tmp_path):
    from tests.conftest import require_tool

    require_tool("go")
    task = _with_command("mini__go_ledger", "go test -v -count=1 ./...")
    helper = "package calc\n\nvar fixture = []int{1, 2}\n"
    plan = canaries.plan(task, {"calc/helpers_test.go": helper}, random.Random(4))
    (target,) = plan.appends
    assert target.startswith("calc/") and target.endswith("_test.go") and target != "calc/helpers_test.go"
    (tmp_path / "calc").mkdir()
    (tmp_path / "go.mod").write_text("module example.com/calc\n\ngo 1.19\n")
    (tmp_path / "calc/calc.go").write_text("package calc\n")
    (tmp_path / "calc/helpers_test.go").write_text(helper)
    (tmp_path / target).write_text(plan.appends[target])
    out = subprocess.run(["go", "test", "-v", "-count=1", "./..."], cwd=tmp_path, capture_output=True, text=True)
    statuses = get_parser("go_test")(out.stdout)
    _, results = canaries.split(plan, statuses)
    assert all(results[c] == (FAILED if c.must_fail else PASSED) for c in plan.canaries), out.stdout[-2000:]


def test_a_maxfail_that_never_stops_keeps_must_fail_canaries():
    """Scale's ansible run scripts pass ``--maxfail=1000`` (never stop): the canaries there had no
    must-fail ones (the Pro re-validation showed it); ``--maxfail=5`` still stops early."""
    assert not canaries.stops_at_first_failure("pytest -v --tb=short --maxfail=1000 test/units/")
    assert canaries.stops_at_first_failure("pytest --maxfail=5 tests") and canaries.stops_at_first_failure("pytest --maxfail 10 t")


def test_a_selected_file_without_tests_gets_no_canaries():
    """Scale's ansible rows select plugin files beside the test files (a lookup plugin with a
    class, a deliberately broken filter): the canaries went into them in the Pro re-validation.
    Only files with tests of their own host canaries; the code under test is never touched."""
    task = SUITE["mini__ttl_cache"]
    plugin = "from ansible.plugins.lookup import LookupBase\n\n\nclass LookupModule(LookupBase):\n    def run(self, terms):\n        return terms\n"
    assert canaries.kind_of(task, "test/integration/targets/config/lookup_plugins/types.py", plugin) is None
    assert canaries.plan(task, {"lookup_plugins/types.py": plugin}) is None


# -- twins (canary_twins.py) -----------------------------------------------------------------------

_TWIN_SRC = '''import pytest
from pkg import area


def test_f2p():
    assert area(2) == 4


@pytest.mark.parametrize("n", [1, 2])
def test_square(n):
    got = area(n)
    assert got == n * n, "message"
    assert (got
            >= 0)


def test_returns_early():
    if area(1):
        return
    assert False


def test_skips():
    pytest.importorskip("json")
    assert area(1) == 1


def test_two_on_a_line():
    x = area(3); assert x == 9
'''


def _twin_task():
    return Task(instance_id="t__twin", benchmark="test", language="python", problem_statement="", repo="o/r", base_commit="0" * 40,
                tests=TestSpec(test_patch="", fail_to_pass=("tests/test_t.py::test_f2p",),
                               pass_to_pass=tuple(f"tests/test_t.py::{n}" for n in (
                                   "test_square[1]", "test_square[2]", "test_returns_early", "test_skips",
                                   "test_two_on_a_line")),
                               test_command="python -m pytest -rA tests/", log_parser="pytest"))


def test_twins_copy_only_passing_tests_that_cannot_end_early():
    from ha_envs.grading.canary_twins import NAME, twins

    task = _twin_task()
    seen = set()
    for seed in range(20):
        for orig, src in twins("tests/test_t.py", _TWIN_SRC, task.tests.pass_to_pass, task.tests.fail_to_pass, 3,
                               random.Random(seed)):
            seen.add(orig)
            assert src.startswith('@pytest.mark.parametrize("n", [1, 2])\ndef ' + NAME + "(n):")
            assert src.count(" in ()") == 1 and "test_square" not in src
            compile(src.replace(NAME, "test_x"), "t", "exec")
    assert seen == {"test_square"}  # not the FAIL_TO_PASS test, nor the early return, the skip, the shared line


def test_a_twin_fails_where_its_original_passes_and_a_forgery_is_seen(tmp_path):
    """Run for real under pytest: the twin (both parameters) fails with the original passing, and
    check() is quiet; reported passed, it is a forgery; with the original failing, nothing is said."""
    task = _twin_task()
    (tmp_path / "pkg.py").write_text("def area(n):\n    return n * n\n")
    (tmp_path / "tests").mkdir()
    plan = canaries.plan(task, {"tests/test_t.py": _TWIN_SRC}, random.Random(5))
    twin = next(c for c in plan.canaries if c.twin)
    assert twin.twin == "test_square" and twin.must_fail
    (tmp_path / "tests/test_t.py").write_text(_TWIN_SRC + plan.appends["tests/test_t.py"])
    out = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests/"], cwd=tmp_path,
                         capture_output=True, text=True, env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)})
    statuses = get_parser("pytest")(out.stdout)
    assert statuses[f"tests/test_t.py::{twin.name}[1]"] == FAILED and statuses["tests/test_t.py::test_square[2]"] == PASSED
    assert canaries.check(plan, statuses, out.returncode, False, True) == [], out.stdout[-1500:]
    forged = {k: (PASSED if twin.name in k else s) for k, s in statuses.items()}
    assert any("turned round" in r for r in canaries.check(plan, forged, 1, False, True))
    broken = {k: (FAILED if "test_square" in k or twin.name in k else s) for k, s in statuses.items()}
    assert not any("test_square" in r for r in canaries.check(plan, broken, 1, False, True))
