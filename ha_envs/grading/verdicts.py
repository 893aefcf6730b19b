"""Verdicts from a parsed test log: swebench's own rule for SWE-bench tasks, ours for the rest.

Why swebench's functions and not a copy: a SWE-bench score is comparable with swebench's only if
swebench's rule decides it, and that rule changes between releases. ``swebench_verdict`` hands the
status map to the installed swebench's ``get_eval_tests_report`` and ``get_resolution_status``
(``swebench.harness.grading``) and records the version that decided. What they hold:

- 4.x (pinned, see README "Grading"): a test passes if PASSED or XFAIL and fails if FAILED, ERROR or
  missing from the log; SKIPPED is neither. In ``FAIL_ONLY_REPOS`` (Chart.js, p5.js, marked: their
  parsers record failures only) a test fails only if FAILED, so a missing test counts as a pass.
- 5.x: a skipped FAIL_TO_PASS test fails and a skipped PASS_TO_PASS test is kept, truncated
  parametrised ids match by prefix, more FAIL_ONLY repositories, and a row's own ``eval_type``.

Guards on top, which can only take a resolution away (a policy is rewarded by whatever the rule
grants, so nothing here may grant more than swebench does):

- every FAIL_TO_PASS test must be in swebench's success list: 4.x puts a SKIPPED test in neither
  list, so skipping every FAIL_TO_PASS test (``pytest.skip()`` from the code under test) scored
  RESOLVED_FULL (fixed upstream in 5.0.0);
- a test counted as passed because it is missing from the log (FAIL_ONLY) needs a run that ended:
  exit status 0 or a failure reported, and where swebench has it (5.x) its ``SUITE_RAN`` evidence for
  an empty log (5.0.0 found Chart.js and openlayers runs "resolved" with no test executed);
- a task without tests is never resolved.

FAIL_TO_PASS tests that count without a PASSED line (XFAIL: the code under test can call
``pytest.xfail()``) are reported in ``Verdict.lenient``; the grader flags them.

``harnessadapt`` is our stricter rule (bundled suite, local tasks with our parsers): every
FAIL_TO_PASS test PASSED; every PASS_TO_PASS test PASSED, SKIPPED or XFAIL; missing = failed.
SWE-bench Pro uses Scale's rule (every test PASSED), the same code with ``kept=(PASSED,)``.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from typing import Any

from ..task import Task
from .log_parsers import ERROR, FAILED, PASSED, SKIPPED, XFAIL

RULES = ("auto", "swebench", "harnessadapt")
"""What a grader may be told to use: ``auto`` (swebench's rule for tasks read by swebench's
parsers, i.e. SWE-bench Verified/Multilingual rows; ours for the rest), or one of the two for every
task. SWE-bench Pro and R2E-Gym always keep their own harness's rule."""

F2P, P2P = "FAIL_TO_PASS", "PASS_TO_PASS"


@dataclass(frozen=True)
class Verdict:
    """A resolution and what decided it."""

    resolved: bool
    rules: str
    """The rule and its source: ``swebench 4.1.0 (pass_and_fail)``, ``harnessadapt``, ``pro``."""
    tests_status: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """swebench's layout: ``{"FAIL_TO_PASS": {"success": [...], "failure": [...]}, "PASS_TO_PASS": ...}``;
    a test in neither list was not counted either way (swebench 4.x: SKIPPED)."""
    overruled: str = ""
    """Why a guard took away a resolution that the rule granted (empty when none did)."""
    lenient: tuple[str, ...] = ()
    """FAIL_TO_PASS tests counted as passing although the log has another status for them."""


def swebench_version() -> str:
    """The installed swebench's version (the rule's source); ``"none"`` when it is not installed."""
    try:
        return importlib.metadata.version("swebench")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def fail_only(repo: str, eval_type: str | None = None) -> bool:
    """Whether swebench grades ``repo`` fail-only: the row's ``eval_type`` (5.x datasets carry it),
    else the installed swebench's ``FAIL_ONLY_REPOS``."""
    if eval_type:
        return eval_type == "fail_only"
    from swebench.harness.constants import FAIL_ONLY_REPOS

    return repo in FAIL_ONLY_REPOS


