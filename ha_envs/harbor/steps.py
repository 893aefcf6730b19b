"""Multi-step Harbor tasks (``[[steps]]`` in task.toml), as Harbor runs them.

The agent works step after step in one environment: step *k* shows ``steps/<name>/instruction.md``;
when the agent is done with it (it submits, or reaches the step's turn or time cap) its work copy is
graded with that step's tests (``steps/<name>/tests/`` laid over the task's ``tests/``, so
``/tests/test.sh`` is the step's own when it has one, else the shared one), in a fresh grading
sandbox under the same rules as a single-step task (``grading/harbor.py``). A step whose reward is
below its ``min_reward``, or that left no valid reward (Harbor's verifier raises then), ends the
episode: later steps are not run and count for nothing (not even 0 in the mean). A step without a
valid reward counts 0 here (Harbor leaves it out of the mean: an agent could break step 2's verifier
to keep step 1's 1.0). The episode's reward is the mean of the rewards of the steps that were graded
(``multi_step_reward_strategy = "mean"``, the default) or the last graded step's (``"final"``).

Before step *k* is shown (step 1: at reset), Harbor's preparation runs (``stage``): the files of
``steps/<name>/workdir/`` are copied over the work directory, then its ``setup.sh`` (copied with
them) is run there by bash. They become part of the work copy, so of the diff the step is graded
on; what ``setup.sh`` changes outside the work directory is not carried to the grading sandbox (each
grading replays the diff into a fresh one: docs/interop.md). A setup that fails before step 1 is an
environment fault (masked: nothing the agent did ran yet); before a later step it ends the episode
as Harbor does, that step counting 0 (``setup_failed``), since the agent's work may have broken it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..sandbox.shell import ansi_c_quote
from ..task import Task
from .models import HarborTaskError


def steps_of(task: Task) -> list[dict[str, Any]]:
    """The task's steps (``metadata.harbor.steps``); empty for a single-step task."""
    return list((task.metadata.get("harbor") or {}).get("steps") or [])


def is_multi_step(task: Task) -> bool:
    return bool(steps_of(task))


def step_task(task: Task, index: int) -> Task:
    """``task`` as graded after step ``index`` (0-based): that step's tests and verifier timeout."""
    step = steps_of(task)[index]
    meta = dict(task.metadata["harbor"], step=step["name"])
    tests = dataclasses.replace(task.tests, timeout_s=step["verifier_timeout_s"])
    return dataclasses.replace(task, tests=tests, metadata={**task.metadata, "harbor": meta})


def tests_folders(harbor_meta: dict[str, Any]) -> list[Path]:
    """The folders laid at ``/tests`` for a grading, in order (a later one's files win): the task's
    ``tests/``, then, for a multi-step task, the graded step's ``steps/<name>/tests/`` (a patch
    graded outside an episode, ``ha grade``, ``ha tasks validate``: the last step's), each only
    where it exists."""
    root = Path(harbor_meta["task_dir"])
    folders = [root / "tests"]
    steps = harbor_meta.get("steps") or []
    step = harbor_meta.get("step") or (steps[-1]["name"] if steps else None)  # outside an episode: the last's
    if step:
        folders.append(root / "steps" / step / "tests")
    return [f for f in folders if f.is_dir()]


def staged_files(task_dir: Path, name: str) -> dict[str, tuple[bytes, bool]]:
    """The files of ``steps/<name>/workdir/``: relative path -> (bytes, executable). Links that
    resolve outside the task and anything but files and folders are refused (``HarborTaskError``)."""
    folder = task_dir / "steps" / name / "workdir"
    if not folder.exists():
        return {}
    if not folder.is_dir():
        raise HarborTaskError(f"{folder}: not a folder (workdir/ holds the files staged before the step)")
    root, found = task_dir.resolve(), {}
    for path in sorted(folder.rglob("*")):
        real = path.resolve()
        if not real.is_relative_to(root):
            raise HarborTaskError(f"{path}: a link to {real}, outside the task: staged files must be the task's own")
        if real.is_dir():
            continue
        if not real.is_file():
            raise HarborTaskError(f"{path}: neither a file nor a folder (workdir/ stages files only)")
        found[path.relative_to(folder).as_posix()] = (real.read_bytes(), bool(real.stat().st_mode & 0o111))
    return found


