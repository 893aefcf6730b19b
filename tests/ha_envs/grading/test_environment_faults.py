"""A test runner that cannot start is the environment's fault: masked (``grading_error``, the cause
in the grade), never a zero; the agent's patch keeping the tests from starting stays graded 0. On the
bundled ``mini__ttl_cache``, in both sandboxes, with real broken environments: a dangling
interpreter and an uninstallable runner (a venv or an image without pytest)."""

from __future__ import annotations

import pytest

from ha_agents.episode import EpisodeConfig, run_episode
from ha_agents.llm.policies import OraclePolicy, ScriptedPolicy
from ha_envs.actions import ToolCall
from ha_envs.grading.faults import FAULT_STATUS, fault_summary
from ha_envs.grading.grader import Grader
from ha_envs.grading.report import EnvironmentFault
from ha_envs.grading.sandboxes import docker_sandbox_factory, local_sandbox_factory
from ha_envs.loaders import load_suite
from ha_envs.sandbox.local import LocalSandboxConfig
from tests.conftest import require_bwrap
from tests.ha_envs.broken_envs import NO_PYTEST, NO_PYTHON, bare_venv, broken_image, dangling_venv

# What an agent can do to keep the tests from starting: graded as it stands, reward 0, not masked.
AGENT_FAULTS = {
    "breaks the package's import": "sed -i '1i raise ImportError(\"broken by the patch\")' ttlcache/__init__.py",
    "exits 127 on import": "sed -i '1i import os; os._exit(127)' ttlcache/__init__.py",
    "deletes a module the tests import": "rm ttlcache/store.py",
}


@pytest.fixture(scope="module")
def task():
    return next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")


@pytest.fixture(scope="module")
def broken_venvs(tmp_path_factory):
    root = tmp_path_factory.mktemp("venvs")
    return {"runner_missing": dangling_venv(root / "dangling"), "runner_import": bare_venv(root / "no-pytest")}


def _local(env=None):
    config = LocalSandboxConfig(python_env=str(env)) if env is not None else None
    return Grader(local_sandbox_factory(config)), ({"python_env": str(env)} if env is not None else {})


def _docker(image=None):
    from ha_envs.sandbox.docker import DockerSandboxConfig

    options = {"image": image, "warm": 0} if image else {"warm": 0}
    return Grader(docker_sandbox_factory(DockerSandboxConfig(**options))), options


@pytest.fixture(scope="module")
def broken_images():
    from ha_envs.sandbox.docker import docker_client
    from tests.ha_envs.test_real_envs import require_docker

    require_docker()
    client = docker_client(timeout=60)
    return {"runner_missing": broken_image(client, "harnessadapt/test:no-python", NO_PYTHON),
            "runner_import": broken_image(client, "harnessadapt/test:no-pytest", NO_PYTEST)}


def _assert_fault(task, grader, options, sandbox, kind, words):
    with pytest.raises(EnvironmentFault) as caught:
        grader.grade(task, task.gold_patch)
    report = caught.value.report
    assert caught.value.kind == kind and (report.status, report.fault, report.reward) == (FAULT_STATUS, kind, 0.0)
    assert words in report.error and "at base alike" in report.error
    with pytest.raises(EnvironmentFault):  # the empty patch's run is the base's: no second run needed
        grader.grade(task, "")
    # through the env, as eval and train see it: masked, the cause in the grade
    rec = run_episode(task, OraclePolicy(), EpisodeConfig.create("h0", sandbox=sandbox,
                      env_options={"grader": grader, "sandbox_options": options}))
    assert (rec["termination"], rec["mask_sample"], rec["reward"]) == ("grading_error", True, 0.0)
    assert rec["grade"]["status"] == FAULT_STATUS and rec["grade"]["fault"] == kind and words in rec["error"]
    assert fault_summary([dict(rec, run=1)]) == (f"environment fault: mini__ttl_cache run 1: {report.error}\n"
                                                f"masked: 1, environment faults: 1 ({kind}: 1)\n")


