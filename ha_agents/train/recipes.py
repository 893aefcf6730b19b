"""Recipes shared by ``ha train``, the demo, the learning benchmark and its test.

``TRAIN_HARNESS``: the ``train-edit`` preset, a small text-tool harness for tiny local policies (bash, edit and create file,
submit; Hermes ``<tool_call>`` format; no hooks). ``warm_start``: demonstrations of the tasks
through the real env and grader, then supervised epochs on them (the paper's policies start from
an instruction-tuned model; a randomly initialised tiny model needs this to write a tool call at
all). By default two per task: the oracle's fix and the ``null`` policy's give-up (it submits at
once), so the warm policy holds both behaviours and picks between them at its first tool name;
GRPO's job is then to learn which one the reward favours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ha_envs.harness import load_spec
from ha_envs.task import Task

from .sft import demonstrations, sft_samples

TRAIN_HARNESS = load_spec("train-edit")  # a preset (ha_envs/harness/presets/train-edit.yaml)


def warm_start(trainer: Any, tasks: list[Task], out: str | Path, harness: Any = TRAIN_HARNESS, epochs: int = 60,
               lr: float = 3e-3, policies: tuple[str, ...] = ("oracle", "null")) -> dict[str, Any]:
    records: list[dict[str, Any]] = []
    for policy in policies:
        records += demonstrations(tasks, trainer.token_mode, Path(out) / "demonstrations" / policy, harness=harness,
                                  policy=policy)
    if not any(r["resolved"] for r in records):
        raise ValueError("no demonstration resolved its task: nothing worth warm-starting on")
    samples = sft_samples(records, resolved_only=False)
    losses = trainer.sft(samples, epochs=epochs, lr=lr)
    return {"demonstrations": len(records), "resolved": sum(bool(r["resolved"]) for r in records),
            "sft_loss_first": losses[0], "sft_loss_last": losses[-1], "tokens": sum(s.n_trainable for s in samples)}
