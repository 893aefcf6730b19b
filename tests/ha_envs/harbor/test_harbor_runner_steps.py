"""Harbor's own runner and this library on the same multi-step tasks: `harbor run -e docker` (its
multi-step trial, oracle agent) and `ha eval --model oracle` give the same reward per step and per
task. The tasks stage files and a setup.sh before step 2 (`steps/mul/workdir/`) whose results step
2's tests need, so staging is checked against Harbor's own; one task's step-2 oracle is wrong on
purpose, so Harbor's `mean` is checked on a 0.5.

Needs what tests/ha_envs/harbor/test_harbor_runner.py needs (the harbor venv, Docker with the base
image, compose v2); skips without them, fails when CI is set."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ha_cli.main import main
from tests.conftest import require_bwrap, require_docker
from tests.ha_envs.harbor.test_harbor_out import harbor_python
from tests.ha_envs.harbor.test_harbor_runner import _remove_kept, _trials, compose_env
from tests.ha_envs.harbor.test_harbor_steps import staged_steps

BASE_IMAGE = "harnessadapt/base:bookworm"


def _tasks(root: Path) -> Path:
    """'staged' (both steps' oracles right: 1, 1) and 'half' (step 2's oracle does nothing: 1, 0),
    on the base image, network public (the job's overlay takes it away, as the single-step test)."""
    data = root / "tasks"
    for name in ("staged", "half"):
        d = staged_steps(data, name)
        (d / "environment" / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nWORKDIR /app\nCOPY app/ /app/\n")
        toml = (d / "task.toml").read_text().replace('network_mode = "no-network"', 'network_mode = "public"')
        (d / "task.toml").write_text(toml)
    (data / "half" / "steps" / "mul" / "solution" / "solve.sh").write_text("#!/bin/bash\necho not solving\n")
    return data


def test_harbor_runner_and_ha_agree_on_multi_step_tasks(tmp_path):
    require_bwrap()
    require_docker()
    harbor = Path(harbor_python()).parent / "harbor"
    env = {**compose_env(), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    data = _tasks(tmp_path)
    (tmp_path / "no-network.yaml").write_text("services:\n  main:\n    network_mode: none\n")
    config = {"job_name": "job", "jobs_dir": str(tmp_path / "jobs"), "n_concurrent_trials": 2, "quiet": True,
              "environment": {"type": "docker", "extra_docker_compose": [str(tmp_path / "no-network.yaml")],
                              "kwargs": {"keep_containers": True}},
              "agents": [{"name": "oracle"}], "datasets": [{"path": str(data)}]}
    (tmp_path / "job.json").write_text(json.dumps(config))
    job = tmp_path / "jobs" / "job"
    try:
        res = subprocess.run([str(harbor), "run", "-c", str(tmp_path / "job.json"), "-y"], cwd=tmp_path, env=env,
                             check=False, capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-3000:])
        theirs = {t["task_name"]: ([(s["step_name"], (s["verifier_result"] or {}).get("rewards", {}).get("reward"))
                                    for s in t["step_results"]], t["verifier_result"]["rewards"]["reward"])
                  for t in _trials(job)}
    finally:
        _remove_kept(job, env)
    assert theirs == {"staged": ([("add", 1.0), ("mul", 1.0)], 1.0),
                      "half": ([("add", 1.0), ("mul", 0.0)], 0.5)}, theirs
    assert main(["eval", "--benchmark", "harbor", "--data", str(data), "--model", "oracle", "--max-turns", "6",
                 "--out", str(tmp_path / "ours"), "--no-progress"]) == 0
    recs = [json.loads(x) for x in (tmp_path / "ours" / "trajectories.jsonl").read_text().splitlines()]
    ours = {r["instance_id"]: ([(s["name"], s["verifier_reward"]) for s in r["steps"]], r["reward"]) for r in recs}
    assert ours == theirs, (ours, theirs)
