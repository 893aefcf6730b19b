"""The dual-rate rule on paired per-task outcomes, with a confidence requirement: the default gate
where the sample is small.

The paper's gate compares two point estimates; at a few tasks a side it accepts noise (a coin
that ignores the harness moves 0.50 -> 0.75 between two draws of the same harness). Here both
sides ran the same tasks with common seeds (member k of task t draws the same sampling seed on
either side), so the evidence is the per-task difference of each rate, candidate minus current.

The rule, in order (the first that applies is the decision and its reason):

1. fewer than ``min_tasks`` tasks ran on both sides -> reject, *not enough evidence*;
2. a rate's mean paired difference is below 0 -> reject, that rate *fell* (the paper's "neither
   decreases", on the point estimates: noise can block a candidate, never let one through);
3. neither mean difference is above 0 -> reject, *neither rate rose*;
4. no rate that rose passes a one-sided exact sign-flip test at ``1 - level`` -> reject, *not
   enough evidence* (the rise is within what relabelling the sides produces);
5. accept: a rate rose with confidence and none fell.

The test: under "the harness makes no difference" the two sides of a task are exchangeable, so
each task's difference is as likely to have either sign; the p-value of a rise is the share of
the 2^n sign assignments whose sum is at least the observed one. Rates of groups are fractions
with small denominators (k of G rollouts), so the differences lie on a lattice and the null
distribution of the sum is computed exactly by convolution at any n (46 tasks: 2^46 assignments
in well under a millisecond); off a lattice, up to 2^16 assignments are enumerated, beyond that
sampled. Exactness fixes the minimum sample: with n tasks the smallest p-value is 2^-n, so the
rule needs ``ceil(log2(1 / (1 - level)))`` tasks (5 at 0.95) before any candidate could pass;
``min_tasks`` defaults to that.

``level`` here is per test. The schedule (``ha_evolve.gate_plan``) sets it from the false
acceptance rate the user states per epoch, split over the two rates and the epoch's comparisons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import mean
from typing import Any, Mapping

from ha_agents.runs.stats import sign_flip_p
from ha_agents.train.grpo import Rollout

from .gate import per_task_rates

NOT_ENOUGH = "not enough evidence"


@dataclass(frozen=True)
class PairedGateConfig:
    level: float = 0.95
    """Confidence a rise needs (one-sided): accept only if its sign-flip p-value is at most 1 - level."""
    min_tasks: int | None = None
    """Tasks both sides must have run; None: the least at which the test can reach ``level``."""
    samples: int = 20000
    """Sign assignments drawn when there are more than 2^16 (fewer are enumerated exactly)."""
    seed: int = 0
    """Seeds the sampled assignments (only used above 16 tasks with a non-zero difference)."""

    def needed_tasks(self) -> int:
        return self.min_tasks if self.min_tasks is not None else math.ceil(math.log2(1 / (1 - self.level)) - 1e-9)

    def validate(self) -> "PairedGateConfig":
        if not 0.5 <= self.level < 1:
            raise ValueError(f"level must be in [0.5, 1), got {self.level}")
        if self.min_tasks is not None and self.min_tasks < 1:
            raise ValueError("min_tasks must be at least 1")
        if self.samples < 100:
            raise ValueError("samples must be at least 100")
        return self


@dataclass(frozen=True)
class PairedDecision:
    accept: bool
    reason: str
    """Starts with ``not enough evidence`` when the sample or the test could not decide."""
    d_pass: float
    """Mean per-task difference in pass rate (candidate - current)."""
    d_trainable: float
    p_pass: float
    """One-sided sign-flip p-value of the pass-rate rise (1.0 when it did not rise)."""
    p_trainable: float
    n_tasks: int
    min_tasks: int
    level: float

    @property
    def evidence(self) -> bool:
        """False when the decision is "not enough evidence"."""
        return not self.reason.startswith(NOT_ENOUGH)


def paired_gate(current: list[Mapping[str, Any]] | list[Rollout], candidate: list[Mapping[str, Any]] | list[Rollout],
                config: PairedGateConfig = PairedGateConfig()) -> PairedDecision:
    """The rule of the module docstring over two sides' trajectory records (or their ``Rollout`` s)."""
    config.validate()
    a, b = per_task_rates(current), per_task_rates(candidate)
    tasks = sorted(set(a) & set(b))
    need = config.needed_tasks()

    def decision(accept: bool, reason: str, dp: float = 0.0, dt: float = 0.0, pp: float = 1.0,
                 pt: float = 1.0) -> PairedDecision:
        return PairedDecision(accept, reason, dp, dt, pp, pt, len(tasks), need, config.level)

    if len(tasks) < need:
        return decision(False, f"{NOT_ENOUGH}: {len(tasks)} task(s) ran on both sides, the paired rule needs at least "
                               f"{need} at level {config.level:g}")
    dps = [b[t][0] - a[t][0] for t in tasks]
    dts = [b[t][1] - a[t][1] for t in tasks]
    dp, dt = mean(dps), mean(dts)
    tol = 1e-12
    falls = [n for n, d in (("pass rate", dp), ("trainable rate", dt)) if d < -tol]
    if falls:
        return decision(False, f"{' and '.join(falls)} fell", dp, dt)
    if dp <= tol and dt <= tol:
        return decision(False, "neither rate rose", dp, dt)
    pp = sign_flip_p(dps, config.samples, config.seed) if dp > tol else 1.0
    pt = sign_flip_p(dts, config.samples, config.seed) if dt > tol else 1.0
    alpha = 1 - config.level
    sure = [f"{n} rose ({d:+.3f}, p = {p:.3g})" for n, d, p in (("pass rate", dp, pp), ("trainable rate", dt, pt))
            if d > tol and p <= alpha + 1e-12]
    if not sure:
        rose = "; ".join(f"{n} rose by {d:+.3f} but p = {p:.3g} > {alpha:.3g}"
                         for n, d, p in (("pass rate", dp, pp), ("trainable rate", dt, pt)) if d > tol)
        return decision(False, f"{NOT_ENOUGH}: {rose} (paired sign-flip test over {len(tasks)} tasks)", dp, dt, pp, pt)
    return decision(True, f"{' and '.join(sure)}, none fell", dp, dt, pp, pt)
