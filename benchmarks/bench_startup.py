"""Start-up time of the `ha` command line, as whole processes: `ha --help`, `ha tasks list`,
`ha eval --benchmark verified --help`, each run ``--runs`` times (median), for this tree and for
another checkout of the library (``--before DIR``, e.g. the commit a change started from, made with
``git archive COMMIT | tar -x -C DIR``), alternated run by run so machine load hits both alike.

    python benchmarks/bench_startup.py --before /tmp/ha-before --runs 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = (["--help"], ["tasks", "list"], ["eval", "--benchmark", "verified", "--help"])


def once(tree: Path, argv: list[str]) -> float:
    """Seconds from start to exit of ``python -m ha_cli.main ARGV`` with ``tree`` first on PYTHONPATH."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ha_cli.main", *argv], env=env, cwd=tree, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="another checkout of the library to compare with")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    trees = {"after": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    print("| command | " + " | ".join(f"{name} s (median of {args.runs})" for name in trees)
          + (" | before / after |" if args.before else " |"))
    print("|---|" + "---:|" * (len(trees) + bool(args.before)))
    for argv in COMMANDS:
        for tree in trees.values():
            once(tree, argv)  # warm the page cache: every measured run starts alike
        samples: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(args.runs):
            for name, tree in trees.items():
                samples[name].append(once(tree, argv))
        medians = {name: statistics.median(s) for name, s in samples.items()}
        row = f"| `ha {' '.join(argv)}` | " + " | ".join(f"{m:.2f}" for m in medians.values())
        if args.before:
            row += f" | {medians['before'] / medians['after']:.2f}x"
        print(row + " |")


if __name__ == "__main__":
    main()
