"""Hidden-test grading of a patch, on a fresh copy the agent never touched.

The patch is untrusted data. Steps: read its paths as the appliers do and drop sections that touch
hidden tests or protected paths or write outside the repository (``patchfile.py``) -> in a fresh
grading sandbox (bubblewrap over a fresh copy of the task's snapshot, or a fresh container of its
snapshot image; nothing of the patch is touched on the host): apply the rest (``git apply``, then
``patch --fuzz`` as SWE-bench does) -> delete and take again from the base every protected path the
patch touched (``protect.py``) -> restore the hidden test files to base and apply the hidden test
patch -> run the test command under the runner guards (``runners.py``) -> parse the log -> verdict
-> the guards cross-check the log with the runner's own record and exit status (``tests_tampered``).

SWE-bench Pro runs Scale's per-instance run script and log parser (``pro.py``).

Verdict rules (``verdicts.py``): SWE-bench rows by the installed swebench's own grading functions
(its version recorded in ``GradeReport.verdict_rules``), with guards that can only take a resolution
away; the bundled suite and local tasks by our stricter rule; Pro by Scale's; R2E-Gym by exact match.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..sandbox.base import RunResult, Sandbox, SandboxError
from ..sandbox.hosttrace import HostTrace, TraceSpec, TraceUnavailable
from ..sandbox.reaper import owned_prefix
from ..sandbox.shell import ansi_c_quote
from ..sandbox.provision.workcopy import PATCH_CAP_BYTES, Snapshot, prepare_snapshot
from ..task import Task
from . import canaries as canary_tests
from . import faults, witness
from .consistency import exit_status_reasons
from .log_parsers import ERROR, FAILED, get_parser
from .patchfile import section_paths, split_patch
from .protect import restore_script, restore_targets
from . import ostrace  # noqa: F401  (registers the OS-level watch after the runner guards: it wraps their commands)
from .runners import Evidence, _simple, changed_tests, guards_for, read_watch
from .watchsock import Collector
from .verdicts import RULES
from .harbor import grade_harbor, is_harbor
from .copy_scripts import (GRADE_DIR, applied_paths, apply_error, apply_script, ignored_one_by_one, ignored_script,
                           install_hidden, joined, parse_hashes, patch_file_bytes, put_files, test_hashes_script,
                           workdir_command)
from .patch_rules import MAX_PATCH_PATHS, filter_patch, flag_patch
from .report import (GRADER_VERSION, EnvironmentFault, GradeReport, GradingError, PatchRefused, decide,
                     ungradable)
from .sandboxes import SandboxFactory, local_sandbox_factory, network_errors

LOG_HEAD, LOG_TAIL = 2 << 20, 6 << 20


@dataclass(frozen=True)
class _BaseOutcome:
    """What a base's run in a fresh copy says (``Grader._base_outcome``)."""

    timed_out: bool
    failing: frozenset[str]
    """PASS_TO_PASS tests it does not pass."""
    offline: bool
    """Its log shows tests reaching for a network they do not get."""
    log: str = field(default="", compare=False, repr=False)

    @classmethod
    def of(cls, task: Task, evidence: Evidence) -> _BaseOutcome:
        statuses = get_parser(task.tests.log_parser, task.instance_id)(evidence.log)
        failing = frozenset(t for t in task.tests.pass_to_pass if statuses.get(t) not in ("PASSED", "SKIPPED", "XFAIL"))
        return cls(evidence.timed_out, failing, bool(network_errors(evidence.log, 1)), evidence.log[-4000:])


log = logging.getLogger(__name__)


