"""Environment build time for the instances of one repository version: shared dependency layers
against one layer per instance (the layout before layers), side by side.

Both sides build, from an empty environment cache each (snapshots are shared and made first, not
timed), the Python environment of every selected instance, one after the other, as a validation
sweep or an evaluation with one worker does. ``HA_ENV_LAYERS=instance`` is the baseline: every
instance installs all of its dependencies itself. ``shared`` (the default) installs them once per
repository, spec and requirements, and each instance installs only the repository on a copy.
Reported: seconds per instance and side, the totals and their ratio (shared / instance), the
cache's size on disk, and whether each instance's installed distributions (``pip list``) are the
same on both sides, which they must be.

    python benchmarks/bench_envs.py --benchmark verified --repo pytest-dev/pytest --version 5.4 [--n 3] \
        [--repos /work/.mirror]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else 0


def _dists(env: Path) -> list[str]:
    out = subprocess.run([str(env / "bin" / "python"), "-m", "pip", "list", "--format=freeze",
                          "--disable-pip-version-check"], capture_output=True, text=True)
    return sorted(line for line in out.stdout.splitlines() if line.strip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--benchmark", default="verified")
    ap.add_argument("--repo", required=True)
    ap.add_argument("--version", required=True, help="the rows' version field (one dependency layer)")
    ap.add_argument("--n", type=int, default=3, help="instances of that version (the first N by id)")
    ap.add_argument("--repos", help="mirrors directory (HA_REPOS_DIR)")
    args = ap.parse_args()
    if args.repos:
        os.environ["HA_REPOS_DIR"] = args.repos
    from ha_envs.swe_datasets import load_benchmark
    from ha_envs.sandbox.provision.pyenv import python_env
    from ha_envs.sandbox.provision.workcopy import cache_root, prepare_snapshot

    tasks = sorted((t for t in load_benchmark(args.benchmark)
                    if t.repo == args.repo and str(t.metadata.get("version")) == args.version),
                   key=lambda t: t.instance_id)[:args.n]
    if len(tasks) < 2:
        print(f"need at least 2 instances of {args.repo} {args.version}; found {len(tasks)}", file=sys.stderr)
        return 2
    snapshots = cache_root() / "snapshots"
    for t in tasks:
        prepare_snapshot(t)  # shared by both sides, not timed
    result = {"benchmark": args.benchmark, "repo": args.repo, "version": args.version,
              "instances": [t.instance_id for t in tasks], "machine": f"{platform.machine()}, {os.cpu_count()} cpus"}
    dists: dict[str, dict[str, list[str]]] = {}
    for side in ("instance", "shared"):
        root = Path(tempfile.mkdtemp(prefix=f"ha-bench-envs-{side}-"))
        (root / "snapshots").symlink_to(snapshots)
        os.environ["HA_CACHE_DIR"], os.environ["HA_ENV_LAYERS"] = str(root), side
        seconds = []
        try:
            for t in tasks:
                t0 = time.monotonic()
                env = python_env(t)
                seconds.append(round(time.monotonic() - t0, 1))
                dists.setdefault(t.instance_id, {})[side] = _dists(env)
                print(f"{side:8} {t.instance_id:34} {seconds[-1]:7.1f} s", file=sys.stderr, flush=True)
            result[side] = {"seconds": seconds, "total_s": round(sum(seconds), 1), "disk_bytes": _du(root / "envs")}
        finally:
            (root / "snapshots").unlink()
            shutil.rmtree(root, ignore_errors=True)
    result["ratio_shared_over_instance"] = round(result["shared"]["total_s"] / result["instance"]["total_s"], 3)
    result["same_distributions"] = {i: d["instance"] == d["shared"] for i, d in dists.items()}
    print(json.dumps(result, indent=1))
    return 0 if all(result["same_distributions"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
