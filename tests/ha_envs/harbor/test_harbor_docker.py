"""A Harbor task under the docker sandbox: its environment/Dockerfile is built here (nothing pulled),
the agent and the grader start from that image, tests/ and solution/ are uploaded into fresh
containers: `ha tasks validate --sandbox docker` passes only when the Dockerfile's RUN line ran."""

from __future__ import annotations

import json

import pytest

from ha_cli.main import main
from tests.ha_envs.harbor.builders import TEST_SH, harbor_task


@pytest.fixture(scope="module")
def base_image():
    from tests.conftest import require_docker

    require_docker()
    return "harnessadapt/base:bookworm"


def test_dockerfile_is_built_and_graded_in_docker(base_image, tmp_path, capsys):
    marker = "test -f /opt/harbor-marker || { echo 0 > /logs/verifier/reward.txt; exit 0; }\n"
    harbor_task(tmp_path / "ds", dockerfile=f"FROM {base_image}\nRUN echo built > /opt/harbor-marker\n"
                "WORKDIR /app\nCOPY app/ /app/\n", test_sh=TEST_SH.replace("#!/bin/bash\n", "#!/bin/bash\n" + marker))
    harbor_task(tmp_path / "ds", name="unbuildable", dockerfile="FROM harnessadapt/no-such-image:1\nWORKDIR /app\n"
                "COPY app/ /app/\n")
    capsys.readouterr()
    assert main(["tasks", "validate", "--benchmark", "harbor", "--data", str(tmp_path / "ds"), "--sandbox", "docker",
                 "--workers", "1", "--json"]) == 1
    rows = {r["instance_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["add-fix"]["ok"], rows["add-fix"]
    bad = rows["unbuildable"]
    assert not bad["ok"] and bad["cause"] == "environment" and "nothing is pulled here" in " ".join(bad["problems"])


def test_a_process_left_running_cannot_rewrite_the_reward_in_a_container(base_image, tmp_path):
    """The lingering reward rewriter (test_harbor_in.py) in a container: killed before the reward is
    read and not believed (the base's verifier leaves no process); the fix alone earns 1."""
    from ha_envs.grading.grader import Grader
    from ha_envs.grading.sandboxes import docker_sandbox_factory
    from ha_envs.harbor import load_harbor
    from tests.ha_envs.harbor.test_harbor_in import LINGER, _patch

    task = load_harbor(harbor_task(tmp_path / "ds", dockerfile=f"FROM {base_image}\nWORKDIR /app\nCOPY app/ /app/\n"))[0]
    grader = Grader(docker_sandbox_factory())
    forged = grader.grade(task, _patch(task, LINGER + "def add(a, b):\n    return a - b\n"))
    assert forged.reward == 0.0 and not forged.fault and forged.status == "verdict_tampered", (forged.status,
                                                                                               forged.error)
    assert grader.grade(task, _patch(task, "def add(a, b):\n    return a + b\n")).reward == 1.0


def test_a_process_that_rewrites_the_reward_and_exits_first_is_seen_in_a_container(base_image, tmp_path):
    """The reward race (test_harbor_in.py: rewritten after the verifier's write, gone before test.sh
    exits) in a container, traced by the host's strace at /opt/ha-tracer: verdict_tampered."""
    from ha_envs.grading.grader import Grader
    from ha_envs.grading.sandboxes import docker_sandbox_factory
    from ha_envs.harbor import load_harbor
    from tests.conftest import require_tool
    from tests.ha_envs.harbor.test_harbor_in import RACE, _patch

    require_tool("strace")
    task = load_harbor(harbor_task(tmp_path / "ds", dockerfile=f"FROM {base_image}\nWORKDIR /app\nCOPY app/ /app/\n"))[0]
    forged = Grader(docker_sandbox_factory()).grade(task, _patch(task, RACE + "def add(a, b):\n    return a - b\n"))
    assert forged.reward == 0.0 and not forged.fault and forged.status == "verdict_tampered", (forged.status,
                                                                                               forged.error)
    assert "the process that started them" in forged.error, forged.error
