"""The dual-rate gate: accept a candidate harness only if neither the pass rate nor the trainable
rate falls and at least one strictly rises (both measured under the same policy, tasks, skills
and budget)."""

from __future__ import annotations

from dataclasses import dataclass

from ha_agents.grpo import RateReport


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
