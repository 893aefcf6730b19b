"""The docker sandbox: protocol, isolation (escape attempts), faults, no leaks, parity with local."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

import ha_envs
from ha_agents.episode import run_episode
from ha_agents.llm.policies import OraclePolicy
from ha_envs.loaders import load_suite
from ha_envs.sandbox import SandboxError, make_sandbox
from ha_envs.task import patch_paths
from ha_agents.episode import EpisodeConfig

IN_CI = bool(os.environ.get("CI"))


@pytest.fixture(scope="module")
def client():
    from tests.conftest import require_docker

    return require_docker()


def ours(client):
    return {c.id for c in client.containers.list(all=True, filters={"label": "harnessadapt"})}


@pytest.fixture
def no_leaks(client):
    before = ours(client)
    yield
    for _ in range(50):  # removals of replaced containers run in the background
        if ours(client) <= before:
            break
        time.sleep(0.1)
    assert ours(client) <= before, "containers leaked"


@pytest.fixture
def box(client, tiny_task, no_leaks):
    sb = make_sandbox("docker", tiny_task, warm=0)
    sb.start()
    yield sb
    sb.close()


def test_persistent_shell_timeouts_and_output(box):
    assert box.run("cd /tmp && export X=41").exit_code == 0
    r = box.run("echo $((X+1)) $PWD")
    assert r.output.strip() == "42 /tmp" and r.exit_code == 0
    assert box.run("false").exit_code == 1
    t0 = time.monotonic()
    r = box.run("sleep 300 & setsid sleep 301 & sleep 302", timeout=1)
    assert r.timed_out and r.exit_code == 124 and time.monotonic() - t0 < 20
    left = box.run("ps -eo args | grep -c '^sleep 30[012]' || true").output.strip().splitlines()[-1]
    assert left == "0", "a timed-out command left processes behind"
    big = box.run("seq 1 200000", head_bytes=100, tail_bytes=100)
    assert big.truncated and big.output.startswith("1\n2\n") and big.output.rstrip().endswith("200000")
    assert box.run("echo still here").output.strip() == "still here"


def test_files_both_ways_and_diff(box):
    box.write_file("pkg/new.txt", b"hello\x00bytes")
    assert box.read_file("pkg/new.txt") == b"hello\x00bytes"
    assert box.run("cat pkg/new.txt | wc -c").output.strip() == "11"
    box.run("sed -i '10s/return lo/return hi/' calc.py && git add calc.py")
    patch = box.diff()
    assert "+        return hi" in patch and "pkg/new.txt" in patch and "GIT binary patch" in patch
    with pytest.raises(FileNotFoundError):
        box.read_file("missing.txt")


def test_escapes_fail(box, tmp_path):
    secret = tmp_path / "host-secret"
    secret.write_text("s3cret")
    checks = {
        "network": "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 3)\"",
        "dns": "python3 -c \"import socket; socket.getaddrinfo('deb.debian.org', 80)\"",
        "docker socket": "test -e /var/run/docker.sock || test -e /run/docker.sock",
        "host file": f"cat {secret}",
        "mount": "mount -t tmpfs none /mnt",
        "chown": "chown 1000 calc.py",
        "raw socket": "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)\"",
        "sysctl": "echo 1 > /proc/sys/kernel/sysrq",
    }
    for what, cmd in checks.items():
        r = box.run(cmd, timeout=20)
        assert r.exit_code != 0, f"{what} should fail inside the sandbox: {r.output}"
    status = box.run("grep -E '^(CapEff|NoNewPrivs)' /proc/self/status").output
    assert "CapEff:\t0000000000000000" in status and "NoNewPrivs:\t1" in status


def test_killed_container_is_a_masked_sandbox_error(client, tiny_task, no_leaks):
    env = ha_envs.make(task=tiny_task, harness="h1", sandbox="docker")
    try:
        env.reset()
        client.containers.get(env.unwrapped.sandbox.container.id).kill()
        obs, reward, term, trunc, info = env.step({"tool_calls": [{"id": "1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]})
        assert term and info["termination"] == "sandbox_error" and info["mask_sample"]
    finally:
        env.close()


def test_a_container_killed_during_a_helper_is_an_infrastructure_error(client, box):
    """The container killed while a helper (the diff at submit, a file write) runs in it: SandboxError
    (the episode is masked), not the helper's failed status read as a result (an empty diff graded as
    the agent's patch)."""
    import threading

    timer = threading.Timer(1.5, lambda: client.containers.get(box.container.id).kill())
    timer.start()
    try:
        with pytest.raises(SandboxError, match="container"):
            box._exec_split("sleep 30")
    finally:
        timer.cancel()


