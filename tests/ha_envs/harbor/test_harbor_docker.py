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
