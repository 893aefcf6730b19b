"""The gate's error rates, measured: thousands of simulated epochs through the schedule's own pieces
(``EvolveConfig`` and its plan, ``round_tasks``, ``decide`` and the real gates it calls, on
trajectory-shaped records; ``ha_evolve.gate_sim`` says how a round is simulated).

Candidates: no effect, with prompt-sensitive draws (a harness that changes the prompt changes a
seeded LLM's draw, so equivalent harnesses still differ by noise), and +5 and +10 points on every
task's success probability (0.05-0.6). Two scales: the paper's (46 tasks x 4 rollouts a side, 5
rounds, 2 epochs) and a CPU one (12 tasks x 4). Rules: ``paired`` (the default, alpha 0.05 per
epoch) and ``point`` (the paper's); protocols: the current side drawn fresh (the schedule now) or
the proposer's batch reused as the current side with a proposer that proposes after a batch that
looked bad (the schedule before).

Reported per row: acceptance in a round-1 comparison, per epoch (at least one acceptance: false
acceptance when the effect is 0, power otherwise) and per 2-epoch run; the planner's smallest
detectable effect; simulated epochs per second.

    python benchmarks/bench_gate.py [--scale 1.0] [--seed 0] [--only paper|cpu]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ha_evolve.gate_sim import Scenario, simulate  # noqa: E402
from ha_evolve.schedule import EvolveConfig  # noqa: E402

SCALES = {"paper": (46, 4), "cpu": (12, 4)}
# (scale, rule, protocol, effect, runs of 2 epochs at --scale 1)
ROWS = [
    ("paper", "paired", "fresh", 0.0, 500),
    ("paper", "paired", "fresh", 0.05, 200),
    ("paper", "paired", "fresh", 0.10, 200),
    ("paper", "paired", "reuse-when-bad", 0.0, 250),
    ("paper", "point", "fresh", 0.0, 150),
    ("paper", "point", "fresh-when-bad", 0.0, 150),
    ("paper", "point", "reuse-when-bad", 0.0, 150),
    ("paper", "point", "fresh", 0.10, 100),
    ("cpu", "paired", "fresh", 0.0, 500),
    ("cpu", "paired", "fresh", 0.05, 200),
    ("cpu", "paired", "fresh", 0.10, 200),
    ("cpu", "point", "fresh", 0.0, 200),
]


def upper95(k: int, n: int) -> float:
    """One-sided 95% upper bound of a binomial proportion (Wilson score)."""
    if n == 0:
        return 1.0
    z, p = 1.645, k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return min(1.0, (centre + half) / (1 + z * z / n))


def run_row(scale: str, rule: str, protocol: str, effect: float, runs: int, seed: int) -> dict:
    tasks, group = SCALES[scale]
    cfg = EvolveConfig(rounds=5, group_size=group, tasks=tasks, decide_by=rule, alpha=0.05, epochs=2,
                       bootstrap_samples=0)
    scenario = Scenario(cfg, pool=tasks, effect=effect, epochs=2, propose="when-bad" if "when-bad" in protocol else "always",
                        reuse_preparation=protocol.startswith("reuse"))
    r = simulate(scenario, runs, seed)
    mde = cfg.plan(tasks).mde(base_rate=0.325)
    return {"scale": f"{tasks}x{group}", "rule": rule, "protocol": protocol, "effect": effect, "runs": r.runs,
            "epochs": r.epochs, "comparisons": r.comparisons, "per_comparison": r.per_comparison,
            "per_epoch": r.per_epoch, "per_epoch_upper95": upper95(r.epochs_accepting, r.epochs),
            "per_run": r.per_run, "mde_points": None if mde is None else 100 * mde,
            "epochs_per_s": r.epochs_per_second, "seconds": r.seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every row's runs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", choices=["paper", "cpu"], default=None)
    ap.add_argument("--json", default=None, help="also write the rows here")
    args = ap.parse_args()
    print(f"# bench_gate: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}", flush=True)
    print("| scale | rule | protocol | effect | epochs | round-1 accept | per epoch (95% upper) | per 2-epoch run | "
          "planner MDE (p=0.325) | epochs/s |\n|---|---|---|---|---|---|---|---|---|---|", flush=True)
    rows = []
    t0 = time.perf_counter()
    for i, (scale, rule, protocol, effect, runs) in enumerate(ROWS):
        if args.only and scale != args.only:
            continue
        row = run_row(scale, rule, protocol, effect, max(1, round(runs * args.scale)), args.seed + i)
        rows.append(row)
        mde = "-" if row["mde_points"] is None or rule != "paired" else f"{row['mde_points']:.1f}"
        print(f"| {row['scale']} | {rule} | {protocol} | {100 * effect:+.0f} | {row['epochs']} | "
              f"{row['per_comparison']:.3f} | {row['per_epoch']:.3f} ({row['per_epoch_upper95']:.3f}) | "
              f"{row['per_run']:.3f} | {mde} | {row['epochs_per_s']:.1f} |", flush=True)
    total = sum(r["epochs"] for r in rows)
    print(f"\n{total} simulated epochs in {time.perf_counter() - t0:.0f} s "
          f"({total / (time.perf_counter() - t0):.1f} epochs/s overall)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