class Grader:
    """Grades patches for tasks; one instance can grade many tasks, concurrently.

    Every step that touches the agent's patch runs inside a fresh grading sandbox (bubblewrap or a
    container), never on the host: apply the patch, restore the protected paths from the base
    (``protect.py``), install the hidden tests, run the test command under the runner guards
    (``runners.py``), read the guards' reports back. Then the log is parsed, the benchmark's rule
    decides, and the guards cross-check the log; a disagreement is ``tests_tampered``."""

    def __init__(self, sandbox_factory: SandboxFactory | None = None, patch_bytes: int = 4 * PATCH_CAP_BYTES,
                 verdict_rules: str = "auto", canaries: bool = True, watch: bool = True,
                 twins: bool = True) -> None:
        if verdict_rules not in RULES:
            raise ValueError(f"unknown verdict rules {verdict_rules!r}; available: {', '.join(RULES)}")
        self.sandbox_factory = sandbox_factory or local_sandbox_factory()
        self.verdict_rules = verdict_rules
        """``auto``, ``swebench`` or ``harnessadapt`` (``verdicts.RULES``)."""
        self.canaries = canaries
        """Plant hidden canary tests beside the hidden tests (``canaries.py``); off only to measure."""
        self.twins = twins
        """Plant twin canaries (copies of the hidden files' own passing tests) among them; off only to
        measure what they add."""
        self.watch = watch
        """Compare what the code under test was seen doing with the gold patch's run (``_compare_watch``);
        off only to measure (off, Python runners other than pytest are not watched at all)."""
        self.patch_bytes = patch_bytes
        """Largest patch (characters) graded; a larger one is ``patch_too_large`` (the sandboxes cap
        the changed files' size at ``PATCH_CAP_BYTES``; a binary patch's text is larger)."""
        self._lock = threading.Lock()
        self._references: dict[tuple[str, str], list[str] | None] = {}
        """(task, gold patch hash) -> the watch record of the gold patch's run (``_compare_watch``)."""
        self._bases: dict[tuple[str, int], _BaseOutcome] = {}
        """(task, time limit) -> its base's run in a fresh copy, kept once it finished in time
        (``_base_outcome``: the timeout and network checks read it)."""

    def __getstate__(self) -> dict[str, Any]:  # sent to Ray workers: the lock stays, the caches start empty
        state = dict(self.__dict__)
        state.update(_lock=None, _references={}, _bases={})
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def grade(self, task: Task, patch: str, snapshot: Snapshot | None = None) -> GradeReport:
        if is_harbor(task):  # a Harbor task's tests/test.sh and its reward file (harbor.py)
            return grade_harbor(self, task, patch, snapshot)
        report = self._grade(task, patch, snapshot)
        if report.killed:
            # the sandbox's shell was SIGKILLed with the tests: the host killed the sandbox (an
            # operator, a node going down) or the code under test killed its shell; only grading
            # again tells. (A runner killed while its shell lives is the patch's doing or the
            # memory limit's: graded as it stands.)
            first = report.error or "; ".join(report.tampering) or report.status
            report = self._grade(task, patch, snapshot)
            if report.killed:  # twice: neither verdict can be trusted, and none is given
                raise GradingError(f"grading {task.instance_id}: the sandbox's shell was killed during the test run "
                                   f"twice (exit status 137); the first time: {first}")
            note = f"graded twice: the first test run's sandbox shell was killed (exit status 137; {first})"
            report.error = f"{report.error}; {note}" if report.error else note
        return report

    def _grade(self, task: Task, patch: str, snapshot: Snapshot | None = None, compare: bool = True) -> GradeReport:
        t0 = time.monotonic()
        pro = task.tests.log_parser == "pro"
        if pro and not task.tests.test_command:
            raise GradingError(f"{task.instance_id}: SWE-bench Pro is graded with Scale's per-instance run "
                               "scripts; none were found (set HA_PRO_SCRIPTS to a checkout of "
                               "scaleapi/SWE-bench_Pro-os, or put its mirror under HA_REPOS_DIR)")
        if len(patch) > self.patch_bytes:
            return ungradable(task, "patch_too_large", f"the patch has {len(patch)} characters; the cap is "
                              f"{self.patch_bytes}", time.monotonic() - t0)
        kept, dropped, unsafe = filter_patch(patch, task)
        if pro:  # Scale strips binary hunks and applies with `git apply` only
            from .pro import strip_binary_hunks

            kept, binary = strip_binary_hunks(kept)
            dropped += [p for p in binary if p not in dropped]
        report = GradeReport(task.instance_id, "unresolved", False, dropped_paths=dropped)
        flag_patch(report, kept, dropped, unsafe)
        try:
            npaths = len({p for sec in split_patch(kept) for p in section_paths(sec)})
            if npaths > MAX_PATCH_PATHS:
                raise PatchRefused(f"the patch touches {npaths} paths; at most {MAX_PATCH_PATHS} are graded")
            ran = self._run(task, kept, report, snapshot, allow_fuzz=not pro)
            if ran is not None:
                self._judge(task, snapshot, report, *ran)
                if compare and self.watch:
                    if patch == (task.gold_patch or "") and report.watch is not None:  # the gold's own run
                        with self._lock:
                            self._references.setdefault(_reference_key(task), report.watch)
                    self._compare_watch(task, snapshot, report)
        except PatchRefused as exc:
            report.status, report.resolved, report.error = "patch_refused", False, str(exc)
            report.flag("patch_refused", str(exc))
        except GradingError:
            raise
        except (OSError, SandboxError, KeyError) as exc:
            raise GradingError(f"grading {task.instance_id} failed: {exc}") from exc
        report.duration_s = time.monotonic() - t0
        return report

    def _judge(self, task: Task, snapshot: Snapshot | None, report: GradeReport, evidence: Evidence,
               changed: list[str]) -> None:
        """The verdict from a finished test run: parse, decide, cross-check; a run that did not start
        or ran out of time is compared with the base's run in a fresh copy (``_check_started``,
        ``_check_timeout``)."""
        self._check_started(task, snapshot, changed, evidence, report)  # a runner that cannot start
        plan = evidence.canaries
        report.log_tail = canary_tests.redact(plan, evidence.log[-4000:])
        statuses = get_parser(task.tests.log_parser, task.instance_id)(evidence.log)
        statuses = canary_tests.complete(plan, task.tests.log_parser, evidence.log, statuses)
        report.killed = evidence.exit_code == 137 and evidence.shell_died and not evidence.timed_out
        graded, _ = canary_tests.split(plan, statuses)
        # a must-fail canary makes every honest run exit non-zero: the canary check reads the status
        decide(report, task, graded, self.verdict_rules, None if plan and plan.must_fail else evidence.exit_code,
               evidence.log)
        reasons = changed_tests(evidence) + [r for g in guards_for(task) for r in g.check(task, statuses, evidence)]
        simple = _simple(task.tests.test_command)
        forged = canary_tests.check(plan, statuses, evidence.exit_code, evidence.timed_out, simple)
        if self.watch and not evidence.timed_out and "trace_cut" not in (evidence.watch or []):
            forged += witness.check(plan, statuses, evidence.witnesses)
        report.canaries = canary_tests.summary(plan, statuses)
        report.watch, report.trace_from = evidence.watch, ostrace.trace_from(evidence)
        report.watch_from = evidence.watch_from
        if report.resolved or forged:
            forged += exit_status_reasons(task.tests.test_command, statuses, evidence.log, evidence.exit_code,
                                          evidence.timed_out, simple)
        if forged:
            report.flag("verdict_tampered", "the run's canary tests or exit status contradict its reported "
                        "verdicts: " + "; ".join(forged[:5]))
        if reasons or forged:
            report.status, report.resolved = "tests_tampered" if reasons else "verdict_tampered", False
            report.tampering = reasons + forged
            if reasons:
                report.flag("test_log_inconsistent", "the test log contradicts the runner's own record")
        elif evidence.timed_out:
            # a run cut off by its time limit never resolves, whatever its partial log says
            report.status, report.resolved = "tests_timed_out", False
        if evidence.timed_out:
            self._check_timeout(task, snapshot, changed, evidence, report)
        if not report.resolved:  # only a failure needs explaining; logs run to megabytes
            report.network_errors = network_errors(evidence.log)
            if report.network_errors and report.status == "unresolved" and not forged and not reasons:
                self._exclude_network(task, snapshot, report, graded, evidence)

    def _exclude_network(self, task: Task, snapshot: Snapshot | None, report: GradeReport,
                         graded: dict[str, str], evidence: Evidence) -> None:
        """No fake zero from a missing network: when every FAIL_TO_PASS test passed and the only
        failures are PASS_TO_PASS tests that the base's run, in a fresh copy, fails too with network
        errors in its log, those tests are left out of the verdict (``network_excluded``) and it is
        decided again. The base's run is the grader's (the patch cannot touch it: ``_base_outcome``)."""
        if any(report.fail_to_pass.get(t) != "PASSED" for t in task.tests.fail_to_pass):
            return
        failing = {t for t, s in report.pass_to_pass.items() if s not in ("PASSED", "SKIPPED", "XFAIL")}
        if not failing:
            return
        base = self._base_outcome(task, snapshot)
        if base.timed_out or not base.offline or not failing <= base.failing:
            return
        kept = dataclasses.replace(task, tests=dataclasses.replace(
            task.tests, pass_to_pass=tuple(t for t in task.tests.pass_to_pass if t not in failing)))
        decide(report, kept, graded, self.verdict_rules, None, evidence.log)
        report.network_excluded = sorted(failing)
        report.error = joined(report.error, f"{len(failing)} PASS_TO_PASS test(s) left out of the verdict: they need "
                               "a network this machine lacks (they fail at base too, in a fresh copy, with network "
                               "errors)")

    def _compare_watch(self, task: Task, snapshot: Snapshot | None, report: GradeReport) -> None:
        """A run that would resolve, and in which the watch saw the code under test do anything, is
        compared with the gold patch's run of the same task (the base's when the task has no gold
        patch), graded once per grader and kept: kinds of behaviour the gold run does not show are
        ``verdict_tampered`` (reward 0, the kinds in ``tampering``)."""
        if not report.resolved or not report.watch:
            return
        reference = self._watch_reference(task, snapshot)
        report.watch_reference = reference
        if reference is None:
            return
        extra = sorted(set(report.watch) - set(reference))
        if extra:
            why = ("while the hidden tests ran, the code under test did what the gold patch's run of this task "
                   "does not: " + ", ".join(extra))
            report.flag("verdict_tampered", why)
            report.status, report.resolved = "verdict_tampered", False
            report.tampering.append(why)

    def _watch_reference(self, task: Task, snapshot: Snapshot | None) -> list[str] | None:
        gold = task.gold_patch or ""
        key = _reference_key(task)
        with self._lock:
            if key in self._references:
                return self._references[key]
        ref = self._grade(task, gold, snapshot, compare=False)
        with self._lock:
            self._references[key] = ref.watch
        return ref.watch

    def _sandbox(self, task: Task, snapshot: Snapshot | None) -> tuple[Sandbox, Path | None]:
        if getattr(self.sandbox_factory, "in_place", False):
            return self.sandbox_factory(None, None, task), None
        snapshot = snapshot or prepare_snapshot(task)
        root = Path(tempfile.mkdtemp(prefix=owned_prefix("ha-grade")))
        # The sandbox first: building its environment may write generated files into the snapshot
        # (setuptools_scm's _version.py from an in-tree build); its copy, made at start, has them.
        return self.sandbox_factory(snapshot, root, task), root

    def _run(self, task: Task, kept: str, report: GradeReport, snapshot: Snapshot | None,
             allow_fuzz: bool) -> tuple[Evidence, list[str]] | None:
        """Everything inside one fresh grading sandbox: (the test run, the paths the patch changed);
        None when the patch does not apply or the build fails."""
        sandbox, root = self._sandbox(task, snapshot)
        try:
            sandbox.start()
            gd = f"{sandbox.workdir}/{GRADE_DIR}"
            changed = self.patch_in(task, sandbox, kept, report, allow_fuzz)
            if changed is None:
                return None
            failed = install_hidden(task, sandbox, gd)
            if failed is not None:
                if not changed:
                    raise GradingError(f"the hidden test patch of {task.instance_id} does not apply: {failed[-800:]}")
                self._base_run(task, snapshot, install_only=True)  # raises GradingError when it fails at base too
                raise PatchRefused(f"with the patch in, the hidden tests cannot be installed (at base, in a fresh "
                                   f"copy, they can): {failed[-500:]}")
            plan = canary_tests.plant(task, sandbox, twins_on=self.twins) if self.canaries else None
            before = None
            if task.tests.build_command.strip():
                # the patch's build files run now: the test sources are hashed before them, not
                # only around the test run (a Makefile can rewrite the hidden tests)
                before = parse_hashes(sandbox.run(test_hashes_script(task), timeout=300, head_bytes=16 << 20,
                                             tail_bytes=0).output)
                if not self._build(task, sandbox, report):
                    return None
            evidence = self._run_tests(task, sandbox, gd, [f"{sandbox.workdir}/{p}" for p in changed], before,
                                       command=plan.command if plan and plan.command else None)
            evidence.canaries = plan
            return evidence, changed
        finally:
            sandbox.close()
            if root is not None:
                shutil.rmtree(root, ignore_errors=True)

    def patch_in(self, task: Task, sandbox: Sandbox, kept: str, report: GradeReport, allow_fuzz: bool) -> list[str] | None:
        """In a started grading sandbox: the patch (less its ignored paths) applied and the files the
        grader takes from the base restored; the paths it changed, or None when it does not apply.
        A restored path the patch changed is recorded and flagged."""
        gd = f"{sandbox.workdir}/{GRADE_DIR}"
        kept = self._drop_ignored(sandbox, kept, report, gd)
        changed = self._apply(task, sandbox, kept, report, gd, allow_fuzz)
        if changed is None:
            return None
        restored = self._restore(sandbox, task, changed, gd)
        touched = [p for p in changed if any(p == r or p.startswith(r + "/") for r in restored)]
        if touched:
            report.restored_paths = touched
            report.flag("touches_test_infrastructure", "the patch changed files the grader takes from the "
                        "base: " + ", ".join(touched[:10]))
        return changed

    def _apply(self, task: Task, sandbox: Sandbox, kept: str, report: GradeReport, gd: str,
               allow_fuzz: bool) -> list[str] | None:
        """The agent's patch into the grading copy (its file and the hidden test patch's put there
        first); the paths it changed, or None when it does not apply (``patch_failed``)."""
        files = {"agent.patch": patch_file_bytes(kept)} if kept.strip() else {}
        if task.tests.test_patch.strip():
            files["test.patch"] = patch_file_bytes(task.tests.test_patch)
        if files:
            put_files(sandbox, gd, files)
        if not kept.strip():
            report.applied_with = "empty"
            return []
        res = sandbox.run(apply_script(f"{gd}/agent.patch", allow_fuzz), timeout=300,
                          head_bytes=LOG_HEAD, tail_bytes=LOG_TAIL)
        how = re.findall(r"^HA_APPLIED=(.*)$", res.output, re.M)
        if not how or how[-1] == "failed":
            report.status, report.error = "patch_failed", apply_error(res.output)
            if res.timed_out:
                report.error = "applying the patch ran out of time (300 s): " + report.error
            return None
        report.applied_with = how[-1]
        return applied_paths(res.output, kept)

    def _base_run(self, task: Task, snapshot: Snapshot | None, install_only: bool = False) -> Evidence | None:
        """The base's tests (no patch) in a fresh grading copy, never the one a patch's run dirtied
        (files its code created at run time would survive there: a module shadowing the runner).
        ``install_only``: stop after installing the hidden tests; returns None when they installed
        (raises ``GradingError`` when they do not)."""
        sandbox, root = self._sandbox(task, snapshot)
        try:
            sandbox.start()
            gd = f"{sandbox.workdir}/{GRADE_DIR}"
            if task.tests.test_patch.strip():
                put_files(sandbox, gd, {"test.patch": patch_file_bytes(task.tests.test_patch)})
            failed = install_hidden(task, sandbox, gd)
            if failed is not None:
                raise GradingError(f"the hidden test patch of {task.instance_id} does not apply at base, in a "
                                   f"fresh copy: {failed[-800:]}")
            if install_only:
                return None
            if task.tests.build_command.strip():
                sandbox.run(workdir_command(task, sandbox, task.tests.build_command), timeout=task.tests.timeout_s)
            return self._run_tests(task, sandbox, gd, [])
        finally:
            sandbox.close()
            if root is not None:
                shutil.rmtree(root, ignore_errors=True)

    def _check_started(self, task: Task, snapshot: Snapshot | None, changed: list[str], evidence: Evidence,
                       report: GradeReport) -> None:
        """When the patch's run did not start: run the base's tests in a fresh copy; raise
        :class:`EnvironmentFault` when those do not start either, else note in ``report.error`` that
        the patch kept the tests from starting (graded as it stands)."""
        parse = get_parser(task.tests.log_parser, task.instance_id)
        failure = faults.start_failure(task, evidence, parse(evidence.log))
        if failure is None:
            return
        base = self._base_run(task, snapshot) if changed else evidence  # an empty patch's run is the base's
        assert base is not None
        base_failure = faults.start_failure(task, base, parse(base.log))
        if base_failure is None:
            report.error = (f"the tests did not start with the patch in: {failure.describe()}; at base, in a fresh "
                            "copy, they do, so the patch is to blame")
            return
        self._fault(task, report, base.log, base_failure, f"{base_failure.describe()}, with the patch and at base alike")

    def _check_timeout(self, task: Task, snapshot: Snapshot | None, changed: list[str], evidence: Evidence,
                       report: GradeReport) -> None:
        """A run cut off by the task's time limit is the patch's fault (``tests_timed_out``, reward 0)
        unless the base's run, in a fresh copy, is cut off too: then the environment's (masked, kind
        ``tests_timed_out``)."""
        base = self._base_outcome(task, snapshot) if changed else _BaseOutcome.of(task, evidence)
        if not base.timed_out:
            report.error = joined(report.error, f"the tests ran past the time limit ({task.tests.timeout_s} s) with "
                                   "the patch in; at base, in a fresh copy, they finish in time")
            return
        failure = faults.StartFailure("tests_timed_out", f"{task.tests.timeout_s} s")
        self._fault(task, report, base.log, failure,
                    f"{failure.describe()}, with the patch and at base (in a fresh copy) alike")

    def _base_outcome(self, task: Task, snapshot: Snapshot | None) -> _BaseOutcome:
        """The base's run in a fresh copy, once per task and time limit when it finished in time (a
        base cut off is run again next time: the machine may have been busy)."""
        key = (task.instance_id, task.tests.timeout_s)
        with self._lock:
            known = self._bases.get(key)
        if known is not None:
            return known
        evidence = self._base_run(task, snapshot)
        assert evidence is not None
        outcome = _BaseOutcome.of(task, evidence)
        if not outcome.timed_out:
            with self._lock:
                self._bases[key] = outcome
        return outcome

    @staticmethod
    def _fault(task: Task, report: GradeReport, base_log: str, failure: faults.StartFailure, cause: str) -> None:
        report.status, report.resolved, report.fault, report.error = faults.FAULT_STATUS, False, failure.kind, cause
        report.log_tail = base_log[-4000:]
        raise EnvironmentFault(f"{task.instance_id}: environment fault: {cause}", report, failure)

    def _drop_ignored(self, sandbox: Sandbox, kept: str, report: GradeReport, gd: str) -> str:
        """Sections of the patch that create files the base's own ignore rules ignore (``build/``,
        ``*.o``) and the pristine copy lacks: build outputs, never part of a source fix. A shipped
        object file and binary newer than the sources would make the build step keep them and run
        the patch's test binary. Read in the copy before the patch, so its ``.gitignore`` edits do
        not count; a file the copy has (a built extension) is left to ``git apply`` to refuse. Every
        path is checked, not only sections marked as new files: GNU ``patch`` creates a file from a
        hunk against nothing whatever the headers say. One ``git check-ignore --stdin`` for all of
        them; when it fails or runs out of time, the patch is refused (its paths are its only input)."""
        sections = split_patch(kept)
        paths = list(dict.fromkeys(p for sec in sections for p in section_paths(sec)))
        if not paths:
            return kept
        listing = f"{gd}/paths.list"
        put_files(sandbox, gd, {"paths.list": b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)})
        res = sandbox.run(ignored_script(listing), timeout=120, head_bytes=16 << 20, tail_bytes=0)
        if "HA_CHECKED" not in res.output and not res.timed_out:
            # git refuses the whole batch for one path it cannot check (beyond a symlink: the work
            # copy's node_modules link): one at a time, such a path is not ignored (git apply decides)
            res = sandbox.run(ignored_one_by_one(listing), timeout=120, head_bytes=16 << 20, tail_bytes=0)
        if "HA_CHECKED" not in res.output or res.truncated:
            why = "ran out of time" if res.timed_out else "failed"
            raise PatchRefused(f"checking the patch's {len(paths)} paths against the repository's ignore rules {why}: "
                               f"{res.output.strip()[-300:]}")
        index = {p.encode("utf-8", "surrogateescape").hex(): p for p in paths}
        ignored = {index[h] for h in re.findall(r"^HA_IGNORED ([0-9a-f]+)$", res.output, re.M) if h in index}
        if not ignored:
            return kept
        out = [sec for sec in sections if not set(section_paths(sec)) & ignored]
        report.dropped_paths += sorted(ignored - set(report.dropped_paths))
        report.flag("ignored_files_in_patch", "the patch creates files the repository ignores (build outputs, "
                    "dropped): " + ", ".join(sorted(ignored)[:10]))
        return "".join(out)

    def _build(self, task: Task, sandbox: Sandbox, report: GradeReport) -> bool:
        """The task's build steps in the grading copy; False (and ``build_failed``) when they fail.
        Their output goes to the report, never to the log parser: the patch decides what a
        build prints."""
        res = sandbox.run(workdir_command(task, sandbox, task.tests.build_command), timeout=task.tests.timeout_s,
                          head_bytes=LOG_HEAD, tail_bytes=LOG_TAIL)
        if res.exit_code == 0 and not res.timed_out:
            return True
        why = "timed out" if res.timed_out else f"exited {res.exit_code}"
        report.status, report.error = "build_failed", f"the build {why}: {res.output.strip()[-1500:]}"
        report.log_tail = res.output[-4000:]
        return False

    def _restore(self, sandbox: Sandbox, task: Task, changed: list[str], gd: str) -> list[str]:
        """Protected paths back to the base (``protect.py``); returns the targets."""
        res = sandbox.run("git -c core.quotepath=false ls-tree -r --name-only HEAD", timeout=300,
                          head_bytes=64 << 20, tail_bytes=0)
        if res.exit_code != 0 or res.truncated:
            raise GradingError(f"cannot list the base tree of {task.instance_id}: {res.output[-500:]}")
        base_files = set(res.output.splitlines())
        # What the patch can have changed, and every ancestor of it, with their types now (a
        # symlink where a protected path lies is replaced, not followed).
        probe = sorted({"/".join(p.split("/")[:i]) for p in changed for i in range(1, p.count("/") + 2)})
        tree: dict[str, str] = {p: "f" for p in base_files}
        if probe:
            res = sandbox.run("for p in " + " ".join(ansi_c_quote(p) for p in probe) + '; do if [ -L "$p" ]; '
                              'then echo "l $p"; elif [ -d "$p" ]; then echo "d $p"; elif [ -e "$p" ]; '
                              'then echo "f $p"; fi; done', timeout=300, head_bytes=64 << 20, tail_bytes=0)
            for line in res.output.splitlines():
                kind, _, path = line.partition(" ")
                if kind in ("l", "d", "f"):
                    tree[path] = kind
        targets = restore_targets(task, base_files, tree, changed)
        if not targets:
            return targets
        in_base = [t for t in targets if t in base_files or any(f.startswith(t + "/") for f in base_files)]
        res = sandbox.run(restore_script(targets, in_base, f"{gd}/restore.list"), timeout=300)
        if "HA_RESTORED" not in res.output:
            raise GradingError(f"cannot restore the protected paths of {task.instance_id}: {res.output[-800:]}")
        return targets

    def _run_tests(self, task: Task, sandbox: Sandbox, gd: str, changed: list[str],
                   before: dict[str, str] | None = None, command: str | None = None) -> Evidence:
        """The test command under the runner guards; ``before``: the test sources' hashes when they
        were taken earlier (before a build step), else just before the run; ``command``: the task's
        command with its name filter widened to the canaries (``canaries.widen``)."""
        command = workdir_command(task, sandbox, command or task.tests.test_command)
        reports: dict[str, str] = {}
        files: dict[str, bytes] = {}
        watch = None
        outside: tuple[TraceSpec, str] | None = None
        for guard in guards_for(task):
            if guard.name == "python" and not self.watch:
                continue  # a guard that only watches: off with the comparison, to measure what it costs
            run = guard.prepare(task, command, gd, changed)
            if run.trace is not None and hasattr(sandbox, "run_traced"):
                outside = (run.trace, run.command)  # traced from the host; the in-sandbox form kept as fallback
            else:
                command = run.command
            files.update(run.files)
            if run.report:
                reports[guard.name] = run.report
            if run.watch and watch is None:
                watch = (guard.name, run.watch)
        if files:
            put_files(sandbox, gd, files)
        hashing = test_hashes_script(task)
        if before is None:
            before = parse_hashes(sandbox.run(hashing, timeout=300, head_bytes=16 << 20, tail_bytes=0).output)
        collector, command = _collector(sandbox, watch, command)
        try:
            res, host_trace = _test_run(sandbox, command, task.tests.timeout_s, outside)
        finally:
            streams = collector.close() if collector is not None else None
        after = parse_hashes(sandbox.run(hashing, timeout=300, head_bytes=16 << 20, tail_bytes=0).output)
        evidence = Evidence(res.output, res.exit_code, res.timed_out, workdir=sandbox.workdir,
                            tests_before=before, tests_after=after,
                            shell_died=any("a new shell was started" in n for n in res.notes), host_trace=host_trace)
        for name, path in reports.items():
            # read through the shell (no helper process); a report is small, a huge one is not ours
            got = sandbox.run(f"cat -- {ansi_c_quote(path)} 2>/dev/null", timeout=60, head_bytes=16 << 20, tail_bytes=0)
            try:
                evidence.reports[name] = json.loads(got.output) if got.exit_code == 0 and not got.truncated else None
            except ValueError:
                evidence.reports[name] = None
        if watch is not None:
            read_watch(task, sandbox, watch, evidence, streams)
        return evidence


