"""GRPO bookkeeping shared by trainers and the evolution gate.

- advantages: reward minus the group mean (std normalisation optional, off as in the paper; the
  std is the unbiased one, as verl's ``compute_grpo_outcome_advantage`` uses, and a one-member group
  has advantage 0: no baseline, no signal; verl gives such a sample its raw score instead);
- trainable rate: the share of sampled rollouts usable for an update. Truncated and masked
  rollouts are dropped; a group counts only if what remains holds both a success and a failure;
  the numerator is the remaining rollouts of such groups, the denominator **all** sampled rollouts
  (the paper's definition: a rollout lost to the infrastructure is training signal lost);
- pass rate: successes over the rollouts that were *graded*: infrastructure-masked rollouts (no
  verdict at all) are left out of both counts, so a flaky daemon cannot sink one side of a harness
  comparison; ``masked`` says how many there were.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import mean, stdev
from typing import Iterable, Mapping

from ..records.episode_record import classify


@dataclass(frozen=True)
class Rollout:
    group: str
    """Rollouts of the same task under the same policy share a group."""
    reward: float
    truncated: bool = False
    masked: bool = False

    @classmethod
    def from_record(cls, rec: Mapping) -> "Rollout":
        o = classify(rec)
        return cls(group=o.group, reward=float(rec["reward"]), truncated=o.truncated, masked=o.masked)


def group_advantages(rewards: list[float], normalize_std: bool = False, eps: float = 1e-6) -> list[float]:
    if not rewards:
        return []
    m = mean(rewards)
    adv = [r - m for r in rewards]
    if normalize_std:
        s = stdev(rewards) if len(rewards) > 1 else 1.0
        adv = [a / (s + eps) for a in adv]
    return adv


@dataclass(frozen=True)
class RateReport:
    pass_rate: float
    trainable_rate: float
    n_rollouts: int
    mixed_groups: int
    all_success_groups: int
    all_failure_groups: int
    masked: int = 0
    """Rollouts without a verdict (infrastructure faults), left out of the pass rate."""


def rates(rollouts: Iterable[Rollout], success_threshold: float = 1.0) -> RateReport:
    rollouts = list(rollouts)
    if not rollouts:
        return RateReport(0.0, 0.0, 0, 0, 0, 0)
    groups: dict[str, list[Rollout]] = defaultdict(list)
    for r in rollouts:
        groups[r.group].append(r)
    usable = mixed = all_s = all_f = 0
    for members in groups.values():
        kept = [r for r in members if not r.truncated and not r.masked]
        wins = sum(r.reward >= success_threshold for r in kept)
        if kept and 0 < wins < len(kept):
            mixed += 1
            usable += len(kept)
        elif kept and wins == len(kept):
            all_s += 1
        elif kept:
            all_f += 1
    graded = [r for r in rollouts if not r.masked]
    passed = sum(r.reward >= success_threshold for r in graded)
    return RateReport(passed / len(graded) if graded else 0.0, usable / len(rollouts), len(rollouts), mixed, all_s,
                      all_f, len(rollouts) - len(graded))
