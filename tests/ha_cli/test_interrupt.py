"""Ctrl-C and SIGTERM stop `ha eval`: a real signal to a real `ha eval` process whose slow model
(the local fake OpenAI server) keeps two episodes in a `sleep` inside their sandboxes. The process
exits 130 / 143 with one line saying how to resume, keeps the finished records, leaves no sandbox
process and no temporary directory, and the same command then finishes the rest without redoing
any."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ha_agents.llm.fake_server import FakeOpenAIServer
from tests.conftest import require_bwrap, task_row

HA = [sys.executable, "-m", "ha_cli.main"]
FAST = ("tiny__a",)
IDS = FAST + ("tiny__b", "tiny__c", "tiny__d")


def _call(name: str, args: dict) -> dict:
    return {"content": "", "tool_calls": [{"id": "c1", "type": "function",
                                           "function": {"name": name, "arguments": json.dumps(args)}}]}


def _model(marker: str, slow: dict[str, bool], fast: tuple[str, ...]):
    """Submit at once for the ``fast`` tasks (and for all once ``slow["on"]`` is off); the others first
    run ``sleep <marker>`` in their sandbox, long enough to be running when the signal comes."""

    def respond(body: dict) -> dict:
        task = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if not slow["on"] or any(f"[{i}]" in task for i in fast) or body["messages"][-1]["role"] == "tool":
            return _call("submit", {})
        return _call("bash", {"command": f"sleep {marker}"})

    return respond


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _with_cmdline(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            pass
    return pids


def _describe(pid: int) -> str:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "gone"
    return f"{state} {cmdline[:200]}"


def _records(out: Path) -> list[dict]:
    path = out / "trajectories.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _sigterm_once_running(command: list[str], marker: str, what: str, wait_s: float,
                          env: dict[str, str] | None = None) -> tuple[int, str, dict[int, str], int]:
    """Start ``command``, wait until two live processes run this test's ``sleep <marker>``, send
    SIGTERM: (exit code, stderr, the processes that ran under it at the signal with what each was
    then, its pid)."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + wait_s
    while len([p for p in _with_cmdline(marker) if not _describe(p).startswith("Z")]) < 2:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"{what} never started\n{proc.communicate()}")
        time.sleep(0.2)
    started = {p: _describe(p) for p in _descendants(proc.pid)}
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=90)
    return proc.returncode, stderr, started, proc.pid


@pytest.mark.parametrize("signum, fast", [(signal.SIGINT, FAST), (signal.SIGTERM, ())])
def test_a_signal_stops_eval_keeps_finished_records_and_the_same_command_resumes(tiny_task, tmp_path, signum, fast):
    """SIGINT after one episode finished (and the rerun); SIGTERM while the first two run (CI time)."""
    require_bwrap()
    rows = [task_row(tiny_task, instance_id=i, problem_statement=f"{tiny_task.problem_statement} [{i}]") for i in IDS]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    marker = f"{300 + uuid.uuid4().int % 1000}.{os.getpid()}"  # a sleep only this test's sandboxes run
    slow = {"on": True}
    out = tmp_path / "out"
    with FakeOpenAIServer(_model(marker, slow, fast)) as srv:
        command = [*HA, "eval", "--jsonl", str(tmp_path / "tasks.jsonl"), "--model", f"openai:m@{srv.url}",
                   "--harness", "h0", "--sandbox", "local", "--workers", "2", "--out", str(out)]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 40
        while not (len(_records(out)) == len(fast) and len(_with_cmdline(marker)) >= 2):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the slow episodes never started: {len(_records(out))} records; requests "
                            f"{[[m['role'] for m in b['messages']] for b in srv.requests]}\n{proc.communicate()[1]}")
            time.sleep(0.2)
        started = _descendants(proc.pid)
        assert started, "no sandbox processes under ha eval"
        t0 = time.monotonic()
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - t0
        assert proc.returncode == 128 + signum, stderr
        assert "Traceback" not in stderr
        name = signal.Signals(signum).name
        lines = [ln for ln in stderr.splitlines() if ln.startswith("ha: stopped")]
        assert len(lines) == 1 and f"stopped by {name}" in lines[0] and f"kept in {out}" in lines[0], stderr
        assert lines[0].endswith("to resume, run the same command: ha " + " ".join(command[3:])), lines[0]
        assert took < 30, f"stopping took {took:.1f} s"
        kept = _records(out)
        assert sorted(r["instance_id"] for r in kept) == sorted(fast)  # the killed episodes left no record
        assert all(r["grade"] is not None and not r["mask_sample"] for r in kept)
        # a zombie has ended (this machine's pid 1 may not reap the orphans): only live ones count
        left = {p: d for p in started if (d := _describe(p)) != "gone" and not d.startswith("Z")}
        assert not left, f"sandbox processes outlived ha eval: {left}"
        assert not [p for p in _with_cmdline(marker) if not _describe(p).startswith("Z")]
        tmp = Path(os.environ.get("TMPDIR", "/tmp"))
        assert not [p for p in tmp.iterdir() if p.name.startswith((f"ha-sbx-{proc.pid}-", f"ha-grade-{proc.pid}-"))]
        if signum != signal.SIGINT:
            return
        slow["on"] = False  # the server is quick again; the same command finishes the rest
        before = (out / "trajectories.jsonl").read_text()
        rerun = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    after = _records(out)
    assert (out / "trajectories.jsonl").read_text().startswith(before)  # the finished ones untouched
    assert sorted(r["instance_id"] for r in after) == sorted(IDS)  # each once: nothing redone
    assert "4 tasks x 1 runs" in rerun.stdout


