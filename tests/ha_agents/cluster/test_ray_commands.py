"""`ha tasks validate` and `ha evolve run` on Ray (`--executor ray`, a private local Ray here: no
RAY_ADDRESS): the same results as on threads, each stamped with the node that produced it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ha_cli.main import main

ray = __import__("ray") if os.environ.get("CI") else pytest.importorskip("ray")

TASKS = ["mini__semver_ranges", "mini__ttl_cache"]


@pytest.fixture
def private_ray(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    yield
    ray.shutdown()


def test_ha_tasks_validate_on_ray(tmp_path, capsys, private_ray):
    results = tmp_path / "results.jsonl"
    rc = main(["tasks", "validate", "--suite", "mini", "--instances", *TASKS, "--executor", "ray", "--workers", "2",
               "--results", str(results), "--json"])
    assert rc == 0, capsys.readouterr().err
    rows = json.loads(capsys.readouterr().out)
    assert [r["instance_id"] for r in rows] == TASKS
    assert all(r["ok"] and r["gold_status"] == "resolved" and r["empty_status"] == "unresolved" for r in rows)
    node = ray.get_runtime_context().get_node_id()
    assert {r["node"] for r in rows} == {node}
    on_disk = [json.loads(x) for x in results.read_text().splitlines()]
    assert sorted(r["instance_id"] for r in on_disk) == sorted(TASKS) and all(r["node"] == node for r in on_disk)


def test_ha_evolve_run_on_ray(tmp_path, capsys, private_ray):
    out = tmp_path / "evo"
    rc = main(["evolve", "run", "--suite", "mini", "--instances", *TASKS, "--model", "oracle", "--proposer", "rule",
               "--rounds", "1", "--group-size", "2", "--executor", "ray", "--workers", "4", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    (p,) = [json.loads(x) for x in (out / "evolution.jsonl").read_text().splitlines() if '"proposal"' in x]
    assert p["rollouts"]["current"] == 4
    recs = [json.loads(x) for f in Path(out / "rollouts").rglob("trajectories.jsonl") for x in f.read_text().splitlines()]
    assert len(recs) >= 8 and all(r["node"] == ray.get_runtime_context().get_node_id() for r in recs)
    assert all(r["resolved"] for r in recs)
