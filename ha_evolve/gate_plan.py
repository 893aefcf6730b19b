"""The gate's error budget and what it can see, stated before any rollout is spent.

The user states ``alpha``: the probability that an epoch of evolution accepts at least one
candidate that makes no difference (false acceptance per epoch). An epoch makes at most
``rounds x candidates`` comparisons, and each comparison can accept on either of two rates, so by
the union bound each one-sided test runs at

    alpha_test = alpha / (2 * rounds * candidates)

(Bonferroni: valid whatever the dependence between the rates and the rounds, and whatever the
proposer does with what it read, because every comparison is drawn fresh: see
``ha_evolve.schedule``). Epochs draw their comparisons from disjoint seed streams, so each epoch
holds its own ``alpha`` and a run of E epochs falsely accepts in any epoch with probability at
most ``E * alpha`` (the plan prints both). To state one rate for a whole run instead, split it over
its epochs (``split_epochs`` = E): each epoch then runs at ``alpha / E``.

The test is the exact paired sign-flip test over tasks (``ha_evolve.paired_gate``): tasks are the
unit (rollouts of one task share its difficulty), the two sides of a task are exchangeable when
the harness makes no difference, and the test is exact at any number of tasks, with no normal
approximation of a handful of 0/1 outcomes.

The smallest detectable effect (``mde``) is a normal approximation for planning: a rise ``d`` of
the pass rate is detected with probability ``power`` when

    d >= (z(1 - alpha_test) + z(power)) * sqrt(2 p (1 - p) / (tasks * group_size))

at a base pass rate ``p`` (0.5 unless stated: the largest variance, so the printed effect is an
upper bound over base rates). ``benchmarks/bench_gate.py`` checks it against the real gate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

RULES = ("paired", "point", "stat")

POINT_WARNING = ("the point rule (the paper's: accept when no rate's point estimate falls and one rises) is not a "
                 "test: it controls no error rate (at the paper's 46 tasks x 4 rollouts and 5 rounds it accepts a "
                 "candidate that makes no difference in 39% of comparisons and 88% of epochs; benchmarks/bench_gate.py). "
                 "Use it to reproduce the paper, not to decide")
STAT_WARNING = ("the bootstrap rule (stat) puts a 95% interval on each comparison with no adjustment for the two "
                "rates, the rounds or the epochs: its false acceptance per epoch is not controlled")


@dataclass(frozen=True)
class GatePlan:
    rule: str
    alpha: float
    """False acceptance per epoch (``paired``)."""
    tasks: int
    group_size: int
    rounds: int
    candidates: int = 1
    epochs: int = 1
    """Epochs planned (the run's bound on false acceptance is ``epochs * alpha``)."""
    min_tasks: int | None = None
    power: float = 0.8
    base_rate: float = 0.5
    split_epochs: int = 1
    """``alpha`` covers this many epochs together (1: ``alpha`` per epoch)."""

    @property
    def comparisons(self) -> int:
        return self.rounds * self.candidates

    @property
    def alpha_epoch(self) -> float:
        """False acceptance per epoch."""
        return self.alpha / self.split_epochs

    @property
    def alpha_test(self) -> float:
        """The level of each one-sided test (a rate's rise in one comparison)."""
        return self.alpha_epoch / (2 * self.comparisons)

    @property
    def needed_tasks(self) -> int:
        """Tasks both sides must run: the least at which the exact test can reach ``alpha_test``."""
        if self.min_tasks is not None:
            return self.min_tasks
        return math.ceil(math.log2(1 / self.alpha_test) - 1e-9)

    def mde(self, base_rate: float | None = None, tasks: int | None = None) -> float | None:
        """The smallest pass-rate rise detected with probability ``power`` (None: too few tasks to pass at all)."""
        n = self.tasks if tasks is None else tasks
        if n < self.needed_tasks:
            return None
        p = self.base_rate if base_rate is None else base_rate
        z = NormalDist().inv_cdf
        return (z(1 - self.alpha_test) + z(self.power)) * math.sqrt(2 * p * (1 - p) / (n * self.group_size))

    def tasks_for(self, effect: float) -> int:
        """The fewest tasks (at this group size) whose ``mde`` is at most ``effect``."""
        p = self.base_rate
        z = NormalDist().inv_cdf
        n = math.ceil(((z(1 - self.alpha_test) + z(self.power)) / effect) ** 2 * 2 * p * (1 - p) / self.group_size)
        return max(n, self.needed_tasks)

    def rollouts_per_epoch(self) -> int:
        """At most: per round the proposer's batch, the fresh current side and each candidate's side."""
        return self.rounds * (2 + self.candidates) * self.tasks * self.group_size

    def validate(self) -> "GatePlan":
        if self.rule not in RULES:
            raise ValueError(f"the gate must be one of {', '.join(RULES)}, not {self.rule!r}")
        if not 0 < self.alpha <= 0.5:
            raise ValueError(f"alpha (false acceptance per epoch) must be in (0, 0.5], got {self.alpha}")
        if self.min_tasks is not None and self.min_tasks < 1:
            raise ValueError("min_tasks must be at least 1")
        if min(self.tasks, self.group_size, self.rounds, self.candidates, self.epochs, self.split_epochs) < 1:
            raise ValueError("a gate plan needs at least 1 task, rollout, round, candidate and epoch (planned and split)")
        return self

    def text(self) -> str:
        """What the planned rollouts can and cannot show, for printing before they are spent."""
        size = (f"{self.tasks} tasks x {self.group_size} rollouts a side, up to {self.rounds} round(s) x "
                f"{self.candidates} candidate(s); at most {self.rollouts_per_epoch()} rollouts per epoch "
                f"(proposer's batch, fresh current side, candidates)")
        if self.rule == "point":
            return f"gate plan: point rule; {size}\nwarning: {POINT_WARNING}"
        if self.rule == "stat":
            return f"gate plan: bootstrap rule; {size}\nwarning: {STAT_WARNING}"
        e = self.alpha_epoch
        split = f" ({self.alpha:g} split over {self.split_epochs} epochs)" if self.split_epochs > 1 else ""
        lines = [f"gate plan: paired sign-flip test; {size}",
                 f"  false acceptance <= {e:.3g} per epoch{split} (each rate's test at {self.alpha_test:.3g}: "
                 f"{e:.3g} / (2 rates x {self.comparisons} comparison(s)))"
                 + (f"; over {self.epochs} epochs <= {min(1.0, self.epochs * e):.3g}" if self.epochs > 1 else "")]
        mde = self.mde()
        if mde is None:
            lines.append(f"  warning: {self.tasks} task(s) can never pass: the exact test needs at least "
                         f"{self.needed_tasks} at {self.alpha_test:.3g}; every comparison will say 'not enough evidence'")
        else:
            lines.append(f"  smallest pass-rate rise detected with {self.power:.0%} power: {100 * mde:.1f} points "
                         f"(base pass rate {self.base_rate:g}; normal approximation)")
            lines.append(f"  tasks needed at {self.group_size} rollouts for +5 points: {self.tasks_for(0.05)}, "
                         f"for +10 points: {self.tasks_for(0.10)}")
        return "\n".join(lines)
