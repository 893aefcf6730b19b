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
from typing import Any, Callable

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
               habit_harness: Any = None, progress: Callable[[str, int, int, float], None] | None = None
               ) -> dict[str, Any]:
    """Demonstrations of ``tasks`` by ``policies`` (and, with ``habit_harness``, habit ones), then
    ``epochs`` SFT epochs on them. ``progress(phase, done, total, value)``: called after each
    demonstration set (``demonstrations``, value: records so far) and each epoch (``sft``, value:
    its loss), for a caller that shows progress and an ETA."""
    records: list[dict[str, Any]] = []
    sets = len(policies) + (2 if habit_harness is not None else 0)
    for policy in policies:
        records += demonstrations(tasks, trainer.token_mode, Path(out) / "demonstrations" / policy, harness=harness,
                                  policy=policy)
        if progress:
            progress("demonstrations", policies.index(policy) + 1, sets, len(records))
    if habit_harness is not None:
        for i, (name, policy) in enumerate((("habit", HabitPolicy(harness)), ("habit-null", "null")), 1):
            records += demonstrations(tasks, trainer.token_mode, Path(out) / "demonstrations" / name,
                                      harness=habit_harness, policy=policy)
            if progress:
                progress("demonstrations", len(policies) + i, sets, len(records))
    if not any(r["resolved"] for r in records):
        raise ValueError("no demonstration resolved its task: nothing worth warm-starting on")
    samples = sft_samples(records, resolved_only=False)
    losses: list[float] = []
    for epoch in range(1, epochs + 1):  # one call per epoch (the same steps) so progress can be shown
        losses += trainer.sft(samples, epochs=1, lr=lr)
        if progress:
            progress("sft", epoch, epochs, losses[-1])
    return {"demonstrations": len(records), "resolved": sum(bool(r["resolved"]) for r in records),
            "unknown_tool_calls": sum(1 for r in records for m in r.get("messages", [])
                                      if m.get("error_kind") == "unknown_tool"),
            "sft_loss_first": losses[0], "sft_loss_last": losses[-1], "tokens": sum(s.n_trainable for s in samples)}
