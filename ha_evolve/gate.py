"""The dual-rate gate: accept a candidate harness only if neither the pass rate nor the trainable
rate falls and at least one strictly rises (both measured under the same policy, tasks, skills
and budget).

The paper's gate compares two point estimates from 184 rollouts a side: it is not a significance
test (the paper says so). ``stat_gate`` adds one: per task, the paired difference of each rate
between candidate and current; a bootstrap over tasks gives a 95% interval of the mean difference;
a rate *falls* when the interval lies below 0 and *rises* when it lies above. Accept iff none
falls and one rises. Both decisions are reported; the schedule acts on the one it is told to.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from statistics import mean
from typing import Any, Mapping

from ha_agents.train.grpo import RateReport, Rollout, rates


@dataclass(frozen=True)
class GateDecision:
    accept: bool
    reason: str
    d_pass: float
    d_trainable: float


def dual_rate_gate(current: RateReport, candidate: RateReport, tol: float = 0.0) -> GateDecision:
    """``tol`` absorbs float noise only; it is not a significance test."""
    dp = candidate.pass_rate - current.pass_rate
    dt = candidate.trainable_rate - current.trainable_rate
    if dp < -tol or dt < -tol:
        falls = [n for n, d in (("pass rate", dp), ("trainable rate", dt)) if d < -tol]
        return GateDecision(False, f"{' and '.join(falls)} fell", dp, dt)
    if dp <= tol and dt <= tol:
        return GateDecision(False, "neither rate rose", dp, dt)
    return GateDecision(True, "no rate fell and at least one rose", dp, dt)


@dataclass(frozen=True)
class StatDecision:
    accept: bool
    reason: str
    pass_ci: tuple[float, float]
    """95% bootstrap interval of the per-task mean difference in pass rate (candidate - current)."""
    trainable_ci: tuple[float, float]
    n_tasks: int
    samples: int


def per_task_rates(records: "list[Mapping[str, Any]] | list[Rollout]") -> dict[str, tuple[float, float]]:
    """task -> (pass rate, trainable rate) of its group (``grpo.rates`` on that group alone); the
    records as read, or already as ``Rollout`` s (their group is the task)."""
    groups: dict[str, list[Rollout]] = defaultdict(list)
    for rec in records:
        roll = rec if isinstance(rec, Rollout) else Rollout.from_record(rec)
        groups[roll.group].append(roll)
    out = {}
    for task, rolls in groups.items():
        rep = rates(rolls)
        out[task] = (rep.pass_rate, rep.trainable_rate)
    return out


def stat_gate(current: list[Mapping[str, Any]], candidate: list[Mapping[str, Any]], samples: int = 2000,
              seed: int = 0, level: float = 0.95) -> StatDecision:
    """Paired bootstrap over the tasks both sides ran (see the module docstring)."""
    a, b = per_task_rates(current), per_task_rates(candidate)
    tasks = sorted(set(a) & set(b))
    if not tasks:
        return StatDecision(False, "no task ran on both sides", (0.0, 0.0), (0.0, 0.0), 0, samples)
    dp = [b[t][0] - a[t][0] for t in tasks]
    dt = [b[t][1] - a[t][1] for t in tasks]
    rng = random.Random(seed)
    means_p, means_t = [], []
    for _ in range(samples):
        idx = [rng.randrange(len(tasks)) for _ in tasks]
        means_p.append(mean(dp[i] for i in idx))
        means_t.append(mean(dt[i] for i in idx))
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2

    def ci(xs: list[float]) -> tuple[float, float]:
        xs = sorted(xs)
        return xs[int(lo_q * (len(xs) - 1))], xs[int(hi_q * (len(xs) - 1))]

    cp, ct = ci(means_p), ci(means_t)
    falls = [n for n, c in (("pass rate", cp), ("trainable rate", ct)) if c[1] < 0]
    rises = [n for n, c in (("pass rate", cp), ("trainable rate", ct)) if c[0] > 0]
    if falls:
        return StatDecision(False, f"{' and '.join(falls)} fell (95% interval below 0)", cp, ct, len(tasks), samples)
    if not rises:
        return StatDecision(False, "no rate rose beyond the noise (both 95% intervals include 0)", cp, ct, len(tasks),
                            samples)
    return StatDecision(True, f"{' and '.join(rises)} rose (95% interval above 0), none fell", cp, ct, len(tasks),
                        samples)
