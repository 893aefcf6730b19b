"""Soak: hundreds of episodes on a 3-node Ray cluster while faults are injected; count what is
lost, duplicated, masked and wrongly graded.

The cluster is ``ray.cluster_utils.Cluster`` on this machine: a head and two worker nodes, each
declaring ``--slots`` sandbox slots and a cache directory of its own. Episodes go through
``collect(..., executor="ray")`` (the path of ``ha eval --executor ray``), in phases:

- ``oracle`` (local sandbox): the gold patch, then submit;
- ``null`` (local sandbox): submits at once;
- ``fill`` (local sandbox, a 48 MiB disk quota): writes 200 MB into the work copy, then submits;
- ``docker`` (Docker sandbox, the oracle): a smaller phase, for container and daemon faults.

Faults, from a thread while a phase runs: a sandbox's processes SIGKILLed (a random ``bwrap`` of
ours, or ``docker kill`` of a random container of ours); a worker node removed mid-phase (and a new
one added 20 s later); in the docker phase, ``dockerd`` stopped and started again; the ``fill``
policy fills its own sandbox's disk.

Counted per phase: episodes expected (tasks x runs), lost (no record), duplicated (a (task, run)
written twice), masked (infrastructure faults, excluded from training), and **wrongly graded**: an
unmasked record whose verdict differs from grading its own patch again afterwards on the quiet
machine (each distinct patch once). Goals: lost 0, duplicated 0, wrongly graded 0.

    python benchmarks/soak_cluster.py [--runs 14] [--docker-runs 3] [--slots 2] [--out runs/soak]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def our_bwraps() -> list[int]:
    """PIDs of the bubblewrap processes of our sandboxes (agent and grading)."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"bwrap") and b"sandbox" in cmd:
            out.append(int(p.name))
    return out


def our_containers() -> list[str]:
    r = subprocess.run(["docker", "ps", "-q", "--filter", "label=harnessadapt"], capture_output=True, text=True)
    return r.stdout.split()


def restart_dockerd(log: list[str]) -> None:
    subprocess.run(["pkill", "-TERM", "-x", "dockerd"], check=False)
    for _ in range(60):
        if subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True).returncode != 0:
            break
        time.sleep(0.5)
    log.append(f"{time.strftime('%X')} dockerd stopped")
    time.sleep(3)
    subprocess.Popen("dockerd >/tmp/dockerd-soak.log 2>&1", shell=True, start_new_session=True)
    for _ in range(120):
        if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
            break
        time.sleep(0.5)
    log.append(f"{time.strftime('%X')} dockerd started again")


class Faults:
    """Injected on the main thread (Ray adds nodes only there) while the phase's collect runs in another."""

    def __init__(self, cluster, args, phase: str, rng: random.Random) -> None:
        self.cluster, self.args, self.phase, self.rng = cluster, args, phase, rng
        self.stop = threading.Event()
        self.log: list[str] = []
        self.kills = 0

    def run(self) -> None:
        t0 = time.monotonic()
        removed = added = restarted = False
        while not self.stop.wait(self.args.kill_every):
            elapsed = time.monotonic() - t0
            if self.phase == "docker":
                victims = our_containers()
                if victims:
                    v = self.rng.choice(victims)
                    subprocess.run(["docker", "kill", v], capture_output=True)
                    self.kills += 1
                    self.log.append(f"{time.strftime('%X')} docker kill {v[:12]}")
                if not restarted and elapsed > self.args.restart_at:
                    restarted = True
                    restart_dockerd(self.log)
            else:
                victims = our_bwraps()
                if victims:
                    v = self.rng.choice(victims)
                    try:
                        os.kill(v, signal.SIGKILL)
                        self.kills += 1
                        self.log.append(f"{time.strftime('%X')} SIGKILL bwrap {v}")
                    except ProcessLookupError:
                        pass
            workers = [n for n in self.cluster.worker_nodes]
            if self.phase == "oracle" and not removed and elapsed > self.args.remove_at and workers:
                removed = True
                node = workers[0]
                self.cluster.remove_node(node, allow_graceful=False)
                self.log.append(f"{time.strftime('%X')} node {node.node_id[:8]} removed")
            if removed and not added and elapsed > self.args.remove_at + 20:
                added = True
                node = self.cluster.add_node(**self.args.node_args(self.args.extra_cache))
                self.log.append(f"{time.strftime('%X')} node {node.node_id[:8]} added")


