"""What a local training run says while it runs: the warm start's phases (``PhaseProgress``) and
one line per update with its numbers in TensorBoard when it is installed (``UpdateReporter``).
Both write to a ``progress`` callable (default: a line on stderr), so ``ha train`` and a benchmark
calling ``LocalSession`` in Python show the same lines."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable


def stderr_line(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class PhaseProgress:
    """``warm_start``'s progress: a line per demonstration set, and per SFT epoch at most one every
    ``every_s`` seconds (the first and the last always), with elapsed time and ETA. A phase starts
    when the one before it ended."""

    def __init__(self, every_s: float = 10.0, progress: Callable[[str], None] | None = None) -> None:
        self.every_s = every_s
        self.progress = progress or stderr_line
        self._phase = ""
        self._start = self._previous = time.monotonic()
        self._printed = 0.0

    def __call__(self, phase: str, done: int, total: int, value: float) -> None:
        from ha_agents.runs.progress import clock

        now = time.monotonic()
        if phase != self._phase:
            self._phase, self._start = phase, self._previous
        self._previous = now
        if done not in (1, total) and now - self._printed < self.every_s:
            return
        self._printed = now
        elapsed = now - self._start
        what = f"{int(value)} records" if phase == "demonstrations" else f"SFT loss {value:.4f}"
        self.progress(f"warm start {phase} {done}/{total}: {what} | elapsed {clock(elapsed)} | "
                      f"ETA {clock(elapsed / done * (total - done))}")


class UpdateReporter:
    """``train()``'s ``on_update``: one line per update, and the row's numbers to TensorBoard
    (``OUT/tensorboard``) when it is installed. ``close()`` when the run ends."""

    def __init__(self, updates: int, out: str | Path | None = None, progress: Callable[[str], None] | None = None):
        self.updates = updates
        self.progress = progress or stderr_line
        self.board = _tensorboard(Path(out)) if out is not None else None

    def __call__(self, row: dict[str, Any]) -> None:
        self.progress(update_line(row, self.updates))
        if self.board is not None:
            for k, v in row.items():
                if isinstance(v, (int, float)):
                    self.board.add_scalar(f"train/{k}", v, row["update"])
            self.board.flush()

    def close(self) -> None:
        if self.board is not None:
            self.board.close()


def update_line(row: dict[str, Any], updates: int) -> str:
    return (f"update {row['update']}/{updates}: reward {row['reward_mean']:.3f}  pass {row['pass_rate']:.3f}  "
            f"trainable {row['trainable_rate']:.3f}  samples {row['batch_samples']}  "
            f"loss {row.get('loss', float('nan')):.4f}  grad {row.get('grad_norm', float('nan')):.3f}  "
            f"mismatch {row.get('logprob_mismatch_mean', float('nan')):.2e}  "
            f"({row['rollout_s']:.0f}s rollout, {row['update_s']:.0f}s update){no_update_note(row)}")


def no_update_note(row: dict[str, Any]) -> str:
    """Why an update trained on nothing (its loss and gradient are then nan): the groups' outcomes
    and the records the batch policy dropped."""
    if row.get("batch_samples"):
        return ""
    dropped = ", ".join(f"{n} {why}" for why, n in sorted((row.get("dropped") or {}).items())) or "none"
    return (f"\n  no update: no group had both a success and a failure after the batch policy "
            f"({row.get('mixed_groups', 0)} mixed, {row.get('all_success_groups', 0)} all-success, "
            f"{row.get('all_failure_groups', 0)} all-failure groups; dropped: {dropped})")


def _tensorboard(out: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except Exception:  # noqa: BLE001 - tensorboard is optional
        return None
    return SummaryWriter(str(out / "tensorboard"))


__all__ = ["PhaseProgress", "UpdateReporter", "no_update_note", "stderr_line", "update_line"]
