"""The OS-level watch's own cost: a task's test command plain, traced inside the sandbox, and traced
from the host.

For each bundled Go, Rust and JavaScript task: a local sandbox (bubblewrap when installed) on its
repository with the gold patch and the hidden tests applied, then the task's test command run
``--n`` times each way, alternating: plain (``sandbox.run``), under strace inside the sandbox as
grader 13 ran it (``ostrace.wrap``: ``strace -f --seccomp-bpf``, the trace a file the tests can
reach), and traced from the host as grader 14 runs it (``sandbox.run_traced`` in a second sandbox
whose shell is a child of the host's ``strace -f --seccomp-bpf``, out of the tests' reach). Reported:
medians, the ratios to plain, the host trace's size and the kinds ``ostrace.record`` reads from it
(the gold run's; nothing but node's runner expected).

    python benchmarks/bench_ostrace.py [--n 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def prepared(task, traced: bool):
    """A local sandbox on the task with the gold patch and the hidden tests; ``traced``: its shell a
    child of the host's strace (``LocalSandboxConfig.trace``), as in grading."""
    from ha_envs.grading.ostrace import host_trace_spec
    from ha_envs.sandbox.local import LocalSandbox, LocalSandboxConfig

    sandbox = LocalSandbox(task, LocalSandboxConfig(trace=host_trace_spec(task) if traced else None))
    sandbox.start()
    for name, patch in (("gold", task.gold_patch), ("tests", task.tests.test_patch)):
        sandbox.write_file(f".ha-{name}.diff", patch.encode())
        res = sandbox.run(f"git apply .ha-{name}.diff && rm .ha-{name}.diff", timeout=120)
        assert res.exit_code == 0, res.output
    return sandbox


def timed(run) -> float:
    t0 = time.perf_counter()
    run()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from ha_envs.grading.ostrace import TRACED, record, wrap
    from ha_envs.loaders import load_suite
    from ha_envs.sandbox.hosttrace import TraceSpec

    if shutil.which("strace") is None:
        raise SystemExit("strace is not installed (apt-get install strace)")
    print(f"# test command plain, traced inside the sandbox, traced from the host; median of {args.n}; "
          f"{os.cpu_count()} cores")
    print("| task | plain s | inside s | from host s | inside / plain | host / plain | host trace KiB | kinds |")
    print("|---|---|---|---|---|---|---|---|")
    for task in load_suite("mini"):
        if task.language == "python":
            continue
        sandbox, traced = prepared(task, False), prepared(task, True)
        try:
            command, budget = task.tests.test_command, task.tests.timeout_s
            inside = wrap(command, "/tmp/ha-bench.trace")
            sandbox.run(command, timeout=budget)  # warm the build caches
            traced.run(command, timeout=budget)
            times: dict[str, list[float]] = {"plain": [], "inside": [], "host": []}
            trace = None
            for _ in range(args.n):
                times["plain"].append(timed(partial(sandbox.run, command, timeout=budget)))
                times["inside"].append(timed(partial(sandbox.run, inside, timeout=budget)))
                t0 = time.perf_counter()
                _, trace = traced.run_traced(command, TraceSpec(TRACED, 512, 48 << 20), timeout=budget)
                times["host"].append(time.perf_counter() - t0)
            p, i, h = (statistics.median(times[k]) for k in ("plain", "inside", "host"))
            kinds = record(trace.text, task.hidden_test_files, "")
            print(f"| {task.instance_id} | {p:.2f} | {i:.2f} | {h:.2f} | {i / p:.2f} | {h / p:.2f} | "
                  f"{len(trace.text.encode()) / 1024:.0f} | {', '.join(kinds) or '-'} |")
        finally:
            sandbox.close()
            traced.close()


if __name__ == "__main__":
    main()
