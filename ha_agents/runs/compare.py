"""Paired comparison of two evaluation runs, as the paper's Table 10 reports it.

Per instance, a run's score is its pass@1 (mean over that run's repeats). The difference B - A is
averaged over the instances both runs evaluated, pooled across benchmarks with each benchmark
weighted by its task count (equivalently: every instance weighs the same). The 95% confidence
interval is a percentile bootstrap over instances, resampled within each benchmark (stratified),
with a fixed seed so the report is reproducible. Beside it, an exact test: the two-sided sign-flip
p-value of the same units' differences (``stats``), which needs no large-sample argument (with n
units that differ, the least p-value it can give is 2^(1-n)).

Replicates: either side may be several runs (``DIR1,DIR2,DIR3``: independent repeats of the whole
protocol, e.g. one training run per seed, each evaluated with its own seeds), paired by position
with the other side's (the i-th of A with the i-th of B, which share a seed). The unit is then an
(instance, replicate) pair: the interval reflects the spread between replicates as well as between
instances.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .stats import sign_flip_p_two_sided


@dataclass
class Row:
    benchmark: str
    n: int
    a: float
    b: float
    diff: float
    ci_low: float
    ci_high: float
    p_exact: float = 1.0
    """Two-sided exact sign-flip p-value of the units' differences (``stats.sign_flip_p_two_sided``)."""


@dataclass
class Comparison:
    run_a: str
    run_b: str
    rows: list[Row] = field(default_factory=list)
    pooled: Row | None = None
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    samples: int = 0
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def markdown(self) -> str:
        head = (f"B = {self.run_b} vs A = {self.run_a}: pass@1 (%) and paired difference with a 95% bootstrap CI "
                "and an exact two-sided sign-flip p-value")
        lines = [head, "", "| benchmark | n | A | B | B - A | 95% CI | exact p |", "|---|---:|---:|---:|---:|---|---:|"]
        for r in self.rows + ([self.pooled] if self.pooled else []):
            name = "**pooled**" if r is self.pooled else r.benchmark
            lines.append(f"| {name} | {r.n} | {100 * r.a:.1f} | {100 * r.b:.1f} | {100 * r.diff:+.1f} | "
                         f"[{100 * r.ci_low:+.1f}, {100 * r.ci_high:+.1f}] | {r.p_exact:.3g} |")
        unit = "(instance, replicate) pairs" if "," in self.run_a else "instances"
        notes = [f"{self.samples} bootstrap samples (seed {self.seed}), resampling {unit} within each benchmark."]
        if self.only_in_a or self.only_in_b:
            notes.append(f"Not paired (left out): {len(self.only_in_a)} instances only in A, {len(self.only_in_b)} only in B.")
        return "\n".join(lines + [""] + notes)


def load_run(run_dir: str | Path) -> dict[str, tuple[str, float]]:
    """instance id -> (benchmark, pass@1 over the run's repeats), from trajectories.jsonl."""
    path = Path(run_dir) / "trajectories.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{run_dir}: no trajectories.jsonl (is it an `ha eval` output directory?)")
    outcomes: dict[str, list[bool]] = {}
    bench: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        outcomes.setdefault(r["instance_id"], []).append(bool(r.get("resolved")))
        bench[r["instance_id"]] = r.get("benchmark") or "unknown"
    return {i: (bench[i], sum(v) / len(v)) for i, v in outcomes.items()}


def load_runs(runs: str | Path | list[str | Path]) -> dict[str, tuple[str, float]]:
    """One run (a directory), or replicates (a list, or ``DIR1,DIR2``): units keyed
    ``instance#r<k>`` for the k-th replicate (1-based)."""
    dirs = [d for d in (str(runs).split(",") if isinstance(runs, (str, Path)) else [str(r) for r in runs]) if d]
    if len(dirs) == 1:
        return load_run(dirs[0])
    return {f"{i}#r{k}": v for k, d in enumerate(dirs, 1) for i, v in load_run(d).items()}


def _count(runs: str | Path | list[str | Path]) -> int:
    return len([d for d in (str(runs).split(",") if isinstance(runs, (str, Path)) else runs) if d])


def compare(run_a: str | Path | list[str | Path], run_b: str | Path | list[str | Path], samples: int = 10000,
            seed: int = 0) -> Comparison:
    if _count(run_a) != _count(run_b):
        raise ValueError(f"replicates pair by position: A has {_count(run_a)} run(s), B has {_count(run_b)}")
    a, b = load_runs(run_a), load_runs(run_b)
    common = sorted(set(a) & set(b))
    if not common:
        raise ValueError(f"{run_a} and {run_b} share no instance; nothing to pair")
    name = lambda r: r if isinstance(r, (str, Path)) else ",".join(str(x) for x in r)  # noqa: E731
    cmp = Comparison(str(name(run_a)), str(name(run_b)), only_in_a=sorted(set(a) - set(b)), only_in_b=sorted(set(b) - set(a)),
                     samples=samples, seed=seed)
    groups: dict[str, list[tuple[float, float]]] = {}
    for i in common:
        groups.setdefault(a[i][0], []).append((a[i][1], b[i][1]))
    rng = np.random.default_rng(seed)
    n_total = len(common)
    pooled_samples = np.zeros(samples)
    for name in sorted(groups):
        pairs = groups[name]
        n = len(pairs)
        diffs = np.array([y - x for x, y in pairs])
        boot = np.concatenate([diffs[rng.integers(0, n, size=(min(1000, samples - k), n))].mean(axis=1)
                               for k in range(0, samples, 1000)])
        pooled_samples += boot * n / n_total
        lo, hi = percentile_interval(boot)
        cmp.rows.append(Row(name, n, sum(x for x, _ in pairs) / n, sum(y for _, y in pairs) / n, float(diffs.mean()), lo, hi,
                            sign_flip_p_two_sided(diffs.tolist(), seed=seed)))
    lo, hi = percentile_interval(pooled_samples)
    mean = lambda k: sum(r.n * getattr(r, k) for r in cmp.rows) / n_total  # noqa: E731
    every = [b[i][1] - a[i][1] for i in common]
    cmp.pooled = Row("pooled", n_total, mean("a"), mean("b"), mean("diff"), lo, hi,
                     sign_flip_p_two_sided(every, seed=seed))
    return cmp


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    k = (1 - level) / 2
    lo, hi = np.quantile(values, [k, 1 - k])
    return float(lo), float(hi)