def test_daemon_refusing_once_is_retried(box, monkeypatch):
    import docker.errors
    calls = {"n": 0}
    real = box.container.exec_run

    def flaky(*a, **kw):
        calls["n"] += 1
        if calls["n"] == 1:
            raise docker.errors.APIError("boom", response=type("R", (), {"status_code": 500, "reason": "x"})())
        return real(*a, **kw)

    monkeypatch.setattr(box.container, "exec_run", flaky)
    assert "calc.py" in box.diff() or box.diff() == ""
    assert calls["n"] >= 2


def test_missing_image_masks_the_episode(tiny_task, no_leaks):
    config = EpisodeConfig.create("h0", sandbox="docker",
                                  env_options={"sandbox_options": {"image": "harnessadapt/nothing:missing", "warm": 0}})
    rec = run_episode(tiny_task, OraclePolicy(), config)
    assert rec["termination"] == "sandbox_error" and rec["mask_sample"] and "missing" in rec["error"]


def test_binary_hunks_are_graded_not_crashed(tiny_task, no_leaks):
    from ha_agents.llm.policies import ScriptedPolicy
    from ha_envs.actions import ToolCall
    rec = run_episode(tiny_task, ScriptedPolicy([ToolCall("bash", {"command": "printf '\\x00\\x01\\x02' > blob.bin"}),
                                                 ToolCall("bash", {"command": "sed -i '10s/return lo/return hi/' calc.py"})]),
                      EpisodeConfig.create("h0", sandbox="docker"))
    assert "GIT binary patch" in rec["patch"] and rec["resolved"] and not rec["mask_sample"]


def test_crashed_runs_leftovers_are_reaped(client, tiny_task):
    import ha_envs.sandbox.docker as dk
    from ha_envs.sandbox.provision.images import BASE_REPO, BASE_SUITE
    dead = subprocess.Popen(["true"])
    dead.wait()
    import socket
    c = client.containers.run(f"{BASE_REPO}:{BASE_SUITE}", ["sleep", "infinity"], detach=True, network_mode="none",
                              labels={"harnessadapt": "1", "harnessadapt.owner": f"{socket.gethostname()}:{dead.pid}"})
    assert dk.reap_orphans(client) >= 1
    with pytest.raises(Exception):
        client.containers.get(c.id)


def test_group_resets_start_from_the_snapshot(client, tiny_task, no_leaks):
    sb = make_sandbox("docker", tiny_task, warm=1)
    try:
        sb.start()
        sb.run("echo junk >> calc.py; touch /tmp/marker; pip_like_state=1")
        first = sb.container.id
        sb.reset()
        assert sb.container.id != first
        assert sb.run("git status --porcelain; ls /tmp/marker 2>&1 | grep -c 'No such'").output.strip() == "1"
    finally:
        sb.close()


def test_the_spare_starts_after_the_first_command(client, tiny_task, no_leaks):
    """A cold first episode must not share the daemon with its own spare: the pool starts the spare
    once the episode's first command has answered, and the next reset takes that spare."""
    import socket

    me = f"{socket.gethostname()}:{os.getpid()}"

    def mine() -> set[str]:
        return {c.id for c in client.containers.list(all=True, filters={"label": f"harnessadapt.owner={me}"})}

    before = mine()
    sb = make_sandbox("docker", tiny_task, warm=1)
    try:
        sb.start()
        first = sb.container.id
        time.sleep(1.0)  # time enough for a spare to have been created, were one started at start()
        assert mine() - before == {first}
        assert sb.run("true").exit_code == 0
        for _ in range(300):
            if len(mine() - before) == 2:
                break
            time.sleep(0.1)
        spare = (mine() - before - {first})
        assert len(spare) == 1, "no spare after the first command"
        sb.reset()
        assert {sb.container.id} == spare
    finally:
        sb.close()


