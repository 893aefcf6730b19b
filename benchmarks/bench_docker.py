"""Docker sandbox overhead, side by side in one run.

Per-command (trivial command ``true``, median):
  - DockerSandbox.run (one persistent ``docker exec -i`` bash per episode, nonce'd protocol);
  - a fresh ``docker exec CID bash -lc CMD`` per command (how mini-swe-agent's docker env runs actions).
Reset for a GRPO group of 4 episodes of one task (each episode: four commands, plus 1 s standing for
the model's time; a second row without it shows the worst case, where the pool cannot get ahead):
  - ours: the task's snapshot image + a warm pool (the next container starts while an episode runs);
  - baseline: a fresh container per episode (``docker run`` from the snapshot image + a new shell).
Cold start (nothing running yet, the snapshot image built): from nothing to the first command's answer
and on through an episode's four commands, alternated with the baseline so load hits both alike:
  - ours: ``DockerSandbox(warm=1)``: start, then the commands (the spare starts after the first one);
  - baseline: mini-swe-agent's docker env: ``docker run -d IMAGE sleep`` then ``docker exec bash -lc CMD``.
Goals: >= 40x lower per-command overhead than exec-per-command; reset < 100 ms amortised in a group;
a cold first command no slower than the baseline's.

    python benchmarks/bench_docker.py [--n 300] [--groups 3] [--cold 10]
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
    for cmd in COMMANDS:
        sb.run(cmd)
    time.sleep(think_s)


COMMANDS = ("ls", "git status --short", "cat README.md | head -5", "echo x >> README.md")


def cold_starts(task, image: str, n: int) -> dict[str, list[tuple[float, float]]]:
    """(first command answered, four commands done) in seconds from nothing, ours and the baseline's,
    alternated; each run's containers are removed before the next starts."""
    out: dict[str, list[tuple[float, float]]] = {"ours": [], "base": []}
    for _ in range(n):
        t0 = time.perf_counter()
        sb = DockerSandbox(task, DockerSandboxConfig(warm=1), image=image)
        sb.start()
        sb.run(COMMANDS[0])
        t1 = time.perf_counter()
        for cmd in COMMANDS[1:]:
            sb.run(cmd)
        out["ours"].append((t1 - t0, time.perf_counter() - t0))
        sb.close()

        t0 = time.perf_counter()
        cid = subprocess.run(["docker", "run", "-d", "--rm", "--network", "none", "-w", "/testbed", "--entrypoint",
                              "sleep", image, "infinity"], check=True, capture_output=True, text=True).stdout.strip()
        subprocess.run(["docker", "exec", cid, "bash", "-lc", COMMANDS[0]], check=True, capture_output=True)
        t1 = time.perf_counter()
        for cmd in COMMANDS[1:]:
            subprocess.run(["docker", "exec", cid, "bash", "-lc", cmd], check=True, capture_output=True)
        out["base"].append((t1 - t0, time.perf_counter() - t0))
        subprocess.run(["docker", "rm", "-f", cid], check=True, capture_output=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--groups", type=int, default=3)
    ap.add_argument("--cold", type=int, default=10)
    args = ap.parse_args()
    os.environ.setdefault("HA_CACHE_DIR", tempfile.mkdtemp(prefix="ha-bench-cache-"))
    task = next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")

    sb = DockerSandbox(task, DockerSandboxConfig(warm=1))
    sb.start()
    ours = median_ms(lambda: sb.run("true"), args.n)
    cid, image = sb.container.id, sb.image
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

    cold = cold_starts(task, image, args.cold)

    rows = []
    for think in (1.0, 0.0):
        w, c = group_resets(think)
        rows.append((think, statistics.mean(w) * 1000, statistics.mean(c) * 1000, len(w)))
    print(f"# bench_docker: {platform.node()}, {os.cpu_count()} cores, n={args.n}, groups={args.groups} (of 4 episodes)")
    print("| measure | ours ms | baseline ms | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| per command (`true`): persistent exec shell vs `docker exec bash -lc` per command | {ours:.2f} | {per_exec:.1f} | {per_exec / ours:.0f}x |")
    for label, i in (("first command answered", 0), ("first episode (4 commands)", 1)):
        o, b = statistics.median(x[i] for x in cold["ours"]) * 1000, statistics.median(x[i] for x in cold["base"]) * 1000
        print(f"| cold start, {label} (median of {args.cold}): DockerSandbox(warm=1) vs `docker run -d` + "
              f"`docker exec bash -lc` | {o:.0f} | {b:.0f} | {b / o:.2f}x |")
    for think, warm, cold, n in rows:
        print(f"| reset within a group, episodes of {think:g} s + 4 commands (mean of {n}): warm pool + snapshot "
              f"vs fresh container | {warm:.0f} | {cold:.0f} | {cold / warm:.1f}x |")


if __name__ == "__main__":
    main()
