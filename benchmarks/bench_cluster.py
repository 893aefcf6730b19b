"""Rollouts on Ray at scale: what the driver costs per episode, and real episodes on 1 / 2 / 3 nodes.

(a) **Driver cost.** ``ha_agents.cluster.groups.collect_on_ray`` (the loop behind ``collect(...,
executor="ray")``, ``ha eval --executor ray`` and the local trainer on Ray) is driven with no-op
groups: each member holds its slot for ``--hold`` seconds and returns a record of ``--record-kb``
KiB (a real episode's record with its trajectory is 10-60 KiB), so ``--in-flight`` episodes really
are in flight at once. Everything the driver does per episode is real: placement of the group, the
streaming generator, ``ray.wait``, fetching the record, appending and fsyncing it to a real
``trajectories.jsonl``. Measured: the driver process's CPU time (all its threads, Ray's core worker
included) per episode, at 64 / 256 / 1024 in flight. Goal: <= 1 ms per episode, flat in the
in-flight count. The baseline is the same loop at 64 in flight (the ratio column).

(b) **Real episodes over nodes.** The bundled tasks (``oracle`` policy, local sandbox, h0) through
``collect(..., executor="ray")`` on a ``ray.cluster_utils.Cluster`` of 1, 2 and 3 nodes on this
machine, each node declaring ``--slots`` sandbox slots and a cache directory of its own
(``HA_CACHE_DIR`` through the node's environment). The nodes share this machine's cores, so more
nodes cannot run faster here: reported are episodes per second, per-core efficiency against one
node, the spread of groups over nodes and the task snapshots each node holds (each
with more than one node gets the driver's copies through the ``ArtifactStore``; one node builds its
own, as a single machine does).

    python benchmarks/bench_cluster.py [--in-flight 64 256 1024] [--group 16] [--hold 2] [--nodes 1 2 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def noop_group(task, samples, model, config, skill, artifacts=None):  # noqa: ANN001 - the signature of cluster.groups.run_group
    """A group whose members hold a slot ``hold`` seconds each (side by side) and return a record of
    ``kib`` KiB; ``model`` carries ``noop:HOLD:KIB``."""
    import ray

    _, hold, kib = model.split(":")
    node = ray.get_runtime_context().get_node_id()
    time.sleep(float(hold))
    pad = "x" * (int(kib) * 1024)
    for k in samples:
        yield {"instance_id": task.instance_id, "run": k, "resolved": False, "node": node,
               "messages": [{"role": "assistant", "content": pad}]}


def cpu_total() -> float:
    """Seconds of CPU the whole machine spent (user + system), from /proc/stat."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    return (int(fields[0]) + int(fields[1]) + int(fields[2])) / os.sysconf("SC_CLK_TCK")