def _assert_agent_fault(task, grader, options, sandbox, command):
    rec = run_episode(task, ScriptedPolicy([ToolCall("bash", {"command": command})]), EpisodeConfig.create("h0", sandbox=sandbox,
                      env_options={"grader": grader, "sandbox_options": options}))
    assert (rec["termination"], rec["mask_sample"], rec["reward"], rec["resolved"]) == ("submitted", False, 0.0, False)
    assert rec["grade"]["status"] in ("unresolved", "tests_tampered") and not rec["grade"]["fault"]
    assert "at base, in a fresh copy, they do, so the patch is to blame" in rec["grade"]["error"]
    assert fault_summary([rec]) == ""


@pytest.mark.parametrize("kind,words", [("runner_missing", "gone/python3: not found"),
                                        ("runner_import", "No module named pytest")])
def test_local_broken_env_is_masked(task, broken_venvs, kind, words):
    require_bwrap()
    grader, options = _local(broken_venvs[kind])
    _assert_fault(task, grader, options, "local", kind, words)


@pytest.mark.parametrize("command", AGENT_FAULTS.values(), ids=AGENT_FAULTS.keys())
def test_local_agent_keeping_tests_from_starting_is_graded_zero(task, command):
    require_bwrap()
    grader, options = _local()
    _assert_agent_fault(task, grader, options, "local", command)


def test_local_gold_still_resolves_without_a_second_run(task):
    require_bwrap()
    report = Grader(local_sandbox_factory()).grade(task, task.gold_patch)
    assert (report.status, report.reward, report.error, report.fault) == ("resolved", 1.0, "", "")


@pytest.mark.parametrize("kind,words", [("runner_missing", "python: command not found"),
                                        ("runner_import", "No module named pytest")])
def test_docker_broken_image_is_masked(task, broken_images, kind, words):
    grader, options = _docker(broken_images[kind])
    _assert_fault(task, grader, options, "docker", kind, words)


def test_docker_agent_breaking_imports_is_graded_zero(task, broken_images):
    grader, options = _docker()
    _assert_agent_fault(task, grader, options, "docker", AGENT_FAULTS["breaks the package's import"])


def test_hidden_tests_that_import_what_only_the_fix_adds_are_a_failure_not_a_fault(tmp_path):
    """pylint-4551 at base: the hidden test module imports a name the gold patch adds, so pytest
    reports the file as a collection error and none of the listed tests. That is the code's state
    (reward 0, not masked); it was taken for an environment fault, which masked every patch that
    did not add the name."""
    import dataclasses
    import subprocess

    from tests.conftest import _git_diff

    require_bwrap()
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n")
    (repo / "tests" / "test_visible.py").write_text("from calc import clamp\n\n\ndef test_clamp():\n    assert clamp(9, 0, 5) == 5\n")

    def copy(name):
        subprocess.run(["cp", "-a", str(repo), str(tmp_path / name)], check=True)
        return tmp_path / name

    gold = _git_diff(copy("g"), lambda d: (d / "calc.py").write_text(
        (d / "calc.py").read_text() + "\n\ndef clamp_unit(x):\n    return clamp(x, 0, 1)\n"))
    hidden = "from calc import clamp, clamp_unit\n\n\ndef test_unit():\n    assert clamp_unit(7) == 1\n"
    test_patch = _git_diff(copy("t"), lambda d: (d / "tests" / "test_new_api.py").write_text(hidden))
    task = next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")
    task = dataclasses.replace(task, instance_id="tiny__new_api", source_dir=repo, gold_patch=gold, tests=dataclasses.replace(
        task.tests, test_patch=test_patch, fail_to_pass=("tests/test_new_api.py::test_unit",),
        pass_to_pass=(),
        test_command="python -m pytest -rA -p no:cacheprovider tests/test_new_api.py", log_parser="pytest"))
    grader = Grader(local_sandbox_factory())
    assert grader.grade(task, gold).resolved
    for patch in ("", _git_diff(copy("w"), lambda d: (d / "calc.py").write_text("def clamp(x, lo, hi):\n    return x\n"))):
        report = grader.grade(task, patch)  # no EnvironmentFault
        assert (report.status, report.reward, report.fault) == ("unresolved", 0.0, ""), (report.status, report.error)
