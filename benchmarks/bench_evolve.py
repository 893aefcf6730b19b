"""One evolution round on the bundled suite: wall time and rollouts, with the current harness's
rollouts shared by the round's k candidates (ours: k + 1 comparison batches) against re-running the
current side for every candidate (the naive schedule: 2k batches), side by side. (Since the gate draws
the current side fresh, apart from the batch the proposer reads, "ours" also runs that preparation
batch once a round; its wall time includes it, its comparison counts do not.)

Both use the same fixed policy (the oracle), tasks, group size and the rule-based proposer, which
offers k different candidates in one round (``--candidates k``; a candidate that is accepted ends
the round, so the policy here is one whose rates no candidate can raise: the oracle on h0, whose
groups are all-success whatever the harness). Validation (format, schema, one smoke episode per
candidate) is counted apart.

    python benchmarks/bench_evolve.py [--k 3] [--tasks 2] [--group-size 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ha_agents.runs.rollouts import collect  # noqa: E402
from ha_envs.harness import load_spec  # noqa: E402
from ha_envs.loaders import load_suite  # noqa: E402
from ha_evolve.proposers import RuleMutator  # noqa: E402
from ha_evolve.schedule import EvolveConfig, Evolution  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--group-size", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    tasks = [t for t in load_suite("mini") if t.language == "python"][: args.tasks]
    with tempfile.TemporaryDirectory(prefix="ha-bench-evolve-") as tmp:
        t0 = time.perf_counter()
        evo = Evolution(Path(tmp) / "ours", tasks, "oracle", "h0", RuleMutator(),
                        EvolveConfig(rounds=1, group_size=args.group_size, candidates=args.k, workers=args.workers))
        evo.run()
        ours_s = time.perf_counter() - t0
        props = [r for r in evo.log.records if r.get("kind") == "proposal"]
        compared = [p for p in props if p.get("candidate_rates")]
        ours_rollouts = props[0]["rollouts"]["current"] + sum(p["rollouts"]["candidate"] for p in props)
        # naive: the current side again for every candidate (fresh directories: nothing reused)
        t1 = time.perf_counter()
        naive_rollouts = 0
        for i, p in enumerate(compared):
            cur = collect(tasks, args.group_size, "oracle", load_spec("h0"), out=Path(tmp) / f"naive{i}/cur",
                          workers=args.workers, progress_bar=False)
            cand = collect(tasks, args.group_size, "oracle", load_spec(Path(tmp) / "ours" / "specs" / f"{p['candidate_hash']}.yaml"),
                           out=Path(tmp) / f"naive{i}/cand", workers=args.workers, progress_bar=False)
            naive_rollouts += len(cur) + len(cand)
        naive_s = time.perf_counter() - t1
    batches = len(compared)
    print(f"# one evolution round, {len(tasks)} tasks x group {args.group_size}, {batches} candidates compared "
          f"(of {len(props)} proposed), oracle policy, local sandbox")
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("| schedule | comparison batches | rollouts | wall s |")
    print("|---|---|---|---|")
    print(f"| shared current side (ours) | {batches + 1} | {ours_rollouts} | {ours_s:.1f} |")
    print(f"| current side per candidate (naive) | {2 * batches} | {naive_rollouts} | {naive_s:.1f} |")
    print(f"rollouts ours / naive: {ours_rollouts / max(1, naive_rollouts):.2f} (goal: (k+1)/2k = "
          f"{(batches + 1) / max(1, 2 * batches):.2f})")


if __name__ == "__main__":
    main()
