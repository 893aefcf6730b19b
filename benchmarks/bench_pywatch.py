"""The Python watch's cost under runners other than pytest (issue 39, item 3): the gold patch of each
named instance graded in the local sandbox with the watch (``Grader(canaries=False)``: the
``sitecustomize`` and its audit hook in every interpreter the tests start) and without it
(``Grader(canaries=False, watch=False)``: no watch installed), alternating, ``--n`` times each.
Reported per instance: the median grading time of each side and the ratio. The environments must
be built already (a first grading builds them; ``ha tasks validate`` does).

Since grader 18 the watched side sends its record to a collector on the host (``watchsock.py``);
``--sides`` adds ``file``, the same watch with the old file in the grading copy as the record (no
collector directory: ``watch_from`` ``sandbox, within reach``), so the socket's cost is the ratio
``watched``/``file``. ``unwatched`` is left out for pytest tasks (the pytest guard always watches).
``--startup N``: also the start of one bare interpreter (``python -c pass``, N times) with the watch's
``sitecustomize`` sending to a collector, writing to a file, and without it: the cost each process
of a runner pays.

    HA_DATA_DIR=... python benchmarks/bench_pywatch.py --benchmark verified --repos /work/.mirror \\
        --instances sympy__sympy-24066 [--n 3] [--sides watched,file,unwatched] [--startup 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def file_only(factory):
    """``factory``'s sandboxes without a collector directory: the watch writes its file, as before 18."""
    def make(*args, **kw):
        sandbox = factory(*args, **kw)
        sandbox.watch_dir = None
        return sandbox
    return make


def startup(n: int) -> dict:
    """Median seconds of ``python -c pass`` with the watch's sitecustomize sending to a collector,
    writing to a file, and without it (``n`` each, alternating)."""
    from ha_envs.grading.runners import GUARD_DIR, WATCH_HEADER
    from ha_envs.grading.watchsock import Collector

    d = Path(tempfile.mkdtemp(prefix="bench-pywatch-"))
    (d / "pyw").mkdir()
    (d / "w").mkdir()
    (d / "pyw" / "sitecustomize.py").write_text(
        (GUARD_DIR / "ha_sitecustomize.py").read_text().replace("__HA_WATCH_MODULE__", "ha_py_watch_b"))
    (d / "pyw" / "ha_py_watch_b.py").write_text((GUARD_DIR / "ha_py_watch.py").read_text())
    (d / "pyw" / "settings.json").write_text(json.dumps({"watch": str(d / "f.watch"), "workdir": str(d)}))
    (d / "f.watch").write_text(WATCH_HEADER + "\n")
    collector = Collector(d / "w")
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONDONTWRITEBYTECODE": "1"}
    watched = {**base, "PYTHONPATH": str(d / "pyw"), "HA_PY_WATCH": str(d / "pyw" / "settings.json")}
    envs = {"socket": {**watched, "HA_WATCH_SOCKET": collector.path}, "file": watched, "none": base}
    times: dict[str, list[float]] = {k: [] for k in envs}
    for _ in range(n):
        for name, env in envs.items():
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            times[name].append(time.perf_counter() - t0)
    streams = collector.close()
    med = {k: round(statistics.median(v) * 1000, 2) for k, v in times.items()}
    return {"startup_ms": med, "connections": len(streams), "n": n, "python": sys.version.split()[0]}


def main(argv: list[str] | None = None) -> int:
    from ha_cli.selection import add_source, select_tasks
    from ha_envs.grading.grader import Grader
    from ha_envs.grading.sandboxes import local_sandbox_factory

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_source(ap)
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--sides", default="watched,unwatched", help="of watched, file, unwatched")
    ap.add_argument("--startup", type=int, default=0, metavar="N")
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error(f"--n must be 1 or more, not {args.n}")
    every = {"watched": lambda: Grader(local_sandbox_factory(), canaries=False),
             "file": lambda: Grader(file_only(local_sandbox_factory()), canaries=False),
             "unwatched": lambda: Grader(local_sandbox_factory(), canaries=False, watch=False)}
    wanted = args.sides.split(",")
    if not wanted or any(w not in every for w in wanted):
        ap.error(f"--sides takes names of {', '.join(every)}, comma-separated; not {args.sides!r}")
    if args.startup:
        print(json.dumps(startup(args.startup)), flush=True)
    from ha_envs.grading.runners import GUARDS

    for task in select_tasks(args):
        sides = {k: every[k]() for k in wanted if k != "unwatched" or not GUARDS["pytest"].applies(task)}
        times: dict[str, list[float]] = {k: [] for k in sides}
        seen: dict[str, object] = {}
        for _ in range(args.n):
            for name, grader in sides.items():
                t0 = time.monotonic()
                report = grader.grade(task, task.gold_patch)
                times[name].append(time.monotonic() - t0)
                seen[name] = (report.watch, report.watch_from, report.status)
                if name == "unwatched" and report.watch is not None:
                    raise SystemExit(f"{task.instance_id}: the unwatched side was watched: {report.watch}")
        med = {k: round(statistics.median(v), 3) for k, v in times.items()}
        ratios = {f"{a}/{b}": round(med[a] / med[b], 3) for a in med for b in med if a < b}
        print(json.dumps({"instance_id": task.instance_id, "seen": seen, "median_s": med, "ratios": ratios,
                          "times": times}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
