"""A Harbor task's oracle, ``solution/solve.sh``, as a gold patch: run once in a fresh sandbox of the
task's environment (the solution folder at ``/solution``, as Harbor's oracle agent has it), and the
work copy's diff taken. What solve.sh changes outside the work directory is not kept (docs/interop.md).
Kept per process by the task's fingerprint."""

from __future__ import annotations

import dataclasses
import secrets
import threading
from pathlib import Path

from ..grading.harbor import folder_sandbox, is_harbor
from ..grading.report import GradingError
from ..sandbox.shell import ansi_c_quote
from ..task import Task
from .models import HarborTaskError
from .steps import stage

_lock = threading.Lock()
_patches: dict[str, list[str]] = {}


def oracle_patch(task: Task, factory) -> str:
    """The diff ``solution/solve.sh`` makes in a fresh sandbox of ``factory`` (a grading sandbox
    factory, ``grading/sandboxes.py``)."""
    return oracle_patches(task, factory)[-1]


def oracle_patches(task: Task, factory) -> list[str]:
    """The work copy's diff after each step's solve script (one for a single-step task), run in
    order in one fresh sandbox, each with its solution folder at ``/solution`` as Harbor's oracle
    agent has it: a step's ``steps/<name>/solution/`` when the step has one, else ``solution/``."""
    meta = task.metadata["harbor"]
    root = Path(meta["task_dir"])
    steps = meta.get("steps") or [{"name": None, "solution": False, "agent_timeout_s": meta.get("agent_timeout_s")}]
    folders = [root / "steps" / s["name"] / "solution" if s["solution"] else root / "solution" for s in steps]
    for folder, step in zip(folders, steps):
        if not (folder / "solve.sh").is_file():
            where = f"step {step['name']!r}: neither steps/{step['name']}/solution/solve.sh nor " if step["name"] else ""
            raise HarborTaskError(f"{root}: {where}no solution/solve.sh (the oracle)")
    patches = [""]
    for folder, step in zip(folders, steps):  # a fresh sandbox per step: its /solution, the steps before replayed
        with folder_sandbox(factory, task, None, folder, "/solution") as sandbox:
            work = ansi_c_quote(sandbox.workdir)
            if patches[-1]:
                tag = f"HA_PATCH_{secrets.token_hex(6)}"
                body = patches[-1] if patches[-1].endswith("\n") else patches[-1] + "\n"
                res = sandbox.run(f"cd {work} && git apply --whitespace=nowarn - 2>&1 <<'{tag}'\n{body}{tag}",
                                  timeout=120)
                if res.exit_code != 0:
                    raise GradingError(f"{task.instance_id}: the oracle's work before step {step['name']!r} does "
                                       f"not apply again: {res.output.strip()[-800:]}")
            failed = stage(sandbox, task, step)  # its workdir/ and setup.sh, as Harbor (none: a single step)
            if failed:
                raise GradingError(f"{task.instance_id}: the oracle cannot run: {failed}")
            timeout = step.get("agent_timeout_s") or 600.0
            res = sandbox.run(f"cd {work} && bash /solution/solve.sh 2>&1", timeout=timeout)
            if res.timed_out or res.exit_code != 0:
                why = f"ran past {timeout} s" if res.timed_out else f"exited {res.exit_code}"
                rel = folder.relative_to(root).as_posix()
                raise GradingError(f"{task.instance_id}: {rel}/solve.sh {why}: {res.output.strip()[-800:]}")
            patches.append(sandbox.diff())
    return patches[1:]


def with_oracle(task: Task, factory) -> Task:
    """``task`` with its gold patch from solve.sh (a Harbor task without one; others as they are)."""
    if not is_harbor(task) or task.gold_patch.strip():
        return task
    key = task.fingerprint()
    with _lock:
        patches = _patches.get(key)
    if patches is None:
        patches = oracle_patches(task, factory)
        with _lock:
            _patches[key] = patches
    if len(patches) == 1:
        return dataclasses.replace(task, gold_patch=patches[0])
    # a multi-step task: the last step's diff is the gold patch; each step's, for the oracle policy
    meta = {**task.metadata, "harbor": {**task.metadata["harbor"], "oracle_steps": patches}}
    return dataclasses.replace(task, gold_patch=patches[-1], metadata=meta)
