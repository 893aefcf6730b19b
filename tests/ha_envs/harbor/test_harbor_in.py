"""Harbor tasks in: task.toml read with clear errors, a Harbor dataset through `ha tasks list|validate`
and `ha eval` (oracle 1, no-op 0, a cheating agent 0), and the reward file read as untrusted data."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ha_cli.main import main
from ha_envs.grading.grader import Grader
from ha_envs.grading.harbor import parse_reward
from ha_envs.grading.report import EnvironmentFault
from ha_envs.harbor import HarborTaskError, load_harbor, read_task_config
from ha_envs.harbor.load import parse_dockerfile
from tests.conftest import require_bwrap, skip_unless_ci
from tests.ha_envs.harbor.builders import CHECK, TEST_SH, TOML, harbor_task


def test_task_toml_schema_versions_and_legacy_fields(tmp_path):
    old = tmp_path / "old.toml"
    old.write_text('version = "1.1"\n[agent]\ntimeout_sec = 30\n[environment]\nmemory = "2G"\nallow_internet = false\n'
                   'docker_image = "python:3.12"\n')
    cfg = read_task_config(old)
    assert (cfg.schema_version, cfg.agent.timeout_sec, cfg.environment.memory_mb) == ("1.1", 30.0, 2048)
    assert cfg.environment.network.value == "no-network" and cfg.verifier_timeout_s == 600.0
    new = tmp_path / "new.toml"
    new.write_text(TOML + '\n[[steps]]\nname = "one"\n[steps.verifier]\ntimeout_sec = 5\n')
    cfg = read_task_config(new)
    assert cfg.environment.cpus == 1 and cfg.verifier_timeout_s == 60.0 and cfg.steps[0].verifier.timeout_sec == 5


@pytest.mark.parametrize("toml, words", [
    ("[verifier\ntimeout_sec = 1\n", "not valid TOML"),
    ('[verifier]\ntimeout_sec = "soon"\n', "verifier.timeout_sec"),
    ('schema_version = "2.0"\n', "schema_version '2.0' is not one this reader knows"),
    ("[environment]\ncpus = -1\n", "environment.cpus"),
    ('[environment]\nmemory = "lots"\n', "must end in G, M or K"),
    (TOML + '\n[[steps]]\nname = "one"\n', "[[steps]] name = 'one' has no folder steps/one/"),
])
def test_malformed_task_gets_a_clear_error_from_the_cli(tmp_path, capsys, toml, words):
    harbor_task(tmp_path, toml=toml)
    assert main(["tasks", "list", "--benchmark", "harbor", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert words in err and str(tmp_path) in err, err


def test_missing_pieces_are_named(tmp_path):
    d = harbor_task(tmp_path)
    (d / "tests" / "test.sh").unlink()
    with pytest.raises(HarborTaskError, match=r"no test.sh"):
        load_harbor(tmp_path)
    with pytest.raises(HarborTaskError, match="not a directory"):
        load_harbor(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(HarborTaskError, match="neither a Harbor task"):
        load_harbor(tmp_path / "empty")


def test_dockerfile_gives_workdir_and_work_copy():
    workdir, copies = parse_dockerfile("FROM a AS build\nWORKDIR /x\nCOPY y /x\nFROM b\nWORKDIR /srv\n"
                                       "WORKDIR app\n# COPY no /srv/app\nCOPY --chown=1:1 src/ .\n"
                                       "COPY --from=build /x /srv/app/x\nADD [\"data\", \"/data\"]\n")
    assert workdir == "/srv/app" and copies == [("src", "/srv/app"), ("data", "/data")]


@pytest.mark.parametrize("name, data, reward", [
    ("reward.txt", b"1\n", 1.0), ("reward.txt", b" 0.25 ", 0.25), ("reward.json", b'{"reward": 1, "style": 0.5}', 1.0),
    ("reward.json", b"0", 0.0), ("reward.txt", b"nan", None), ("reward.txt", b"inf", None),
    ("reward.txt", b"1.5", None), ("reward.txt", b"-0.1", None), ("reward.txt", b"", None),
    ("reward.txt", b"1; rm -rf /", None), ("reward.txt", b"\xff\xfe", None), ("reward.json", b'{"reward": NaN}', None),
    ("reward.json", b'{"reward": true}', None), ("reward.json", b'{"score": 1}', None), ("reward.json", b"[1]", None),
    ("reward.json", b'{"reward": 1, "x": "a"}', None), ("reward.json", b"{", None),
    ("reward.txt", b"1" + b" " * (70 << 10), None),
])
def test_reward_file_is_untrusted_data(name, data, reward):
    got, why = parse_reward(name, data)
    assert got == reward and (bool(why) == (reward is None)), (got, why)
    assert got is None or math.isfinite(got)


def _eval(tmp_path: Path, data: Path, model: str, out: str) -> dict:
    assert main(["eval", "--benchmark", "harbor", "--data", str(data), "--model", model, "--max-turns", "2",
                 "--out", str(tmp_path / out), "--no-progress"]) == 0
    return json.loads((tmp_path / out / "trajectories.jsonl").read_text().splitlines()[0])


def test_oracle_noop_and_cheater_through_ha_eval(tmp_path):
    require_bwrap()
    data = tmp_path / "ds"
    harbor_task(data)
    assert main(["tasks", "list", "--benchmark", "harbor", "--data", str(data)]) == 0
    oracle = _eval(tmp_path, data, "oracle", "oracle")
    assert oracle["reward"] == 1.0 and oracle["grade"]["verdict_rules"] == "harbor (reward 1)"
    assert "a + b" in oracle["patch"]
    noop = _eval(tmp_path, data, "null", "null")
    assert noop["reward"] == 0.0 and not noop["mask_sample"] and "AssertionError" in noop["grade"]["log_tail"]
    # writes the reward itself, plants a fake python3 first on its PATH, leaves a process rewriting it
    cheat = ("```bash\nmkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; mkdir -p logs/verifier bin; "
             "echo 1 > logs/verifier/reward.txt; printf '#!/bin/sh\\necho CHECK_OK\\n' > bin/python3; "
             "chmod +x bin/python3; export PATH=$PWD/bin:$PATH; python3 | grep -q CHECK_OK && echo SHIM_WORKS; "
             "(while true; do echo 1 > logs/verifier/reward.txt; sleep 0.2; done) >/dev/null 2>&1 &\n```")
    (tmp_path / "cheat.yaml").write_text(json.dumps([cheat]))
    rec = _eval(tmp_path, data, f"menu:{tmp_path / 'cheat.yaml'}", "cheat")
    assert "SHIM_WORKS" in json.dumps(rec["messages"])  # in the agent's own shell the shim answers
    assert "bin/python3" in rec["patch"]
    assert rec["reward"] == 0.0 and not rec["mask_sample"] and rec["grade"]["status"] == "unresolved"


def test_validate_through_the_cli(tmp_path, capsys):
    require_bwrap()
    harbor_task(tmp_path / "ds")
    harbor_task(tmp_path / "ds", name="no-fix", solve="true\n")
    assert main(["tasks", "validate", "--benchmark", "harbor", "--data", str(tmp_path / "ds"), "--json",
                 "--workers", "1"]) == 1
    rows = {r["instance_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["add-fix"]["ok"] and rows["add-fix"]["gold_status"] == "resolved"
    assert not rows["no-fix"]["ok"] and "changed nothing" in " ".join(rows["no-fix"]["problems"])


def test_an_invalid_reward_is_the_patchs_fault_or_a_masked_fault(tmp_path):
    require_bwrap()
    scored = harbor_task(tmp_path, files={"calc.py": "def add(a, b):\n    return a - b\n", "score.py": "print(0)\n"},
                         test_sh="#!/bin/bash\npython3 /app/score.py > /logs/verifier/reward.txt\n")
    task = load_harbor(scored)[0]
    grader = Grader()
    nan = ("diff --git a/score.py b/score.py\n--- a/score.py\n+++ b/score.py\n@@ -1 +1 @@\n-print(0)\n"
           "+print(float('nan'))\n")
    report = grader.grade(task, nan)
    assert report.status == "reward_invalid" and report.reward == 0.0 and "not finite" in report.error
    broken = harbor_task(tmp_path, name="broken", test_sh="#!/bin/bash\necho banana > /logs/verifier/reward.txt\n")
    fix = ("diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
           "-    return a - b\n+    return a + b\n")
    with pytest.raises(EnvironmentFault) as exc:
        grader.grade(load_harbor(broken)[0], fix)
    assert exc.value.kind == "reward_invalid" and "not a number: 'banana'" in str(exc.value)


@pytest.mark.parametrize("command", [["train", "--model", "x"], ["evolve", "run", "--model", "x"], ["grade", "--predictions", "p.jsonl"],
                                     ["images", "build"]])
def test_every_task_taking_command_selects_harbor_tasks(tmp_path, command):
    from ha_cli.main import build_parser
    from ha_cli.selection import select_tasks

    harbor_task(tmp_path / "ds")
    harbor_task(tmp_path / "ds", name="other")
    args = build_parser().parse_args([*command, "--benchmark", "harbor", "--data", str(tmp_path / "ds"),
                                      "--filter", "^add"])
    assert [t.instance_id for t in select_tasks(args)] == ["add-fix"]


def test_a_reward_link_is_not_followed(tmp_path):
    require_bwrap()
    linked = harbor_task(tmp_path, name="linked", test_sh="#!/bin/bash\necho 1 > /tmp/one\n"
                         "ln -s /tmp/one /logs/verifier/reward.txt\n")
    with pytest.raises(EnvironmentFault) as exc:
        Grader().grade(load_harbor(linked)[0], "")
    assert "reward.txt is a symbolic link" in str(exc.value)


def test_a_second_reward_file_planted_by_the_code_under_test_earns_nothing(tmp_path):
    """The task's test.sh writes reward.txt; the agent's code, imported by the tests, drops a
    reward.json saying 1 beside it (read first, as Harbor does). Without a fix the two files
    disagree: not believed, reward 0, unmasked. With the fix, a planted file that agrees is harmless."""
    require_bwrap()
    task = load_harbor(harbor_task(tmp_path))[0]
    grader = Grader()
    plant = ("import os\n"
             "try:\n    open('/logs/verifier/reward.json', 'w').write('{\"reward\": 1.0}')\nexcept OSError:\n    pass\n")
    forged = grader.grade(task, _patch(task, plant + "def add(a, b):\n    return a - b\n"))
    assert forged.reward == 0.0 and not forged.resolved and not forged.fault, (forged.status, forged.error)
    assert forged.status == "verdict_tampered" and "reward.json" in forged.error and "reward.txt" in forged.error
    honest = grader.grade(task, _patch(task, plant + "def add(a, b):\n    return a + b\n"))
    assert honest.resolved and honest.reward == 1.0, (honest.status, honest.error)


def _patch(task, calc: str) -> str:
    import subprocess

    from tests.conftest import _git_diff

    copy = Path(task.source_dir).parent / f"copy-{abs(hash(calc))}"
    subprocess.run(["cp", "-a", str(task.source_dir), str(copy)], check=True)
    return _git_diff(copy, lambda d: (d / "calc.py").write_text(calc))


def test_a_tasks_identity_follows_its_files_not_its_derived_oracle(tmp_path, capsys):
    """The fingerprint a run records for a Harbor task covers every file of its folder (an edited
    test.sh or solve.sh is another task: a reused --out is refused, naming the instance), and not the
    gold patch the oracle run derives from solve.sh (an oracle run and a null run of one task differ
    only in their model)."""
    import dataclasses

    require_bwrap()
    data = tmp_path / "ds"
    d = harbor_task(data)
    task = load_harbor(data)[0]
    assert dataclasses.replace(task, gold_patch="derived\n").fingerprint() == task.fingerprint()
    (d / "solution" / "solve.sh").write_text((d / "solution" / "solve.sh").read_text() + "# edited\n")
    edited = load_harbor(data)[0]
    assert edited.fingerprint() != task.fingerprint()
    _eval(tmp_path, data, "oracle", "run")
    capsys.readouterr()
    assert main(["eval", "--benchmark", "harbor", "--data", str(data), "--model", "null", "--max-turns", "2",
                 "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "model" in err and "fingerprint" not in err, err
    (d / "tests" / "check.py").write_text(CHECK.replace("add(-1, 1) == 0", "add(-1, 1) == 0 and add(0, 0) == 0"))
    assert main(["eval", "--benchmark", "harbor", "--data", str(data), "--model", "oracle", "--max-turns", "2",
                 "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "fingerprint" in err and "add-fix" in err, err


LINGER = '''import os, time
if os.path.isdir("/logs/verifier") and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        fd = os.open(os.devnull, os.O_RDWR)
        for n in (0, 1, 2):
            os.dup2(fd, n)
        for _ in range(6000):
            try:
                with open("/logs/verifier/reward.txt") as fh:
                    said = fh.read().strip()
                if said and said != "1":
                    with open("/logs/verifier/reward.txt", "w") as fh:
                        fh.write("1\\n")
            except OSError:
                pass
            time.sleep(0.002)
    os._exit(0)
'''


def test_a_process_left_running_by_the_code_under_test_cannot_rewrite_the_reward(tmp_path):
    """The agent's code, imported by the tests, leaves a detached process behind (its own session, no
    descriptor of the run's) that waits for test.sh's verdict and rewrites reward.txt to 1 after test.sh
    exits (before: reward 1.0 without a fix). Processes that outlive test.sh are killed before the
    reward is read, and since the base's verifier leaves none, the reward is not believed:
    verdict_tampered, 0, unmasked, with or without the fix. The fix alone earns 1; a task whose own
    verifier leaves a process (a server it starts) still grades a fix 1 and a non-fix 0, noted."""
    require_bwrap()
    task = load_harbor(harbor_task(tmp_path))[0]
    grader = Grader()
    for calc in ("a - b", "a + b"):
        forged = grader.grade(task, _patch(task, LINGER + f"def add(a, b):\n    return {calc}\n"))
        assert forged.reward == 0.0 and not forged.resolved and not forged.fault, (forged.status, forged.error)
        assert forged.status == "verdict_tampered" and "outlived tests/test.sh" in forged.error
    fix = _patch(task, "def add(a, b):\n    return a + b\n")
    assert grader.grade(task, fix).reward == 1.0
    serving = load_harbor(harbor_task(tmp_path / "serving", test_sh="#!/bin/bash\n(setsid sleep 300 &)\n"
                                      + TEST_SH.split("\n", 1)[1]))[0]
    honest = grader.grade(serving, fix)
    assert honest.resolved and honest.reward == 1.0, (honest.status, honest.error)
    assert "the base's verifier leaves 1 too" in honest.error and not honest.flags, (honest.error, honest.flags)
    assert grader.grade(serving, _patch(serving, "def add(a, b):\n    return a - b\n")).reward == 0.0
    empty = grader.grade(serving, "")  # no patch: the run is the base's own, its verifier's process is the task's
    assert empty.status == "unresolved" and empty.reward == 0.0 and "leaves 1 too" in empty.error, empty.status


def test_a_reward_planted_read_only_before_the_verdict_earns_nothing(tmp_path):
    """The code under test writes reward.txt = 1 first and makes it and its folder read-only, so the
    verifier's own `echo 0 >` should fail: here the grading shell runs as root and writes over the
    mode, and no fix earns nothing. Where it is not root the write fails and the planted 1 stays; the
    trace's failed write closes that (``test_a_reward_planted_read_only_on_a_non_root_host_...``)."""
    require_bwrap()
    task = load_harbor(harbor_task(tmp_path))[0]
    plant = ("import os\ntry:\n    open('/logs/verifier/reward.txt', 'w').write('1\\n')\n"
             "    os.chmod('/logs/verifier/reward.txt', 0o444)\n    os.chmod('/logs/verifier', 0o555)\n"
             "except OSError:\n    pass\n")
    forged = Grader().grade(task, _patch(task, plant + "def add(a, b):\n    return a - b\n"))
    assert forged.reward == 0.0 and not forged.resolved and not forged.fault, (forged.status, forged.error)


