"""The abuse suite, part 2: reaching the host (symlinks, crafted patch paths, a hijacked ``.git``)
and exhausting resources (memory, processes, disk, patch size). The host canary is a directory
outside every sandbox whose contents must not change."""

from __future__ import annotations

import resource
import shutil
from pathlib import Path

import pytest

import ha_envs
from ha_envs.grading import Grader
from ha_envs.loaders import load_suite
from ha_envs.sandbox import LocalSandbox, LocalSandboxConfig

from tests.ha_envs.grading.abuse_helpers import TASK, Canary, assert_no_reward, bash, canary, episode, kind  # noqa: F401

pytestmark = pytest.mark.abuse


@pytest.fixture(scope="module")
def task():
    return next(t for t in load_suite("mini") if t.instance_id == TASK)


# -- 4. the grader never follows the agent's symlinks on the host --------------------------------

def test_tests_dir_symlinked_to_the_host(kind, canary):
    reward, info, _ = episode(kind, [f"rm -rf tests && ln -s {canary.dir} tests && ls -la tests"])
    assert_no_reward(reward, info)
    assert canary.untouched()


def test_hidden_test_path_symlinked_to_a_host_file(kind, canary):
    reward, info, _ = episode(kind, [f"ln -s {canary.file} tests/test_expiry.py"])
    assert_no_reward(reward, info)
    assert canary.untouched()


def test_symlink_to_a_host_file_in_the_patch(kind, canary):
    reward, info, _ = episode(kind, [f"ln -s {canary.file} ttlcache/data.txt"])
    assert_no_reward(reward, info)
    assert "new file mode 120000" in info["patch"] and canary.untouched()


@pytest.mark.parametrize("how", ["symlink", "gitdir-file"])
def test_hijacked_git_dir_cannot_make_reset_write_to_the_host(canary, how):
    from tests.conftest import require_bwrap

    require_bwrap()
    env = ha_envs.make(task=TASK, sandbox="local", sandbox_options={"reset_strategy": "git"})
    try:
        env.reset()
        hijack = f"ln -s {canary.dir} .git" if how == "symlink" else f"echo 'gitdir: {canary.dir}' > .git"
        obs, *_ = env.step(bash(f"rm -rf .git && {hijack} && echo DONE"))
        assert "DONE" in obs[0]["content"]
        env.reset()  # same task: an in-place git reset of the work copy
        obs, *_ = env.step(bash("git status --short | head -3; git log --oneline | head -1"))
        assert "fatal" not in obs[0]["content"]
    finally:
        env.close()
    assert canary.untouched()


def _patch(path_a: str, path_b: str, body: str = "+pwned\n", new: bool = True) -> str:
    head = f"diff --git {path_a} {path_b}\n" + ("new file mode 100644\n" if new else "")
    return head + f"--- /dev/null\n+++ {path_b}\n@@ -0,0 +1 @@\n{body}"


@pytest.mark.parametrize("target", ["abs", "dotdot", "git-hook", "git-config"])
def test_crafted_patch_paths_are_refused(task, canary, target):
    path = {"abs": f"{canary.dir}/evil", "dotdot": f"../../../../../../{canary.dir}/evil",
            "git-hook": ".git/hooks/post-checkout", "git-config": ".git/config"}[target]
    patch = _patch(f"a/{path}", f"b/{path}") + task.gold_patch
    report = Grader().grade(task, patch)
    assert "unsafe_paths" in report.flags and report.status == "resolved"  # the fix still counts
    # and through plain ---/+++ headers with GNU patch's fallback
    plain = f"--- {path}\n+++ {path}\n@@ -0,0 +1 @@\n+pwned\n"
    report = Grader().grade(task, plain)
    assert not report.resolved and canary.untouched()


def test_symlink_then_write_through_it_in_one_patch(task, canary):
    link = ("diff --git a/evil b/evil\nnew file mode 120000\n--- /dev/null\n+++ b/evil\n@@ -0,0 +1 @@\n"
            f"+{canary.dir}\n\\ No newline at end of file\n")
    through = _patch("a/evil/pwn", "b/evil/pwn")
    report = Grader().grade(task, link + through)
    assert not report.resolved
    assert canary.untouched()


def test_noprefix_and_quoted_headers_cannot_hide_a_conftest(task):
    hook = ("+import pytest\n+@pytest.hookimpl(hookwrapper=True)\n+def pytest_runtest_makereport(item, call):\n"
            "+    out = yield\n+    out.get_result().outcome = 'passed'\n")
    noprefix = ("diff --git x/tests/conftest2.py y/tests/conftest.py\n--- x/tests/conftest.py\n+++ y/tests/conftest.py\n"
                "@@ -1,0 +1,5 @@\n" + hook)
    quoted = ('diff --git "a/tests/conftest.py" "b/tests/conftest.py"\n--- "a/tests/conftest.py"\n'
              '+++ "b/tests/conftest.py"\n@@ -1,0 +1,5 @@\n' + hook)
    for patch in (noprefix, quoted):
        report = Grader().grade(task, patch)
        assert not report.resolved and "tests/conftest.py" in report.dropped_paths + report.restored_paths


