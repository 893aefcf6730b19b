"""``--retry-masked``: run a folder's masked episodes (or failed gradings) again, losing nothing.

The masked records are appended to ``masked-history.jsonl`` in the folder (each with
``retried_at``), durable before they leave the run's own file; the run then finds those
(instance, run) pairs missing and runs them again as a resume does, with the same seeds
(``EpisodeConfig.episode_seed`` is a function of the run's seed, the instance and the run).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from ..records.episode_record import classify
from ..records.log import JsonlLog, append_jsonl

HISTORY = "masked-history.jsonl"


def set_aside(log: JsonlLog, masked: Callable[[dict[str, Any]], bool], history: Path) -> list[dict[str, Any]]:
    """Move the records ``masked`` picks from ``log`` (its file rewritten whole) to ``history``."""
    log.records, moved = set_aside_rows(log.path, log.records, masked, history)
    return moved


def set_aside_rows(path: Path, rows: list[dict[str, Any]], pick: Callable[[dict[str, Any]], bool],
                   history: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(kept, moved): the ``rows`` of the JSONL file ``path`` that ``pick`` chooses are appended to
    ``history`` (each with ``retried_at``, durable), then ``path`` is rewritten with the rest."""
    moved = [r for r in rows if pick(r)]
    if not moved:
        return rows, []
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    for r in moved:
        append_jsonl(history, {**r, "retried_at": stamp})
    kept = [r for r in rows if not pick(r)]
    tmp = Path(path).with_name(Path(path).name + ".tmp")
    with tmp.open("w") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=True) + "\n" for r in kept)
    tmp.replace(path)
    return kept, moved


def masked_episodes(ids: Iterable[str], runs: int) -> Callable[[dict[str, Any]], bool]:
    """Picks the masked records of these instances' runs 1..``runs``."""
    wanted = set(ids)
    return lambda r: r["instance_id"] in wanted and int(r["run"]) <= runs and classify(r).masked


def change_line(retried: int, masked: tuple[int, int], rate: tuple[float, float], history: Path,
                what: str = "masked episode(s)", rate_name: str = "pass@1") -> str:
    """One line saying what a retry changed (``masked``, ``rate``: before and after)."""
    if not retried:
        return f"retry-masked: no {what} to retry"
    return (f"retry-masked: {retried} {what} run again (their old records: {history}); "
            f"masked {masked[0]} -> {masked[1]}; {rate_name} {100 * rate[0]:.1f} -> {100 * rate[1]:.1f}")


def set_aside_gradings(out: Path, ids: Iterable[str]) -> int:
    """``ha grade``: move the failed gradings (status ``error``) of these instances to the history,
    so the grading run does them again; returns how many."""
    from .grade import _safe

    history, moved = Path(out) / HISTORY, 0
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    for iid in ids:
        path = Path(out) / "logs" / _safe(iid) / "report.json"
        if not path.is_file():
            continue
        body = json.loads(path.read_text()).get(iid, {})
        if body.get("status") == "error":
            append_jsonl(history, {"instance_id": iid, **body, "retried_at": stamp})
            path.unlink()
            moved += 1
    return moved
