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
    python benchmarks/bench_ostrace.py --docker [--n 3]

``--docker``: whole gradings of each task's gold patch in Docker (``docker_sandbox_factory``), ``--n``
times each way, alternating: the trace a file in the grading container (grader 17: ``ostrace.wrap``
through the persistent shell; ``DockerSandbox.run_traced`` made unavailable) and the trace read from
the exec's stream (grader 18: ``sandbox/dockertrace.py``). Reported: median grading seconds, the
ratio, and each way's verdicts and alarms (every grading must be resolved with none).
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


def docker_main(n: int) -> None:
    """Gold gradings in Docker, the trace in the container (old) against the exec's stream (new)."""
    from ha_envs.grading.grader import Grader
    from ha_envs.grading.sandboxes import docker_sandbox_factory
    from ha_envs.loaders import load_suite
    from ha_envs.sandbox.docker import DockerSandbox
    from ha_envs.sandbox.hosttrace import TraceUnavailable

    stream = DockerSandbox.run_traced

    def in_container(self, *a, **k):
        raise TraceUnavailable("benchmark: the trace as a file in the container")

    print(f"# gold gradings in Docker, trace in the container vs. from the exec's stream; median of {n}; "
          f"{os.cpu_count()} cores")
    print("| task | in container s | stream s | stream / in container | verdicts (in container; stream) |")
    print("|---|---|---|---|---|")
    for task in load_suite("mini"):
        if task.language == "python":
            continue
        times: dict[str, list[float]] = {"old": [], "new": []}
        seen: dict[str, set[str]] = {"old": set(), "new": set()}
        Grader(docker_sandbox_factory()).grade(task, task.gold_patch)  # images built, caches warm
        for _ in range(n):
            for way in ("old", "new"):
                DockerSandbox.run_traced = stream if way == "new" else in_container  # type: ignore[method-assign]
                t0 = time.perf_counter()
                r = Grader(docker_sandbox_factory()).grade(task, task.gold_patch)  # fresh: gold reference included
                times[way].append(time.perf_counter() - t0)
                seen[way].add(f"{r.status}/{r.trace_from}" + (f"/{r.tampering}" if r.tampering else ""))
        DockerSandbox.run_traced = stream  # type: ignore[method-assign]
        o, w = statistics.median(times["old"]), statistics.median(times["new"])
        print(f"| {task.instance_id} | {o:.2f} | {w:.2f} | {w / o:.2f} | {', '.join(sorted(seen['old']))}; "
              f"{', '.join(sorted(seen['new']))} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--docker", action="store_true", help="whole gold gradings in Docker, old trace path vs. new")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.docker:
        return docker_main(args.n)
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