def _collector(sandbox: Sandbox, watch: tuple[str, str] | None, command: str) -> tuple[Collector | None, str]:
    """The Python watch's record out of the test processes' reach: a collector listening in the
    host directory the sandbox shows read-only (``sandbox.watch_dir``: host path, path inside,
    isolated), its socket named to the watched interpreters by ``HA_WATCH_SOCKET``. None (the watch
    file alone, within reach) for other watches and for a sandbox without such a directory."""
    shown = getattr(sandbox, "watch_dir", None)
    if watch is None or watch[0] not in ("pytest", "python") or not shown:
        return None, command
    try:
        collector = Collector(shown[0])
    except OSError as exc:
        log.warning("the Python watch writes its file in the grading copy, within reach: %s", exc)
        return None, command
    inside = f"{shown[1].rstrip('/')}/{collector.name}"
    return collector, f"export HA_WATCH_SOCKET={ansi_c_quote(inside)}; {command}"


def _test_run(sandbox: Sandbox, command: str, timeout: float,
              outside: tuple[TraceSpec, str] | None) -> tuple[RunResult, HostTrace | None]:
    """The test command: traced from the host when a guard asks for it (``outside``: the trace's
    spec, the command traced inside the sandbox) and the sandbox can; else as the guards made it,
    the in-sandbox trace when the host cannot trace this sandbox (said in the log)."""
    if outside is not None:
        try:
            return sandbox.run_traced(command, outside[0], timeout=timeout,  # type: ignore[attr-defined]
                                      head_bytes=LOG_HEAD, tail_bytes=LOG_TAIL)
        except TraceUnavailable as exc:
            log.warning("the test run is traced inside the sandbox, within reach of the code under test: %s", exc)
            command = outside[1]
    return sandbox.run(command, timeout=timeout, head_bytes=LOG_HEAD, tail_bytes=LOG_TAIL), None


def _reference_key(task: Task) -> tuple[str, str]:
    """Where the gold patch's watch record of ``task`` is kept (``Grader._references``)."""
    gold = task.gold_patch or ""
    return task.instance_id, hashlib.sha256(gold.encode("utf-8", "surrogateescape")).hexdigest()


__all__ = ["ERROR", "FAILED", "GRADER_VERSION", "GradeReport", "Grader", "GradingError", "filter_patch",
           "split_patch"]