def stage(sandbox: Any, task: Task, step: dict[str, Any]) -> str:
    """Harbor's preparation of ``step`` in the agent's ``sandbox``: its ``workdir/`` files written
    over the work directory (modes kept), then ``setup.sh`` run there. "" when done (or nothing to
    do), else why it failed (a setup that exits non-zero, runs past the step's agent timeout, or
    files that cannot be written)."""
    if not step.get("workdir"):
        return ""
    files = staged_files(Path(task.metadata["harbor"]["task_dir"]), step["name"])
    work = sandbox.workdir
    try:
        if hasattr(sandbox, "write_files"):
            sandbox.write_files(work, {rel: data for rel, (data, _) in files.items()})
        else:
            for rel, (data, _) in files.items():
                sandbox.write_file(f"{work}/{rel}", data)
    except OSError as exc:
        return f"step {step['name']!r}: its workdir/ files could not be staged: {exc}"
    runnable = [ansi_c_quote(f"{work}/{rel}") for rel, (_, x) in files.items() if x]
    if runnable:
        sandbox.run("chmod +x -- " + " ".join(runnable), timeout=60)
    if "setup.sh" not in files:
        return ""
    timeout = step.get("agent_timeout_s") or 600.0
    res = sandbox.run(f"cd {ansi_c_quote(work)} && bash ./setup.sh 2>&1", timeout=timeout)
    if res.timed_out or res.exit_code != 0:
        why = f"ran past {timeout:g} s" if res.timed_out else f"exited {res.exit_code}"
        return f"step {step['name']!r}: setup.sh {why}: {res.output.strip()[-800:]}"
    return ""


def below_min_reward(min_reward: float | dict[str, float] | None, reward: float | None) -> bool:
    """Harbor's gate: a step with ``min_reward`` whose reward is under it (no reward counts as
    minus infinity) stops the episode. A table gates each key; only ``reward`` is kept here."""
    if min_reward is None:
        return False
    threshold = min_reward if isinstance(min_reward, (int, float)) else min_reward.get("reward", float("-inf"))
    return (reward if reward is not None else float("-inf")) < threshold


@dataclass
class StepRun:
    """Where an episode of a multi-step task stands: the step being worked on and the grades of
    the steps done (``record``), and the episode's reward by the task's strategy."""

    task: Task
    index: int = 0
    results: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = ""
    """Why the remaining steps will not run (a ``min_reward`` gate); empty otherwise."""

    @property
    def steps(self) -> list[dict[str, Any]]:
        return steps_of(self.task)

    @property
    def current(self) -> dict[str, Any]:
        return self.steps[self.index]

    def grading_task(self) -> Task:
        return step_task(self.task, self.index)

    def record(self, written: float | None, reward: float, status: str, ending: str) -> None:
        """The grade of the current step: ``written``, the reward its verifier wrote (None: none
        believed), gates ``min_reward`` as in Harbor; ``reward`` (1 or 0 by this library's rule for a
        Harbor grade: reward 1 resolves) is what the episode's reward is made of. Sets ``stopped``
        when the gate fails."""
        step = self.current
        self.results.append({"name": step["name"], "reward": reward, "verifier_reward": written, "status": status,
                             "ending": ending, "min_reward": step["min_reward"]})
        if status == "verdict_tampered":  # the agent's doing: the episode ends, reward 0 (env.py)
            self.stopped = f"step {step['name']!r}: verdict forged"
        elif written is None:  # Harbor: a step without a verifier result (it raised) aborts the rest
            self.stopped = f"step {step['name']!r}: no valid reward ({status})"
        elif below_min_reward(step["min_reward"], written):
            said = "no valid reward" if written is None else f"reward {written:g}"
            self.stopped = f"step {step['name']!r} got {said}, below its min_reward {step['min_reward']}"

    def setup_failed(self, why: str) -> None:
        """The current step's preparation (``stage``) failed: it is recorded, counting 0 with no
        verifier reward, and the episode stops there (Harbor skips its agent and verifier)."""
        step = self.current
        self.results.append({"name": step["name"], "reward": 0.0, "verifier_reward": None, "status": "setup_failed",
                             "ending": "setup_failed", "min_reward": step["min_reward"]})
        self.stopped = why

    def more(self) -> bool:
        """Whether another step follows the one just graded (and no gate stopped the episode)."""
        return not self.stopped and self.index + 1 < len(self.steps)

    def advance(self) -> dict[str, Any]:
        self.index += 1
        return self.current

    def reward(self) -> float:
        """The episode's reward: Harbor's ``mean`` of the graded steps (steps not run are left out,
        not counted as 0) or its ``final``: the last graded step's."""
        if not self.results:
            return 0.0
        if (self.task.metadata["harbor"].get("reward_strategy") or "mean") == "final":
            return self.results[-1]["reward"]
        return sum(r["reward"] for r in self.results) / len(self.results)


STEP_PROMPT = """<next-step name="{name}">
{instruction}
</next-step>

Step {number} of {total}. Your changes so far stay in {workdir}. When this step is done, submit again."""
