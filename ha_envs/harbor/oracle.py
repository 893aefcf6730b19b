"""A Harbor task's oracle, ``solution/solve.sh``, as a gold patch: run once in a fresh sandbox of the
task's environment (the solution folder at ``/solution``, as Harbor's oracle agent has it), and the
work copy's diff taken. What solve.sh changes outside the work directory is not kept (docs/interop.md).
Kept per process by the task's fingerprint."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

from ..grading.harbor import folder_sandbox, is_harbor
from ..grading.report import GradingError
from ..sandbox.shell import ansi_c_quote
from ..task import Task
from .models import HarborTaskError

_lock = threading.Lock()
_patches: dict[str, str] = {}


def oracle_patch(task: Task, factory) -> str:
    """The diff ``solution/solve.sh`` makes in a fresh sandbox of ``factory`` (a grading sandbox
    factory, ``grading/sandboxes.py``)."""
    meta = task.metadata["harbor"]
    solution = Path(meta["task_dir"]) / "solution"
    if not (solution / "solve.sh").is_file():
        raise HarborTaskError(f"{meta['task_dir']}: no solution/solve.sh (the oracle)")
    with folder_sandbox(factory, task, None, solution, "/solution") as sandbox:
        timeout = meta.get("agent_timeout_s") or 600.0
        res = sandbox.run(f"cd {ansi_c_quote(sandbox.workdir)} && bash /solution/solve.sh 2>&1", timeout=timeout)
        if res.timed_out or res.exit_code != 0:
            why = f"ran past {timeout} s" if res.timed_out else f"exited {res.exit_code}"
            raise GradingError(f"{task.instance_id}: solution/solve.sh {why}: {res.output.strip()[-800:]}")
        return sandbox.diff()


def with_oracle(task: Task, factory) -> Task:
    """``task`` with its gold patch from solve.sh (a Harbor task without one; others as they are)."""
    if not is_harbor(task) or task.gold_patch.strip():
        return task
    key = task.fingerprint()
    with _lock:
        patch = _patches.get(key)
    if patch is None:
        patch = oracle_patch(task, factory)
        with _lock:
            _patches[key] = patch
    return dataclasses.replace(task, gold_patch=patch)