PARITY = ["ls", "cat calc.py | head -3", "git status --short", "sed -i '10s/return lo/return hi/' calc.py",
          "git diff --stat", "python3 -c 'import calc; print(calc.clamp(9, 0, 5))'", "echo done"]


def test_parity_local_and_docker(tiny_task, client, no_leaks):
    from ha_envs.actions import ToolCall
    from ha_envs.harness import render_call
    outs = {}
    for kind in ("local", "docker"):
        env = ha_envs.make(task=tiny_task, harness="h1", sandbox=kind)
        try:
            env.reset()
            seen = []
            calls = [ToolCall("bash", {"command": c}) for c in PARITY] + [
                ToolCall("read_file", {"path": "calc.py", "start_line": 8, "end_line": 11}),
                ToolCall("view_diff", {}), ToolCall("submit", {})]
            for i, call in enumerate(calls):
                obs, reward, term, trunc, info = env.step(render_call(call, "openai", f"c{i}"))
                seen.append([m["content"] for m in obs])
            outs[kind] = (seen, reward, info["termination"], info["grade"]["fail_to_pass"], info["patch"])
        finally:
            env.close()
    assert outs["local"] == outs["docker"]
    assert outs["docker"][1] == 1.0


@pytest.mark.slow
def test_bundled_suite_in_docker_gold_and_null():
    from ha_envs.grading.grader import Grader
    from ha_envs.grading.sandboxes import docker_sandbox_factory
    from ha_envs.validate import validate_tasks
    results = validate_tasks(load_suite("mini"), workers=2, grader=Grader(docker_sandbox_factory()))
    bad = [(r.instance_id, r.problems) for r in results if not r.ok]
    assert not bad and len(results) == 12


def test_exit_restarts_the_shell_with_a_note(box):
    r = box.run("cd /tmp; exit 3")
    assert r.exit_code == 3 and any("a new shell was started in /testbed" in n for n in r.notes)
    assert box.run("pwd").output.strip() == "/testbed"


def test_stdout_and_stderr_keep_their_order(box):
    """One stream, as in the local sandbox: test logs that mix both stay parseable line by line."""
    r = box.run("for i in $(seq 300); do echo out$i; echo err$i >&2; done")
    want = "".join(f"out{i}\nerr{i}\n" for i in range(1, 301))
    assert r.output == want


# -- official images: used when the daemon has them (or can pull them), else built -----------------

def build_official_like(client, task, name: str, script: str, changes: list[str]) -> None:
    """Commit ``name``: the bundled base, the task's repository at /testbed, then ``script``."""
    from ha_envs.sandbox.provision.images import _tar_dir, base_tag
    from ha_envs.sandbox.provision.workcopy import prepare_snapshot

    c = client.containers.create(base_tag(), entrypoint=["sleep", "infinity"], network_mode="none",
                                 labels={"harnessadapt": "1", "harnessadapt.role": "build"})
    try:
        c.start()
        assert c.put_archive("/", _tar_dir(prepare_snapshot(task).path, "testbed"))
        rc, out = c.exec_run(["sh", "-c", script])
        assert rc == 0, out
        c.stop(timeout=1)
        repo, tag = name.rsplit(":", 1)
        c.commit(repository=repo, tag=tag, changes=changes)
    finally:
        c.remove(force=True)


