"""The Python watch's cost under runners other than pytest (issue 39, item 3): the gold patch of each
named instance graded in the local sandbox with the watch (``Grader(canaries=False)``: the
``sitecustomize`` and its audit hook in every interpreter the tests start) and without it
(``Grader(canaries=False, watch=False)``: no watch installed), alternating, ``--n`` times each.
Reported per instance: the median grading time of each side and the ratio. The environments must
be built already (a first grading builds them; ``ha tasks validate`` does).

    HA_DATA_DIR=... python benchmarks/bench_pywatch.py --benchmark verified --repos /work/.mirror \\
        --instances sympy__sympy-24066 [--n 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main(argv: list[str] | None = None) -> int:
    from ha_cli.selection import add_source, select_tasks
    from ha_envs.grading.grader import Grader
    from ha_envs.grading.sandboxes import local_sandbox_factory

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_source(ap)
    ap.add_argument("--n", type=int, default=3)
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error(f"--n must be 1 or more, not {args.n}")
    sides = {"watched": Grader(local_sandbox_factory(), canaries=False),
             "unwatched": Grader(local_sandbox_factory(), canaries=False, watch=False)}
    rows = []
    for task in select_tasks(args):
        times: dict[str, list[float]] = {k: [] for k in sides}
        watch = None
        for _ in range(args.n):
            for name, grader in sides.items():
                t0 = time.monotonic()
                report = grader.grade(task, task.gold_patch)
                times[name].append(time.monotonic() - t0)
                if name == "watched":
                    watch = report.watch
                elif report.watch is not None:
                    raise SystemExit(f"{task.instance_id}: the unwatched side was watched: {report.watch}")
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"instance_id": task.instance_id, "watch": watch, "median_s": med,
                     "ratio": round(med["watched"] / med["unwatched"], 3), "times": times})
        print(json.dumps(rows[-1]), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
