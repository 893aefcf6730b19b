"""The Rust outcome witnesses' cost (issue 39): the bundled Rust task's gold patch graded in the local
sandbox with every defence on, with the witnesses (``witness_rust.py``: a guard in each test of the
hidden file, a thread named at each test's end) and without them (the same grader with the guard
left out: ``witness_rust.witnessed`` returns the text as it is, which is grader 17's path),
alternating, ``--n`` times each. Reported: the median grading time of each side and the ratio.

    PYTHONPATH=. python benchmarks/bench_rust_witness.py [--n 5] [--task mini__rust_intervals]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main(argv: list[str] | None = None) -> int:
    from ha_envs.grading import witness_rust
    from ha_envs.grading.grader import Grader
    from ha_envs.grading.sandboxes import local_sandbox_factory
    from ha_envs.loaders import load_suite

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--task", default="mini__rust_intervals")
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error(f"--n must be 1 or more, not {args.n}")
    tasks = {t.instance_id: t for t in load_suite("mini")}
    if args.task not in tasks:
        ap.error(f"no bundled task {args.task!r}: {', '.join(sorted(tasks))}")
    task = tasks[args.task]
    guarded = witness_rust.witnessed
    grader = Grader(local_sandbox_factory())
    times: dict[str, list[float]] = {"witnessed": [], "unwitnessed": []}
    for _ in range(args.n):
        for side in times:
            witness_rust.witnessed = guarded if side == "witnessed" else (lambda path, text, rng, tokens: text)
            t0 = time.monotonic()
            report = grader.grade(task, task.gold_patch)
            times[side].append(time.monotonic() - t0)
            if not report.resolved:
                raise SystemExit(f"{side}: the gold patch was graded {report.status}: {report.tampering}")
    witness_rust.witnessed = guarded
    med = {k: round(statistics.median(v), 2) for k, v in times.items()}
    print(json.dumps({"task": task.instance_id, "n": args.n, "median_s": med,
                      "ratio": round(med["witnessed"] / med["unwitnessed"], 3),
                      "times": {k: [round(x, 2) for x in v] for k, v in times.items()}}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
