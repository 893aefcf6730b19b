"""A grading's outcome: ``GradeReport`` and the verdict it carries (``decide``), and the errors that end a
grading: ``GradingError`` (the environment's fault, masked), ``EnvironmentFault`` (the tests start with
neither the patch nor the base), ``PatchRefused`` (the patch's fault, reward 0)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..task import Task
from . import faults
from .verdicts import rules_for, task_verdict



GRADER_VERSION = "ha-grader/20"  # 20: Docker: the OS trace leaves the container on the exec's stream (strace in an
# exec of its own, sandbox/dockertrace.py), not a file there: the well-formed rewrite earned 1.0 in Docker under 19
# (canaries off); strace's exit status from the daemon (a killed tracer is tracer_lost); appended lines that would
# join with or re-parent strace's own are trace_garbled; trace_from "docker stream"
# 19: Rust tests' outcome witnesses (witness_rust.py): a constructor that runs
# the tests itself from the binary's symbol table and prints a lying libtest run earned 1.0 under 17 with the twins off
# 18: the Python watch's record leaves each process as it is made, to a collector on the
# host (a unix socket the sandbox shows read-only); a connection that ends without its end mark is watch_severed, a run
# the collector heard nothing from is watch_missing: emptying the watch file and leaving by os._exit earned 1.0 under 17
# 17: a must-fail twin keeps its original's checks and differs in one literal of an
# expected value (a check turned round only where none can change, canaries.twins_turned), placed before or after its
# original as drawn: a JS forgery that failed only the test with the negated check earned 1.0 under 16
# 16: the OS trace of Go/Rust/JavaScript runs in the local sandbox taken by the
# host's strace, the grading shell's parent (sandbox/hosttrace.py), into a host file: a rewrite of the trace into
# well-formed lines earned 1.0 under 13 (canaries off); a tracer killed during the run is tracer_lost; trace_from
# 15: the Python watch under every Python runner (a sitecustomize first on
# PYTHONPATH starts it in each interpreter the test command starts: django's runtests.py, sympy's bin/test,
# unittest), compared with the gold run's like pytest's; touching the watch's own files is watch_touched
# 14: Harbor: test.sh traced (harbor_trace.py): a process that outlived its
# starter, a failed write of the reward, limits or memory of another process, test.sh's shell killed -> as survivors;
# Go/Rust/JS: a must-fail twin of each FAIL_TO_PASS test with a check to turn (a JS forgery sparing every test with a
# near-copy earned 1.0 under 13)
# 13: Go tests' outcome witnesses in the OS trace (witness.py): a Go init that
# runs the tests itself and lies only where no canary or twin can tell earned 1.0 under 12; close(1) is fd_redirect;
# a trace written by someone else is trace_garbled. Harbor: processes that outlive test.sh are killed before the
# reward is read, and the reward is not believed unless the base's verifier leaves some too
# 12: mocha twins of tests inside describe blocks, written after their original
# 11: twins for Go, Rust, JavaScript; an OS-level watch (strace) of their runs
# 2: Docker grading in place; SWE-bench Pro through Scale's run scripts
# 3: untrusted patches: grading inside the sandbox only, protected paths from the base, runner guards
# 4: SWE-bench rows decided by the installed swebench's grading functions (verdicts.py)
# 5: a task's build steps (swebench's `build`) run before its tests, their output unread; build_failed;
#    new files the base ignores (build outputs) dropped from the patch
# 6: hidden canary tests per grading, exit status against the verdicts (verdict_tampered); patch screen
# 7: canaries through widened name filters and Pro's run scripts, sympy's last line read, module-level
#    under pytest; a file that fails to collect is not a fault; a timeout wrapper's 124 is not the runner's
# 8: a test run whose sandbox shell was SIGKILLed is graded again, twice killed is a GradingError (masked)
# 9: no grader file left in the grading copy while the tests run; a timed-out run never resolves (masked
#    only when the base times out too); the base's start and timeout checks in a fresh copy; patches over
#    MAX_PATCH_PATHS paths or whose ignore check fails are patch_refused; the watch (Python under pytest)
#    compared with the gold patch's run
# 10: the running test unnamed in the environment; the watch sees frame walks


class GradingError(RuntimeError):
    """Grading itself failed (the task's test patch does not apply, the sandbox broke, ...).

    The agent is not to blame: the env ends the episode with ``grading_error`` and masks it."""


class PatchRefused(Exception):
    """A step whose only input is the agent's patch failed or ran out of time (checking its paths
    against the ignore rules, too many paths to take): the patch's fault. Graded ``patch_refused``,
    reward 0, never masked (a masked rollout would drop out of its GRPO group: a policy that learns
    to cause one loses no negative signal)."""


class EnvironmentFault(GradingError):
    """The tests could not start, with the patch and at base alike: the environment's fault.
    ``report`` is the grade (status ``environment_fault``), ``failure`` the base's start failure."""

    def __init__(self, message: str, report: GradeReport, failure: faults.StartFailure) -> None:
        super().__init__(message)
        self.report, self.failure = report, failure

    @property
    def kind(self) -> str:
        return self.failure.kind


