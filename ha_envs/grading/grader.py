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
import fnmatch
import hashlib
import json
import re
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..sandbox.base import Sandbox, SandboxError
from ..sandbox.local import LocalSandbox, LocalSandboxConfig
from ..sandbox.netns import available as netns_available
from ..sandbox.reaper import owned_prefix
from ..sandbox.shell import ansi_c_quote
from ..sandbox.provision.workcopy import PATCH_CAP_BYTES, Snapshot, prepare_snapshot
from ..task import REAL_BENCHMARKS, Task
from . import canaries as canary_tests
from . import faults
from .consistency import exit_status_reasons
from .log_parsers import ERROR, FAILED, get_parser
from .patchfile import section_paths, split_patch, unsafe_path
from .protect import restore_script, restore_targets
from .protect import test_dir_of
from .runners import Evidence, _simple, changed_tests, guards_for, watch_record
from .screen import screen
from .verdicts import RULES, rules_for, task_verdict

GRADER_VERSION = "ha-grader/10"  # 10: the running test unnamed in the environment; the watch sees frame walks
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
LOG_HEAD, LOG_TAIL = 2 << 20, 6 << 20


class GradingError(RuntimeError):
    """Grading itself failed (the task's test patch does not apply, the sandbox broke, ...).

    The agent is not to blame: the env ends the episode with ``grading_error`` and masks it."""


class PatchRefused(Exception):
    """A step whose only input is the agent's patch failed or ran out of time (checking its paths
    against the ignore rules, too many paths to take): the patch's fault. Graded ``patch_refused``,
    reward 0, never masked (a masked rollout would drop out of its GRPO group: a policy that learns
    to cause one loses no negative signal)."""


MAX_PATCH_PATHS = 2000
"""Most distinct paths a graded patch may touch. Bytes are capped too (``Grader.patch_bytes``), but
empty new files change no byte: 200,000 of them once made the per-path checks run out of time (a
``GradingError``, masked). A SWE-bench gold patch touches a handful; a patch over the cap is
``patch_refused``."""


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
    watch_reference: list[str] | None = None
    """The gold patch's run of the same task, seen the same way: compared with ``watch`` when the
    run would resolve and the watch saw anything (kinds the gold run lacks -> ``verdict_tampered``)."""

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


SandboxFactory = Callable[[Snapshot | None, Path | None, Task], Sandbox]
"""(snapshot, grading root holding the prepared ``testbed`` copy, task) -> a fresh sandbox on it.
A factory marked ``in_place`` (Docker) gets (None, None, task): its sandbox starts from the task's
snapshot image and the grader prepares the copy inside it."""


NETWORK_SIGNS = re.compile(
    r"Temporary failure in name resolution|Name or service not known|Network is unreachable|"
    r"Failed to establish a new connection|Max retries exceeded with url|NewConnectionError|ConnectTimeout|"
    r"socket\.gaierror|getaddrinfo failed|urlopen error|Could not resolve host|nodename nor servname|"
    r"No route to host|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|"
    # requests' connect-timeout tests dial a non-routable address and expect a timeout; without a
    # route out the connection fails at once instead
    r"connect\(\) request should time out")


def network_errors(log: str, limit: int = 5) -> list[str]:
    found: list[str] = []
    for line in log.splitlines():
        if NETWORK_SIGNS.search(line):
            line = line.strip()[:300]
            if line not in found:
                found.append(line)
                if len(found) == limit:
                    break
    return found


def tests_need_network(task: Task | None) -> bool:
    """Real-benchmark tests (a benchmark's row, or a task with a real environment spec) run with
    network, as the official harnesses run them (some PASS_TO_PASS tests open connections); the
    agent's own sandbox stays offline either way."""
    return task is not None and (task.benchmark in REAL_BENCHMARKS or bool((task.environment.extra or {}).get("specs")))


