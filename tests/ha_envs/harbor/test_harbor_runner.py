"""Harbor's own runner on exported bundled tasks: `ha tasks export --format harbor --network-mode public`
writes two tasks, `harbor run -e docker` (the harbor package's CLI, its Docker environment and compose v2)
runs its oracle agent on them, reward 1 each, and its nop agent, reward 0 each. The task's network is
kept off by Docker (an --extra-docker-compose overlay with network_mode: none), checked on the
containers Harbor started.

Needs the harbor venv (.venv-harbor, or HA_HARBOR_PYTHON), a Docker daemon with the base image, and
docker compose v2: the machine's, or the CLI plugin `make harbor-compose` puts under .docker/ (or
HA_DOCKER_CONFIG). Skips without them; fails when CI is set."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from ha_cli.main import main
from tests.conftest import IN_CI, require_docker
from tests.ha_envs.harbor.test_harbor_out import ROOT, harbor_python

TASKS = ["mini__invoice_rounding", "mini__url_router"]


def _compose_major(env: dict) -> int:
    try:
        res = subprocess.run(["docker", "compose", "version", "--short"], env=env, check=False, capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    m = re.match(r"v?(\d+)\.", res.stdout.strip()) if res.returncode == 0 else None
    return int(m.group(1)) if m else 0


def compose_env() -> dict:
    """The environment in which `docker compose` is compose v2 or newer (what Harbor calls)."""
    env = dict(os.environ)
    if _compose_major(env) >= 2:
        return env
    plugins = Path(os.environ.get("HA_DOCKER_CONFIG") or ROOT / ".docker")
    env["DOCKER_CONFIG"] = str(plugins)
    if _compose_major(env) >= 2:
        return env
    why = (f"no docker compose v2: neither the machine's `docker compose` nor a plugin at "
           f"{plugins}/cli-plugins/docker-compose (`make harbor-compose`)")
    if IN_CI:
        pytest.fail(why + " but CI is set: .ci/run must run make harbor-compose")
    pytest.skip(why)


@pytest.fixture(scope="module")
def harbor_job(tmp_path_factory):
    """One Harbor job: agents oracle and nop on the two exported tasks; yields (the job folder, the finished `harbor run`)."""
    harbor = Path(harbor_python()).parent / "harbor"
    require_docker()
    env = {**compose_env(), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # no fetch of litellm's price list at start
    tmp = tmp_path_factory.mktemp("harbor-run")
    tasks = tmp / "tasks"
    assert main(["tasks", "export", "--format", "harbor", "--suite", "mini", "--instances", *TASKS,
                 "--network-mode", "public", "--out", str(tasks)]) == 0
    (tmp / "no-network.yaml").write_text("services:\n  main:\n    network_mode: none\n")
    config = {"job_name": "job", "jobs_dir": str(tmp / "jobs"), "n_concurrent_trials": 4, "quiet": True,
              "environment": {"type": "docker", "extra_docker_compose": [str(tmp / "no-network.yaml")],
                              "kwargs": {"keep_containers": True}},
              "agents": [{"name": "oracle"}, {"name": "nop"}], "datasets": [{"path": str(tasks)}]}
    (tmp / "job.json").write_text(json.dumps(config))
    res = subprocess.run([str(harbor), "run", "-c", str(tmp / "job.json"), "-y"], cwd=tmp, env=env, check=False,
                         capture_output=True, text=True, timeout=900)
    job = tmp / "jobs" / "job"
    try:
        yield job, res
    finally:
        _remove_kept(job, env)


def _trials(job: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(job.glob("*/result.json"))]


def _containers(trial_name: str, env: dict) -> list[str]:
    res = subprocess.run(["docker", "ps", "-a", "-q", "--filter", f"name=^/{trial_name.lower()}__"], env=env,
                         check=False, capture_output=True, text=True, timeout=60)
    return res.stdout.split()


def _remove_kept(job: Path, env: dict) -> None:
    """The containers keep_containers left, and the images Harbor built for them."""
    for trial in _trials(job):
        for cid in _containers(trial["trial_name"], env):
            image = subprocess.run(["docker", "inspect", "-f", "{{.Config.Image}}", cid], env=env, check=False,
                                   capture_output=True, text=True).stdout.strip()
            subprocess.run(["docker", "rm", "-f", cid], env=env, check=False, capture_output=True)
            if image:
                subprocess.run(["docker", "rmi", image], env=env, check=False, capture_output=True)


def test_oracle_earns_one_and_nop_zero(harbor_job):
    job, res = harbor_job
    assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-3000:])
    rewards = {(t["task_name"], t["agent_info"]["name"]): (t["verifier_result"] or {}).get("rewards")
               for t in _trials(job)}
    assert rewards == {**{(task, "oracle"): {"reward": 1.0} for task in TASKS},
                       **{(task, "nop"): {"reward": 0.0} for task in TASKS}}, rewards
    assert all(t["exception_info"] is None for t in _trials(job))


def test_the_tasks_ran_without_network(harbor_job):
    job, _ = harbor_job
    env = compose_env()
    modes = {}
    for trial in _trials(job):
        ids = _containers(trial["trial_name"], env)
        assert ids, f"no container kept for {trial['trial_name']}"
        for cid in ids:
            modes[cid] = subprocess.run(["docker", "inspect", "-f", "{{.HostConfig.NetworkMode}}", cid], env=env,
                                        check=True, capture_output=True, text=True).stdout.strip()
    assert len(modes) == 4 and set(modes.values()) == {"none"}, modes
