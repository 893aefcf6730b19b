"""The remote env: a RepairEnv and its sandbox in a Ray actor on a node with sandbox slots, the
policy where the caller is; a lost actor is a masked infrastructure fault."""

from __future__ import annotations

import json
import os

import pytest

from ha_envs.loaders import load_suite
from ha_envs.sandbox import SandboxError
from ha_envs.termination import Termination

ray = __import__("ray") if os.environ.get("CI") else pytest.importorskip("ray")

TASK = "mini__semver_ranges"


def _task():
    [t] = [t for t in load_suite("mini") if t.instance_id == TASK]
    return t


def test_ha_eval_runs_each_env_on_the_sandbox_node(tmp_path, monkeypatch):
    """`ha eval --env-placement ray` on a two-node cluster (a head without sandbox slots, as a GPU
    node, and a sandbox node with a cache of its own): every episode's env ran on the sandbox node,
    which got the driver's snapshot from its artifact store; the oracle's episodes are graded resolved; the records say where."""
    from ray.cluster_utils import Cluster

    from ha_agents.cluster.ray_start import SLOTS
    from ha_cli.main import main as ha
    from ha_envs.sandbox.provision.workcopy import snapshot_origin

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        node = cluster.add_node(num_cpus=1, resources={SLOTS: 2}, env_vars={"HA_CACHE_DIR": str(tmp_path / "sbx")})
        cluster.wait_for_nodes()
        monkeypatch.setenv("RAY_ADDRESS", cluster.address)
        rc = ha(["eval", "--suite", "mini", "--instances", TASK, "--model", "oracle", "--runs", "2", "--workers", "2",
                 "--env-placement", "ray", "--no-progress", "--out", str(tmp_path / "out")])
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert rc == 0
    recs = [json.loads(x) for x in (tmp_path / "out" / "trajectories.jsonl").read_text().splitlines()]
    assert len(recs) == 2 and all(r["resolved"] and not r["mask_sample"] for r in recs), recs
    assert {r["node"] for r in recs} == {node.node_id}
    got = [p for p in (tmp_path / "sbx" / "snapshots").iterdir() if not p.name.startswith(".")]
    assert [p.name.split("-")[0] for p in got] == ["mini__semver_ranges"]
    assert snapshot_origin(got[0]) == "copied"  # from the driver's store, not rebuilt on the node


def test_a_lost_env_actor_is_a_masked_infrastructure_fault():
    """The actor killed mid-episode: the next step ends the episode masked (env_lost, reward
    0) and so does every later call; an env whose actor is gone before reset raises SandboxError,
    as a sandbox that cannot start does; an episode through run_episode is a masked record."""
    from ha_agents.episode import EpisodeConfig, run_episode
    from ha_agents.cluster.ray_start import init_ray
    from ha_agents.cluster.remote_env import RemoteEnv

    init_ray(address="local", num_cpus=2)
    try:
        env = RemoteEnv(_task(), "h0")
        obs, info = env.reset(seed=0)
        assert obs and info["env_node"] == ray.get_runtime_context().get_node_id()
        _, _, term, trunc, info = env.step({"content": "```bash\nls\n```"})
        assert not term and not trunc and info["termination"] is None
        ray.kill(env._actor, no_restart=True)
        obs, reward, term, trunc, info = env.step({"content": "```bash\nls\n```"})
        assert (obs, reward, term, trunc) == ([], 0.0, True, False)
        assert info["termination"] is Termination.ENV_LOST and info["mask_sample"] and "actor was lost" in info["error"]
        assert env.end("context_limit")[4]["mask_sample"]
        env.close()  # nothing left to close: no error

        dead = RemoteEnv(_task(), "h0")
        ray.kill(dead._actor, no_restart=True)
        with pytest.raises(SandboxError, match="cannot start the sandbox"):
            dead.reset(seed=0)
        dead.close()

        with pytest.raises(ValueError, match="env_placement"):
            EpisodeConfig.create("h0", env_placement="moon")
        rec = run_episode(_task(), "oracle", EpisodeConfig.create("h0", env_placement="ray"))
        assert rec["resolved"] and rec["node"] == ray.get_runtime_context().get_node_id()
    finally:
        ray.shutdown()


class _KillsItsEnvOnce:
    """The oracle, except that at its first call it kills the actor of every live remote env of this
    process (its env's node, as far as the episode can tell, is gone)."""

    def __init__(self):
        from ha_agents.llm.registry import make_model

        self.inner = make_model("oracle")
        self.name = "oracle"
        self.killed = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def complete(self, *args, **kwargs):
        if not self.killed:
            import gc

            from ha_agents.cluster.remote_env import RemoteEnv

            for env in [o for o in gc.get_objects() if isinstance(o, RemoteEnv)]:
                if env._lost is None:
                    ray.kill(env._actor, no_restart=True)
                    self.killed += 1
        return self.inner.complete(*args, **kwargs)


def test_an_episode_whose_remote_env_is_lost_runs_once_more(tmp_path):
    """collect() with remote envs: the env's actor killed during the episode; the episode runs once
    more with the same seed on a new env and is recorded once, resolved, with the second attempt noted."""
    from ha_agents.episode import EpisodeConfig
    from ha_agents.cluster.ray_start import init_ray
    from ha_agents.runs.rollouts import collect

    init_ray(address="local", num_cpus=2)
    try:
        model = _KillsItsEnvOnce()
        recs = collect([_task()], 1, model, EpisodeConfig.create("h0", env_placement="ray"), out=tmp_path,
                       workers=1, progress_bar=False)
    finally:
        ray.shutdown()
    assert model.killed == 1
    assert len(recs) == 1 and recs[0]["resolved"] and not recs[0]["mask_sample"], recs[0].get("error")
    assert recs[0]["env_attempts"] == 2
    assert len((tmp_path / "trajectories.jsonl").read_text().splitlines()) == 1
