"""The local sandbox: persistence, timeouts, floods, limits, isolation, files and diffs."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from ha_envs.sandbox import LocalSandbox, LocalSandboxConfig, SandboxError
from ha_envs.sandbox import local as local_mod
from ha_envs.sandbox.shell import ansi_c_quote
from tests.conftest import require_bwrap


@pytest.fixture
def sbx(tiny_task):
    s = LocalSandbox(tiny_task, LocalSandboxConfig(output_head_bytes=2000, output_tail_bytes=2000))
    s.start()
    yield s
    s.close()


def _alive(tag: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True).stdout
    return out.split()


def test_cwd_and_exports_persist(sbx):
    assert sbx.run("mkdir -p sub && cd sub && export FOO='a b'").exit_code == 0
    res = sbx.run("pwd; echo \"$FOO\"")
    assert res.output == f"{sbx.workdir}/sub\na b\n"


def test_exit_code_and_stderr_are_reported(sbx):
    res = sbx.run("echo out; echo err >&2; false")
    assert res.exit_code == 1
    assert "out\n" in res.output and "err\n" in res.output


def test_syntax_error_is_the_commands_error_not_the_sessions(sbx):
    res = sbx.run("echo 'unterminated")
    assert res.exit_code == 2 and "unexpected EOF" in res.output
    assert sbx.run("echo fine").output == "fine\n"


def test_command_cannot_read_the_protocol_stdin(sbx):
    res = sbx.run("cat; read x; echo got:$x", timeout=5)
    assert not res.timed_out and res.output.endswith("got:\n")


def test_quoting_roundtrips_arbitrary_text(sbx):
    text = "it's \\ \"q\" $HOME `x` \t tab ünï \x01"
    assert sbx.run(f"printf %s {ansi_c_quote(text)}").output == text


def test_timeout_kills_command_and_background_children(sbx):
    tag = f"{uuid.uuid4().int % 10000}.{uuid.uuid4().int % 1000}"
    res = sbx.run(f"sleep 3{tag} & (sleep 4{tag} &) ; setsid sleep 5{tag} & sleep 6{tag}", timeout=1.5)
    assert res.timed_out and res.exit_code == 124
    assert "timed out" in res.notes[0]
    for prefix in "3456":
        assert _alive(f"sleep {prefix}{tag}") == []
    # the session survives with its state
    assert sbx.run("echo ok").output == "ok\n"


def test_background_server_from_a_finished_command_survives(sbx):
    tag = f"7{uuid.uuid4().int % 100000}"
    assert sbx.run(f"sleep {tag} >/dev/null 2>&1 &").exit_code == 0
    assert sbx.run("true").exit_code == 0
    assert _alive(f"sleep {tag}") != []
    sbx.close()
    assert _alive(f"sleep {tag}") == []


def test_stuck_builtin_loop_restarts_the_shell(sbx):
    sbx.run("cd /; export X=1")
    res = sbx.run("while :; do :; done", timeout=1)
    assert res.timed_out
    assert any("restarted" in n for n in res.notes)
    assert sbx.run("pwd; echo x$X").output == f"{sbx.workdir}\nx\n"


def test_output_flood_is_capped_head_and_tail(sbx):
    res = sbx.run("seq 1 2000000", timeout=60)
    assert res.truncated and res.exit_code == 0
    assert res.output.startswith("1\n2\n3\n") and res.output.endswith("1999999\n2000000\n")
    assert "bytes of output cut" in res.output
    assert len(res.output) < 4200


def test_endless_flood_is_stopped_by_the_timeout(sbx):
    res = sbx.run("yes flood", timeout=2)
    assert res.timed_out and res.truncated and len(res.output) < 4200


def test_binary_output_survives(sbx):
    res = sbx.run(r"printf 'a\xff\xfeb\x00c'")
    assert res.output == "a\\xff\\xfeb\x00c"


def test_shell_exit_starts_a_new_shell(sbx):
    res = sbx.run("exit 7")
    assert res.exit_code == 7 and "new shell" in res.notes[0]
    assert sbx.run("echo back").output == "back\n"


def test_killed_sandbox_is_an_infrastructure_error(sbx):
    os.killpg(sbx.shell.pid, signal.SIGKILL)
    with pytest.raises(SandboxError):
        sbx.run("echo hi")


def test_deleted_work_copy_is_an_infrastructure_error(sbx):
    subprocess.run(["rm", "-rf", str(sbx.host_dir)], check=True)
    with pytest.raises(SandboxError, match="gone"):
        sbx.run("echo hi")


def test_files_roundtrip_and_missing_file(sbx):
    data = bytes(range(256)) * 10
    sbx.write_file("deep/dir/blob.bin", data)
    assert sbx.read_file("deep/dir/blob.bin") == data
    assert (sbx.host_dir / "deep/dir/blob.bin").read_bytes() == data
    with pytest.raises(FileNotFoundError):
        sbx.read_file("nope.txt")


def test_diff_has_edits_and_new_files_not_build_outputs(sbx):
    sbx.run("sed -i 's/return a + b/return b + a/' calc.py && echo new > added.txt && mkdir -p __pycache__ "
            "&& echo x > __pycache__/calc.cpython-311.pyc && git add calc.py")
    patch = sbx.diff()
    assert "+    return b + a" in patch and "b/added.txt" in patch
    assert "__pycache__" not in patch
    # the agent's own index is left alone
    assert sbx.run("git diff --cached --name-only").output == "calc.py\n"


def test_diff_ignores_the_agents_shell_state(sbx):
    sbx.run("echo change >> calc.py; git() { echo fake; }; export GIT_DIR=/nonexistent; cd /")
    assert "+change" in sbx.diff()


def test_reset_gives_a_pristine_work_copy(sbx):
    sbx.run("echo junk > calc.py; touch new.txt; cd /tmp; export K=1; git commit -qam x --no-verify "
            "-c user.name=a 2>/dev/null; git -c user.name=a -c user.email=a@a commit -qam x")
    sbx.reset()
    assert sbx.diff() == ""
    assert sbx.run("pwd; echo k$K; git log --oneline | wc -l").output == f"{sbx.workdir}\nk\n1\n"


@pytest.mark.parametrize("strategy", ["copy", "git", "auto"])
def test_reset_strategies_restore_the_base(tiny_task, strategy):
    s = LocalSandbox(tiny_task, LocalSandboxConfig(reset_strategy=strategy))
    try:
        s.start()
        s.run("rm calc.py; echo x > other.txt; rm -rf .git/refs")
        s.reset()
        assert s.diff() == "" and "def clamp" in s.read_file("calc.py").decode()
    finally:
        s.close()


# -- isolation (bubblewrap) ------------------------------------------------------------------


@pytest.fixture
def iso(tiny_task):
    require_bwrap()
    s = LocalSandbox(tiny_task, LocalSandboxConfig(isolation="bwrap", memory_bytes=1 << 30, max_pids=256))
    s.start()
    yield s
    s.close()


def test_workdir_is_testbed_and_host_paths_are_hidden(iso):
    assert iso.workdir == "/testbed"
    assert iso.run("pwd").output == "/testbed\n"
    suites = Path(local_mod.__file__).resolve().parents[1] / "suites"
    res = iso.run(f"ls {suites}/mini 2>&1 | head -3; ls {iso.root} 2>&1 | head -1")
    assert "ttl_cache" not in res.output and "testbed" not in res.output


def test_writes_outside_the_work_copy_fail(iso, tmp_path):
    target = tmp_path / "escaped.txt"
    res = iso.run(f"echo x > {target}; echo y > /etc/ha-escape; echo z > /usr/ha-escape; echo ok > /testbed/in.txt")
    assert not target.exists() and not Path("/etc/ha-escape").exists() and not Path("/usr/ha-escape").exists()
    assert res.output.count("Read-only file system") + res.output.count("No such file") >= 3
    assert (iso.host_dir / "in.txt").read_text() == "ok\n"


def test_network_is_unreachable(iso):
    res = iso.run("(exec 3<>/dev/tcp/1.1.1.1/80) 2>&1; echo rc=$?; python3 -c \"import socket; "
                  "socket.create_connection(('127.0.0.1', 22), timeout=2)\" 2>&1 | tail -1", timeout=20)
    assert "rc=1" in res.output
    assert "unreachable" in res.output.lower() or "refused" in res.output.lower()


def test_fork_bomb_ends_the_command_not_the_machine(iso):
    res = iso.run(":(){ :|:& };:; sleep 2", timeout=10)
    follow = iso.run("ls / | wc -l", timeout=20)
    notes = res.notes + follow.notes
    assert any("process limit" in n for n in notes), notes
    assert follow.exit_code == 0 and int(follow.output.split()[-1]) > 3
    assert iso.run("echo alive").output.endswith("alive\n")


def test_huge_allocation_ends_the_command(iso):
    res = iso.run("python3 -c 'b = bytearray(20 * 2**30); print(len(b))'", timeout=60)
    assert res.exit_code != 0 and "21474836480" not in res.output
    assert iso.run("echo alive").output == "alive\n"


def test_unisolated_mode_warns_once(tiny_task, monkeypatch, caplog):
    monkeypatch.setattr(local_mod, "bwrap_available", lambda: False)
    monkeypatch.setattr(local_mod, "_warned_unisolated", False)
    caplog.set_level(logging.WARNING)
    boxes = [LocalSandbox(tiny_task) for _ in range(2)]
    try:
        assert all(not b.isolated for b in boxes)
        warnings = [r for r in caplog.records if "WITHOUT isolation" in r.getMessage()]
        assert len(warnings) == 1
        boxes[0].start()
        assert boxes[0].run("pwd").output.strip() == str(boxes[0].host_dir)
    finally:
        for b in boxes:
            b.close()


def test_requiring_bwrap_without_it_is_a_clear_error(tiny_task, monkeypatch):
    monkeypatch.setattr(local_mod, "bwrap_available", lambda: False)
    with pytest.raises(SandboxError, match="bubblewrap"):
        LocalSandbox(tiny_task, LocalSandboxConfig(isolation="bwrap"))


def test_toolchains_under_tmp_stay_visible(tiny_task, tmp_path):
    # CI clones (and their venvs) may live under /tmp, which the sandbox replaces with its own
    require_bwrap()
    tools = tmp_path / "toolchain"
    tools.mkdir()
    (tools / "marker").write_text("visible\n")
    s = LocalSandbox(tiny_task, LocalSandboxConfig(isolation="bwrap", extra_ro_paths=[str(tools)]))
    try:
        s.start()
        assert s.run(f"cat {tools}/marker; echo w > /tmp/x && cat /tmp/x").output == "visible\nw\n"
        assert s.run("python -c 'import pytest; print(1)'").output == "1\n"
    finally:
        s.close()


def test_a_killed_runs_directories_and_cgroups_are_reaped():
    import json as _json
    import sys as _sys
    from pathlib import Path as _Path

    from ha_envs.sandbox.reaper import reap

    require_bwrap()
    child = ("import json, os, sys\n"
             "from ha_envs.loaders import load_suite\nfrom ha_envs.sandbox import LocalSandbox\n"
             "t = [t for t in load_suite('mini') if t.instance_id == 'mini__ttl_cache'][0]\n"
             "sb = LocalSandbox(t)\nsb.start()\nsb.run('sleep 300 &')\n"
             "print(json.dumps({'root': str(sb.root), 'cgroups': [str(d) for d in sb.limits.dirs]}), flush=True)\n"
             "os.kill(os.getpid(), 9)\n")
    proc = subprocess.run([_sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    left = _json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == -9 and _Path(left["root"]).is_dir()
    removed = reap()
    assert not _Path(left["root"]).exists() and removed["dirs"] >= 1
    assert all(not _Path(d).exists() for d in left["cgroups"]) and removed["cgroups"] >= len(left["cgroups"])


def test_a_cgroup_whose_killed_process_is_not_yet_reaped_is_still_removed():
    """A killed process stays in its cgroup until its parent reaps it (an orphan waits for init), and
    the cgroup cannot be removed until then: release() and the reaper wait for it instead of giving up
    at the first EBUSY (the reaper test once failed so on a loaded CI machine)."""
    import threading
    import time

    from ha_envs.sandbox.limits import Limits, empty_and_remove

    limits = Limits(memory_bytes=1 << 30, max_pids=64)
    if not limits.uses_cgroup:
        if os.environ.get("CI"):
            pytest.fail("no writable cgroup on the CI machine")
        pytest.skip("no writable cgroup here")
    procs = []
    for d in limits.dirs:
        p = subprocess.Popen(["sleep", "300"])
        for cg in limits.dirs:
            (cg / "cgroup.procs").write_text(str(p.pid))
        procs.append(p)
    # the parent (this test) reaps its killed children only after half a second
    reaper = threading.Thread(target=lambda: (time.sleep(0.5), [p.wait() for p in procs]))
    reaper.start()
    try:
        assert all(empty_and_remove(d) for d in limits.dirs)
        assert not any(d.exists() for d in limits.dirs)
    finally:
        reaper.join()
    assert all(p.returncode == -signal.SIGKILL for p in procs)


def _kill_bwrap_running(tag: str, inner: bool, deadline_s: float = 60) -> int:
    """SIGKILL, from this host, the bubblewrap process (the outer one, or its pid 1 inside the
    namespace) of the sandbox process whose command line holds ``tag``; returns the pid killed."""
    import time

    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for pid in _alive(tag):
            chain, p = [], int(pid)
            while p > 1:  # walk up to the bwrap pair that holds it
                try:
                    stat = Path(f"/proc/{p}/stat").read_text()
                    cmd = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0]
                except OSError:
                    break
                if cmd.endswith(b"bwrap"):
                    chain.append(p)
                p = int(stat.rsplit(")", 1)[1].split()[1])
            if len(chain) >= 2:
                victim = chain[0] if inner else chain[1]
                os.kill(victim, signal.SIGKILL)
                return victim
        time.sleep(0.01)
    raise AssertionError(f"no sandboxed process with {tag!r} appeared")


@pytest.mark.parametrize("inner", [True, False], ids=["pid-1-inside", "outer-bwrap"])
def test_a_helper_killed_from_outside_is_an_infrastructure_error(sbx, inner):
    """The sandbox's own helper processes (diff, file reads and writes) killed from this host, the
    outer bwrap or its pid 1 inside the namespace: SandboxError (the episode is masked), never a
    result (an empty diff graded as the agent's patch)."""
    import threading

    require_bwrap()
    tag = f"ha-helper-{uuid.uuid4().hex[:8]}"
    threading.Thread(target=_kill_bwrap_running, args=(tag, inner), daemon=True).start()
    with pytest.raises(SandboxError, match="killed from outside"):
        sbx._oneoff(f": {tag}; sleep 30")
    assert sbx.run("echo still here").output == "still here\n"  # the agent's shell is untouched


def test_a_helper_bwrap_cannot_set_up_is_an_infrastructure_error(sbx, tmp_path):
    """bwrap failing before the helper runs (a bind whose source is gone, as a relative cache path
    gave from the helper's working directory): SandboxError, never a diff failure graded as the
    agent's empty patch; a diff at submit that meets it is masked."""
    require_bwrap()
    with pytest.raises(SandboxError, match="could not start a helper: bwrap: "):
        sbx._oneoff("true", binds=[(str(tmp_path / "gone"), "/ha-gone")])
    assert sbx.run("echo still here").output == "still here\n"


def test_a_relative_cache_directory_is_taken_from_the_working_directory(tmp_path, monkeypatch):
    """HA_CACHE_DIR=cache (relative): the cache is made absolute from this process's working directory,
    so the sandbox's helpers (whose working directory is the work copy) find its snapshot; the oracle
    is graded resolved (a relative cache once made every diff fail, graded as the agent's 0)."""
    from ha_agents.episode import run_episode
    from ha_envs.loaders import load_suite
    from ha_envs.sandbox.provision.workcopy import cache_root

    require_bwrap()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HA_CACHE_DIR", "relcache")
    assert cache_root() == tmp_path / "relcache"
    task = next(t for t in load_suite("mini") if t.instance_id == "mini__semver_ranges")
    rec = run_episode(task, "oracle", "h0")
    assert rec["resolved"] and not rec["mask_sample"], (rec["termination"], rec["grade"].get("error"))


def test_the_tasks_tests_do_not_load_the_librarys_pytest_plugins(sbx):
    """A task without an environment of its own runs on this library's interpreter: pytest, but none
    of the plugins installed beside the library (their warnings and hooks in the task's test runs)."""
    res = sbx.run("python -m pytest -p no:cacheprovider tests 2>&1")
    assert "1 passed" in res.output, res.output
    assert "plugins:" not in res.output and "Warning" not in res.output, res.output


def test_stop_all_ends_running_commands_and_refuses_new_sandboxes(tiny_task):
    import threading

    from ha_envs.sandbox import live

    first, second = LocalSandbox(tiny_task), LocalSandbox(tiny_task)
    first.start()
    tag = f"{uuid.uuid4().int % 1000 + 500}.{os.getpid()}"
    outcome: list[BaseException | str] = []

    def sleeper() -> None:
        try:
            outcome.append(first.run(f"sleep {tag}").output)
        except Exception as exc:  # noqa: BLE001 - what the stopped command ends with
            outcome.append(exc)

    thread = threading.Thread(target=sleeper)
    thread.start()
    try:
        while not _alive(f"sleep {tag}"):
            assert thread.is_alive()
        assert live.stop_all() >= 2  # both open sandboxes, the idle one too
        thread.join(10)
        assert not thread.is_alive() and isinstance(outcome[0], SandboxError), outcome
        assert not _alive(f"sleep {tag}") and not first.root.exists() and not second.root.exists()
        with pytest.raises(SandboxError, match="stopping"):
            LocalSandbox(tiny_task)
    finally:
        live.resume()
    LocalSandbox(tiny_task).close()  # allowed again