def shared_loopback_note(sandbox: str, workers: int, tasks: list[Task], network: bool | None = None,
                         private_network: bool | None = None) -> str | None:
    """What to tell a user who grades ``tasks`` with network in the local sandbox, ``workers`` at a
    time, where the local sandbox has to grade in the host's network namespace (no slirp4netns:
    ``sandbox/netns.py``; ``private_network`` None reads whether it is installed). None when that
    is not so. There concurrent gradings share one loopback and test suites that bind a fixed port
    collide (redis, ``benchmarks/VALIDATION.md``)."""
    if sandbox != "local" or workers < 2 or network is False or not any(network or tests_need_network(t) for t in tasks):
        return None
    if private_network if private_network is not None else netns_available():
        return None
    return (f"note: slirp4netns is not installed, so the local sandbox grades with network in the host's network "
            f"namespace and {workers} concurrent gradings share one loopback: test suites that bind a fixed port "
            "collide (their failures come out flaky; redis in benchmarks/VALIDATION.md). Install slirp4netns, or "
            "use --workers 1, --network off or --sandbox docker for such suites")


def local_sandbox_factory(config: LocalSandboxConfig | None = None, network: bool | None = None) -> SandboxFactory:
    """``network``: None gives the tests network as the official harnesses do (``tests_need_network``);
    True or False, always or never."""
    def make(snapshot: Snapshot, root: Path, task: Task | None = None) -> Sandbox:
        cfg = config or LocalSandboxConfig()
        if network if network is not None else tests_need_network(task):
            cfg = dataclasses.replace(cfg, network=True)
        # Given the task, the sandbox also finds the task's Python environment (real instances).
        return LocalSandbox(task, config=cfg, snapshot=snapshot, work_root=root)
    return make


def docker_sandbox_factory(config: Any = None, network: bool | None = None) -> SandboxFactory:
    """Grades in a fresh container of the task's snapshot image (never the agent's container): the
    patch and the hidden tests are applied inside it (``Grader._run``), so an official image's work
    copy is graded as built."""
    def make(snapshot: Snapshot | None, root: Path | None, task: Task | None = None) -> Sandbox:
        from ..sandbox.docker import DockerSandbox, DockerSandboxConfig

        cfg = config or DockerSandboxConfig()
        return DockerSandbox(task, DockerSandboxConfig(**{**cfg.__dict__, "warm": 0,
                                                          "network": network if network is not None else
                                                          cfg.network or tests_need_network(task)}),
                             role="grader")
    make.in_place = True  # type: ignore[attr-defined]
    return make


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


