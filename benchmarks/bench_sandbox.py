"""Sandbox overhead, side by side in one run.

Per-command: median wall time of a trivial command (``true``)
  - through LocalSandbox.run (persistent shell), isolated (bwrap) and unisolated;
  - with ``subprocess.run(cmd, shell=True)`` per command (how mini-swe-agent's local env runs actions);
  - with ``bash -lc`` per command (a login shell per action).
Reset: median time of LocalSandbox.reset() (fresh work copy + fresh shell) for a bundled task and a
synthetic 5,000-file tree, with the ``copy`` and ``git`` strategies.

    python benchmarks/bench_sandbox.py [--n 2000] [--resets 20]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import tempfile
from functools import partial
from pathlib import Path

from ha_envs.loaders import load_suite
from ha_envs.sandbox import LocalSandbox, LocalSandboxConfig, bwrap_available
from ha_envs.task import Task, TestSpec

import timing

median_ms = partial(timing.median_ms, warmup=50)


def synthetic_task(root: Path, files: int) -> Task:
    src = root / "big"
    for i in range(files):
        d = src / f"pkg{i % 50}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i}.py").write_text(f"VALUE_{i} = {i}\n" * 40)
    return Task(instance_id=f"synthetic-{files}", benchmark="bench", language="python", problem_statement="-",
                tests=TestSpec("", (), (), "true", "pytest"), source_dir=src)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--resets", type=int, default=20)
    args = ap.parse_args()
    os.environ.setdefault("HA_CACHE_DIR", tempfile.mkdtemp(prefix="ha-bench-cache-"))
    task = next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")

    rows = []
    modes = [("none", "LocalSandbox, unisolated")]
    if bwrap_available():
        modes.insert(0, ("bwrap", "LocalSandbox, bwrap + cgroup"))
    for iso, label in modes:
        s = LocalSandbox(task, LocalSandboxConfig(isolation=iso))
        s.start()
        rows.append((label, median_ms(lambda: s.run("true"), args.n)))
        s.close()
    rows.append(("subprocess.run(cmd, shell=True)", median_ms(lambda: subprocess.run("true", shell=True), args.n)))
    rows.append(("subprocess.run(['bash', '-lc', cmd])", median_ms(lambda: subprocess.run(["bash", "-lc", "true"]), max(50, args.n // 20))))
    base = rows[2 if len(modes) == 2 else 1][1]

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"\nper-command overhead, trivial command `true`, median of {args.n}")
    print("| runner | median ms | vs shell=True |")
    print("|---|---|---|")
    for label, ms in rows:
        print(f"| {label} | {ms:.3f} | {base / ms:.1f}x faster |" if ms < base else f"| {label} | {ms:.3f} | {ms / base:.1f}x slower |")

    print(f"\nreset (fresh work copy + fresh shell), median of {args.resets}")
    print("| task | files | strategy | median ms |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        big = synthetic_task(Path(tmp), 5000)
        for t in (task, big):
            nfiles = sum(1 for _ in Path(t.source_dir).rglob("*") if _.is_file())
            for strategy in ("copy", "git", "auto"):
                s = LocalSandbox(t, LocalSandboxConfig(reset_strategy=strategy))
                s.start()

                def dirty_then_reset() -> None:
                    s.run("echo junk >> $(git ls-files | head -1); touch new_file")
                    s.reset()

                ms = median_ms(dirty_then_reset, args.resets)
                s.close()
                print(f"| {t.instance_id} | {nfiles} | {strategy} | {ms:.1f} |")


if __name__ == "__main__":
    main()
