"""Simulated epochs of evolution for measuring the gate: false acceptance of candidates that make no
difference, and power for ones that do, through the schedule's own pieces (``EvolveConfig``, its
plan, ``round_tasks`` and ``decide``, which calls the real gates on trajectory-shaped records).

The model: task t of a pool succeeds with probability p_t (uniform in [``p_low``, ``p_high``]); a
harness adds its ``effect`` to every p_t. Draws are *prompt-sensitive*: a seeded LLM's draw changes
with the prompt, so two harnesses (or two seed streams) give independent outcomes even where the
seeds agree. That is the hard case for a gate: with a prompt-insensitive draw and common seeds two
equivalent harnesses produce identical records and no rule could accept.

A round (as ``Evolution.round``): the round's tasks, the proposer's batch of the current harness,
a candidate (``propose``: ``always``, or ``when-bad``: only after a batch whose pass rate fell
below its expectation, as a proposer reacting to failures does), the comparison's current side
(a fresh draw; ``reuse_preparation``: the proposer's batch itself, as the schedule did before),
the candidate's side, and the decision. An accepted candidate becomes current.

Used by ``benchmarks/bench_gate.py`` and the gate's tests.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

from .schedule import EvolveConfig, decide, round_tasks


@dataclass(frozen=True)
class Scenario:
    config: EvolveConfig
    """Rounds, group size, tasks per round, the rule and its alpha (``bootstrap_samples=0`` unless ``stat``)."""
    pool: int = 46
    """Tasks evolution draws from (``config.tasks`` of them a round; all when unset)."""
    effect: float = 0.0
    """Every candidate's rise in each task's success probability (0: no difference)."""
    epochs: int = 2
    """Epochs per simulated run (the run's tasks are drawn once)."""
    p_low: float = 0.05
    p_high: float = 0.6
    propose: str = "always"
    reuse_preparation: bool = False

    def validate(self) -> "Scenario":
        self.config.validate()
        if self.propose not in ("always", "when-bad"):
            raise ValueError(f"propose must be always or when-bad, not {self.propose!r}")
        if not 0 <= self.p_low <= self.p_high <= 1:
            raise ValueError("need 0 <= p_low <= p_high <= 1")
        if self.pool < 1 or self.epochs < 1:
            raise ValueError("a scenario needs at least 1 task and 1 epoch")
        return self


@dataclass(frozen=True)
class SimResult:
    runs: int
    epochs: int
    comparisons: int
    accepted: int
    """Comparisons that accepted."""
    epochs_accepting: int
    """Epochs with at least one acceptance (false acceptance per epoch when the effect is 0; power else)."""
    runs_accepting: int
    first_comparisons: int
    first_accepted: int
    """Round 1 of each epoch: the acceptance rate of a single comparison, before any acceptance."""
    seconds: float

    @property
    def per_epoch(self) -> float:
        return self.epochs_accepting / self.epochs

    @property
    def per_comparison(self) -> float:
        return self.first_accepted / self.first_comparisons if self.first_comparisons else 0.0

    @property
    def per_run(self) -> float:
        return self.runs_accepting / self.runs

    @property
    def epochs_per_second(self) -> float:
        return self.epochs / self.seconds if self.seconds else float("inf")


def _side(rng: Any, ids: list[str], probs: Any, group: int) -> list[dict[str, Any]]:
    wins = rng.random((len(ids), group)) < probs[:, None]
    return [{"instance_id": t, "run": k + 1, "reward": float(w), "termination": "submitted"}
            for t, row in zip(ids, wins.tolist()) for k, w in enumerate(row)]


def _epoch(s: Scenario, cfg: EvolveConfig, rng: Any, pool: list[Any], base: Any, epoch: int) -> tuple[int, int, int]:
    """One epoch: (comparisons, acceptances, round 1's acceptance: -1 when it compared nothing)."""
    import numpy as np

    index = {t.instance_id: i for i, t in enumerate(pool)}
    shift, compared, accepted, first = 0.0, 0, 0, -1
    for rnd in range(1, cfg.rounds + 1):
        tasks = round_tasks(pool, cfg.tasks, cfg.seed, epoch, rnd)
        ids = [t.instance_id for t in tasks]
        p = np.clip(base[[index[t] for t in ids]] + shift, 0.0, 1.0)
        prep = _side(rng, ids, p, cfg.group_size)
        if s.propose == "when-bad" and sum(r["reward"] for r in prep) / len(prep) >= p.mean():
            continue
        current = prep if s.reuse_preparation else _side(rng, ids, p, cfg.group_size)
        cand = _side(rng, ids, np.clip(p + s.effect, 0.0, 1.0), cfg.group_size)
        ok = decide(current, cand, cfg, len(pool))["accepted"]
        compared, accepted = compared + 1, accepted + ok
        if rnd == 1:
            first = int(ok)
        if ok:
            shift += s.effect
    return compared, accepted, first


def simulate(scenario: Scenario, runs: int, seed: int = 0) -> SimResult:
    """``runs`` simulated runs of ``scenario.epochs`` epochs each."""
    import numpy as np

    s = scenario.validate()
    rng = np.random.default_rng(seed)
    pool = [SimpleNamespace(instance_id=f"t{i:04d}") for i in range(s.pool)]
    counts = dict(comparisons=0, accepted=0, epochs_accepting=0, runs_accepting=0, first_comparisons=0,
                  first_accepted=0)
    t0 = time.perf_counter()
    for run in range(runs):
        cfg = replace(s.config, seed=seed * 1_000_003 + run)
        base = rng.uniform(s.p_low, s.p_high, s.pool)
        any_run = False
        for epoch in range(1, s.epochs + 1):
            compared, accepted, first = _epoch(s, cfg, rng, pool, base, epoch)
            counts["comparisons"] += compared
            counts["accepted"] += accepted
            counts["epochs_accepting"] += accepted > 0
            any_run |= accepted > 0
            if first >= 0:
                counts["first_comparisons"] += 1
                counts["first_accepted"] += first
        counts["runs_accepting"] += any_run
    return SimResult(runs=runs, epochs=runs * s.epochs, seconds=time.perf_counter() - t0, **counts)
