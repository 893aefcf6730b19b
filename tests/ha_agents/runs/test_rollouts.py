"""collect(): groups in parallel, one snapshot per task, streamed and resumable; the same call on Ray."""

from __future__ import annotations

import json
import os

import pytest

from ha_agents.train.grpo import Rollout, rates
from ha_envs.sandbox.provision.workcopy import cache_root
from ha_agents.cluster.ray_start import init_ray
from ha_agents.runs.rollouts import collect
from ha_envs.loaders import load_suite


def tasks(*names):
    return [t for t in load_suite("mini") if t.instance_id in names]


def test_collect_groups_stream_and_resume(tmp_path):
    ts = tasks("mini__semver_ranges", "mini__js_template")
    out = tmp_path / "roll"
    seen = []
    recs = collect(ts, 3, "oracle", "h1", out=out, workers=2, on_record=seen.append,
                   progress_bar=False)
    assert len(recs) == 6 and len(seen) == 6 and all(r["resolved"] for r in recs)
    assert sorted((r["instance_id"], r["run"]) for r in recs) == sorted((t.instance_id, k) for t in ts for k in (1, 2, 3))
    # one prepared snapshot per task, shared by its whole group
    names = [p.name for p in (cache_root() / "snapshots").iterdir() if p.is_dir()]
    for t in ts:
        assert sum(1 for n in names if n.startswith(t.instance_id.replace("/", "_"))) == 1, names
    # a killed writer leaves a cut line; the rerun mends it and runs only what is missing
    log = out / "trajectories.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:4]) + lines[4][:50])
    seen.clear()
    recs = collect(ts, 3, "oracle", "h1", out=out, workers=2, on_record=seen.append,
                   progress_bar=False)
    assert len(seen) == 2 and len(recs) == 6
    assert all(json.loads(l) for l in log.read_text().splitlines())
    r = rates([Rollout(x["instance_id"], x["reward"], truncated=x["termination"] in ("max_turns", "context_limit"))
               for x in recs])
    assert r.pass_rate == 1.0 and r.trainable_rate == 0.0  # all-success groups carry no GRPO signal


def test_collect_on_ray(tmp_path):
    ray = __import__("ray") if os.environ.get("CI") else pytest.importorskip("ray")
    init_ray(address="local", num_cpus=2)
    try:
        ts = tasks("mini__semver_ranges", "mini__ttl_cache")
        recs = collect(ts, 2, "null", "h0", out=tmp_path / "ray", workers=2,
                       executor="ray", progress_bar=False)
        assert len(recs) == 4 and not any(r["resolved"] for r in recs)
        assert {r["termination"] for r in recs} == {"submitted"}
        assert len((tmp_path / "ray" / "trajectories.jsonl").read_text().splitlines()) == 4
    finally:
        ray.shutdown()


def test_an_unexpected_error_in_one_episode_is_a_masked_record_and_the_run_goes_on(tmp_path):
    from ha_agents.llm.policies import POLICIES, NullPolicy
    from ha_agents.runs.rollouts import collect
    from ha_envs.loaders import load_suite

    class Exploding(NullPolicy):
        name = "exploding"

        def plan(self, task, info):
            if task.instance_id == "mini__semver_ranges":
                raise RuntimeError("policy bug")
            return super().plan(task, info)

    POLICIES["exploding"] = Exploding
    try:
        tasks = [t for t in load_suite("mini") if t.instance_id in ("mini__semver_ranges", "mini__invoice_rounding")]
        recs = collect(tasks, 2, "exploding", "h0", out=tmp_path, workers=2, progress_bar=False)
    finally:
        POLICIES.pop("exploding")
    assert len(recs) == 4 and len((tmp_path / "trajectories.jsonl").read_text().splitlines()) == 4
    bad = [r for r in recs if r["instance_id"] == "mini__semver_ranges"]
    assert all(r["mask_sample"] and r["termination"] == "internal_error" and "policy bug" in r["error"] for r in bad)
    assert all(r["termination"] == "submitted" for r in recs if r["instance_id"] == "mini__invoice_rounding")
