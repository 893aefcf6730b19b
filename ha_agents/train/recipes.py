"""Recipes shared by ``ha train``, the demo, the learning benchmark and its test.

``TRAIN_HARNESS``: the ``train-edit`` preset, a small text-tool harness for tiny local policies (bash, edit and create file,
submit; Hermes ``<tool_call>`` format; no hooks). ``warm_start``: demonstrations of the tasks
through the real env and grader, then supervised epochs on them (the paper's policies start from
an instruction-tuned model; a randomly initialised tiny model needs this to write a tool call at
all). By default two per task: the oracle's fix and the ``null`` policy's give-up (it submits at
once), so the warm policy holds both behaviours and picks between them at its first tool name;
GRPO's job is then to learn which one the reward favours.

``habit_harness``: a policy warm-started on one harness and then put on another brings its habits:
under ``habit_harness`` it is shown the give-up and the *same calls* the oracle made under
``harness`` (``HabitPolicy``). A tool ``harness`` has and ``habit_harness`` lacks then fails there
as an unknown tool, as it would for a model trained with another agent's tools: the CPU
co-evolution benchmark's policy, which needs evolution to add the tool back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ha_envs.harness import load_spec
from ha_envs.task import Task

from ..llm.policies import OraclePolicy
from .sft import demonstrations, sft_samples

TRAIN_HARNESS = load_spec("train-edit")  # a preset (ha_envs/harness/presets/train-edit.yaml)


class HabitPolicy(OraclePolicy):
    """The oracle's plan for ``habit_of`` (a harness spec), sent under whatever harness it runs in:
    the calls of a policy used to other tools."""

    name = "habit"

    def __init__(self, habit_of: Any) -> None:
        super().__init__()
        self.tool_schemas = [{"type": "function", "function": {"name": n}} for n in load_spec(habit_of).tool_names]

    def plan(self, task: Task, info: dict[str, Any]) -> list[Any]:
        return super().plan(task, {**info, "tools": self.tool_schemas})


def warm_start(trainer: Any, tasks: list[Task], out: str | Path, harness: Any = TRAIN_HARNESS, epochs: int = 60,
               lr: float = 3e-3, policies: tuple[str, ...] = ("oracle", "null"),
               habit_harness: Any = None) -> dict[str, Any]:
    records: list[dict[str, Any]] = []
    for policy in policies:
        records += demonstrations(tasks, trainer.token_mode, Path(out) / "demonstrations" / policy, harness=harness,
                                  policy=policy)
    if habit_harness is not None:
        for name, policy in (("habit", HabitPolicy(harness)), ("habit-null", "null")):
            records += demonstrations(tasks, trainer.token_mode, Path(out) / "demonstrations" / name,
                                      harness=habit_harness, policy=policy)
    if not any(r["resolved"] for r in records):
        raise ValueError("no demonstration resolved its task: nothing worth warm-starting on")
    samples = sft_samples(records, resolved_only=False)
    losses = trainer.sft(samples, epochs=epochs, lr=lr)
    return {"demonstrations": len(records), "resolved": sum(bool(r["resolved"]) for r in records),
            "unknown_tool_calls": sum(1 for r in records for m in r.get("messages", [])
                                      if m.get("error_kind") == "unknown_tool"),
            "sft_loss_first": losses[0], "sft_loss_last": losses[-1], "tokens": sum(s.n_trainable for s in samples)}
