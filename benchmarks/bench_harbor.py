"""Harbor import/export time: the whole bundled suite and N SWE-bench Verified rows written as Harbor
task folders (`ha_envs/harbor/export.py`) and read back as Tasks (`load.py`), median of ``--runs``.
Loading the Verified rows themselves (``load_benchmark``) is timed apart: it is not Harbor's.

    python benchmarks/bench_harbor.py --verified ../shared/data/swebench_verified/test.jsonl --rows 500 --runs 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ha_envs.harbor import load_harbor
from ha_envs.harbor.export import export_harbor
from ha_envs.loaders import load_suite
from ha_envs.swe_datasets import load_benchmark


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def measure(name: str, tasks: list, runs: int) -> dict:
    exports, imports, size = [], [], 0
    for _ in range(runs):
        root = Path(tempfile.mkdtemp(prefix="bench-harbor-"))
        try:
            out = root / "out"
            t, _ = timed(lambda: export_harbor(tasks, out))  # noqa: B023 (called at once)
            exports.append(t)
            size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
            t, back = timed(lambda: load_harbor(out))  # noqa: B023 (called at once)
            imports.append(t)
            assert [x.instance_id for x in back] == sorted(x.instance_id for x in tasks)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return {"what": name, "tasks": len(tasks), "export_s": statistics.median(exports),
            "import_s": statistics.median(imports), "mib": size / (1 << 20)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verified", help="SWE-bench Verified rows (jsonl/parquet); omitted: the suite only")
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rows = [measure("bundled suite (mini)", load_suite("mini"), args.runs)]
    if args.verified:
        t, verified = timed(lambda: load_benchmark("verified", source=args.verified))
        print(f"load_benchmark verified ({len(verified)} rows): {t:.2f} s (not part of the Harbor timings)")
        rows.append(measure(f"SWE-bench Verified, first {args.rows} rows", verified[:args.rows], args.runs))
    print("| tasks | n | export s (ms/task) | import s (ms/task) | written MiB |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['what']} | {r['tasks']} | {r['export_s']:.2f} ({1000 * r['export_s'] / r['tasks']:.1f}) | "
              f"{r['import_s']:.2f} ({1000 * r['import_s'] / r['tasks']:.1f}) | {r['mib']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
