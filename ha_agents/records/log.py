"""The one append-only JSONL writer: trajectories, evolution logs, training metrics.

Every line is written whole, flushed and fsynced before the call returns, so a killed process
leaves at most one cut line; ``JsonlLog`` drops that line (and mends the file) when it opens.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Mapping


def append_jsonl(path: Path, row: Mapping[str, Any]) -> None:
    """Append one JSON line, durable when this returns."""
    line = json.dumps(row, ensure_ascii=True) + "\n"
    with Path(path).open("a") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The whole lines of a JSONL file; a cut last line is left out (and the file mended)."""
    path = Path(path)
    if not path.exists():
        return []
    records, good_bytes = [], 0
    with path.open("rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                break
            try:
                records.append(json.loads(raw))
            except json.JSONDecodeError:
                break
            good_bytes += len(raw)
    if good_bytes != path.stat().st_size:
        with path.open("r+b") as fh:
            fh.truncate(good_bytes)
    return records


class JsonlLog:
    """An append-only JSONL file held open for a run: ``records`` as loaded, then as appended."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.records: list[dict[str, Any]] = read_jsonl(self.path)

    def done(self) -> set[tuple[str, int]]:
        """(instance id, run) pairs already recorded: what a resumed run skips."""
        return {(r["instance_id"], int(r["run"])) for r in self.records}

    def append(self, record: Mapping[str, Any]) -> None:
        record = dict(record)
        with self._lock:
            append_jsonl(self.path, record)
            self.records.append(record)


__all__ = ["JsonlLog", "append_jsonl", "read_jsonl"]
