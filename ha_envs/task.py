"""The benchmark-neutral Task record.

A Task says everything needed to (1) lay out the agent's work copy, (2) grade a patch with hidden
tests, and (3) build or pick the environment the code runs in. Loaders for the bundled suite, local
JSONL files and (later) SWE-bench / R2E-Gym rows all produce this one record.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


REAL_BENCHMARKS = frozenset({"swebench_verified", "swebench_multilingual", "swebench_pro", "r2e_gym"})
"""``Task.benchmark`` of the tasks the real-benchmark loaders (``benchmarks.py``) make."""


class TaskError(ValueError):
    """A task record is malformed or refers to something that does not exist."""


@dataclass(frozen=True)
class TestSpec:
    """How hidden tests grade a patch.

    The test patch is applied by the grader only, on a fresh copy; it never enters the agent's
    work copy.
    """

    __test__ = False  # keeps pytest from collecting this class

    test_patch: str
    """Unified diff that adds or changes the hidden test files."""
    fail_to_pass: tuple[str, ...]
    """Test ids that must fail before the fix and pass after it."""
    pass_to_pass: tuple[str, ...]
    """Test ids that must keep passing."""
    test_command: str
    """Shell command, run from the repository root, that runs every listed test."""
    log_parser: str
    """Name of the parser in ``ha_envs.grading.log_parsers`` that turns the log into test outcomes."""
    protected_paths: tuple[str, ...] = ()
    """Extra glob patterns (besides the files the test patch touches) whose edits by the agent
    are dropped before grading, so tampering with test infrastructure cannot flip the verdict."""
    timeout_s: float = 600.0
    """Wall-clock cap for the hidden test run (and, separately, for the build)."""
    build_command: str = ""
    """Shell command that builds the code under test before the tests run (swebench's ``build``
    steps: ``make``, ``cmake --build``, a package's compile step), from the repository root of the
    grading copy, after the patch and the hidden tests are in. Its output is never parsed for test
    results (the agent's patch controls what a build prints); a build that fails is graded
    ``build_failed``."""


@dataclass(frozen=True)
class EnvironmentSpec:
    """What the code runs in: a prebuilt image, or setup commands on a base image / local host."""

    image: str | None = None
    setup_commands: tuple[str, ...] = ()
    python_version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    workdir: str = "/testbed"
    """Where the repository sits inside an isolated sandbox (SWE-bench: ``/testbed``; SWE-bench Pro's
    run scripts expect ``/app``)."""


@dataclass(frozen=True)
class Task:
    """One repair task."""

    instance_id: str
    benchmark: str
    language: str
    problem_statement: str
    tests: TestSpec
    environment: EnvironmentSpec = EnvironmentSpec()
    repo: str = ""
    """``owner/name`` of the upstream repository ('' for a local snapshot)."""
    base_commit: str | None = None
    """Commit of ``repo`` the agent starts from (None when ``source_dir`` is the base)."""
    source_dir: Path | None = None
    """Local directory holding the project at its base state (bundled and local tasks)."""
    gold_patch: str = ""
    difficulty: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.instance_id:
            raise TaskError("task has an empty instance_id")
        if self.source_dir is None and not (self.repo and self.base_commit):
            raise TaskError(
                f"task {self.instance_id!r} needs either source_dir or repo + base_commit"
            )
        if self.source_dir is not None and not Path(self.source_dir).is_dir():
            raise TaskError(f"task {self.instance_id!r}: source_dir {self.source_dir} is not a directory")
        overlap = set(self.tests.fail_to_pass) & set(self.tests.pass_to_pass)
        if overlap:
            raise TaskError(
                f"task {self.instance_id!r}: ids in both FAIL_TO_PASS and PASS_TO_PASS: {sorted(overlap)}"
            )

    @property
    def hidden_test_files(self) -> tuple[str, ...]:
        """Paths the hidden test patch touches (its targets, ``b/`` side, and deletions)."""
        return patch_paths(self.tests.test_patch)

    def fingerprint(self) -> str:
        """Stable content hash of the record (source tree excluded), for caches and run records."""
        payload = dataclasses.asdict(self)
        payload["source_dir"] = None
        if "harbor" in self.metadata:  # its gold patch is made from solution/, which content_sha256 covers
            payload["gold_patch"] = ""
            payload["metadata"]["harbor"].pop("oracle_steps", None)  # so are a multi-step task's per step
        if not payload["tests"]["build_command"]:  # fields added later keep older fingerprints
            del payload["tests"]["build_command"]
        blob = json.dumps(payload, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def patch_paths(patch: str) -> tuple[str, ...]:
    """Every repository path a unified git diff touches, in order of first appearance."""
    seen: dict[str, None] = {}
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            parts = line.split(" ")
            for token in parts[2:4]:
                if token[:2] in ("a/", "b/"):
                    seen.setdefault(token[2:], None)
        elif line.startswith(("--- ", "+++ ")):
            token = line[4:].split("\t")[0].strip()
            if token[:2] in ("a/", "b/"):
                seen.setdefault(token[2:], None)
    return tuple(seen)