@pytest.fixture
def official_like(client, tiny_task):
    """An image in the layout of SWE-bench's official ones: the repository at /testbed with its
    whole history (a later commit on another branch), an in-place build output that git ignores and
    the tests import, a conda env ``testbed`` whose python is not the system's, and an ENTRYPOINT
    like Pro's images; tagged with the name the task records."""
    import dataclasses

    name = "swebench/sweb.eval.x86_64.tiny_1776_clamp:latest"
    script = ("set -e; mkdir -p /opt/miniconda3/envs/testbed/bin /opt/miniconda3/bin; "
              "printf '#!/bin/sh\\nexec /usr/bin/python3 \"$@\"\\n' > /opt/miniconda3/envs/testbed/bin/python; "
              "chmod +x /opt/miniconda3/envs/testbed/bin/python; cd /testbed; "
              "echo 'VALUE = 42' > built_ext.py; echo built_ext.py >> .git/info/exclude; "
              "git -c safe.directory='*' -c user.name=u -c user.email=u@u checkout -q -b future; "
              "echo 'THE FUTURE' > future.txt; git -c safe.directory='*' add future.txt; "
              "git -c safe.directory='*' -c user.name=u -c user.email=u@u commit -qm future; "
              "git -c safe.directory='*' checkout -q main; "
              "echo '# an edit the image build left uncommitted' >> tests/test_visible.py; "
              "mkdir -p .venv/bin; echo venv > .venv/bin/marker")
    build_official_like(client, tiny_task, name, script, ['ENTRYPOINT ["/bin/bash"]'])
    built = ("diff --git a/tests/test_built.py b/tests/test_built.py\nnew file mode 100644\n--- /dev/null\n"
             "+++ b/tests/test_built.py\n@@ -0,0 +1,5 @@\n+import built_ext\n+\n+\n+def test_built():\n+    assert built_ext.VALUE == 42\n")
    tests = dataclasses.replace(tiny_task.tests, test_patch=tiny_task.tests.test_patch + built,
                                pass_to_pass=tiny_task.tests.pass_to_pass + ("tests/test_built.py::test_built",))
    env = dataclasses.replace(tiny_task.environment, extra={"official_image": name})
    yield dataclasses.replace(tiny_task, environment=env, tests=tests), name
    client.images.remove(name, force=True)


def test_an_official_image_in_the_daemon_is_used_as_built(client, official_like, no_leaks, monkeypatch):
    import dataclasses

    from ha_envs.grading import Grader
    from ha_envs.grading.sandboxes import docker_sandbox_factory

    task, name = official_like
    monkeypatch.setenv("HA_OFFICIAL_IMAGES", "auto")
    sb = make_sandbox("docker", task, warm=0)
    try:
        sb.start()
        assert sb.run("command -v python").output.strip() == "/opt/miniconda3/envs/testbed/bin/python"
        assert client.images.get(sb.image).labels.get("harnessadapt.official") == name
        assert sb.run("cat built_ext.py").output.strip() == "VALUE = 42"  # the image's own work copy
        # ... with its history ending at the base commit: no other branch, no later object.
        assert sb.run("git for-each-ref --format='%(refname)'").output.strip() == "refs/heads/main"
        assert "THE FUTURE" not in sb.run("git log --all -p | grep -c FUTURE || true").output.replace("0", "")
        assert sb.run("git status --porcelain").output.strip() == ""
        assert sb.run("git log -1 --format=%s").output.startswith("environment (changes the official image")
        assert sb.run("cat .venv/bin/marker").output.strip() == "venv"
        sb.write_file("calc.py", sb.read_file("calc.py").replace(b"return lo\n    return x", b"return hi\n    return x"))
        diff = sb.diff()
        assert "+        return hi" in diff and patch_paths(diff) == ("calc.py",)  # no .venv, no image edits
    finally:
        sb.close()
    grader = Grader(docker_sandbox_factory())
    report = grader.grade(task, task.gold_patch)
    assert report.resolved and report.pass_to_pass["tests/test_built.py::test_built"] == "PASSED", report.log_tail
    assert not grader.grade(task, "").resolved
    # An image whose work copy is not at the task's base commit is refused, not silently used.
    wrong = dataclasses.replace(task, base_commit="0" * 40)
    with pytest.raises(SandboxError, match="the task's base is 0000"):
        make_sandbox("docker", wrong, warm=0).start()
    monkeypatch.setenv("HA_OFFICIAL_IMAGES", "never")
    sb = make_sandbox("docker", task, warm=0)
    try:
        sb.start()
        assert sb.run("command -v python").output.strip() == "/usr/bin/python"
        assert sb.run("test -e built_ext.py; echo $?").output.strip() == "1"
    finally:
        sb.close()


