"""Training task pools: no evaluation leakage, no tasks the policy already always solves.

``build_pool(tasks, n, ...)``:
- refuses (``ValueError``) any task whose instance id is in the evaluation set, and warns (and
  reports) tasks whose repository is also an evaluation repository;
- with ``model``: runs ``k`` samples of every candidate with the current policy and drops the tasks
  it solves in all ``k`` (they would only ever form all-success groups); these rollouts count as
  ``preparation`` in the ledger;
- samples ``n`` of the rest (seeded).
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ha_envs.task import Task

from ..episode import EpisodeConfig
from ..records.episode_record import classify
from ..runs.rollouts import collect
from .driver import RolloutLedger

log = logging.getLogger(__name__)


@dataclass
class PoolReport:
    tasks: list[Task]
    solved_always: list[str] = field(default_factory=list)
    repo_overlap: dict[str, list[str]] = field(default_factory=dict)
    """repository -> training instance ids that share it with the evaluation set."""
    preparation_rollouts: int = 0


def build_pool(tasks: list[Task], n: int | None = None, evaluation: list[Task] | None = None, model: Any = None,
               k: int = 4, episodes: EpisodeConfig | None = None, out: str | Path | None = None, seed: int = 0,
               ledger: RolloutLedger | None = None, **collect_kw: Any) -> PoolReport:
    """``episodes``: how the policy's filtering rollouts are set up (the run's ``EpisodeConfig``, its
    seed replaced by ``seed``; default: h0's); ``collect_kw`` goes to ``collect`` (``workers``, ...)."""
    evaluation = evaluation or []
    eval_ids = {t.instance_id for t in evaluation}
    leaked = sorted(t.instance_id for t in tasks if t.instance_id in eval_ids)
    if leaked:
        raise ValueError(f"{len(leaked)} training task(s) are evaluation instances: {', '.join(leaked[:5])}"
                         + (" ..." if len(leaked) > 5 else "") + "; remove them from the training set")
    eval_repos = {t.repo for t in evaluation if t.repo}
    overlap: dict[str, list[str]] = defaultdict(list)
    for t in tasks:
        if t.repo and t.repo in eval_repos:
            overlap[t.repo].append(t.instance_id)
    for repo, ids in overlap.items():
        log.warning("%d training task(s) share repository %s with the evaluation set (e.g. %s)", len(ids), repo, ids[0])
    candidates = list(tasks)
    report = PoolReport(tasks=[], repo_overlap=dict(overlap))
    if model is not None:
        if out is None:
            raise ValueError("filtering by the policy needs out= (where its rollouts go)")
        records = collect(candidates, k, model, replace(episodes or EpisodeConfig.create(), seed=seed), out=out, **collect_kw)
        report.preparation_rollouts = len(records)
        if ledger is not None:
            ledger.add("preparation", len(records))
        wins: dict[str, list[bool]] = defaultdict(list)
        for r in records:
            if not classify(r).masked:
                wins[r["instance_id"]].append(bool(r["resolved"]))
        report.solved_always = sorted(i for i, w in wins.items() if len(w) == k and all(w))
        candidates = [t for t in candidates if t.instance_id not in set(report.solved_always)]
    rng = random.Random(seed)
    candidates.sort(key=lambda t: t.instance_id)
    report.tasks = candidates if n is None or n >= len(candidates) else rng.sample(candidates, n)
    return report