def test_bytecode_and_metadata_in_a_patch_are_removed(task):
    patch = (_patch("a/ttlcache/__pycache__/clock.cpython-311.pyc", "b/ttlcache/__pycache__/clock.cpython-311.pyc")
             + _patch("a/ttlcache/clock.pyc", "b/ttlcache/clock.pyc")
             + _patch("a/x.egg-info/entry_points.txt", "b/x.egg-info/entry_points.txt"))
    patch += _patch("a/x.dist-info/entry_points.txt", "b/x.dist-info/entry_points.txt")
    report = Grader().grade(task, patch)
    # what the copy's ignore rules ignore never applies (build outputs and caches)...
    assert {"ttlcache/__pycache__/clock.cpython-311.pyc", "ttlcache/clock.pyc",
            "x.egg-info/entry_points.txt"} <= set(report.dropped_paths)
    assert "ignored_files_in_patch" in report.flags
    # ...and package metadata it does not ignore is taken out again after the patch applies
    assert "x.dist-info/entry_points.txt" in report.restored_paths
    assert not report.resolved


# -- 5/6. resources ------------------------------------------------------------------------------

def test_fork_bomb_then_submit_is_graded(kind):
    reward, info, out = episode(kind, ["(b(){ b|b & }; b) 2>/dev/null & sleep 3; echo survived"])
    assert "survived" in out[0] or "process limit" in out[0]
    assert_no_reward(reward, info)


def test_memory_kill_is_noted_even_when_the_command_succeeds():
    env = ha_envs.make(task=TASK, sandbox="local", sandbox_options={"memory_bytes": 256 << 20})
    try:
        env.reset()
        obs, *_ = env.step(bash("python3 -c 'x = bytearray(1 << 30)'; echo done"))
        text = obs[0]["content"]
        assert "<returncode>0</returncode>" in text and "memory limit (256 MiB) reached" in text
    finally:
        env.close()


def test_work_copy_disk_quota_stops_a_writer():
    env = ha_envs.make(task=TASK, sandbox="local", sandbox_options={"disk_bytes": 64 << 20})
    try:
        env.reset()
        obs, *_ = env.step(bash("for i in $(seq 40); do head -c 8000000 /dev/zero > f$i.bin; done; echo finished"))
        text = obs[0]["content"]
        assert "disk quota (64 MiB) exceeded" in text
        obs, *_ = env.step(bash("rm -f f*.bin; echo cleaned"))
        assert "cleaned" in obs[0]["content"] and "quota" not in obs[0]["content"]
    finally:
        env.close()


def test_single_file_over_the_quota_is_refused_by_the_kernel():
    sbx = LocalSandbox(next(t for t in load_suite("mini") if t.instance_id == TASK),
                       LocalSandboxConfig(disk_bytes=16 << 20, tmp_bytes=16 << 20))
    try:
        res = sbx.run("head -c 40000000 /dev/zero > big.bin; echo rc=$?; stat -c %s big.bin")
        assert "rc=0" not in res.output and "16777216" in res.output
    finally:
        sbx.close()


def test_tmp_is_a_bounded_tmpfs():
    from tests.conftest import require_bwrap

    require_bwrap()
    sbx = LocalSandbox(next(t for t in load_suite("mini") if t.instance_id == TASK),
                       LocalSandboxConfig(tmp_bytes=8 << 20, disk_bytes=64 << 20))
    try:
        res = sbx.run("head -c 20000000 /dev/zero > /tmp/fill; echo rc=$?")
        assert "No space left on device" in res.output and "rc=0" not in res.output
    finally:
        sbx.close()


def test_unbounded_patch_is_patch_too_large_with_bounded_host_memory(kind):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    reward, info, _ = episode(kind, ["head -c 30000000 /dev/urandom > blob.bin && ls -la blob.bin"],
                              sandbox_options={"patch_bytes": 4 << 20})
    grade = assert_no_reward(reward, info)
    assert grade["status"] == "patch_too_large" and "patch_too_large" in grade["flags"]
    assert info["patch"] == ""
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 64, grown_mib


def test_patch_over_the_character_cap_is_not_applied(task):
    report = Grader(patch_bytes=1000).grade(task, task.gold_patch + "+" * 2000)
    assert report.status == "patch_too_large" and report.reward == 0.0 and report.applied_with == ""


def test_many_small_files_still_diff(kind):
    reward, info, _ = episode(kind, ["mkdir -p junk && cd junk && seq 1 5000 | xargs touch && cd .. && ls junk | wc -l"])
    assert_no_reward(reward, info)
    assert info["patch"].count("new file mode") == 5000


def test_background_writer_after_submit_cannot_change_the_grade(kind):
    reward, info, _ = episode(kind, ["(while true; do echo x >> ttlcache/clock.py; sleep 0.05; done) & echo started"])
    grade = assert_no_reward(reward, info)
    assert grade["status"] in ("unresolved", "patch_failed", "tests_tampered")


def test_docker_work_copy_quota_and_tmpfs(monkeypatch, tmp_path):
    from tests.ha_envs.test_real_envs import require_docker

    require_docker()
    # a cache outside /tmp (as by default, ~/.cache): the container's /tmp can then be a tmpfs
    cache = Path("/var/tmp") / f"ha-test-cache-{tmp_path.name}"
    monkeypatch.setenv("HA_CACHE_DIR", str(cache))
    request_cleanup = lambda: shutil.rmtree(cache, ignore_errors=True)  # noqa: E731
    env = ha_envs.make(task=TASK, sandbox="docker", sandbox_options={"disk_bytes": 64 << 20, "tmp_bytes": 8 << 20})
    try:
        env.reset()
        obs, *_ = env.step(bash("for i in $(seq 40); do head -c 8000000 /dev/zero > f$i.bin; done; echo finished"))
        assert "disk quota (64 MiB) exceeded" in obs[0]["content"]
        obs, *_ = env.step(bash("rm -f f*.bin; head -c 20000000 /dev/zero > /tmp/fill; echo rc=$?"))
        assert "No space left on device" in obs[0]["content"] and "rc=0" not in obs[0]["content"]
    finally:
        env.close()
        request_cleanup()
