"""Hidden-test grading of a patch, on a fresh copy the agent never touched.

Steps: fresh copy of the task snapshot -> drop the patch's edits to hidden-test and protected paths
-> apply the rest (``git apply``, then ``patch --fuzz`` as SWE-bench does) -> restore the hidden
test files to base and apply the hidden test patch -> run the test command in a fresh sandbox ->
parse the log -> verdict.

SWE-bench Pro runs Scale's per-instance run script and log parser (``pro.py``).

Verdict rule (as swebench 5.x): a FAIL_TO_PASS test counts only if PASSED (skipped = failed); a
PASS_TO_PASS test is kept if PASSED, SKIPPED or XFAIL; a test missing from the log failed.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..sandbox.base import Sandbox, SandboxError
from ..sandbox.shell import ansi_c_quote
from ..sandbox.local import LocalSandbox, LocalSandboxConfig
from ..sandbox.workcopy import Snapshot, git, make_work_copy, prepare_snapshot
from ..task import Task, patch_paths
from .parsers import ERROR, FAILED, PASSED, SKIPPED, XFAIL, get_parser

GRADER_VERSION = "ha-grader/2"  # 2: Docker grading in place; SWE-bench Pro through Scale's run scripts
LOG_HEAD, LOG_TAIL = 2 << 20, 6 << 20


class GradingError(RuntimeError):
    """Grading itself failed (the task's test patch does not apply, the sandbox broke, ...).

    The agent is not to blame: the env ends the episode with ``grading_error`` and masks it."""


@dataclass
class GradeReport:
    instance_id: str
    status: str
    """``resolved``, ``unresolved``, ``patch_failed`` or ``tests_timed_out``."""
    resolved: bool
    fail_to_pass: dict[str, str] = field(default_factory=dict)
    pass_to_pass: dict[str, str] = field(default_factory=dict)
    dropped_paths: list[str] = field(default_factory=list)
    """Paths whose edits were removed from the patch before grading (hidden tests, protected)."""
    applied_with: str = ""
    error: str = ""
    log_tail: str = ""
    duration_s: float = 0.0
    grader_version: str = GRADER_VERSION

    @property
    def reward(self) -> float:
        return 1.0 if self.resolved else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


SandboxFactory = Callable[[Snapshot | None, Path | None, Task], Sandbox]
"""(snapshot, grading root holding the prepared ``testbed`` copy, task) -> a fresh sandbox on it.
A factory marked ``in_place`` (Docker) gets (None, None, task): its sandbox starts from the task's
snapshot image and the grader prepares the copy inside it."""


def tests_need_network(task: Task | None) -> bool:
    """Real-benchmark tests (a benchmark's row, or a task with a real environment spec) run with
    network, as the official harnesses run them (some PASS_TO_PASS tests open connections); the
    agent's own sandbox stays offline either way."""
    from ..benchmarks import REAL_BENCHMARKS

    return task is not None and (task.benchmark in REAL_BENCHMARKS or bool((task.environment.extra or {}).get("specs")))


def local_sandbox_factory(config: LocalSandboxConfig | None = None) -> SandboxFactory:
    def make(snapshot: Snapshot, root: Path, task: Task | None = None) -> Sandbox:
        cfg = config or LocalSandboxConfig()
        if tests_need_network(task):
            cfg = dataclasses.replace(cfg, network=True)
        # Given the task, the sandbox also finds the task's Python environment (real instances).
        return LocalSandbox(task, config=cfg, snapshot=snapshot, work_root=root)
    return make


def docker_sandbox_factory(config: Any = None) -> SandboxFactory:
    """Grades in a fresh container of the task's snapshot image (never the agent's container): the
    patch and the hidden tests are applied inside it (``Grader._in_place``), so an official image's
    work copy is graded as built."""
    def make(snapshot: Snapshot | None, root: Path | None, task: Task | None = None) -> Sandbox:
        from ..sandbox.docker import DockerSandbox, DockerSandboxConfig

        cfg = config or DockerSandboxConfig()
        return DockerSandbox(task, DockerSandboxConfig(**{**cfg.__dict__, "warm": 0,
                                                          "network": cfg.network or tests_need_network(task)}),
                             role="grader")
    make.in_place = True  # type: ignore[attr-defined]
    return make


class Grader:
    """Grades patches for tasks; one instance can grade many tasks, concurrently."""

    def __init__(self, sandbox_factory: SandboxFactory | None = None) -> None:
        self.sandbox_factory = sandbox_factory or local_sandbox_factory()

    def grade(self, task: Task, patch: str, snapshot: Snapshot | None = None) -> GradeReport:
        t0 = time.monotonic()
        pro = task.tests.log_parser == "pro"
        if pro and not task.tests.test_command:
            raise GradingError(f"{task.instance_id}: SWE-bench Pro is graded with Scale's per-instance run "
                               "scripts; none were found (set HA_PRO_SCRIPTS to a checkout of "
                               "scaleapi/SWE-bench_Pro-os, or put its mirror under HA_REPOS_DIR)")
        kept, dropped = filter_patch(patch, task)
        if pro:  # Scale strips binary hunks and applies with `git apply` only
            from .pro import strip_binary_hunks

            kept, binary = strip_binary_hunks(kept)
            dropped += [p for p in binary if p not in dropped]
        report = GradeReport(task.instance_id, "unresolved", False, dropped_paths=dropped)
        try:
            if getattr(self.sandbox_factory, "in_place", False):
                log, timed_out = self._in_place(task, kept, report, allow_fuzz=not pro)
            else:
                log, timed_out = self._on_host_copy(task, kept, report, snapshot, allow_fuzz=not pro)
        except GradingError:
            raise
        except (OSError, SandboxError, KeyError) as exc:
            raise GradingError(f"grading {task.instance_id} failed: {exc}") from exc
        if report.status != "patch_failed":
            report.log_tail = log[-4000:]
            decide(report, task, get_parser(task.tests.log_parser, task.instance_id)(log))
            if timed_out and not report.resolved:
                report.status = "tests_timed_out"
        report.duration_s = time.monotonic() - t0
        return report

    def _on_host_copy(self, task: Task, kept: str, report: GradeReport, snapshot: Snapshot | None,
                      allow_fuzz: bool) -> tuple[str, bool]:
        """Prepare a copy of the snapshot on the host, then run the tests on it in a fresh sandbox."""
        snapshot = snapshot or prepare_snapshot(task)
        root = Path(tempfile.mkdtemp(prefix="ha-grade-"))
        sandbox: Sandbox | None = None
        try:
            # The sandbox first: building its environment may write generated files into the snapshot
            # (setuptools_scm's _version.py from an in-tree build), and the copy must have them.
            sandbox = self.sandbox_factory(snapshot, root, task)
            copy = root / "testbed"
            make_work_copy(snapshot, copy)
            if kept.strip():
                ok, how, err = apply_patch(copy, kept, root / "agent.patch", allow_fuzz=allow_fuzz)
                report.applied_with = how
                if not ok:
                    report.status, report.error = "patch_failed", err
                    return "", False
            else:
                report.applied_with = "empty"
            self._install_hidden_tests(task, snapshot, copy, root)
            return self._run_tests(task, sandbox)
        finally:
            if sandbox is not None:
                sandbox.close()
            shutil.rmtree(root, ignore_errors=True)

    def _in_place(self, task: Task, kept: str, report: GradeReport, allow_fuzz: bool) -> tuple[str, bool]:
        """Everything inside one fresh sandbox started from the task's snapshot image (Docker): the
        image's own work copy is used as built, so official images keep their in-place builds."""
        sandbox = self.sandbox_factory(None, None, task)
        try:
            sandbox.start()
            sandbox.write_file(f"{GRADE_DIR}/agent.patch", _patch_bytes(kept))
            sandbox.write_file(f"{GRADE_DIR}/test.patch", _patch_bytes(task.tests.test_patch))
            if kept.strip():
                res = sandbox.run(_apply_script(f"{GRADE_DIR}/agent.patch", allow_fuzz), timeout=300)
                how = re.findall(r"^HA_APPLIED=(.*)$", res.output, re.M)
                if not how or how[-1] == "failed":
                    report.status, report.error = "patch_failed", _apply_error(res.output)
                    return "", False
                report.applied_with = how[-1]
            else:
                report.applied_with = "empty"
            res = sandbox.run(_hidden_tests_script(task.hidden_test_files, f"{GRADE_DIR}/test.patch"
                                                   if task.tests.test_patch.strip() else None), timeout=300)
            if "HA_TESTS_READY" not in res.output:
                raise GradingError(f"the hidden test patch of {task.instance_id} does not apply: {res.output.strip()[-800:]}")
            res = sandbox.run(task.tests.test_command, timeout=task.tests.timeout_s, head_bytes=LOG_HEAD,
                              tail_bytes=LOG_TAIL)
            return res.output, res.timed_out
        finally:
            sandbox.close()

    def _install_hidden_tests(self, task: Task, snapshot: Snapshot, copy: Path, root: Path) -> None:
        for path in task.hidden_test_files:
            in_base = git(["cat-file", "-e", f"{snapshot.base_commit}:{path}"], copy, check=False).returncode == 0
            if in_base:
                git(["checkout", snapshot.base_commit, "--", path], copy)
            else:
                target = copy / path
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                elif target.exists() or target.is_symlink():
                    target.unlink()
        if not task.tests.test_patch.strip():
            return  # the hidden tests come with the environment (R2E-Gym's /r2e_tests)
        ok, _, err = apply_patch(copy, task.tests.test_patch, root / "test.patch", allow_fuzz=False)
        if not ok:
            raise GradingError(f"the hidden test patch of {task.instance_id} does not apply: {err}")

    def _run_tests(self, task: Task, sandbox: Sandbox) -> tuple[str, bool]:
        try:
            sandbox.start()
            command = task.tests.test_command
            if sandbox.workdir != task.environment.workdir:
                # Not isolated (the copy is a host path): commands written for the task's workdir
                # (Pro's run scripts `cd /app`) are pointed at the copy.
                command = re.sub(rf"(?<![\w./-]){re.escape(task.environment.workdir)}(?![\w.-])",
                                 sandbox.workdir, command)
            res = sandbox.run(command, timeout=task.tests.timeout_s,
                              head_bytes=LOG_HEAD, tail_bytes=LOG_TAIL)
            return res.output, res.timed_out
        finally:
            sandbox.close()


GRADE_DIR = "/tmp/ha-grade"


def _patch_bytes(patch: str) -> bytes:
    if patch and not patch.endswith("\n"):
        patch += "\n"
    return patch.encode("utf-8", errors="surrogateescape")


def _apply_script(path: str, allow_fuzz: bool) -> str:
    """``git apply``, then (SWE-bench's fallback) ``patch --fuzz=5``; prints HA_APPLIED=<how>."""
    q = ansi_c_quote(path)
    fuzz = (f"elif command -v patch >/dev/null && patch --batch --fuzz=5 -p1 --dry-run -i {q} >/dev/null 2>&1 "
            f"&& patch --batch --fuzz=5 -p1 -i {q} >/dev/null 2>&1; then echo 'HA_APPLIED=patch --fuzz=5'\n") if allow_fuzz else ""
    return (f"if git apply --whitespace=nowarn {q} 2>{GRADE_DIR}/apply.err; then echo 'HA_APPLIED=git apply'\n"
            f"{fuzz}else echo HA_APPLIED=failed; cat {GRADE_DIR}/apply.err; fi")


def _apply_error(output: str) -> str:
    text = "\n".join(l for l in output.splitlines() if not l.startswith("HA_APPLIED=")).strip()
    return text or "patch does not apply"


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


def decide(report: GradeReport, task: Task, statuses: dict[str, str]) -> None:
    """The verdict, by the benchmark's own rule:

    - SWE-bench (and the bundled suite), as swebench 5.x: every FAIL_TO_PASS test PASSED; every
      PASS_TO_PASS test PASSED, SKIPPED or XFAIL (a skipped F2P counts as failed);
    - SWE-bench Pro (``log_parser == "pro"``), Scale's rule: every F2P and P2P test PASSED;
    - R2E-Gym (``log_parser == "r2e"``): the parsed log equals the expected output exactly.
    """
    report.fail_to_pass = {t: statuses.get(t, "MISSING") for t in task.tests.fail_to_pass}
    report.pass_to_pass = {t: statuses.get(t, "MISSING") for t in task.tests.pass_to_pass}
    if task.tests.log_parser == "r2e":
        from .parsers import decolor

        expected = {decolor(k): v for k, v in (task.metadata.get("expected_output") or {}).items()}
        got = {decolor(k): v for k, v in statuses.items()}
        report.fail_to_pass = {t: got.get(t, "MISSING") for t in expected}
        report.resolved = bool(expected) and got == expected
    else:
        kept = (PASSED,) if task.tests.log_parser == "pro" else (PASSED, SKIPPED, XFAIL)
        f2p_ok = all(s == PASSED for s in report.fail_to_pass.values())
        p2p_ok = all(s in kept for s in report.pass_to_pass.values())
        report.resolved = f2p_ok and p2p_ok and bool(task.tests.fail_to_pass or task.tests.pass_to_pass)
    report.status = "resolved" if report.resolved else "unresolved"


def split_patch(patch: str) -> list[str]:
    """A multi-file patch -> one section per file (``diff --git`` headers, else ``--- `` pairs)."""
    lines = patch.splitlines(keepends=True)
    starts = [i for i, l in enumerate(lines) if l.startswith("diff --git ")]
    if not starts:
        starts = [i for i, l in enumerate(lines)
                  if l.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")]
    if not starts:
        return [patch] if patch.strip() else []
    sections = []
    if starts[0] > 0 and "".join(lines[:starts[0]]).strip():
        sections.append("".join(lines[:starts[0]]))
    for a, b in zip(starts, starts[1:] + [len(lines)]):
        sections.append("".join(lines[a:b]))
    return sections


def filter_patch(patch: str, task: Task) -> tuple[str, list[str]]:
    """Drop file sections that touch hidden-test files or protected paths."""
    hidden = set(task.hidden_test_files)
    globs = task.tests.protected_paths
    kept, dropped = [], []
    for section in split_patch(patch):
        paths = [p for p in patch_paths(section) if p != "dev/null"]
        bad = [p for p in paths if p in hidden or any(fnmatch.fnmatch(p, g) for g in globs)]
        if bad:
            dropped.extend(p for p in bad if p not in dropped)
        else:
            kept.append(section)
    return "".join(kept), dropped


def apply_patch(repo: Path, patch: str, patch_file: Path, allow_fuzz: bool = True) -> tuple[bool, str, str]:
    """Apply ``patch`` in ``repo``: (ok, method, error). Never raises for a bad patch."""
    if not patch.endswith("\n"):
        patch += "\n"
    patch_file.write_text(patch, encoding="utf-8", errors="surrogateescape")
    proc = git(["apply", "--whitespace=nowarn", str(patch_file)], repo, check=False)
    if proc.returncode == 0:
        return True, "git apply", ""
    error = proc.stderr.decode(errors="replace").strip()
    if allow_fuzz and shutil.which("patch"):
        dry = subprocess.run(["patch", "--batch", "--fuzz=5", "-p1", "--dry-run", "-i", str(patch_file)],
                             cwd=repo, capture_output=True)
        if dry.returncode == 0:
            real = subprocess.run(["patch", "--batch", "--fuzz=5", "-p1", "-i", str(patch_file)],
                                  cwd=repo, capture_output=True)
            if real.returncode == 0:
                return True, "patch --fuzz=5", ""
    return False, "", error or "patch does not apply"


__all__ = ["ERROR", "FAILED", "GRADER_VERSION", "GradeReport", "Grader", "GradingError", "apply_patch",
           "filter_patch", "split_patch"]
