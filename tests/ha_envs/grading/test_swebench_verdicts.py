"""Verdicts by swebench's own grading functions (``ha_envs/grading/verdicts.py``): crafted status
maps (XFAIL, missing and skipped tests, a FAIL_ONLY repository), agreement with swebench's whole
evaluation on recorded logs of real validated instances, and the guards end to end in a sandbox."""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from ha_envs.grading.grader import Grader
from ha_envs.grading.report import GradeReport, decide
from ha_envs.grading.log_parsers import get_parser
from ha_envs.grading.verdicts import (fail_only, rules_for, strict_verdict, swebench_verdict, swebench_version,
                                      task_verdict)
from tests.conftest import _git_diff, require_bwrap

from tests.ha_envs.test_swe_datasets import DATA, require_data

FIXTURES = Path(__file__).parents[1] / "fixtures" / "swebench_logs"
MAJOR = int(swebench_version().split(".")[0])
F2P, P2P = ["t_f2p"], ["t_p2p"]


def official(statuses: dict[str, str], f2p: list[str], p2p: list[str], repo: str) -> bool:
    """swebench's verdict, called here directly: get_eval_tests_report + get_resolution_status."""
    from swebench.harness.constants import EvalType, ResolvedStatus
    from swebench.harness.grading import get_eval_tests_report, get_resolution_status

    kind = EvalType.FAIL_ONLY if fail_only(repo) else EvalType.PASS_AND_FAIL
    report = get_eval_tests_report(statuses, {"FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p}, eval_type=kind)
    return get_resolution_status(report) == ResolvedStatus.FULL.value


@pytest.mark.parametrize("statuses, repo, expected, strict", [
    ({"t_f2p": "PASSED", "t_p2p": "PASSED"}, "django/django", True, True),
    # XFAIL counts as a pass for swebench (test_passed), for F2P too; ours wants PASSED for F2P
    ({"t_f2p": "XFAIL", "t_p2p": "PASSED"}, "django/django", True, False),
    ({"t_f2p": "PASSED", "t_p2p": "XFAIL"}, "django/django", True, True),
    ({"t_f2p": "FAILED", "t_p2p": "PASSED"}, "django/django", False, False),
    ({"t_f2p": "ERROR", "t_p2p": "PASSED"}, "django/django", False, False),
    # a test missing from the log failed, in PASS_AND_FAIL repositories
    ({"t_p2p": "PASSED"}, "django/django", False, False),
    ({"t_f2p": "PASSED"}, "django/django", False, False),
    # a skipped P2P test is no regression (4.x: counted neither way; 5.x: maintained)
    ({"t_f2p": "PASSED", "t_p2p": "SKIPPED"}, "django/django", True, True),
    # FAIL_ONLY (Chart.js: the parser records failures only): missing = passed, only FAILED fails
    ({}, "chartjs/Chart.js", True, False),
    ({"t_f2p": "FAILED"}, "chartjs/Chart.js", False, False),
    ({"t_p2p": "FAILED"}, "chartjs/Chart.js", False, False),
    ({"t_f2p": "ERROR"}, "chartjs/Chart.js", True, False),
])
def test_crafted_status_maps_match_swebench_and_expectation(statuses, repo, expected, strict):
    v = swebench_verdict(statuses, F2P, P2P, repo=repo, exit_code=0, log="Executed 2 of 2 SUCCESS\n")
    assert v.resolved == official(statuses, F2P, P2P, repo) == expected
    kind = "fail_only" if repo == "chartjs/Chart.js" else "pass_and_fail"
    assert v.rules == f"swebench {swebench_version()} ({kind})"
    assert strict_verdict(statuses, F2P, P2P).resolved == strict
    assert v.lenient == (("t_f2p",) if expected and statuses.get("t_f2p", "PASSED") != "PASSED" else ())


def test_the_fail_only_list_is_swebenchs():
    from swebench.harness.constants import FAIL_ONLY_REPOS

    assert {"chartjs/Chart.js", "processing/p5.js", "markedjs/marked"} <= FAIL_ONLY_REPOS
    assert fail_only("chartjs/Chart.js") and not fail_only("django/django")
    assert fail_only("django/django", eval_type="fail_only") and not fail_only("chartjs/Chart.js", "pass_and_fail")


def test_skipped_f2p_never_resolves():
    """swebench 4.x counts a SKIPPED test neither way, so an all-skipped F2P set is RESOLVED_FULL
    (fixed in 5.0.0): the guard takes it away, whatever the version."""
    statuses = {"t_f2p": "SKIPPED", "t_p2p": "PASSED"}
    assert official(statuses, F2P, P2P, "django/django") == (MAJOR < 5)
    v = swebench_verdict(statuses, F2P, P2P, repo="django/django")
    assert not v.resolved and (("neither passed nor failed" in v.overruled) == (MAJOR < 5))
    assert v.tests_status["FAIL_TO_PASS"]["success"] == []


def test_fail_only_needs_a_run_that_ended():
    """Missing tests count as passes in FAIL_ONLY repositories, so a run that crashed before
    printing anything must not resolve: exit status != 0 and no failure reported."""
    assert official({}, F2P, P2P, "markedjs/marked")  # swebench alone grants it
    crashed = swebench_verdict({}, F2P, P2P, repo="markedjs/marked", exit_code=3, log="boom\n")
    assert not crashed.resolved and "exited 3" in crashed.overruled
    clean = swebench_verdict({}, F2P, P2P, repo="markedjs/marked", exit_code=0, log="2 specs, 0 failures\n")
    assert clean.resolved and not clean.overruled
    # an unrelated failure is evidence the suite ran: the exit status is explained
    other = swebench_verdict({"t_other": "FAILED"}, F2P, P2P, repo="markedjs/marked", exit_code=1, log="")
    assert other.resolved


def test_unknown_statuses_and_empty_tasks_never_resolve():
    assert not swebench_verdict({"t_f2p": "XPASS", "t_p2p": "PASSED"}, F2P, P2P, repo="django/django").resolved
    assert not swebench_verdict({"t_f2p": "PASSED", "t_p2p": "weird"}, F2P, P2P, repo="django/django").resolved
    assert official({}, [], [], "django/django")  # swebench: nothing to fail is FULL
    empty = swebench_verdict({}, [], [], repo="django/django")
    assert not empty.resolved and empty.overruled == "the task has no tests"


def test_rule_choice_per_task(tiny_task):
    swe = dataclasses.replace(tiny_task, tests=dataclasses.replace(tiny_task.tests,
                                                                   log_parser="swebench:django/django"))
    pro = dataclasses.replace(tiny_task, tests=dataclasses.replace(tiny_task.tests, log_parser="pro"))
    assert rules_for(swe) == "swebench" and rules_for(tiny_task) == "harnessadapt" and rules_for(pro) == "pro"
    assert rules_for(swe, "harnessadapt") == "harnessadapt" and rules_for(tiny_task, "swebench") == "swebench"
    assert rules_for(pro, "swebench") == "pro"  # Scale's rule stays Scale's
    with pytest.raises(ValueError, match="available: auto, swebench, harnessadapt"):
        rules_for(tiny_task, "swebench5")
    with pytest.raises(ValueError, match="unknown verdict rules"):
        Grader(verdict_rules="strict")
    xfail = {t: "PASSED" for t in swe.tests.pass_to_pass} | {swe.tests.fail_to_pass[0]: "XFAIL"}
    report = GradeReport(swe.instance_id, "", False)
    decide(report, swe, xfail)
    assert report.resolved and report.verdict_rules == f"swebench {swebench_version()} (pass_and_fail)"
    assert report.flags == ["f2p_not_passed"] and "XFAIL" in report.suspicion[0]
    assert "verdict_rules" in report.to_dict() and report.to_dict()["tests_status"]["FAIL_TO_PASS"]["success"]
    strict = GradeReport(swe.instance_id, "", False)
    decide(strict, swe, xfail, "harnessadapt")
    assert not strict.resolved and strict.verdict_rules == "harnessadapt"
    assert not task_verdict(pro, xfail).resolved


def _manifest() -> dict:
    return json.loads((FIXTURES / "MANIFEST.json").read_text())["logs"]


@pytest.fixture(scope="module")
def real_tasks():
    """The recorded instances, loaded from ../shared/data as ``--benchmark`` loads them."""
    require_data()
    from ha_envs.swe_datasets import LOCAL_FILES, load_benchmark

    wanted = {e["instance_id"] for e in _manifest().values()}
    return {t.instance_id: t for b in ("verified", "multilingual")
            for t in load_benchmark(b, source=DATA / LOCAL_FILES[b]) if t.instance_id in wanted}


@pytest.mark.parametrize("name", sorted(_manifest()))
def test_agreement_with_swebench_on_real_logs(name, real_tasks, tmp_path):
    """Our verdict (our reading of the log, swebench's rule) equals swebench's whole evaluation of
    the same log (its parser, ``get_eval_report``) and the recorded outcome; ours agrees too."""
    from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT
    from swebench.harness.grading import get_eval_report

    entry = _manifest()[name]
    task = real_tasks[entry["instance_id"]]
    log = gzip.decompress((FIXTURES / name).read_bytes()).decode("utf-8", errors="surrogateescape")
    statuses = get_parser(task.tests.log_parser, task.instance_id)(log)
    ours = task_verdict(task, statuses)
    path = tmp_path / "test_output.txt"
    path.write_text(f"{START_TEST_OUTPUT}\n{log}\n{END_TEST_OUTPUT}\n", errors="surrogateescape")
    spec = SimpleNamespace(instance_id=task.instance_id, repo=task.repo, version=task.metadata["version"],
                           FAIL_TO_PASS=list(task.tests.fail_to_pass), PASS_TO_PASS=list(task.tests.pass_to_pass))
    pred = {"instance_id": task.instance_id, "model_patch": "x"}
    theirs = get_eval_report(spec, pred, str(path), True)[task.instance_id]
    assert ours.rules.startswith("swebench ") and not ours.overruled
    assert ours.resolved == theirs["resolved"] == entry["resolved"]
    assert ours.tests_status == {k: theirs["tests_status"][k] for k in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    assert strict_verdict(statuses, task.tests.fail_to_pass, task.tests.pass_to_pass).resolved == entry["resolved"]


CHECK = """import sys
sys.path.insert(0, ".")
from calc import clamp
cases = [("clamp high", lambda: clamp(9, 0, 5) == 5), ("clamp low", lambda: clamp(-1, 0, 5) == 0)]
failed = 0
for name, ok in cases{only}:
    if not ok():
        failed += 1
        print(f"{{failed}}) {{name}}")
print(f"{{len(cases)}} specs, {{failed}} failures")
sys.exit(1 if failed else 0)
"""


@pytest.fixture
def fail_only_task(tiny_task, tmp_path):
    """tiny_task as a FAIL_ONLY repository: marked's parser (failures only) reads a checker whose
    hidden version (the test patch) adds the failing case; the checker exists at the base."""
    require_bwrap()
    base = tmp_path / "fo"
    shutil.copytree(tiny_task.source_dir, base)
    (base / "tests" / "check.py").write_text(CHECK.format(only="[1:]"))
    work = tmp_path / "fo-git"
    shutil.copytree(base, work)
    test_patch = _git_diff(work, lambda d: (d / "tests" / "check.py").write_text(CHECK.format(only="")))
    tests = dataclasses.replace(tiny_task.tests, test_patch=test_patch, fail_to_pass=("clamp high",),
                                pass_to_pass=("clamp low",), test_command="python tests/check.py",
                                log_parser="swebench:markedjs/marked")
    return dataclasses.replace(tiny_task, instance_id="tiny__fail_only", source_dir=base, tests=tests)


def _diff(task, edit, tmp_path) -> str:
    work = tmp_path / "edit"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(task.source_dir, work)
    return _git_diff(work, edit)


def test_fail_only_end_to_end(fail_only_task, tmp_path):
    """Gold resolves (missing = passed), nothing fixed does not; a crash before any output, the
    checker deleted or replaced by one that passes: never resolved."""
    task, g = fail_only_task, Grader()
    gold = g.grade(task, task.gold_patch)
    assert gold.resolved and gold.verdict_rules.endswith("(fail_only)")
    assert gold.fail_to_pass == {"clamp high": "MISSING"}
    assert not Grader(verdict_rules="harnessadapt").grade(task, task.gold_patch).resolved  # ours: missing = failed
    assert not g.grade(task, "").resolved
    crash = _diff(task, lambda d: (d / "calc.py").write_text("raise SystemExit(3)\n"), tmp_path)
    crashed = g.grade(task, crash)
    assert not crashed.resolved and "exited 3" in crashed.overruled
    deleted = _diff(task, lambda d: (d / "tests" / "check.py").unlink(), tmp_path)
    report = g.grade(task, deleted)
    assert not report.resolved and report.dropped_paths == ["tests/check.py"]
    assert "touches_test_infrastructure" in report.flags
    noop = _diff(task, lambda d: (d / "tests" / "check.py").write_text("print('0 specs, 0 failures')\n"), tmp_path)
    report = g.grade(task, noop)
    assert not report.resolved and report.fail_to_pass == {"clamp high": "FAILED"}


def test_ha_grade_reports_the_verdicts_split(fail_only_task, tmp_path):
    """``ha grade`` writes the split and the rule the env's reward used, not a split of its own."""
    from ha_agents.runs.grade import grade_predictions

    task = fail_only_task
    pred = {"instance_id": task.instance_id, "model_patch": task.gold_patch}
    run = grade_predictions([task], {task.instance_id: pred}, tmp_path / "out")
    body = json.loads((tmp_path / "out" / "logs" / task.instance_id / "report.json").read_text())[task.instance_id]
    assert run.resolved == [task.instance_id] and body["resolved"]
    assert body["tests_status"]["FAIL_TO_PASS"] == {"success": ["clamp high"], "failure": []}
    assert body["verdict_rules"] == f"swebench {swebench_version()} (fail_only)"


def test_the_pin_keeps_the_specs():
    """``swebench<5``: 5.x dropped the specs and the repo-keyed parsers our loaders read."""
    from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS
    from swebench.harness.log_parsers import MAP_REPO_TO_PARSER

    assert MAJOR == 4
    assert MAP_REPO_VERSION_TO_SPECS["pallets/flask"]["2.3"]["test_cmd"] and "axios/axios" in MAP_REPO_TO_PARSER


def test_ha_grade_verdict_rules_flag(fail_only_task, tmp_path, capsys):
    """``ha grade --verdict-rules`` reaches the grader: the same gold patch of a FAIL_ONLY task is
    resolved by swebench's rule (auto: a ``swebench:`` parser) and not by ours (missing = failed)."""
    from ha_cli.main import main

    task = fail_only_task
    row = {"instance_id": task.instance_id, "problem_statement": "clamp", "source_dir": str(task.source_dir),
           "test_patch": task.tests.test_patch, "patch": task.gold_patch, "FAIL_TO_PASS": ["clamp high"],
           "PASS_TO_PASS": ["clamp low"], "test_command": task.tests.test_command, "log_parser": task.tests.log_parser}
    (tmp_path / "tasks.jsonl").write_text(json.dumps(row) + "\n")
    pred = {"instance_id": task.instance_id, "model_patch": task.gold_patch}
    (tmp_path / "preds.jsonl").write_text(json.dumps(pred) + "\n")
    for rules, resolved in (("auto", True), ("harnessadapt", False)):
        out = tmp_path / rules
        assert main(["grade", "--jsonl", str(tmp_path / "tasks.jsonl"), "--predictions", str(tmp_path / "preds.jsonl"),
                     "--out", str(out), "--verdict-rules", rules]) == 0
        body = json.loads((out / "logs" / task.instance_id / "report.json").read_text())[task.instance_id]
        assert body["resolved"] is resolved
        assert body["verdict_rules"] == ("harnessadapt" if rules == "harnessadapt"
                                         else f"swebench {swebench_version()} (fail_only)")
    capsys.readouterr()


@pytest.mark.parametrize("command, reward", [
    ("sed -i '0,/return lo/! s/return lo/return hi/' calc.py", 1.0),
    ("echo 'raise SystemExit(3)' > calc.py", 0.0),  # the suite never prints: missing = passed, but no run
])
def test_env_reward_uses_the_same_verdict(fail_only_task, command, reward):
    import ha_envs

    env = ha_envs.make(task=fail_only_task, max_turns=4)
    try:
        env.reset()
        env.step(f"```bash\n{command}\n```")
        _, r, term, _, info = env.step("```bash\nsubmit\n```")
    finally:
        env.close()
    assert term and r == reward and info["grade"]["verdict_rules"] == f"swebench {swebench_version()} (fail_only)"
    assert bool(info["grade"]["overruled"]) == (reward == 0.0)


def test_xfail_from_the_code_under_test_is_flagged(tiny_task, tmp_path):
    """swebench counts XFAIL as a pass, F2P included, and the code under test can call
    ``pytest.xfail()``: swebench's rule resolves it (a documented rule, kept), the grade is flagged
    ``f2p_not_passed``, and our rule does not resolve it."""
    require_bwrap()
    task = dataclasses.replace(tiny_task, tests=dataclasses.replace(tiny_task.tests,
                                                                    log_parser="swebench:pallets/flask"))
    hack = _diff(task, lambda d: (d / "calc.py").write_text((d / "calc.py").read_text().replace(
        "    if x > hi:\n        return lo", "    if x > hi:\n        import pytest\n        pytest.xfail('later')")),
        tmp_path)
    report = Grader().grade(task, hack)
    assert report.fail_to_pass == {"tests/test_hidden.py::test_clamp_high": "XFAIL"}
    assert report.resolved and "f2p_not_passed" in report.flags and report.verdict_rules.startswith("swebench ")
    assert report.reward == 0.0  # resolved for the official count, but never a training reward
    assert not Grader(verdict_rules="harnessadapt").grade(task, hack).resolved
    gold = Grader().grade(task, task.gold_patch)
    assert gold.resolved and gold.reward == 1.0 and "f2p_not_passed" not in gold.flags