def fill_replay(path: Path, tasks) -> str:
    path.write_text("".join(json.dumps({"instance_id": t.instance_id, "run": 1, "messages": [
        {"role": "assistant", "content": "```bash\nhead -c 200000000 /dev/zero > fill.bin; ls -la fill.bin\n```"},
        {"role": "assistant", "content": "```bash\nsubmit\n```"}]}) + "\n" for t in tasks))
    return f"replay:{path}"


def regrade(records: list[dict], tasks: dict, sandbox: str) -> dict[tuple[str, str], bool]:
    """Each distinct (task, patch) graded again on the quiet machine."""
    from ha_envs.grading.grader import Grader
    from ha_envs.grading.sandboxes import docker_sandbox_factory

    grader = Grader(docker_sandbox_factory()) if sandbox == "docker" else Grader()
    out: dict[tuple[str, str], bool] = {}
    for r in records:
        key = (r["instance_id"], hashlib.sha256((r.get("patch") or "").encode()).hexdigest())
        if key not in out:
            out[key] = bool(grader.grade(tasks[r["instance_id"]], r.get("patch") or "").resolved)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=14, help="episodes per task in the oracle phase")
    ap.add_argument("--null-runs", type=int, default=12)
    ap.add_argument("--fill-runs", type=int, default=5)
    ap.add_argument("--docker-runs", type=int, default=5)
    ap.add_argument("--docker-tasks", nargs="*", default=["mini__semver_ranges", "mini__ttl_cache",
                                                          "mini__invoice_rounding", "mini__ini_interpolation"])
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--kill-every", type=float, default=6.0, help="seconds between sandbox kills")
    ap.add_argument("--remove-at", type=float, default=30.0, help="seconds into the oracle phase a node is removed")
    ap.add_argument("--restart-at", type=float, default=8.0, help="seconds into the docker phase dockerd restarts")
    ap.add_argument("--phases", nargs="+", default=["oracle", "null", "fill", "docker"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/soak")
    args = ap.parse_args()

    import ray
    from ray.cluster_utils import Cluster

    from ha_agents.episode import EpisodeConfig
    from ha_agents.cluster.ray_start import SLOTS
    from ha_agents.runs.rollouts import collect
    from ha_envs.loaders import load_suite

    out = Path(args.out).resolve()  # the nodes' caches: absolute (a Ray worker has its own working directory)
    out.mkdir(parents=True, exist_ok=True)
    caches = out / "caches"
    args.extra_cache = caches / "node-new"
    args.node_args = lambda c: {"num_cpus": args.slots, "resources": {SLOTS: args.slots},
                                "env_vars": {"HA_CACHE_DIR": str(c)}}
    suite = load_suite("mini")
    by_id = {t.instance_id: t for t in suite}
    python_tasks = [t for t in suite if t.language == "python"][:4]
    rng = random.Random(args.seed)
    cluster = Cluster(initialize_head=True, head_node_args=args.node_args(caches / "head"))
    rows = []
    try:
        for i in range(2):
            cluster.add_node(**args.node_args(caches / f"node{i}"))
        cluster.wait_for_nodes()
        os.environ["RAY_ADDRESS"] = cluster.address
        for phase in args.phases:
            if phase == "oracle":
                tasks, runs, model, config = suite, args.runs, "oracle", EpisodeConfig.create("h0")
            elif phase == "null":
                tasks, runs, model, config = suite, args.null_runs, "null", EpisodeConfig.create("h0")
            elif phase == "fill":
                tasks, runs = python_tasks, args.fill_runs
                model = fill_replay(out / "fill.jsonl", tasks)
                config = EpisodeConfig.create("h0", seed=args.seed, env_options={
                    "sandbox_options": {"disk_bytes": 48 << 20}})
            elif phase == "docker":
                tasks, runs, model = [by_id[i] for i in args.docker_tasks], args.docker_runs, "oracle"
                config = EpisodeConfig.create("h0", sandbox="docker")
            else:
                raise SystemExit(f"unknown phase {phase}")
            d = out / phase
            faults = Faults(cluster, args, phase, rng)
            t0 = time.monotonic()
            failed: list[BaseException] = []

            def work(tasks=tasks, runs=runs, model=model, config=config, d=d, faults=faults) -> None:
                try:
                    collect(tasks, runs, model, config, out=d, workers=3 * args.slots, executor="ray",
                            progress_bar=False)
                except BaseException as exc:  # noqa: BLE001 - reported below
                    failed.append(exc)
                finally:
                    faults.stop.set()

            runner = threading.Thread(target=work, daemon=True)
            runner.start()
            faults.run()  # until the phase's collect returns
            runner.join()
            if failed:
                raise failed[0]
            wall = time.monotonic() - t0
            lines = [json.loads(x) for x in (d / "trajectories.jsonl").read_text().splitlines()]
            keys = [(r["instance_id"], int(r["run"])) for r in lines]
            want = {(t.instance_id, k) for t in tasks for k in range(1, runs + 1)}
            unmasked = [r for r in lines if not r.get("mask_sample")]
            again = regrade(unmasked, by_id, "docker" if phase == "docker" else "local")
            wrong = [r for r in unmasked if bool(r.get("resolved")) != again[(
                r["instance_id"], hashlib.sha256((r.get("patch") or "").encode()).hexdigest())]]
            row = {"phase": phase, "expected": len(want), "records": len(lines), "lost": len(want - set(keys)),
                   "duplicated": len(keys) - len(set(keys)), "masked": sum(bool(r.get("mask_sample")) for r in lines),
                   "resolved": sum(bool(r.get("resolved")) for r in unmasked),
                   "wrongly_graded": len(wrong), "distinct_patches_regraded": len(again),
                   # an infrastructure fault that slipped through as the agent's outcome (an empty diff)
                   "unmasked_infra": sum(1 for r in unmasked if (r.get("grade") or {}).get("status") == "diff_failed"),
                   "sandbox_kills": faults.kills, "faults": faults.log, "wall_s": round(wall, 1),
                   "terminations": {}, "nodes": len({r.get("node") for r in lines})}
            for r in lines:
                row["terminations"][r["termination"]] = row["terminations"].get(r["termination"], 0) + 1
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "faults"}), flush=True)
            for f in faults.log:
                print("   ", f, flush=True)
            (out / "soak.json").write_text(json.dumps(rows, indent=1))
    finally:
        ray.shutdown()
        cluster.shutdown()
    tot = {k: sum(r[k] for r in rows) for k in ("expected", "records", "lost", "duplicated", "masked",
                                               "wrongly_graded", "unmasked_infra", "sandbox_kills")}
    print("\nphase    expected  lost  duplicated  masked  resolved  wrongly graded  unmasked infra  kills  wall s  "
          "terminations")
    for r in rows:
        print(f"{r['phase']:<8} {r['expected']:>8}  {r['lost']:>4}  {r['duplicated']:>10}  {r['masked']:>6}  "
              f"{r['resolved']:>8}  {r['wrongly_graded']:>14}  {r['unmasked_infra']:>14}  {r['sandbox_kills']:>5}  "
              f"{r['wall_s']:>6}  {r['terminations']}")
    print(f"total    {tot['expected']:>8}  {tot['lost']:>4}  {tot['duplicated']:>10}  {tot['masked']:>6}  "
          f"{'':>8}  {tot['wrongly_graded']:>14}  {tot['unmasked_infra']:>14}  {tot['sandbox_kills']:>5}")


if __name__ == "__main__":
    main()