@dataclass
class GradeReport:
    instance_id: str
    status: str
    """``resolved``, ``unresolved``, ``patch_failed``, ``patch_too_large``, ``diff_failed`` (the work
    copy could not be diffed), ``build_failed`` (the task's build steps failed with the patch in, so
    no test ran), ``tests_timed_out``, ``tests_tampered`` (the runner's own record contradicts the
    log) or ``verdict_tampered`` (the hidden canary tests came out wrong, or the exit status contradicts
    the parsed verdicts: ``canaries.py``, ``consistency.py``)."""
    resolved: bool
    fail_to_pass: dict[str, str] = field(default_factory=dict)
    pass_to_pass: dict[str, str] = field(default_factory=dict)
    dropped_paths: list[str] = field(default_factory=list)
    """Paths whose edits were removed from the patch before grading (hidden tests, protected)."""
    restored_paths: list[str] = field(default_factory=list)
    """Paths the patch changed that the grader took from the base again (tests, runner files)."""
    flags: list[str] = field(default_factory=list)
    """Why the result is suspicious, by name: ``touches_test_infrastructure``, ``unsafe_paths``,
    ``runner_internals_in_patch``, ``test_log_inconsistent``, ``patch_too_large``, ``f2p_not_passed``
    (swebench's rule counted a FAIL_TO_PASS test that did not pass, e.g. XFAIL),
    ``ignored_files_in_patch`` (new files the base's ignore rules ignore, dropped: build outputs),
    ``verdict_tampered`` (canaries or exit status), ``suspicious`` (the patch reaches into the runner's
    machinery, ``screen.py``: a signal only, no reward change); the env adds
    ``hidden_test_names_in_actions``. A trainer or a user can filter on them."""
    suspicion: list[str] = field(default_factory=list)
    """The same, in words, with the paths and names involved."""
    tampering: list[str] = field(default_factory=list)
    """Why the test log was not believed (``tests_tampered``)."""
    applied_with: str = ""
    error: str = ""
    fault: str = ""
    """Why the tests could not start, with the patch and at base alike (``faults.KINDS``; status
    ``environment_fault``, raised as ``EnvironmentFault``, masked); empty otherwise."""
    log_tail: str = ""
    duration_s: float = 0.0
    grader_version: str = GRADER_VERSION
    verdict_rules: str = ""
    """The rule that decided and its source (``verdicts.py``): ``swebench 4.1.0 (pass_and_fail)``,
    ``harnessadapt``, ``pro``, ``r2e``; empty when no test ran."""
    tests_status: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """The rule's split, in swebench's layout: ``{"FAIL_TO_PASS": {"success": [...], "failure": [...]},
    "PASS_TO_PASS": {...}}``."""
    overruled: str = ""
    """Why a resolution that swebench's rule granted was taken away by our guards (``verdicts.py``)."""
    network_errors: list[str] = field(default_factory=list)
    """Up to five distinct lines of the whole test log that show a test reaching for the network
    (name resolution, refused or unreachable connections): why a failure may be the machine's."""
    canaries: dict[str, int] = field(default_factory=dict)
    """How the hidden canary tests of this grading came out, as counts only (their names never
    leave the grader): ``files``, ``planted``, ``must_fail``, ``reported`` (found in the runner's
    report), ``as_planted`` (failed or passed as they must); empty when none were planted."""

    network_excluded: list[str] = field(default_factory=list)
    """PASS_TO_PASS tests left out of the verdict because they need a network this machine lacks:
    they failed with the patch in, the log shows network errors, and the base's run in a fresh copy
    fails them too with network errors (``Grader._exclude_network``). Empty when none were."""
    watch: list[str] | None = None
    """What the code under test was seen doing while the hidden tests ran, by kind (the watch:
    ``guards/ha_pytest_guard.py``); None when the run was not watched (a runner without a watch, or
    Python before 3.8)."""
    trace_from: str = ""
    """Where the OS-level trace of a Go, Rust or JavaScript run was taken (``ostrace.py``): ``host``
    (out of the test processes' reach), ``host, within reach`` (an unisolated sandbox), ``docker
    stream`` (strace in the grading container, non-dumpable, its trace carried out by the exec's
    stream: ``sandbox/dockertrace.py``), ``docker stream, within reach`` (the same without
    ``nodump.so``: its pipe can be read and written from inside), ``sandbox, within reach`` (a file in
    the grading copy: the fallback where neither can be taken); empty when the run had no OS-level trace."""
    watch_from: str = ""
    """Where the Python watch's record came from (``watchsock.py``): ``host`` (sent as it was made
    to a collector on the host, through a socket the sandbox shows read-only: lines sent cannot be
    taken back), ``host, within reach`` (the same from an unisolated sandbox), ``sandbox, within
    reach`` (the watch file in the grading copy: a sandbox without such a directory); empty when the
    run had no Python watch."""
    watch_reference: list[str] | None = None
    """The gold patch's run of the same task, seen the same way: compared with ``watch`` when the
    run would resolve and the watch saw anything (kinds the gold run lacks -> ``verdict_tampered``)."""

    verifier_reward: float | None = None
    """A Harbor task's reward as its verifier wrote it and this grading believed it (``harbor.py``;
    a multi-step task's ``min_reward`` gate reads it); None for other tasks and where none was."""

    killed = False  # not a field: whether this grading's sandbox shell was SIGKILLed with the test run

    def flag(self, name: str, why: str) -> None:
        if name not in self.flags:
            self.flags.append(name)
        self.suspicion.append(why)

    @property
    def suspicious(self) -> bool:
        return bool(self.flags)

    @property
    def reward(self) -> float:
        """1.0 for a resolved task whose FAIL_TO_PASS tests all really PASSED. ``resolved`` follows the
        chosen verdict rules (swebench's count an XFAIL as a pass, for parity with the official
        harness), but the code under test can call ``pytest.xfail()`` itself: a training signal must
        not pay for that, so a grade flagged ``f2p_not_passed`` earns nothing."""
        return 1.0 if self.resolved and "f2p_not_passed" not in self.flags else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ungradable(task: Task, status: str, why: str, duration_s: float = 0.0) -> GradeReport:
    """The verdict on a change that cannot be graded because of what the agent did
    (``patch_too_large``, ``diff_failed``): reward 0, not masked."""
    report = GradeReport(task.instance_id, status, False, error=why, duration_s=duration_s)
    if status == "patch_too_large":
        report.flag("patch_too_large", why)
    return report