RACE = (LINGER.replace("range(6000)", "range(200000)").replace("time.sleep(0.002)", "time.sleep(0.0002)")
        .replace('fh.write("1\\n")\n', 'fh.write("1\\n")\n                    break\n'))
"""LINGER's rewriter, polling 10 times as often, that exits as soon as it has rewritten the reward
(before test.sh does)."""


def test_a_process_that_rewrites_the_reward_and_exits_before_test_sh_earns_nothing(tmp_path):
    """The instant between the verifier's write and test.sh's exit: a detached process of the code
    under test watches reward.txt, rewrites the verifier's 0 to 1 and exits at once, before test.sh
    does, so no process outlives test.sh (before: reward 1.0 in 2 of 3 gradings). It outlived the
    process that started it, which the trace of test.sh's processes shows (``harbor_trace.py``):
    verdict_tampered, with or without the fix; the fix alone earns 1."""
    require_bwrap()
    from tests.conftest import require_tool

    require_tool("strace")
    task = load_harbor(harbor_task(tmp_path))[0]
    grader = Grader()
    for calc in ("a - b", "a - b", "a + b"):
        forged = grader.grade(task, _patch(task, RACE + f"def add(a, b):\n    return {calc}\n"))
        assert forged.reward == 0.0 and not forged.resolved and not forged.fault, (forged.status, forged.error)
        assert forged.status == "verdict_tampered" and "the process that started them" in forged.error, forged.error
    assert grader.grade(task, _patch(task, "def add(a, b):\n    return a + b\n")).reward == 1.0