def test_an_official_image_that_cannot_be_had(client, tiny_task, monkeypatch):
    import dataclasses

    from ha_envs.sandbox.provision import images

    name = "swebench/sweb.eval.x86_64.never_1776_there-1:latest"
    task = dataclasses.replace(tiny_task, environment=dataclasses.replace(tiny_task.environment, extra={"official_image": name}))
    monkeypatch.setenv("HA_OFFICIAL_IMAGES", "auto")
    images._pull_failed.pop(name, None)
    assert images.official_image(client, task) is None  # not in the daemon; the pull fails here (no registry)
    assert name in images._pull_failed  # remembered: not tried again in this process
    monkeypatch.setenv("HA_OFFICIAL_IMAGES", "require")
    with pytest.raises(SandboxError, match="cannot be pulled"):
        images.official_image(client, task)
    monkeypatch.setenv("HA_OFFICIAL_IMAGES", "sometimes")
    with pytest.raises(SandboxError, match="expected one of"):
        images.official_image(client, task)


def test_r2e_graded_as_r2e_gym_does_in_its_image(client, tiny_task, no_leaks, monkeypatch):
    """An image in R2E-Gym's layout (hidden tests in /r2e_tests, an untracked run_tests.sh): the
    grader copies them in and runs run_tests.sh, and the parsed log must equal the expected output."""
    import dataclasses

    from ha_envs.swe_datasets import R2E_RUN
    from ha_envs.grading import Grader
    from ha_envs.grading.sandboxes import docker_sandbox_factory

    name = "namanjain12/tiny_final:clamp"
    hidden = ("from calc import clamp\n\n\nclass TestClamp:\n    def test_high(self):\n        assert clamp(9, 0, 5) == 5\n\n"
              "    def test_low(self):\n        assert clamp(-1, 0, 5) == 0\n")
    script = ("set -e; mkdir -p /r2e_tests; cat > /r2e_tests/test_1.py <<'EOF'\n" + hidden + "EOF\n"
              "printf 'python -W ignore -m pytest -rA -p no:cacheprovider r2e_tests\\n' > /testbed/run_tests.sh")
    build_official_like(client, tiny_task, name, script, [])
    try:
        monkeypatch.setenv("HA_OFFICIAL_IMAGES", "auto")
        tests = dataclasses.replace(tiny_task.tests, log_parser="r2e", fail_to_pass=("TestClamp.test_high",), pass_to_pass=(),
                                    test_command=R2E_RUN.format(files="tests/test_hidden.py"))
        task = dataclasses.replace(tiny_task, benchmark="r2e_gym", tests=tests,
                                   environment=dataclasses.replace(tiny_task.environment, extra={"official_image": name}),
                                   metadata={"expected_output": {"TestClamp.test_high": "PASSED", "TestClamp.test_low": "PASSED"}})
        grader = Grader(docker_sandbox_factory())
        gold = grader.grade(task, tiny_task.gold_patch)
        assert gold.resolved and "r2e_tests/test_1.py::TestClamp::test_high" in gold.log_tail, gold.log_tail
        empty = grader.grade(task, "")
        assert not empty.resolved and empty.fail_to_pass["TestClamp.test_high"] == "FAILED"
        # A row whose commit has no test files: the image's /r2e_tests alone grade it.
        bare = dataclasses.replace(task, tests=dataclasses.replace(tests, test_patch=""))
        assert grader.grade(bare, tiny_task.gold_patch).resolved
        # The hidden tests never reach the agent: not in its work copy, and /r2e_tests is gone from its image.
        sb = make_sandbox("docker", task, warm=0)
        try:
            sb.start()
            assert sb.run("ls; git status --porcelain").output.split() == ["calc.py", "run_tests.sh", "tests"]
            assert sb.run("ls /r2e_tests 2>&1; echo rc=$?").output.strip().endswith("rc=2")
        finally:
            sb.close()
    finally:
        client.images.remove(name, force=True)