class Grader:
    """Grades patches for tasks; one instance can grade many tasks, concurrently.

    Every step that touches the agent's patch runs inside a fresh grading sandbox (bubblewrap or a
    container), never on the host: apply the patch, restore the protected paths from the base
    (``protect.py``), install the hidden tests, run the test command under the runner guards
    (``runners.py``), read the guards' reports back. Then the log is parsed, the benchmark's rule
    decides, and the guards cross-check the log; a disagreement is ``tests_tampered``."""

    def __init__(self, sandbox_factory: SandboxFactory | None = None, patch_bytes: int = 4 * PATCH_CAP_BYTES,
                 verdict_rules: str = "auto", canaries: bool = True, watch: bool = True) -> None:
        if verdict_rules not in RULES:
            raise ValueError(f"unknown verdict rules {verdict_rules!r}; available: {', '.join(RULES)}")
        self.sandbox_factory = sandbox_factory or local_sandbox_factory()
        self.verdict_rules = verdict_rules
        """``auto``, ``swebench`` or ``harnessadapt`` (``verdicts.RULES``)."""
        self.canaries = canaries
        """Plant hidden canary tests beside the hidden tests (``canaries.py``); off only to measure."""
        self.watch = watch
        """Compare what the code under test was seen doing with the gold patch's run (``_compare_watch``);
        off only to measure."""
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
        _flag_patch(report, kept, dropped, unsafe)
        try:
            npaths = len({p for sec in split_patch(kept) for p in section_paths(sec)})
            if npaths > MAX_PATCH_PATHS:
                raise PatchRefused(f"the patch touches {npaths} paths; at most {MAX_PATCH_PATHS} are graded")
            ran = self._run(task, kept, report, snapshot, allow_fuzz=not pro)
            if ran is not None:
                self._judge(task, snapshot, report, *ran)
                if compare and self.watch:
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
        report.canaries = canary_tests.summary(plan, statuses)
        report.watch = evidence.watch
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
        report.error = _joined(report.error, f"{len(failing)} PASS_TO_PASS test(s) left out of the verdict: they need "
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
        key = (task.instance_id, hashlib.sha256(gold.encode("utf-8", "surrogateescape")).hexdigest())
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
            failed = _install_hidden(task, sandbox, gd)
            if failed is not None:
                if not changed:
                    raise GradingError(f"the hidden test patch of {task.instance_id} does not apply: {failed[-800:]}")
                self._base_run(task, snapshot, install_only=True)  # raises GradingError when it fails at base too
                raise PatchRefused(f"with the patch in, the hidden tests cannot be installed (at base, in a fresh "
                                   f"copy, they can): {failed[-500:]}")
            plan = canary_tests.plant(task, sandbox) if self.canaries else None
            before = None
            if task.tests.build_command.strip():
                # the patch's build files run now: the test sources are hashed before them, not
                # only around the test run (a Makefile can rewrite the hidden tests)
                before = _hashes(sandbox.run(_test_hashes_script(task), timeout=300, head_bytes=16 << 20,
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

    def _apply(self, task: Task, sandbox: Sandbox, kept: str, report: GradeReport, gd: str,
               allow_fuzz: bool) -> list[str] | None:
        """The agent's patch into the grading copy (its file and the hidden test patch's put there
        first); the paths it changed, or None when it does not apply (``patch_failed``)."""
        files = {"agent.patch": _patch_bytes(kept)} if kept.strip() else {}
        if task.tests.test_patch.strip():
            files["test.patch"] = _patch_bytes(task.tests.test_patch)
        if files:
            _put(sandbox, gd, files)
        if not kept.strip():
            report.applied_with = "empty"
            return []
        res = sandbox.run(_apply_script(f"{gd}/agent.patch", allow_fuzz), timeout=300,
                          head_bytes=LOG_HEAD, tail_bytes=LOG_TAIL)
        how = re.findall(r"^HA_APPLIED=(.*)$", res.output, re.M)
        if not how or how[-1] == "failed":
            report.status, report.error = "patch_failed", _apply_error(res.output)
            if res.timed_out:
                report.error = "applying the patch ran out of time (300 s): " + report.error
            return None
        report.applied_with = how[-1]
        return _applied_paths(res.output, kept)

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
                _put(sandbox, gd, {"test.patch": _patch_bytes(task.tests.test_patch)})
            failed = _install_hidden(task, sandbox, gd)
            if failed is not None:
                raise GradingError(f"the hidden test patch of {task.instance_id} does not apply at base, in a "
                                   f"fresh copy: {failed[-800:]}")
            if install_only:
                return None
            if task.tests.build_command.strip():
                sandbox.run(_workdir_command(task, sandbox, task.tests.build_command), timeout=task.tests.timeout_s)
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
            report.error = _joined(report.error, f"the tests ran past the time limit ({task.tests.timeout_s} s) with "
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
        _put(sandbox, gd, {"paths.list": b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)})
        res = sandbox.run(_ignored_script(listing), timeout=120, head_bytes=16 << 20, tail_bytes=0)
        if "HA_CHECKED" not in res.output and not res.timed_out:
            # git refuses the whole batch for one path it cannot check (beyond a symlink: the work
            # copy's node_modules link): one at a time, such a path is not ignored (git apply decides)
            res = sandbox.run(_ignored_one_by_one(listing), timeout=120, head_bytes=16 << 20, tail_bytes=0)
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
        res = sandbox.run(_workdir_command(task, sandbox, task.tests.build_command), timeout=task.tests.timeout_s,
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
        command = _workdir_command(task, sandbox, command or task.tests.test_command)
        reports: dict[str, str] = {}
        files: dict[str, bytes] = {}
        watch = None
        for guard in guards_for(task):
            run = guard.prepare(task, command, gd, changed)
            command = run.command
            files.update(run.files)
            if run.report:
                reports[guard.name] = run.report
            if run.watch and watch is None:
                watch = (guard.name, run.watch)
        if files:
            _put(sandbox, gd, files)
        hashing = _test_hashes_script(task)
        if before is None:
            before = _hashes(sandbox.run(hashing, timeout=300, head_bytes=16 << 20, tail_bytes=0).output)
        res = sandbox.run(command, timeout=task.tests.timeout_s, head_bytes=LOG_HEAD, tail_bytes=LOG_TAIL)
        after = _hashes(sandbox.run(hashing, timeout=300, head_bytes=16 << 20, tail_bytes=0).output)
        evidence = Evidence(res.output, res.exit_code, res.timed_out, workdir=sandbox.workdir,
                            tests_before=before, tests_after=after,
                            shell_died=any("a new shell was started" in n for n in res.notes))
        for name, path in reports.items():
            # read through the shell (no helper process); a report is small, a huge one is not ours
            got = sandbox.run(f"cat -- {ansi_c_quote(path)} 2>/dev/null", timeout=60, head_bytes=16 << 20, tail_bytes=0)
            try:
                evidence.reports[name] = json.loads(got.output) if got.exit_code == 0 and not got.truncated else None
            except ValueError:
                evidence.reports[name] = None
        if watch is not None:
            got = sandbox.run(f"head -c 65536 -- {ansi_c_quote(watch[1])} 2>/dev/null", timeout=60)
            rep = evidence.reports.get(watch[0])
            evidence.watch = watch_record(got.output if got.exit_code == 0 else None, rep if isinstance(rep, dict) else None)
        return evidence


def _workdir_command(task: Task, sandbox: Sandbox, command: str) -> str:
    """``command`` with the task's workdir pointed at the sandbox's copy when the sandbox is not
    isolated (the copy is a host path: Pro's run scripts ``cd /app``)."""
    if sandbox.workdir == task.environment.workdir:
        return command
    return re.sub(rf"(?<![\w./-]){re.escape(task.environment.workdir)}(?![\w.-])", sandbox.workdir, command)


GRADE_DIR = ".git/ha-grade"
"""The grader's files in the grading copy, inside its own ``.git``: never part of the tree, and no
patch may write there."""

_RUNNER_INTERNALS = re.compile(
    r"^\+.*?\b(_pytest\b|pytest_runtest_\w+|pytest_sessionfinish|pluggy|TestReport|_exit(?=\()|"
    r"sys\.modules\[['\"](?:_?pytest|unittest)['\"]\]|atexit\b|process\.exit\(0\)|os\.Exit\(0\)|"
    r"std::process::exit\(0\)|gc\.get_objects|ha_pytest_guard|ha_node_guard|HA_GUARD)", re.M)


def runner_internals(patch: str) -> list[str]:
    """Test-runner internals that the patch's added lines mention (a suspicion, not a verdict);
    sections of the runner's own source (pytest's repository) are left out."""
    found: set[str] = set()
    for section in split_patch(patch):
        if any(part in ("_pytest", "pluggy") for p in section_paths(section) for part in p.split("/")):
            continue
        found.update(m.group(1) for m in _RUNNER_INTERNALS.finditer(section))
    return sorted(found)


def _flag_patch(report: GradeReport, kept: str, dropped: list[str], unsafe: list[str]) -> None:
    """What the patch's text alone makes suspicious (flags only: no reward change)."""
    if unsafe:
        report.flag("unsafe_paths", "the patch writes outside the repository or into .git: " + ", ".join(unsafe[:10]))
    if dropped:
        report.flag("touches_test_infrastructure",
                    "the patch edits hidden tests or protected paths (dropped): " + ", ".join(dropped[:10]))
    internals = runner_internals(kept)
    if internals:
        report.flag("runner_internals_in_patch", "the patch's code mentions test-runner internals: "
                    + ", ".join(internals))
    for why in screen(kept):
        report.flag("suspicious", why)


def ungradable(task: Task, status: str, why: str, duration_s: float = 0.0) -> GradeReport:
    """The verdict on a change that cannot be graded because of what the agent did
    (``patch_too_large``, ``diff_failed``): reward 0, not masked."""
    report = GradeReport(task.instance_id, status, False, error=why, duration_s=duration_s)
    if status == "patch_too_large":
        report.flag("patch_too_large", why)
    return report


def _applied_paths(output: str, patch: str) -> list[str]:
    """The paths the applied patch touched: git's reading (``--numstat``), GNU patch's (``patching
    file``) and ours (``patchfile.section_paths``), together."""
    paths: dict[str, None] = {}
    for line in output.splitlines():
        if line.startswith("HA_PATH "):
            paths.setdefault(line[8:].strip('"'), None)
        elif line.startswith("patching file "):
            paths.setdefault(line[14:].strip().strip("'\""), None)
    for section in split_patch(patch):
        for p in section_paths(section):
            paths.setdefault(p, None)
    return [p for p in paths if p and not unsafe_path(p)]


_TEST_SOURCES = ("py", "pyi", "js", "mjs", "cjs", "jsx", "ts", "tsx", "go", "rs", "rb", "php", "java",
                 "c", "h", "cc", "cpp", "cxx", "hpp", "tcl")


def _test_hashes_script(task: Task) -> str:
    """sha256 of the hidden test files and the test sources of their test directories (run at the
    grading copy's root; ``sha256sum`` lines)."""
    roots = list(dict.fromkeys([*task.hidden_test_files,
                                *(d for d in map(test_dir_of, task.hidden_test_files) if d is not None)]))
    if not roots:
        return "true"
    names = " -o ".join(f"-name '*.{ext}'" for ext in _TEST_SOURCES)
    return (f"find {' '.join(ansi_c_quote(r) for r in roots)} -type f ! -path '*/__pycache__/*' \\( {names} \\) "
            "-print0 2>/dev/null | sort -zu | xargs -0 -r sha256sum -- 2>/dev/null; true")


def _hashes(output: str) -> dict[str, str]:
    out = {}
    for line in output.splitlines():
        digest, _, path = line.partition("  ")
        if len(digest) == 64 and path:
            out[path.removeprefix("./")] = digest
    return out


def _put(sandbox: Sandbox, directory: str, files: dict[str, bytes]) -> None:
    """The grader's files into the grading sandbox: one archive where the sandbox takes one."""
    writer = getattr(sandbox, "write_files", None)
    if writer is not None:
        writer(directory, files)
        return
    for name, data in files.items():
        sandbox.write_file(f"{directory}/{name}", data)


def _patch_bytes(patch: str) -> bytes:
    if patch and not patch.endswith("\n"):
        patch += "\n"
    return patch.encode("utf-8", errors="surrogateescape")




def _apply_script(path: str, allow_fuzz: bool) -> str:
    """``git apply``, then (SWE-bench's fallback) ``patch --fuzz=5``; prints the paths git reads in
    the patch (``HA_PATH <path>``), GNU patch's ``patching file`` lines and ``HA_APPLIED=<how>``."""
    q = ansi_c_quote(path)
    err = ansi_c_quote(path + ".err")
    g = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.quotepath=false"
    listing = (f"{g} apply --numstat {q} 2>/dev/null | "
               "awk -F'\\t' 'NF>=3 {print \"HA_PATH \" $3}'; ")
    fuzz = (f"elif command -v patch >/dev/null && patch --batch --fuzz=5 -p1 --dry-run -i {q} >/dev/null 2>&1 "
            f"&& patch --batch --fuzz=5 -p1 --no-backup-if-mismatch -i {q} 2>&1; "
            "then echo 'HA_APPLIED=patch --fuzz=5'\n") if allow_fuzz else ""
    return (listing + f"if {g} apply --whitespace=nowarn {q} 2>{err}; then echo 'HA_APPLIED=git apply'\n"
            f"{fuzz}else echo HA_APPLIED=failed; cat {err}; fi")


def _apply_error(output: str) -> str:
    text = "\n".join(l for l in output.splitlines() if not l.startswith("HA_APPLIED=")).strip()
    return text or "patch does not apply"


def _install_hidden(task: Task, sandbox: Sandbox, gd: str) -> str | None:
    """The hidden tests into the grading copy (``test.patch`` already in ``gd``), then every grader
    file but the guards' taken out of it: nothing the code under test can read during the run names
    the graded tests (the test patch without the canaries) or holds the agent's patch. None when they
    are in; else the script's output."""
    test_patch = f"{gd}/test.patch" if task.tests.test_patch.strip() else None
    res = sandbox.run(_hidden_tests_script(task.hidden_test_files, test_patch), timeout=300)
    scrub = sandbox.run(f"rm -rf -- {ansi_c_quote(gd)} && echo HA_SCRUBBED", timeout=120)
    if "HA_SCRUBBED" not in scrub.output:
        raise GradingError(f"cannot remove the grader's files from the grading copy: {scrub.output[-500:]}")
    return None if "HA_TESTS_READY" in res.output else res.output.strip() or "no output"


_GIT_IGNORE = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false check-ignore"


_PRINT_IGNORED = ("if [ ! -e \"$p\" ] && [ ! -L \"$p\" ]{also}; then printf 'HA_IGNORED '; "
                  "printf '%s' \"$p\" | od -An -v -tx1 | tr -d ' \\n'; echo; fi")
"""Prints ``HA_IGNORED <hex of the path's bytes>`` for ``$p`` when the copy lacks it (and ``{also}`` holds)."""


def _ignored_script(listing: str) -> str:
    """Of the NUL-separated paths in ``listing``: those the base's ignore rules ignore and the copy
    lacks, each printed as ``HA_IGNORED <hex of its bytes>``; then ``HA_CHECKED``."""
    q = ansi_c_quote(listing)
    return (f"{{ {_GIT_IGNORE} -z --stdin < {q}; rc=$?; [ $rc -le 1 ] || exit $rc; }} | "
            f"while IFS= read -r -d '' p; do {_PRINT_IGNORED.format(also='')}; done; "
            f"[ \"${{PIPESTATUS[0]}}\" = 0 ] && rm -f -- {q} && echo HA_CHECKED")


def _ignored_one_by_one(listing: str) -> str:
    """``_ignored_script``'s answer, one ``git check-ignore`` per path (a path git cannot check is
    not ignored)."""
    q = ansi_c_quote(listing)
    test = f' && {_GIT_IGNORE} -q -- "$p" 2>/dev/null'
    return f"while IFS= read -r -d '' p; do {_PRINT_IGNORED.format(also=test)}; done < {q}; rm -f -- {q}; echo HA_CHECKED"


def _joined(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


def _hidden_tests_script(paths: tuple[str, ...], test_patch: str | None) -> str:
    """Hidden test files back to base (removed when new), then the test patch (the file at
    ``test_patch``; None when there is none); prints HA_TESTS_READY."""
    lines = []
    for path in paths:
        q = ansi_c_quote(path)
        lines.append(f"if git cat-file -e HEAD:{q} 2>/dev/null; then git checkout HEAD -- {q}; else rm -rf -- {q}; fi")
    lines.append(f"git apply --whitespace=nowarn {ansi_c_quote(test_patch)} && echo HA_TESTS_READY" if test_patch
                 else "echo HA_TESTS_READY")
    return " && ".join(f"{{ {l}; }}" for l in lines) if len(lines) > 1 else lines[0]


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


def filter_patch(patch: str, task: Task) -> tuple[str, list[str], list[str]]:
    """Drop file sections that touch hidden-test files or protected paths, or write outside the
    repository (absolute, ``..``, ``.git``): (kept patch, dropped protected paths, unsafe paths).
    Advisory: the grader restores the protected paths after applying whatever is kept."""
    hidden = set(task.hidden_test_files)
    globs = task.tests.protected_paths
    kept, dropped, unsafe = [], [], []
    for section in split_patch(patch):
        paths = section_paths(section)
        bad_unsafe = [p for p in paths if unsafe_path(p)]
        bad = [p for p in paths if p in hidden or any(fnmatch.fnmatch(p, g) for g in globs)]
        if bad_unsafe:
            unsafe.extend(p for p in bad_unsafe if p not in unsafe)
        elif bad:
            dropped.extend(p for p in bad if p not in dropped)
        else:
            kept.append(section)
    return "".join(kept), dropped, unsafe


__all__ = ["ERROR", "FAILED", "GRADER_VERSION", "GradeReport", "Grader", "GradingError", "filter_patch",
           "split_patch"]
