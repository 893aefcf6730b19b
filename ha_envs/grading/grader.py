"""Hidden-test grading of a patch, on a fresh copy the agent never touched.

Steps: fresh copy of the task snapshot -> drop the patch's edits to hidden-test and protected paths
-> apply the rest (``git apply``, then ``patch --fuzz`` as SWE-bench does) -> restore the hidden
test files to base and apply the hidden test patch -> run the test command in a fresh sandbox ->
parse the log -> verdict.

Verdict rule (as swebench 5.x): a FAIL_TO_PASS test counts only if PASSED (skipped = failed); a
PASS_TO_PASS test is kept if PASSED, SKIPPED or XFAIL; a test missing from the log failed.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..sandbox.base import Sandbox, SandboxError
from ..sandbox.local import LocalSandbox, LocalSandboxConfig
from ..sandbox.workcopy import Snapshot, git, make_work_copy, prepare_snapshot
from ..task import Task, patch_paths
from .parsers import ERROR, FAILED, PASSED, SKIPPED, XFAIL, get_parser

GRADER_VERSION = "ha-grader/1"
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


SandboxFactory = Callable[[Snapshot, Path, Task], Sandbox]
"""(snapshot, grading root holding the prepared ``testbed`` copy, task) -> a fresh sandbox on it."""


def tests_need_network(task: Task | None) -> bool:
    """Real-benchmark tests run with network, as the official harnesses run them (some
    PASS_TO_PASS tests open connections); the agent's own sandbox stays offline either way."""
    return task is not None and bool((task.environment.extra or {}).get("specs"))


def local_sandbox_factory(config: LocalSandboxConfig | None = None) -> SandboxFactory:
    def make(snapshot: Snapshot, root: Path, task: Task | None = None) -> Sandbox:
        cfg = config or LocalSandboxConfig()
        if tests_need_network(task):
            cfg = dataclasses.replace(cfg, network=True)
        # Given the task, the sandbox also finds the task's Python environment (real instances).
        return LocalSandbox(task, config=cfg, snapshot=snapshot, work_root=root)
    return make


def docker_sandbox_factory(config: Any = None) -> SandboxFactory:
    """Grades in a fresh container of the task's environment image (never the agent's container),
    with the prepared copy mounted at /testbed."""
    def make(snapshot: Snapshot, root: Path, task: Task | None = None) -> Sandbox:
        from ..sandbox.docker import DockerSandbox, DockerSandboxConfig, docker_client
        from ..sandbox.images import env_image

        cfg = config or DockerSandboxConfig()
        image = env_image(docker_client(), task, cfg.image)
        return DockerSandbox(task, DockerSandboxConfig(**{**cfg.__dict__, "warm": 0,
                                                          "network": cfg.network or tests_need_network(task)}),
                             image=image, role="grader", mounts={str(root / "testbed"): cfg.mount_point},
                             snapshot=snapshot)
    return make


class Grader:
    """Grades patches for tasks; one instance can grade many tasks, concurrently."""

    def __init__(self, sandbox_factory: SandboxFactory | None = None) -> None:
        self.sandbox_factory = sandbox_factory or local_sandbox_factory()

    def grade(self, task: Task, patch: str, snapshot: Snapshot | None = None) -> GradeReport:
        t0 = time.monotonic()
        snapshot = snapshot or prepare_snapshot(task)
        root = Path(tempfile.mkdtemp(prefix="ha-grade-"))
        try:
            copy = root / "testbed"
            make_work_copy(snapshot, copy)
            kept, dropped = filter_patch(patch, task)
            report = GradeReport(task.instance_id, "unresolved", False, dropped_paths=dropped)
            if kept.strip():
                ok, how, err = apply_patch(copy, kept, root / "agent.patch")
                report.applied_with = how
                if not ok:
                    report.status, report.error = "patch_failed", err
                    report.duration_s = time.monotonic() - t0
                    return report
            else:
                report.applied_with = "empty"
            self._install_hidden_tests(task, snapshot, copy, root)
            log, timed_out = self._run_tests(task, snapshot, root)
            report.log_tail = log[-4000:]
            decide(report, task, get_parser(task.tests.log_parser)(log))
            if timed_out and not report.resolved:
                report.status = "tests_timed_out"
            report.duration_s = time.monotonic() - t0
            return report
        except GradingError:
            raise
        except (OSError, SandboxError, KeyError) as exc:
            raise GradingError(f"grading {task.instance_id} failed: {exc}") from exc
        finally:
            shutil.rmtree(root, ignore_errors=True)

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
        ok, _, err = apply_patch(copy, task.tests.test_patch, root / "test.patch", allow_fuzz=False)
        if not ok:
            raise GradingError(f"the hidden test patch of {task.instance_id} does not apply: {err}")

    def _run_tests(self, task: Task, snapshot: Snapshot, root: Path) -> tuple[str, bool]:
        sandbox = self.sandbox_factory(snapshot, root, task)
        try:
            sandbox.start()
            res = sandbox.run(task.tests.test_command, timeout=task.tests.timeout_s,
                              head_bytes=LOG_HEAD, tail_bytes=LOG_TAIL)
            return res.output, res.timed_out
        finally:
            sandbox.close()


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