def swebench_verdict(statuses: dict[str, str], fail_to_pass: tuple[str, ...] | list[str],
                     pass_to_pass: tuple[str, ...] | list[str], repo: str = "", eval_type: str | None = None,
                     exit_code: int | None = None, log: str | None = None) -> Verdict:
    """The installed swebench's verdict on ``statuses`` (test id -> our status), then the guards in
    the module doc. ``exit_code`` and ``log`` are the test run's (None: unknown, the run-evidence
    guard is skipped)."""
    from swebench.harness import grading
    from swebench.harness.constants import EvalType, ResolvedStatus, TestStatus

    known = {s.value for s in TestStatus}
    # Our names are swebench's; anything else (a parser's own word) must not count as a pass.
    sm = {t: s if s in known else FAILED for t, s in statuses.items()}
    kind = EvalType.FAIL_ONLY if fail_only(repo, eval_type) else EvalType.PASS_AND_FAIL
    gold: dict[str, Any] = {F2P: list(fail_to_pass), P2P: list(pass_to_pass)}
    report = grading.get_eval_tests_report(sm, gold, eval_type=kind)
    resolved = grading.get_resolution_status(report) == ResolvedStatus.FULL.value
    tests_status = {k: {"success": list(report[k]["success"]), "failure": list(report[k]["failure"])}
                    for k in (F2P, P2P)}
    lenient = tuple(t for t in tests_status[F2P]["success"] if t in sm and sm[t] != PASSED)
    overruled = ""
    if resolved:
        overruled = _guard(sm, gold, tests_status, exit_code, log, getattr(grading, "SUITE_RAN", None))
    return Verdict(resolved and not overruled, f"swebench {swebench_version()} ({kind.value})",
                   tests_status, overruled, lenient)


def _guard(sm: dict[str, str], gold: dict[str, Any], tests_status: dict[str, dict[str, list[str]]],
           exit_code: int | None, log: str | None, suite_ran: Any) -> str:
    """Why a resolution swebench granted is not one (empty: it is); see the module doc."""
    if not gold[F2P] and not gold[P2P]:
        return "the task has no tests"
    passed = set(tests_status[F2P]["success"])
    ungraded = [t for t in gold[F2P] if t not in passed]
    if ungraded:
        return ("FAIL_TO_PASS tests neither passed nor failed (" + ", ".join(f"{t}: {sm.get(t, 'missing')}"
                                                                          for t in ungraded[:5]) + ")")
    absent = [t for k in (F2P, P2P) for t in tests_status[k]["success"] if t not in sm]
    if not absent or exit_code is None:
        return ""
    failed = any(s in (FAILED, ERROR) for s in sm.values())
    if exit_code != 0 and not failed:
        return (f"{len(absent)} test(s) counted as passed without a result, but the test command exited "
                f"{exit_code} and reported no failure")
    if not sm and suite_ran is not None and log is not None and not suite_ran.search(log):
        return "no test results and no sign in the log that the suite ran (swebench's SUITE_RAN)"
    return ""


def strict_verdict(statuses: dict[str, str], fail_to_pass: tuple[str, ...] | list[str],
                   pass_to_pass: tuple[str, ...] | list[str], kept: tuple[str, ...] = (PASSED, SKIPPED, XFAIL),
                   rules: str = "harnessadapt") -> Verdict:
    """Ours: every FAIL_TO_PASS test PASSED, every PASS_TO_PASS test in ``kept``, a missing test
    failed, a task without tests unresolved. Pro passes ``kept=(PASSED,)`` (Scale's rule)."""
    def split(tests: tuple[str, ...] | list[str], good: tuple[str, ...]) -> dict[str, list[str]]:
        return {"success": [t for t in tests if statuses.get(t) in good],
                "failure": [t for t in tests if statuses.get(t) not in good]}

    tests_status = {F2P: split(fail_to_pass, (PASSED,)), P2P: split(pass_to_pass, kept)}
    resolved = bool(fail_to_pass or pass_to_pass) and not any(v["failure"] for v in tests_status.values())
    return Verdict(resolved, rules, tests_status)


def rules_for(task: Task, choice: str = "auto") -> str:
    """The rule that decides ``task`` under the grader's ``choice`` (see ``RULES``): ``pro``, ``r2e``,
    ``swebench`` or ``harnessadapt``."""
    if choice not in RULES:
        raise ValueError(f"unknown verdict rules {choice!r}; available: {', '.join(RULES)}")
    parser = task.tests.log_parser
    if parser in ("pro", "r2e"):
        return parser
    if choice == "auto":
        return "swebench" if parser.startswith("swebench:") else "harnessadapt"
    return choice


def task_verdict(task: Task, statuses: dict[str, str], choice: str = "auto", exit_code: int | None = None,
                 log: str | None = None) -> Verdict:
    """The verdict on ``task`` (not R2E-Gym, whose rule compares whole logs: ``grader.decide``)."""
    rules = rules_for(task, choice)
    f2p, p2p = task.tests.fail_to_pass, task.tests.pass_to_pass
    if rules == "swebench":
        parser = task.tests.log_parser
        repo = parser.split(":", 1)[1] if parser.startswith("swebench:") else (task.repo or "")
        return swebench_verdict(statuses, f2p, p2p, repo=repo, eval_type=task.metadata.get("eval_type"),
                                exit_code=exit_code, log=log)
    if rules == "pro":
        return strict_verdict(statuses, f2p, p2p, kept=(PASSED,), rules="pro")
    if rules == "r2e":
        raise ValueError("R2E-Gym's verdict compares the whole parsed log: use grader.decide")
    return strict_verdict(statuses, f2p, p2p)


__all__ = ["RULES", "Verdict", "fail_only", "rules_for", "strict_verdict", "swebench_verdict", "swebench_version",
           "task_verdict"]