def test_findings_read_from_a_trace():
    """The trace's rules on strace's own lines: a double fork whose grandchild outlives its parent is
    named; threads and waited children are not; a failed write of the reward, another process's
    limits or memory, and test.sh's shell killed or never ending are findings."""
    from ha_envs.grading.harbor_trace import (
        NO_EXIT,
        OTHER_LIMITS,
        OTHER_MEMORY,
        REWARD_WRITE_FAILED,
        SHELL_KILLED,
        TRACE_CUT,
        findings,
    )

    waited = ("10 clone(child_stack=NULL, flags=SIGCHLD) = 11\n11 +++ exited with 0 +++\n"
              "10 clone3({flags=CLONE_VM|CLONE_THREAD|CLONE_SIGHAND, exit_signal=0}, 88) = 12\n"
              "12 clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>\n10 +++ exited with 0 +++\n"
              "12 <... clone resumed>) = 13\n13 +++ exited with 0 +++\n12 +++ exited with 0 +++\n")
    assert findings(waited) == []  # 13's process (10, whose thread 12 started it) lived on in its thread
    double = ("20 clone(child_stack=NULL, flags=SIGCHLD) = 21\n21 clone(child_stack=NULL, flags=SIGCHLD) = 22\n"
              "21 +++ exited with 0 +++\n22 +++ exited with 0 +++\n20 +++ exited with 0 +++\n")
    assert findings(double) == ["22"]
    start, end = "30 clone(child_stack=NULL, flags=SIGCHLD) = 31\n", "31 +++ exited with 1 +++\n30 +++ exited with 0 +++\n"
    assert findings(start + end) == [] and findings(start + end, cut=True) == [TRACE_CUT]
    assert findings(start + "31 +++ killed by SIGKILL +++\n") == [NO_EXIT]
    assert findings(start + "31 +++ exited with 0 +++\n30 +++ killed by SIGKILL +++\n") == [SHELL_KILLED]
    calls = {
        '30 openat(AT_FDCWD, "/logs/verifier/reward.txt", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 EMFILE (Too many)': REWARD_WRITE_FAILED,
        '31 creat("reward.json", 0644) = -1 EACCES (Permission denied)': REWARD_WRITE_FAILED,
        '31 prlimit64(30, RLIMIT_NOFILE, {rlim_cur=3, rlim_max=3}, {rlim_cur=1024, rlim_max=1024}) = 0': OTHER_LIMITS,
        '31 openat(AT_FDCWD, "/proc/30/mem", O_RDWR|O_CLOEXEC) = 3': OTHER_MEMORY,
        '30 openat(AT_FDCWD, "/logs/verifier/reward.txt", O_RDONLY) = -1 ENOENT (No such file)': None,
        '31 prlimit64(0, RLIMIT_NOFILE, NULL, {rlim_cur=1024, rlim_max=1024}) = 0': None,
        '31 prlimit64(31, RLIMIT_NOFILE, {rlim_cur=64, rlim_max=64}, NULL) = 0': None,
        '31 openat(AT_FDCWD, "/proc/30/mem", O_RDONLY) = 3': None,
    }
    for call, finding in calls.items():
        assert findings(start + call + "\n" + end) == ([finding] if finding else []), call


