"""A test runner that cannot start is the environment's fault, never the agent's zero.

A run "did not start" when no test of the task came out of it: the log holds no test at all, or
none of the FAIL_TO_PASS and PASS_TO_PASS tests; or its exit status is 126 / 127 (the shell could
not run the command). The log says why (``start_failure``): the command or its interpreter was not
found (``python: command not found``, a dangling interpreter), the runner could not import itself
(``No module named pytest``), or nothing was collected. A run whose runner reported a hidden test
file itself as failing to collect (it imports a name only the fix adds) did start: that is the
code's state, graded as it stands.

The agent's patch can cause each of these (a package that raises on import, ``os._exit(127)`` in the
code under test), so such a run is told apart by running the base's tests, without the patch, in a
fresh grading copy (``Grader._check_started``; only such runs pay for it): never the copy the patch's
run dirtied, where files its code created at run time survive (a module shadowing the runner).
A run cut off by the task's time limit is told apart the same way (``Grader._check_timeout``): the
patch's fault (``tests_timed_out``, reward 0) unless the base's run times out too (kind
``tests_timed_out``, masked). When the base's tests
do not start either, the environment is to blame: ``grader.EnvironmentFault``, a ``GradingError``, so the
episode ends ``grading_error`` and is masked, with the cause in the grade. Otherwise the run is
graded as it stands (reward 0), with the comparison in the grade's ``error``.

``fault_summary`` words the faults of a run (episode records or validation results) for the CLI.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..task import Task
from .runners import Evidence

FAULT_STATUS = "environment_fault"
"""``GradeReport.status`` of a grading whose test runner could not start, at base either."""

KINDS = {
    "runner_missing": "the test command or its interpreter was not found",
    "runner_not_executable": "the test command could not be executed",
    "runner_import": "the test runner failed to import what it needs",
    "nothing_collected": "the test runner ran no test",
    "tests_missing": "none of the task's tests was in the test log",
    "tests_timed_out": "the tests ran past the task's time limit",
    "reward_invalid": "a Harbor task's verifier left no valid reward (grading/harbor.py)",
}
"""Kinds of start failure, in the order they are recognised, with what each means."""

_NOT_FOUND = re.compile(r"^.*?(?:command not found|: not found|No such file or directory|bad interpreter|Permission denied).*$",
                        re.M)
_RUNNER_IMPORT = re.compile(
    r"^.*?(?:No module named '?(?:_?pytest|pluggy|unittest|nose|tox)\b'?|"
    r"ImportError while loading conftest|Error importing plugin|"
    r"Cannot find module '[^']*(?:node:test|mocha|jest|vitest|tap)[^']*'|"
    r"error: no such command|cannot find package \"testing\"|"
    r"go: cannot find GOROOT|could not find `Cargo.toml`|linker `cc` not found|"
    r"(?:ModuleNotFoundError|ImportError): No module named).*$", re.M)


@dataclass(frozen=True)
class StartFailure:
    """Why a test run did not start: a kind of ``KINDS`` and the log line (or fact) that shows it."""

    kind: str
    detail: str

    def describe(self) -> str:
        return f"{KINDS[self.kind]} ({self.detail})"


def listed_tests(task: Task) -> list[str]:
    """The tests whose outcome decides the verdict (R2E-Gym: its expected output's)."""
    if task.tests.log_parser == "r2e":
        return list((task.metadata.get("expected_output") or {}).keys())
    return [*task.tests.fail_to_pass, *task.tests.pass_to_pass]


def start_failure(task: Task, evidence: Evidence, statuses: dict[str, str]) -> StartFailure | None:
    """Why the run did not start, or None when it did (some listed test came out, or a run that
    lists nothing collected something, and the shell ran the command). A timed-out run started."""
    if evidence.timed_out:
        return None
    listed = listed_tests(task)
    if statuses and (not listed or any(t in statuses for t in listed)):
        return None  # tests ran (a 127 then is a test's own command, not the runner)
    log = evidence.log
    line = _RUNNER_IMPORT.search(log)
    if line:
        return StartFailure("runner_import", _clip(line.group(0)))
    if evidence.exit_code in (126, 127) or _NOT_FOUND.search(log):
        line = _NOT_FOUND.search(log)
        kind = "runner_not_executable" if evidence.exit_code == 126 else "runner_missing"
        return StartFailure(kind, (_clip(line.group(0)) + "; " if line else "") + f"exit status {evidence.exit_code}")
    if not statuses:
        return StartFailure("nothing_collected", f"exit status {evidence.exit_code}, no test in the log")
    if any(key == p or key.startswith(p + " ") for key in statuses for p in task.hidden_test_files):
        # the runner started and reported a hidden test file itself: it failed to collect, for
        # the code's sake (it imports a name only the fix adds: pylint-4551 at base), not the
        # environment's (a missing runner or package is caught above)
        return None
    return StartFailure("tests_missing", f"{len(statuses)} other tests in the log, exit status {evidence.exit_code}")


def _clip(text: str, n: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def fault_of(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, cause) of the environment fault in an episode record (``trajectories.jsonl``) or a
    validation result (``ValidationResult.to_dict()``); None when it holds none."""
    grade = record.get("grade") or {}
    if grade.get("status") == FAULT_STATUS:
        return str(grade.get("fault") or "unknown"), str(grade.get("error") or record.get("error") or "")
    if record.get("fault"):
        return str(record["fault"]), str(record.get("fault_cause") or "")
    return None


def fault_summary(records: Iterable[Mapping[str, Any]]) -> str:
    """What to tell a user about the environment faults in ``records`` (episode records or
    validation results): a line per fault with its cause, by instance and run, then the counts (``masked: 3, environment
    faults: 2 (runner_import: 2)``), each line ended; empty when nothing was masked."""
    records = list(records)
    lines: list[str] = []
    kinds: Counter[str] = Counter()
    for r in sorted(records, key=lambda r: (str(r.get("instance_id", "")), int(r.get("run") or 0))):
        fault = fault_of(r)
        if fault is None:
            continue
        kinds[fault[0]] += 1
        run = f" run {r['run']}" if r.get("run") is not None else ""
        lines.append(f"environment fault: {r.get('instance_id', '?')}{run}: {fault[1]}")
    masked = sum(1 for r in records if r.get("mask_sample") or fault_of(r))
    if not masked:
        return ""
    counts = f"masked: {masked}, environment faults: {sum(kinds.values())}"
    if kinds:
        counts += " (" + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())) + ")"
    return "".join(f"{line}\n" for line in [*lines, counts])


def network_note(records: Iterable[Mapping[str, Any]]) -> str:
    """One line on the gradings (episode records or ``ha grade`` bodies) that left network-dependent
    PASS_TO_PASS tests out of their verdict (``GradeReport.network_excluded``); empty when none did."""
    graded = [(r.get("grade") if "grade" in r else r) or {} for r in records]
    hit = [g for g in graded if g.get("network_excluded")]
    if not hit:
        return ""
    tests = sorted({t for g in hit for t in g["network_excluded"]})
    return (f"network: {len(hit)} grading(s) left {len(tests)} PASS_TO_PASS test(s) out of the verdict, which need a "
            f"network this machine lacks (they fail at base too, in a fresh copy): {', '.join(tests[:5])}"
            f"{' ...' if len(tests) > 5 else ''}\n")


def records_under(path: str | Path) -> list[dict[str, Any]]:
    """The episode records of a ``trajectories.jsonl`` file, or of every one under a directory (a
    training run's ``rollouts/``); a cut last line (a killed run) is skipped."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(path.rglob("trajectories.jsonl")) if path.is_dir() else []
    out: list[dict[str, Any]] = []
    for f in files:
        for line in f.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out