def driver_cost(args: argparse.Namespace) -> list[dict]:
    import ray

    from ha_agents.episode import EpisodeConfig
    from ha_agents.records.log import JsonlLog
    from ha_agents.cluster.ray_start import SLOTS
    from ha_agents.cluster.groups import collect_on_ray
    from ha_envs.loaders import load_suite

    base = load_suite("mini")[0]
    ray.init(address="local", num_cpus=os.cpu_count(), resources={SLOTS: max(args.in_flight) + args.group},
             include_dashboard=False, log_to_driver=False)
    rows = []
    try:
        config = EpisodeConfig.of("h0")
        model = f"noop:{args.hold}:{args.record_kb}"
        for i, in_flight in enumerate([max(args.in_flight)] + list(args.in_flight)):
            # the first pass is a warm-up: Ray starts a worker process per concurrent group
            n_groups = max(1, args.rounds * in_flight // args.group)
            todo = [(dataclasses.replace(base, instance_id=f"noop__{g:05d}"), k)
                    for g in range(n_groups) for k in range(1, args.group + 1)]
            with tempfile.TemporaryDirectory() as d:
                logf = JsonlLog(Path(d) / "trajectories.jsonl")
                t0, c0, m0 = time.perf_counter(), time.process_time(), cpu_total()
                collect_on_ray(todo, model, config, in_flight, logf.append, {}, group_fn=noop_group, store=None)
                wall, cpu, machine = time.perf_counter() - t0, time.process_time() - c0, cpu_total() - m0
                lines = len((Path(d) / "trajectories.jsonl").read_text().splitlines())
            assert lines == len(todo), (lines, len(todo))
            row = {"in_flight": in_flight, "episodes": len(todo), "groups": n_groups, "wall_s": round(wall, 2),
                   "ideal_wall_s": round(len(todo) / in_flight * args.hold, 2),
                   "driver_cpu_ms_per_episode": round(1000 * cpu / len(todo), 3),
                   "machine_cpu_ms_per_episode": round(1000 * machine / len(todo), 3)}
            print(("warm-up " if i == 0 else "") + json.dumps(row), flush=True)
            if i:
                rows.append(row)
    finally:
        ray.shutdown()
    return rows


def over_nodes(args: argparse.Namespace) -> list[dict]:
    import ray
    from ray.cluster_utils import Cluster

    from ha_agents.cluster.ray_start import SLOTS
    from ha_agents.runs.rollouts import collect
    from ha_envs.loaders import load_suite

    tasks = [t for t in load_suite("mini") if not args.tasks or t.instance_id in args.tasks]
    rows = []
    for n in args.nodes:
        root = Path(tempfile.mkdtemp(prefix=f"bench-cluster-{n}-"))
        caches = [root / f"node{i}" for i in range(n)]
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": args.slots, "resources": {SLOTS: args.slots}, "env_vars": {"HA_CACHE_DIR": str(caches[0])}})
        old = os.environ.get("RAY_ADDRESS")
        try:
            for c in caches[1:]:
                cluster.add_node(num_cpus=args.slots, resources={SLOTS: args.slots}, env_vars={"HA_CACHE_DIR": str(c)})
            cluster.wait_for_nodes()
            os.environ["RAY_ADDRESS"] = cluster.address
            t0, m0 = time.perf_counter(), cpu_total()
            recs = collect(tasks, args.real_group, "oracle", "h0", out=root / "out", workers=n * args.slots,
                           executor="ray", progress_bar=False)
            wall, machine = time.perf_counter() - t0, cpu_total() - m0
        finally:
            ray.shutdown()
            cluster.shutdown()
            if old is None:
                os.environ.pop("RAY_ADDRESS", None)
            else:
                os.environ["RAY_ADDRESS"] = old
        per_node: dict[str, int] = {}
        for r in recs:
            per_node[r.get("node") or "?"] = per_node.get(r.get("node") or "?", 0) + 1
        from ha_envs.sandbox.provision.workcopy import snapshot_origin

        snapshots = [[snapshot_origin(p) for p in (c / "snapshots").iterdir() if not p.name.startswith(".")]
                     if (c / "snapshots").is_dir() else [] for c in caches]
        snapshots = [f"{s.count('built')} built / {s.count('copied')} copied" for s in snapshots]
        row = {"nodes": n, "episodes": len(recs), "record_snapshot": {k: sum(1 for r in recs if r.get("snapshot") == k)
                                                                      for k in ("built", "copied", "cached")}, "resolved": sum(bool(r.get("resolved")) for r in recs),
               "masked": sum(bool(r.get("mask_sample")) for r in recs), "wall_s": round(wall, 1),
               "episodes_per_s": round(len(recs) / wall, 3), "machine_cpu_s_per_episode": round(machine / len(recs), 2),
               "episodes_per_node": sorted(per_node.values(), reverse=True), "snapshots_per_node": snapshots}
        print(json.dumps(row), flush=True)
        rows.append(row)
        shutil.rmtree(root, ignore_errors=True)
    cores = os.cpu_count() or 1
    for r in rows:
        r["per_core_efficiency_vs_1_node"] = round(r["episodes_per_s"] / rows[0]["episodes_per_s"], 3)
        r["cores"] = cores
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--in-flight", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--group", type=int, default=16, help="members per group (one Ray task each)")
    ap.add_argument("--hold", type=float, default=2.0, help="seconds a no-op episode holds its slot")
    ap.add_argument("--record-kb", type=int, default=16, help="KiB per no-op record")
    ap.add_argument("--rounds", type=int, default=4, help="episodes = rounds x in-flight")
    ap.add_argument("--nodes", type=int, nargs="*", default=[1, 2, 3])
    ap.add_argument("--slots", type=int, default=2, help="sandbox slots (and CPUs) each node declares in (b)")
    ap.add_argument("--real-group", type=int, default=4, help="episodes per bundled task in (b)")
    ap.add_argument("--tasks", nargs="*", default=None, help="bundled task ids for (b) (default: all)")
    ap.add_argument("--skip-driver", action="store_true")
    ap.add_argument("--json", default=None, help="write the rows here")
    args = ap.parse_args()
    out = {"driver": [] if args.skip_driver else driver_cost(args), "nodes": over_nodes(args) if args.nodes else []}
    base = out["driver"][0]["driver_cpu_ms_per_episode"] if out["driver"] else None
    print("\n(a) driver cost, no-op episodes "
          f"(group {args.group}, hold {args.hold} s, {args.record_kb} KiB records, {args.rounds} x in-flight episodes)")
    print("in flight  episodes  wall s (ideal)  driver CPU ms/episode  ratio vs first  machine CPU ms/episode")
    for r in out["driver"]:
        print(f"{r['in_flight']:>9}  {r['episodes']:>8}  {r['wall_s']:>6} ({r['ideal_wall_s']})  "
              f"{r['driver_cpu_ms_per_episode']:>21}  {r['driver_cpu_ms_per_episode'] / base:>14.2f}  "
              f"{r['machine_cpu_ms_per_episode']:>21}")
    if out["nodes"]:
        print(f"\n(b) bundled episodes (oracle, h0, local sandbox), {args.slots} slots per node, "
              f"{out['nodes'][0]['cores']} cores shared by all nodes")
        print("nodes  episodes  resolved  masked  wall s  episodes/s  per-core eff.  per node  snapshots per node "
              "(the driver built each once)")
        for r in out["nodes"]:
            print(f"{r['nodes']:>5}  {r['episodes']:>8}  {r['resolved']:>8}  {r['masked']:>6}  {r['wall_s']:>6}  "
                  f"{r['episodes_per_s']:>10}  {r['per_core_efficiency_vs_1_node']:>13}  {r['episodes_per_node']}  "
                  f"{r['snapshots_per_node']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
