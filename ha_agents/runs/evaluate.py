"""Evaluation runs: episodes of (task x run) with a model, streamed to disk, resumable.

Output directory:
- ``trajectories.jsonl``: one line per finished episode, appended and flushed as it ends;
- ``predictions.jsonl`` (run 1) and ``predictions-run<k>.jsonl`` (run k > 1): SWE-bench's format
  (``instance_id``, ``model_name_or_path``, ``model_patch``), rebuilt from the trajectories;
- ``summary.json``: pass@1 per run, its mean, and per-instance outcomes;
- ``harness.yaml``: the exact harness spec; ``trajs/run<k>/<id>/<id>.traj.json``: mini-swe-agent-style copies.
- ``run-identity.json``: what makes the results (``identity``): a rerun with the same directory
  continues only the same run, skipping the (instance, run) pairs already in trajectories.jsonl;
- ``masked-history.jsonl``: the masked records a ``retry_masked`` run replaced.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ha_envs.harness import HarnessSpec
from ha_envs.task import Task

from ..episode import EpisodeConfig
from ..llm.options import ModelOptions
from ..records.episode_record import EpisodeRecord, classify
from ..records.export import write_traj_json
from ..records.log import JsonlLog
from .identity import claim, eval_identity
from .retry import HISTORY, masked_episodes, set_aside
from .model_faults import MAX_MODEL_ERRORS
from .rollouts import collect

__all__ = ["EvalSummary", "evaluate", "summarize", "write_predictions"]


@dataclass
class EvalSummary:
    model: str
    harness: str
    harness_hash: str
    runs: int
    n_tasks: int
    pass_at_1: list[float] = field(default_factory=list)
    mean_pass_at_1: float = 0.0
    masked: int = 0
    suspicious: int = 0
    """Episodes whose grade carries a suspicion flag (see ``GradeReport.flags``)."""
    per_instance: dict[str, list[bool]] = field(default_factory=dict)
    records: list[EpisodeRecord] = field(default_factory=list, repr=False, compare=False)
    """The run's records (these tasks, runs 1..``runs``); not part of ``summary.json``."""

    def to_json(self) -> dict[str, Any]:
        """What ``summary.json`` holds of it (every field but the records)."""
        return {k: v for k, v in self.__dict__.items() if k != "records"}

    def markdown(self) -> str:
        head = "| harness | model | " + " | ".join(f"run {i + 1}" for i in range(self.runs)) + " | pass@1 (mean) |"
        sep = "|---|---|" + "---|" * self.runs + "---|"
        row = (f"| {self.harness} ({self.harness_hash}) | {self.model} | " + " | ".join(f"{100 * p:.1f}" for p in self.pass_at_1)
               + f" | {100 * self.mean_pass_at_1:.1f} |")
        lines = [head, sep, row, "", f"{self.n_tasks} tasks x {self.runs} runs; {self.masked} episodes masked "
                 f"(infrastructure failures, counted unresolved); {self.suspicious} flagged as suspicious "
                 "(records' `flags`)."]
        return "\n".join(lines)


def evaluate(tasks: list[Task], model: Any, config: "EpisodeConfig | str | HarnessSpec" = "h0", runs: int = 1,
             out_dir: Path | str = "runs/eval", *, workers: int = 1, executor: str = "threads",
             progress: Callable[[dict[str, Any]], None] | None = None, progress_bar: bool = False,
             retry_masked: bool = False, max_model_errors: int | None = MAX_MODEL_ERRORS) -> EvalSummary:
    """``runs`` episodes of every task with ``model`` (a model spec, or a client with threads), set up
    by ``config`` (an :class:`EpisodeConfig`, or a harness for the default one: its sampling options
    and seed are recorded in summary.json). ``out_dir`` must be free or hold this very run
    (``identity.claim``; else :class:`~ha_agents.runs.identity.RunIdentityError`). ``progress``:
    called with each finished episode's record; ``progress_bar``: show
    :class:`~ha_agents.runs.progress.EpisodeProgress` on stderr. ``retry_masked``: run the masked
    episodes again (their old records move to ``masked-history.jsonl``); ``max_model_errors``: see
    :func:`~ha_agents.runs.rollouts.collect`."""
    config = EpisodeConfig.of(config)
    spec = config.harness
    out = claim(out_dir, eval_identity(tasks, model, config, runs))
    log = JsonlLog(out / "trajectories.jsonl")
    if retry_masked:
        set_aside(log, masked_episodes([t.instance_id for t in tasks], runs), out / HISTORY)
    spec.save(out / "harness.yaml")
    records = collect(tasks, runs, model, config, log=log, workers=workers, executor=executor, on_record=progress,
                      progress_bar=progress_bar, max_model_errors=max_model_errors)
    ids = {t.instance_id for t in tasks}
    fallback = model if isinstance(model, str) else getattr(model, "name", type(model).__name__)
    model_name = next((r["model"] for r in log.records if r["instance_id"] in ids and r.get("model")), fallback)
    summary = summarize(records, [t.instance_id for t in tasks], runs, model_name, spec.name, spec.hash)
    summary.records = records
    write_predictions(log.records, out, runs, model_name)
    write_traj_json([r for r in log.records if r["instance_id"] in ids], out)
    record = dict(summary.to_json(), model_options=(config.model_options or ModelOptions()).record(), seed=config.seed)
    (out / "summary.json").write_text(json.dumps(record, indent=2) + "\n")
    return summary


def summarize(records: list[dict[str, Any]], ids: list[str], runs: int, model: str, harness: str,
              harness_hash: str = "") -> EvalSummary:
    wanted = set(ids)
    by_key = {(r["instance_id"], int(r["run"])): r for r in records if r["instance_id"] in wanted}
    s = EvalSummary(model=model, harness=harness, harness_hash=harness_hash, runs=runs, n_tasks=len(ids))
    for run in range(1, runs + 1):
        outcomes = [bool(by_key.get((i, run), {}).get("resolved", False)) for i in ids]
        s.pass_at_1.append(sum(outcomes) / len(ids) if ids else 0.0)
        for i, ok in zip(ids, outcomes):
            s.per_instance.setdefault(i, []).append(ok)
    s.masked = sum(1 for r in by_key.values() if classify(r).masked)
    s.suspicious = sum(1 for r in by_key.values() if (r.get("grade") or {}).get("flags"))
    s.mean_pass_at_1 = sum(s.pass_at_1) / runs if runs else 0.0
    return s


def write_predictions(records: list[dict[str, Any]], out: Path, runs: int, model: str) -> None:
    for run in range(1, runs + 1):
        name = "predictions.jsonl" if run == 1 else f"predictions-run{run}.jsonl"
        rows = sorted((r for r in records if int(r["run"]) == run), key=lambda r: r["instance_id"])
        tmp = out / (name + ".tmp")
        with tmp.open("w") as fh:
            for r in rows:
                fh.write(json.dumps({"instance_id": r["instance_id"], "model_name_or_path": model,
                                     "model_patch": r.get("patch", "")}) + "\n")
        tmp.replace(out / name)
