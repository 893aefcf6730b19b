"""Grading wall time per bundled task: the hardened grader against the grader before it, side by side.

The baseline is the grader of a named commit (default: the last commit before the reward-integrity
work), checked out into a temporary directory and imported from there in a child process; ours is
this checkout's. Both grade the gold patch of every bundled task in the local sandbox (bubblewrap),
alternating task by task so that machine drift hits both alike. Reported: the median of ``--n``
gradings per task and side, and the ratio ours / baseline. Goal: within 10% (ratio <= 1.10).

``--canaries``: both sides are this checkout, the baseline with the hidden canary tests off
(``Grader(canaries=False)``), ours with them on (``grading/canaries.py``). Goal: within 5%.

    python benchmarks/bench_grading.py [--n 3] [--baseline 5f04e4c] [--sandbox local|docker] [--canaries]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "5f04e4c"  # main before issue 10 (reward integrity)

CHILD = r"""
import json, sys, time
from ha_envs.loaders import load_suite
from ha_envs.grading.grader import Grader
kind, names = sys.argv[1], sys.argv[2].split(",")
extra = {"canaries": sys.argv[3] == "on"} if len(sys.argv) > 3 else {}
if kind == "docker":
    from ha_envs.grading.sandboxes import docker_sandbox_factory
    grader = Grader(docker_sandbox_factory(), **extra)
else:
    grader = Grader(**extra)
tasks = {t.instance_id: t for t in load_suite("mini")}
planting = []
if extra.get("canaries"):  # time the planting step itself (reading the hidden files, appending)
    from ha_envs.grading import grader as grading
    plant = grading.canary_tests.plant
    def timed(*a, **k):
        t0 = time.perf_counter()
        try:
            return plant(*a, **k)
        finally:
            planting.append(time.perf_counter() - t0)
    grading.canary_tests.plant = timed
out = {}
for name in names:
    planting.clear()
    t0 = time.perf_counter()
    report = grader.grade(tasks[name], tasks[name].gold_patch)
    out[name] = [time.perf_counter() - t0, report.resolved, sum(planting)]
print("HA_RESULT " + json.dumps(out))
"""


def run_side(src: Path, kind: str, names: list[str], cache: str, canaries: str | None = None) -> dict[str, list]:
    env = {**os.environ, "PYTHONPATH": str(src), "HA_CACHE_DIR": cache}
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, ",".join(names), *([canaries] if canaries else [])],
                          cwd=src, env=env,
                          capture_output=True, text=True, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("HA_RESULT "):
            return json.loads(line[len("HA_RESULT "):])
    raise SystemExit(f"grading failed under {src}:\n{proc.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--baseline", default=BASELINE)
    ap.add_argument("--sandbox", default="local", choices=["local", "docker"])
    ap.add_argument("--canaries", action="store_true", help="this checkout, canaries off (baseline) vs on")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from ha_envs.loaders import load_suite

    names = [t.instance_id for t in load_suite("mini")]
    with tempfile.TemporaryDirectory(prefix="ha-bench-grading-") as tmp:
        if args.canaries:
            base_src, mode = ROOT, {"baseline": "off", "ours": "on"}
        else:
            base_src, mode = Path(tmp) / "baseline", {}
            base_src.mkdir()
            archive = subprocess.run(["git", "archive", args.baseline], cwd=ROOT, capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(base_src)], input=archive, check=True)
        times: dict[str, dict[str, list[float]]] = {"baseline": {}, "ours": {}}
        plants: dict[str, list[float]] = {}
        for side, src in (("baseline", base_src), ("ours", ROOT)):  # warm caches (snapshots, images)
            run_side(src, args.sandbox, names, f"{tmp}/cache-{side}", mode.get(side))
        for _ in range(args.n):
            for side, src in (("baseline", base_src), ("ours", ROOT)):
                for name, (secs, resolved, *planted) in run_side(src, args.sandbox, names, f"{tmp}/cache-{side}",
                                                                 mode.get(side)).items():
                    if not resolved:
                        raise SystemExit(f"{side}: the gold patch of {name} did not resolve")
                    times[side].setdefault(name, []).append(secs)
                    if side == "ours" and args.canaries:
                        plants.setdefault(name, []).append(planted[0])
    against = "this checkout, canaries off" if args.canaries else args.baseline
    print(f"# grading wall time, gold patch, {args.sandbox} sandbox, median of {args.n}; baseline {against}")
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    planting = "planting ms |" if args.canaries else ""
    print(f"| task | baseline s | ours s | ours / baseline | {planting}")
    print("|---|---|---|---|" + ("---|" if args.canaries else ""))
    ratios = []
    for name in names:
        b, o = statistics.median(times["baseline"][name]), statistics.median(times["ours"][name])
        ratios.append(o / b)
        extra = f" {statistics.median(plants[name]) * 1000:.1f} |" if args.canaries else ""
        print(f"| {name} | {b:.2f} | {o:.2f} | {o / b:.2f} |{extra}")
    tb = sum(statistics.median(v) for v in times["baseline"].values())
    to = sum(statistics.median(v) for v in times["ours"].values())
    print(f"| **all {len(names)} tasks** | {tb:.1f} | {to:.1f} | {to / tb:.2f} |")
    print(f"geometric mean of the ratios: {statistics.geometric_mean(ratios):.3f}")


if __name__ == "__main__":
    main()