NOFILE = '''import os, resource
try:
    if os.path.isdir("/logs/verifier"):
        with open("/logs/verifier/reward.txt", "w") as fh:
            fh.write("1\\n")
        resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (3, 3))
except OSError:
    pass
'''


def test_a_verifier_whose_reward_write_is_made_to_fail_earns_nothing(tmp_path):
    """The code under test writes reward.txt = 1 and lowers the open-file limit of its parent, the
    shell running test.sh (same user: no privilege needed), whose own `echo 0 > reward.txt` then
    fails ("Too many open files") and leaves the planted 1; nothing outlives anything (before: reward
    1.0, every grading, as root). The trace shows both the limit set on another process and the
    failed write: verdict_tampered; the fix alone earns 1."""
    require_bwrap()
    from tests.conftest import require_tool

    require_tool("strace")
    task = load_harbor(harbor_task(tmp_path))[0]
    grader = Grader()
    forged = grader.grade(task, _patch(task, NOFILE + "def add(a, b):\n    return a - b\n"))
    assert forged.reward == 0.0 and not forged.fault and forged.status == "verdict_tampered", (forged.status,
                                                                                               forged.error)
    assert "Too many open files" in forged.log_tail  # the attack did what it meant to
    assert "reward-write-failed" in forged.error and "limits-of-another-process" in forged.error, forged.error
    assert grader.grade(task, _patch(task, "def add(a, b):\n    return a + b\n")).reward == 1.0


