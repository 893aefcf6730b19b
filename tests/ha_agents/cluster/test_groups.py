"""Ray groups across nodes (``ha_agents.cluster.groups``): placement, a lost node, snapshots and
environments moved to the nodes that lack them, the artifact store."""

from __future__ import annotations

import os

import pytest

from ha_agents.cluster.ray_start import init_ray
from ha_agents.runs.rollouts import collect
from ha_envs.sandbox.provision.workcopy import cache_root
from tests.ha_agents.runs.test_rollouts import tasks


def test_a_group_is_one_unit_of_placement_on_a_multi_node_cluster(tmp_path, monkeypatch):
    """A 3-node Ray cluster on this machine (ray.cluster_utils.Cluster), each node declaring two
    sandbox slots: every record of a task carries the same node, groups spread over more than one
    node, and the log holds each (task, run) once."""
    ray = __import__("ray") if os.environ.get("CI") else pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from ha_agents.cluster.ray_start import SLOTS

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {SLOTS: 2}})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, resources={SLOTS: 2})
        cluster.wait_for_nodes()
        monkeypatch.setenv("RAY_ADDRESS", cluster.address)
        ts = tasks("mini__semver_ranges", "mini__ttl_cache", "mini__invoice_rounding")
        recs = collect(ts, 2, "null", "h0", out=tmp_path / "ray", workers=6, executor="ray", progress_bar=False)
        assert sorted((r["instance_id"], r["run"]) for r in recs) == sorted((t.instance_id, k) for t in ts for k in (1, 2))
        nodes: dict[str, set] = {}
        for r in recs:
            nodes.setdefault(r["instance_id"], set()).add(r["node"])
        assert all(len(n) == 1 and None not in n for n in nodes.values()), nodes
        assert len({next(iter(n)) for n in nodes.values()}) >= 2, nodes  # SPREAD: not all on one node
        lines = (tmp_path / "ray" / "trajectories.jsonl").read_text().splitlines()
        assert len(lines) == 6
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_a_node_lost_mid_run_loses_and_duplicates_nothing(tmp_path, monkeypatch, caplog):
    """Two of three nodes removed while their groups are mid-episode (a replayed model that sleeps
    12 s): the groups' unfinished members run once more on the node left, and the log holds every
    (task, run) exactly once, none masked."""
    import json
    import threading
    import time

    ray = __import__("ray") if os.environ.get("CI") else pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from ha_agents.cluster.ray_start import SLOTS

    ts = tasks("mini__semver_ranges", "mini__ttl_cache", "mini__invoice_rounding")
    replay = tmp_path / "slow.jsonl"
    replay.write_text("".join(json.dumps({"instance_id": t.instance_id, "run": 1, "messages": [
        {"role": "assistant", "content": "```bash\nsleep 12\n```"},
        {"role": "assistant", "content": "```bash\nsubmit\n```"}]}) + "\n" for t in ts))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {SLOTS: 2}})
    try:
        workers = [cluster.add_node(num_cpus=1, resources={SLOTS: 2}) for _ in range(2)]
        cluster.wait_for_nodes()
        monkeypatch.setenv("RAY_ADDRESS", cluster.address)
        out: dict = {}
        run = threading.Thread(target=lambda: out.update(recs=collect(
            ts, 2, f"replay:{replay}", "h0", out=tmp_path / "ray", workers=6, executor="ray", progress_bar=False)))
        with caplog.at_level("WARNING", logger="ha_agents.cluster.groups"):
            run.start()
            deadline = time.monotonic() + 600  # generous: a loaded machine schedules slowly
            while not ray.is_initialized() or ray.available_resources().get(SLOTS, 0) > 0:  # 0 free: the key goes
                assert time.monotonic() < deadline, "the groups were never all placed"
                time.sleep(0.5)  # every slot taken: the three groups run, one per node
            time.sleep(4)  # into their 12 s command
            for node in workers:
                cluster.remove_node(node, allow_graceful=False)
            run.join(timeout=900)
        assert not run.is_alive() and "recs" in out, "collect did not finish after the nodes were removed"
        recs = out["recs"]
        lines = [json.loads(line) for line in (tmp_path / "ray" / "trajectories.jsonl").read_text().splitlines()]
        assert sorted((r["instance_id"], r["run"]) for r in lines) == sorted((t.instance_id, k) for t in ts for k in (1, 2))
        assert len(recs) == 6 and not any(r.get("mask_sample") for r in recs)
        assert "re-running its" in caplog.text  # a group really was lost and run again
        assert {r["node"] for r in recs if r["instance_id"] in caplog.text} == {cluster.head_node.node_id}
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_snapshots_move_to_nodes_that_lack_the_repository(tiny_task, tmp_path, monkeypatch):
    """Three nodes, each with a cache of its own and no repository mirror (HA_CACHE_DIR and
    HA_REPOS_DIR through each node's environment): the driver builds each task's snapshot once from
    its mirror, every node that runs a group gets a copy through the driver's SnapshotStore and
    builds none, and the episodes are graded as on one machine (the oracle resolves all)."""
    import dataclasses
    import subprocess

    if not os.environ.get("CI"):
        pytest.importorskip("ray")
    from ha_envs.sandbox.provision.workcopy import snapshot_origin

    mirror = tmp_path / "mirrors" / "acme+clamp" / "repo"
    mirror.parent.mkdir(parents=True)
    subprocess.run(["cp", "-a", str(tiny_task.source_dir), str(mirror)], check=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(git + args, cwd=mirror, check=True, capture_output=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=mirror, check=True, capture_output=True,
                          text=True).stdout.strip()
    ts = [dataclasses.replace(tiny_task, instance_id=f"acme__clamp-{i}", repo="acme/clamp", base_commit=base,
                              source_dir=None) for i in (1, 2, 3)]
    monkeypatch.setenv("HA_REPOS_DIR", str(tmp_path / "mirrors"))  # the driver alone has the mirror
    caches, recs = _on_nodes_without_mirrors(tmp_path, monkeypatch, slots=2,
                                             run=lambda: collect(ts, 2, "oracle", "h0", out=tmp_path / "ray",
                                                                 workers=6, executor="ray", progress_bar=False))
    assert sorted((r["instance_id"], r["run"]) for r in recs) == sorted((t.instance_id, k) for t in ts for k in (1, 2))
    assert all(r["resolved"] and not r["mask_sample"] for r in recs), [(r["termination"], r["error"]) for r in recs]
    assert {r["snapshot"] for r in recs} == {"copied"}, [r["snapshot"] for r in recs]
    on_nodes = {p.name: snapshot_origin(p) for c in caches if (c / "snapshots").is_dir()
                for p in (c / "snapshots").iterdir() if not p.name.startswith(".")}
    assert sorted(n.rsplit("-", 1)[0] for n in on_nodes) == sorted(t.instance_id for t in ts)  # one copy per group's node
    assert set(on_nodes.values()) == {"copied"}  # no node built one
    assert len({r["node"] for r in recs}) >= 2


def test_the_artifact_store_holds_few_archives_and_serves_only_its_own(tmp_path):
    """The driver's ArtifactStore keeps packed archives up to a byte budget in the object store (a
    SWE repository's snapshot runs to hundreds of MB, an environment to GBs), packs an evicted one
    again when asked, and refuses a name outside its directories."""
    import asyncio
    import hashlib

    ray = __import__("ray") if os.environ.get("CI") else pytest.importorskip("ray")
    from ha_agents.cluster.artifact_store import ArtifactStore
    from ha_envs.sandbox.provision.workcopy import pack_snapshot, prepare_snapshot

    ts = tasks("mini__semver_ranges", "mini__ttl_cache", "mini__invoice_rounding")
    paths = [prepare_snapshot(t).path for t in ts]
    sizes = [len(pack_snapshot(p)) for p in paths]
    init_ray(address="local", num_cpus=1)

    async def scenario():
        store = ArtifactStore(str(cache_root()), keep_bytes=sizes[1] + sizes[2])
        for p in paths:
            how, refs, digest, built_at = await store.fetch("snapshot", p.name)
            assert how == "copy" and built_at == str(p)
            assert hashlib.sha256(await refs[0]).hexdigest() == digest
        stats = await store.stats()
        assert stats["packed"] == 3 and stats["held"] == 2  # the first left: the budget holds the last two
        assert stats["held_bytes"] == sizes[1] + sizes[2]
        await store.fetch("snapshot", paths[2].name)  # held: not packed again
        assert (await store.stats())["packed"] == 3
        await store.fetch("snapshot", paths[0].name)  # evicted: packed again
        assert (await store.stats())["packed"] == 4
        for bad in ("../x", "a/b", ".build-1", ""):
            with pytest.raises(ValueError, match="not an entry name"):
                await store.fetch("snapshot", bad)
        with pytest.raises(ValueError, match="unknown artifact kind"):
            await store.fetch("image", paths[0].name)

    try:
        asyncio.run(scenario())
    finally:
        ray.shutdown()


def test_an_environment_is_built_once_by_the_first_node_to_ask(tmp_path):
    """The store's lease: the first node to ask for an environment the driver lacks builds it; one
    asking meanwhile waits and then gets the published copy (installed into the driver's cache,
    relocated); a build that fails, or a builder gone for longer than the wait, hands the lease on."""
    import asyncio
    import hashlib

    ray = __import__("ray") if os.environ.get("CI") else pytest.importorskip("ray")
    from ha_agents.cluster.artifact_store import ArtifactStore
    from ha_envs.sandbox.provision.artifacts import env_origin, pack_env

    built = tmp_path / "node2" / "envs" / "acme-3.9-abc"
    (built / "bin").mkdir(parents=True)
    (built / "bin" / "tool").write_text(f"#!{built}/bin/python\nprint('hi')\n")
    (built / ".ha-ready").write_text("x")
    data = pack_env(built)
    driver = tmp_path / "driver"
    init_ray(address="local", num_cpus=1)

    async def scenario():
        store = ArtifactStore(str(driver), build_wait_s=30)
        assert await store.fetch("python-env", built.name) == ["build"]  # node 2 holds the lease
        waiting = asyncio.ensure_future(store.fetch("python-env", built.name))  # node 3 asks meanwhile
        await asyncio.sleep(0.3)
        assert not waiting.done()
        await store.publish("python-env", built.name, [ray.put(data)], hashlib.sha256(data).hexdigest(), str(built))
        how, refs, digest, built_at = await asyncio.wait_for(waiting, 10)
        mine = driver / "envs" / built.name
        assert how == "copy" and env_origin(mine) == "copied"
        assert built_at == str(built)  # the archive served is the builder's: its paths are the builder's
        assert (mine / "bin" / "tool").read_text().startswith(f"#!{mine}/bin/python")
        assert (await store.stats())["leases"] == 1 and (await store.stats())["published"] == 1

        assert await store.fetch("node-env", "other-node-1") == ["build"]
        waiting = asyncio.ensure_future(store.fetch("node-env", "other-node-1"))
        await asyncio.sleep(0.2)
        await store.abandon("other-node-1")  # the build failed: the waiter builds it
        assert await asyncio.wait_for(waiting, 10) == ["build"]

        quick = ArtifactStore(str(driver), build_wait_s=0.2)
        assert await quick.fetch("node-env", "gone-1") == ["build"]  # its builder never comes back
        assert await asyncio.wait_for(quick.fetch("node-env", "gone-1"), 10) == ["build"]

    try:
        asyncio.run(scenario())
    finally:
        ray.shutdown()




from tests.ha_envs.test_real_envs import real_task  # noqa: E402,F401 - a real Python environment to move


def test_an_environment_is_built_once_in_the_cluster_and_copied_to_the_other_nodes(real_task, tmp_path, monkeypatch):
    """Three nodes with caches of their own and no mirror, three tasks needing one real Python
    environment (pyenv's 3.9 + PyPI): one node builds it, the others wait for that build and get a
    copy (relocated into their caches), the driver's cache gets it too, and every episode grades
    as on one machine."""
    import dataclasses

    if not os.environ.get("CI"):
        pytest.importorskip("ray")
    from ha_envs.sandbox.provision.artifacts import env_dest, env_origin

    ts = [dataclasses.replace(real_task, instance_id=f"acme__calc-{i}") for i in (1, 2, 3)]
    name = env_dest(ts[0])[1].name
    assert {env_dest(t)[1].name for t in ts} == {name}  # one environment for the three
    caches, recs = _on_nodes_without_mirrors(tmp_path, monkeypatch, slots=1,
                                             run=lambda: collect(ts, 1, "oracle", "h0", out=tmp_path / "ray",
                                                                 workers=3, executor="ray", progress_bar=False))
    assert all(r["resolved"] and not r["mask_sample"] for r in recs), [(r["env_cache"], r["termination"], r["error"])
                                                                       for r in recs]
    assert len({r["node"] for r in recs}) == 3  # one group per node (one slot each)
    assert sorted(r["env_cache"] for r in recs) == ["built", "copied", "copied"], [r["env_cache"] for r in recs]
    origins = sorted(env_origin(c / "envs" / name) for c in caches)
    assert origins == ["built", "copied", "copied"]  # built once in the cluster
    assert env_origin(cache_root() / "envs" / name) == "copied"  # published to the driver's cache


def _on_nodes_without_mirrors(tmp_path, monkeypatch, slots, run):
    """``run()`` against a 3-node ``ray.cluster_utils.Cluster`` whose nodes each have a cache of their
    own and no repository mirror (HA_CACHE_DIR and HA_REPOS_DIR through each node's environment);
    returns (the nodes' cache directories, what ``run`` returned)."""
    from ray.cluster_utils import Cluster

    from ha_agents.cluster.ray_start import SLOTS

    (tmp_path / "no-mirrors").mkdir()
    caches = [tmp_path / f"node{i}" for i in range(3)]
    env = lambda c: {"HA_CACHE_DIR": str(c), "HA_REPOS_DIR": str(tmp_path / "no-mirrors")}  # noqa: E731
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "resources": {SLOTS: slots}, "env_vars": env(caches[0])})
    try:
        for c in caches[1:]:
            cluster.add_node(num_cpus=1, resources={SLOTS: slots}, env_vars=env(c))
        cluster.wait_for_nodes()
        monkeypatch.setenv("RAY_ADDRESS", cluster.address)
        return caches, run()
    finally:
        __import__("ray").shutdown()
        cluster.shutdown()