def test_sigterm_stops_a_docker_eval_and_leaves_no_container(tiny_task, tmp_path):
    """The same stop with the Docker sandbox: the episodes' containers are not children of `ha eval`
    (the daemon runs them), so what must be gone are the containers it owns (label
    ``harnessadapt.owner=<host>:<pid>``), their processes, and no record is kept of the killed ones."""
    import socket

    from tests.conftest import require_docker

    client = require_docker()
    rows = [task_row(tiny_task, instance_id=i, problem_statement=f"{tiny_task.problem_statement} [{i}]") for i in IDS[:3]]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    marker = f"{300 + uuid.uuid4().int % 1000}.{os.getpid()}"
    out = tmp_path / "out"
    with FakeOpenAIServer(_model(marker, {"on": True}, ())) as srv:
        command = [*HA, "eval", "--jsonl", str(tmp_path / "tasks.jsonl"), "--model", f"openai:m@{srv.url}",
                   "--harness", "h0", "--sandbox", "docker", "--workers", "2", "--out", str(out)]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        label = f"harnessadapt.owner={socket.gethostname()}:{proc.pid}"
        deadline = time.monotonic() + 240  # a first snapshot image is built here
        while len(_with_cmdline(marker)) < 2:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the slow episodes never started in their containers\n{proc.communicate()[1]}")
            time.sleep(0.3)
        assert client.containers.list(filters={"label": label}), "no container of this run is running"
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr and "stopped by SIGTERM" in stderr
    assert client.containers.list(all=True, filters={"label": label}) == [], "containers outlived ha eval"
    assert not [p for p in _with_cmdline(marker) if not _describe(p).startswith("Z")], "container processes left"
    assert _records(out) == []  # nothing finished: nothing kept, nothing half-written


def test_sigterm_stops_an_evolution_round_and_says_to_resume_it(tiny_task, tmp_path):
    """`ha evolve run` stopped in its proposer's batch: exit 143, the line names `--resume`, no
    sandbox process outlives it, and nothing of the round is logged as decided."""
    require_bwrap()
    rows = [task_row(tiny_task, instance_id=i, problem_statement=f"{tiny_task.problem_statement} [{i}]") for i in IDS[:2]]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    marker = f"{300 + uuid.uuid4().int % 1000}.{os.getpid()}"
    out = tmp_path / "evo"
    with FakeOpenAIServer(_model(marker, {"on": True}, ())) as srv:
        command = [*HA, "evolve", "run", "--jsonl", str(tmp_path / "tasks.jsonl"), "--model", f"openai:m@{srv.url}",
                   "--harness", "h0", "--proposer", "rule", "--rounds", "1", "--group-size", "2", "--workers", "2",
                   "--min-tasks", "1", "--out", str(out)]
        code, stderr, started, _ = _sigterm_once_running(command, marker, "the proposer's batch", 60)
    assert code == 143, stderr
    assert "Traceback" not in stderr
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("ha: stopped")]
    assert "stopped by SIGTERM" in line and line.endswith(" ".join(command[3:]) + " --resume"), line
    left = {p: d for p in started if (d := _describe(p)) != "gone" and not d.startswith("Z")}
    assert not left, f"sandbox processes outlived ha evolve run: {left}"
    log = out / "evolution.jsonl"
    kinds = [json.loads(x).get("kind") for x in log.read_text().splitlines()] if log.exists() else []
    assert "round" not in kinds and "proposal" not in kinds