def decide(report: GradeReport, task: Task, statuses: dict[str, str], rules: str = "auto",
           exit_code: int | None = None, log: str | None = None) -> None:
    """The verdict, by the rule ``verdicts.rules_for(task, rules)`` names (``verdicts.py``):
    SWE-bench rows by swebench's own functions, the bundled suite by ours, Pro by Scale's, and
    R2E-Gym (``log_parser == "r2e"``): the parsed log equals the expected output exactly.
    ``exit_code`` and ``log`` are the test run's, for the guards on swebench's verdict."""
    report.fail_to_pass = {t: statuses.get(t, "MISSING") for t in task.tests.fail_to_pass}
    report.pass_to_pass = {t: statuses.get(t, "MISSING") for t in task.tests.pass_to_pass}
    if rules_for(task, rules) == "r2e":
        from .log_parsers import decolor

        expected = {decolor(k): v for k, v in (task.metadata.get("expected_output") or {}).items()}
        got = {decolor(k): v for k, v in statuses.items()}
        report.fail_to_pass = {t: got.get(t, "MISSING") for t in expected}
        report.resolved = bool(expected) and got == expected
        report.verdict_rules = "r2e"
    else:
        verdict = task_verdict(task, statuses, rules, exit_code, log)
        report.resolved, report.verdict_rules, report.tests_status = (verdict.resolved, verdict.rules,
                                                                      verdict.tests_status)
        report.overruled = verdict.overruled
        if verdict.lenient:
            report.flag("f2p_not_passed", f"{verdict.rules} counts FAIL_TO_PASS tests as passing that did not "
                        "pass: " + ", ".join(f"{t}: {statuses.get(t)}" for t in verdict.lenient[:10]))
    report.status = "resolved" if report.resolved else "unresolved"