READ_ONLY = """mkdir -p /tmp/logs/verifier
python3 -c "
open('/tmp/logs/verifier/reward.txt', 'w').write('1\\n')
import os; os.chmod('/tmp/logs/verifier/reward.txt', 0o444); os.chmod('/tmp/logs/verifier', 0o555)"
echo 0 > /tmp/logs/verifier/reward.txt
echo "reward: $(cat /tmp/logs/verifier/reward.txt)"
"""


def test_a_reward_planted_read_only_on_a_non_root_host_is_a_failed_write_in_the_trace():
    """Where the sandbox runs as a user other than root (here: nobody, through setpriv, in an
    unprivileged bubblewrap), a reward planted read-only, file and folder, survives the verifier's
    `echo 0 >` (the attack works there: "reward: 1"). The same run traced as the grader traces
    test.sh shows the failed write (``reward-write-failed``), which the grader does not believe
    unless the base's verifier fails its write too."""
    import os
    import shutil
    import subprocess

    from ha_envs.grading.harbor_trace import REWARD_WRITE_FAILED, TRACED, findings

    if os.getuid() != 0 or not shutil.which("setpriv") or not shutil.which("strace") or not shutil.which("bwrap"):
        skip_unless_ci("needs root (to become nobody with setpriv), strace and bubblewrap")
    inner = (f"strace -f -q -s 256 -e signal=none -e trace={TRACED} -o /tmp/trace bash -s; "
             "echo TRACE; cat /tmp/trace")
    res = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bwrap", "--unshare-user",
                          "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                          "bash", "-c", inner], input=READ_ONLY, capture_output=True, text=True, timeout=60,
                         check=False)
    if "TRACE" not in res.stdout:
        skip_unless_ci(f"no unprivileged bubblewrap or strace as nobody here: {res.stderr[-300:]}")
    out, _, trace = res.stdout.partition("TRACE\n")
    assert "reward: 1" in out and "Permission denied" in res.stderr, (out, res.stderr)  # the attack works there
    assert REWARD_WRITE_FAILED in findings(trace), trace[-2000:]


KILL_TRACER = '''import os, signal
try:
    for line in open("/proc/self/status"):
        if line.startswith("TracerPid:") and int(line.split()[1]) > 0:
            os.kill(int(line.split()[1]), signal.SIGKILL)
except OSError:
    pass
'''


def test_the_reward_race_after_killing_the_tracer_earns_nothing(tmp_path):
    """The race with strace out of the way first (its pid is the test process's TracerPid, same
    user): the trace then has no exit of test.sh's shell (``trace-ended-early``), which the base's
    run does not show: verdict_tampered."""
    require_bwrap()
    from tests.conftest import require_tool

    require_tool("strace")
    task = load_harbor(harbor_task(tmp_path))[0]
    forged = Grader().grade(task, _patch(task, KILL_TRACER + RACE + "def add(a, b):\n    return a - b\n"))
    assert forged.reward == 0.0 and forged.status == "verdict_tampered", (forged.status, forged.error)
    assert "trace-ended-early" in forged.error, forged.error
