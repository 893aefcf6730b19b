"""The OS-level watch's own cost: a task's test command with and without ``strace`` around it.

For each bundled Go, Rust and JavaScript task: a copy of its repository with the gold patch and the
hidden tests applied, then the task's test command run ``--n`` times plain (``bash -c``) and ``--n``
times as the grader wraps it (``ostrace.wrap``), alternating, on this machine without a sandbox
(the sandbox costs both sides the same). Reported: medians, their ratio, the trace's size and the
kinds ``ostrace.record`` reads from it (the gold run's; nothing but node's runner expected).

    python benchmarks/bench_ostrace.py [--n 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def prepared(task, tmp: Path) -> Path:
    repo = tmp / task.instance_id
    shutil.copytree(task.source_dir, repo, symlinks=True)
    for patch in (task.gold_patch, task.tests.test_patch):
        subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=repo, check=True)
    return repo


def timed(command: str, cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(["bash", "-c", command], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from ha_envs.grading.ostrace import record, wrap
    from ha_envs.loaders import load_suite

    if shutil.which("strace") is None:
        raise SystemExit("strace is not installed (apt-get install strace)")
    print(f"# test command plain vs under the OS-level watch, median of {args.n}; {os.cpu_count()} cores")
    print("| task | plain s | watched s | watched / plain | trace KiB | kinds |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="ha-bench-ostrace-") as tmp:
        for task in load_suite("mini"):
            if task.language == "python":
                continue
            repo = prepared(task, Path(tmp))
            trace = f"{tmp}/{task.instance_id}.trace"
            command = f"cd {repo} && {task.tests.test_command}"
            timed(command, repo)  # warm the build caches
            plain, watched = [], []
            for _ in range(args.n):
                plain.append(timed(command, repo))
                watched.append(timed(wrap(command, trace), repo))
            p, w = statistics.median(plain), statistics.median(watched)
            text = Path(trace).read_text(errors="replace")
            kinds = record(text, task.hidden_test_files, trace)
            print(f"| {task.instance_id} | {p:.2f} | {w:.2f} | {w / p:.2f} | {len(text.encode()) / 1024:.0f} | "
                  f"{', '.join(kinds) or '-'} |")


if __name__ == "__main__":
    main()
