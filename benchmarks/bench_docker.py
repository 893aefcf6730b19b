"""Docker sandbox overhead, side by side in one run.

Per-command (trivial command ``true``, median):
  - DockerSandbox.run (one persistent ``docker exec -i`` bash per episode, nonce'd protocol);
  - a fresh ``docker exec CID bash -lc CMD`` per command (how mini-swe-agent's docker env runs actions).
Reset for a GRPO group of 4 episodes of one task (each episode: four commands, plus 1 s standing for
the model's time; a second row without it shows the worst case, where the pool cannot get ahead):
  - ours: the task's snapshot image + a warm pool (the next container starts while an episode runs);
  - baseline: a fresh container per episode (``docker run`` from the snapshot image + a new shell).
Goals: >= 40x lower per-command overhead than exec-per-command; reset < 100 ms amortised in a group.

    python benchmarks/bench_docker.py [--n 300] [--groups 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import tempfile
import time

from ha_envs.loaders import load_suite
from ha_envs.sandbox.docker import DockerSandbox, DockerSandboxConfig

from timing import median_ms


def episode(sb: DockerSandbox, think_s: float) -> None:
    """A few commands; ``think_s`` stands for the model's time (an episode lasts seconds at least)."""
    for cmd in ("ls", "git status --short", "cat README.md | head -5", "echo x >> README.md"):
        sb.run(cmd)
    time.sleep(think_s)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--groups", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("HA_CACHE_DIR", tempfile.mkdtemp(prefix="ha-bench-cache-"))
    task = next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")

    sb = DockerSandbox(task, DockerSandboxConfig(warm=1))
    sb.start()
    ours = median_ms(lambda: sb.run("true"), args.n)
    cid = sb.container.id
    per_exec = median_ms(lambda: subprocess.run(["docker", "exec", cid, "bash", "-lc", "true"], check=True,
                                                capture_output=True), max(20, args.n // 10))
    sb.close()

    # Reset within a group of 4: warm pool + snapshot image vs a fresh container per episode.
    def group_resets(think_s: float) -> tuple[list[float], list[float]]:
        warm_resets, cold_resets = [], []
        for _ in range(args.groups):
            sb = DockerSandbox(task, DockerSandboxConfig(warm=1))
            sb.start()
            for _ in range(3):
                episode(sb, think_s)
                t0 = time.perf_counter()
                sb.reset()
                sb.run("true")
                warm_resets.append(time.perf_counter() - t0)
            episode(sb, think_s)
            sb.close()
            for _ in range(3):
                fresh = DockerSandbox(task, DockerSandboxConfig(warm=0), image=sb.image)
                t0 = time.perf_counter()
                fresh.start()
                fresh.run("true")
                cold_resets.append(time.perf_counter() - t0)
                episode(fresh, think_s)
                fresh.close()
        return warm_resets, cold_resets

    rows = []
    for think in (1.0, 0.0):
        w, c = group_resets(think)
        rows.append((think, statistics.mean(w) * 1000, statistics.mean(c) * 1000, len(w)))
    print(f"# bench_docker: {platform.node()}, {os.cpu_count()} cores, n={args.n}, groups={args.groups} (of 4 episodes)")
    print("| measure | ours ms | baseline ms | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| per command (`true`): persistent exec shell vs `docker exec bash -lc` per command | {ours:.2f} | {per_exec:.1f} | {per_exec / ours:.0f}x |")
    for think, warm, cold, n in rows:
        print(f"| reset within a group, episodes of {think:g} s + 4 commands (mean of {n}): warm pool + snapshot "
              f"vs fresh container | {warm:.0f} | {cold:.0f} | {cold / warm:.1f}x |")


if __name__ == "__main__":
    main()
