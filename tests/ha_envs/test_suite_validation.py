"""Every bundled task: the gold patch resolves and the empty patch does not (real test runners,
in the sandbox), and the oracle reaches the same verdict through the env's own actions."""

from __future__ import annotations

import pytest

from ha_envs.loaders import load_suite
from ha_envs.validate import validate_tasks

TASKS = load_suite("mini")


def test_whole_suite_validates():
    results = validate_tasks(TASKS, workers=2)
    bad = {r.instance_id: r.problems for r in results if not r.ok}
    assert not bad
    assert all(r.gold_status == "resolved" and r.empty_status == "unresolved" for r in results)


@pytest.mark.parametrize("instance_id", ["mini__go_ledger", "mini__rust_intervals", "mini__ttl_cache"])
def test_oracle_episode_resolves(instance_id, tmp_path):
    from ha_agents.runs.evaluate import evaluate

    task = next(t for t in TASKS if t.instance_id == instance_id)
    assert evaluate([task], "oracle", out_dir=tmp_path).pass_at_1 == [1.0]