def test_sigterm_stops_ha_grade_mid_grading(tiny_task, tmp_path):
    """`ha grade` stopped while two gradings run their tests (the predicted patch makes the module
    start a `sleep` on import): exit 143, one line naming the same command, no grading process left,
    no grading temp dir, and no report for the gradings it cut."""
    from tests.conftest import _git_diff

    require_bwrap()
    marker = f"{300 + uuid.uuid4().int % 1000}.{os.getpid()}"
    ids = IDS[:2]
    rows = [task_row(tiny_task, instance_id=i) for i in ids]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    copy = tmp_path / "slow"
    subprocess.run(["cp", "-a", str(tiny_task.source_dir), str(copy)], check=True)
    slow = _git_diff(copy, lambda d: (d / "calc.py").write_text(
        f"import subprocess\nsubprocess.run(['sleep', '{marker}'])\n" + (d / "calc.py").read_text()))
    (tmp_path / "preds.jsonl").write_text("".join(json.dumps({"instance_id": i, "model_name_or_path": "m",
                                                              "model_patch": slow}) + "\n" for i in ids))
    out = tmp_path / "graded"
    command = [*HA, "grade", "--jsonl", str(tmp_path / "tasks.jsonl"), "--predictions", str(tmp_path / "preds.jsonl"),
               "--sandbox", "local", "--workers", "2", "--out", str(out)]
    code, stderr, started, pid = _sigterm_once_running(command, marker, "the gradings' tests", 90)
    assert code == 143, stderr
    assert "Traceback" not in stderr
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("ha: stopped")]
    assert "stopped by SIGTERM" in line and line.endswith("ha " + " ".join(command[3:])), line
    left = {p: d for p in started if (d := _describe(p)) != "gone" and not d.startswith("Z")}
    assert not left, f"grading processes outlived ha grade: {left}"
    assert not [p for p in _with_cmdline(marker) if not _describe(p).startswith("Z")]
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    assert not [p for p in tmp.iterdir() if p.name.startswith(f"ha-grade-{pid}-")]
    assert not list(out.glob("logs/*/report.json"))  # a cut grading is no verdict


def test_sigterm_stops_a_ray_executor_eval_and_its_private_ray(tiny_task, tmp_path):
    """`ha eval --executor ray` (episodes as Ray tasks on the private local Ray it starts): SIGTERM
    while two episodes sleep in their sandboxes inside Ray workers. Exit 143 with the resume line,
    no record of the cut episodes, and nothing left: no sandbox process, no Ray process of its own."""
    require_bwrap()
    rows = [task_row(tiny_task, instance_id=i, problem_statement=f"{tiny_task.problem_statement} [{i}]") for i in IDS[:3]]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    marker = f"{300 + uuid.uuid4().int % 1000}.{os.getpid()}"
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # its own Ray, never one running here
    with FakeOpenAIServer(_model(marker, {"on": True}, ())) as srv:
        command = [*HA, "eval", "--jsonl", str(tmp_path / "tasks.jsonl"), "--model", f"openai:m@{srv.url}",
                   "--harness", "h0", "--sandbox", "local", "--workers", "2", "--executor", "ray", "--out", str(out)]
        code, stderr, started, _ = _sigterm_once_running(command, marker, "the Ray episodes", 120, env)  # Ray starts first
    assert any("raylet" in what for what in started.values()), "no Ray of its own under ha eval"
    assert code == 143, stderr
    assert "Traceback" not in stderr
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("ha: stopped")]
    assert "stopped by SIGTERM" in line and line.endswith("ha " + " ".join(command[3:])), line
    deadline = time.monotonic() + 30  # Ray's own processes end on their own schedule after shutdown
    while True:
        left = {p: d for p in started if (d := _describe(p)) != "gone" and not d.startswith("Z")}
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not left, f"processes outlived ha eval --executor ray: {left}"
    assert not [p for p in _with_cmdline(marker) if not _describe(p).startswith("Z")]
    assert _records(out) == []
