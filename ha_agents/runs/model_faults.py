"""Stop a run whose model has died instead of masking every episode left.

A model server that goes away mid-run makes every later episode end ``model_error`` (masked, after
the client's retries). :class:`ModelErrorStreak` watches the records as they finish: after ``limit``
``model_error`` records in a row it stops the run. The records of the streak (and those of
episodes still running that end the same way) are not written, so rerunning the same command
runs exactly those episodes again once the model answers; every other finished record is kept.
A ``model_error`` followed by a good record is an isolated failure: it is written, masked, as before.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..llm.base import LLMError

MAX_MODEL_ERRORS = 5
"""Consecutive ``model_error`` episodes that stop a run (``ha eval --max-model-errors``; 0: never stop)."""


class ModelStopped(LLMError):
    """The run stopped: its model failed ``limit`` episodes in a row. The message says how to resume."""


class ModelErrorStreak:
    """Which finished records to write now, and whether the run must stop (see the module docstring)."""

    def __init__(self, limit: int | None, total: int, log_path: Path | str) -> None:
        if limit is not None and limit < 0:
            raise ValueError(f"max_model_errors: expected 0 (never stop) or more, got {limit}")
        self.limit = limit or 0
        self.total = total
        self.log_path = Path(log_path)
        self.pending: list[dict[str, Any]] = []
        self.stopped = False
        self.dropped = 0
        self.written = 0
        self.last_error = ""
        self._lock = threading.Lock()

    def take(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """The records to write now, given one more finished record (from any worker thread)."""
        with self._lock:
            return self._take(record)

    def _take(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        if not self.limit:
            return self._out([record])
        if record.get("termination") == "model_error":
            self.last_error = str(record.get("error") or "")
            if self.stopped:
                self.dropped += 1
                return []
            self.pending.append(record)
            if len(self.pending) >= self.limit:
                self.stopped = True
                self.dropped += len(self.pending)
                self.pending = []
            return []
        out, self.pending = self.pending + [record], []
        return self._out(out)

    def flush(self) -> list[dict[str, Any]]:
        """At the normal end of a run: the streak shorter than the limit is written, masked."""
        out, self.pending = self.pending, []
        return self._out(out)

    def _out(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.written += len(records)
        return records

    def error(self) -> ModelStopped:
        not_run = self.total - self.written - self.dropped
        return ModelStopped(
            f"stopped: the model failed {self.limit} episodes in a row (model_error; the last: "
            f"{self.last_error or 'no message'}). {self.written} episode(s) finished and are kept in "
            f"{self.log_path}; {self.dropped} that ended in a model error and {not_run} never started are not "
            "recorded: once the model answers again, run the same command to resume them")


__all__ = ["MAX_MODEL_ERRORS", "ModelErrorStreak", "ModelStopped"]
