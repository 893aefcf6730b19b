"""The OS-level trace taken from outside the sandbox (``ha_envs/sandbox/hosttrace.py``): the traced
command cannot see, signal or rewrite it under bubblewrap; unisolated it can kill the tracer, and
that shows (``lost``), as does ``tracer_lost`` in the grader's record."""

from __future__ import annotations

import pytest

from ha_envs.grading.ostrace import TRACED, TraceGuard
from ha_envs.sandbox.hosttrace import TraceSpec, TraceUnavailable
from ha_envs.sandbox.local import LocalSandbox, LocalSandboxConfig

SPEC = TraceSpec(TRACED)
# Every process the command can see, but its own shell and itself, gets SIGKILL; then a program
# runs whose start the trace must still hold.
KILL_ALL = ('for p in /proc/[0-9]*; do p=${p#/proc/}; [ "$p" = $$ ] || [ "$p" = $BASHPID ] || '
            'kill -9 "$p" 2>/dev/null; done; /bin/echo after-the-kill')


def _task():
    from ha_envs.loaders import load_suite

    return next(t for t in load_suite("mini") if t.instance_id == "mini__go_ledger")


def test_under_bubblewrap_the_tracer_is_out_of_reach(tmp_path):
    from tests.conftest import require_bwrap, require_tool

    require_bwrap()
    require_tool("strace")
    sandbox = LocalSandbox(_task(), LocalSandboxConfig(isolation="bwrap", trace=SPEC))
    try:
        res, trace = sandbox.run_traced("grep TracerPid /proc/$$/status; ls -a /tmp; " + KILL_ALL, SPEC)
        assert "TracerPid:\t0" in res.output  # the tracer's pid is not in the sandbox's namespace
        assert "strace" not in sandbox.run("cat /proc/[0-9]*/comm", timeout=30).output
        assert "ha-trace-" not in res.output  # nor its folder in the sandbox's /tmp
        assert "after-the-kill" in res.output, res.output
        assert not trace.lost and not trace.reachable
        assert 'execve("/bin/echo", ["/bin/echo", "after-the-kill"]' in trace.text, trace.text[-2000:]
    finally:
        sandbox.close()


def test_unisolated_a_killed_tracer_shows(tmp_path):
    """Without bubblewrap the command can kill the tracer (its shell's parent, in plain sight):
    the trace says it was lost, and the grader's record holds ``tracer_lost`` (no gold run shows
    it: ``verdict_tampered``)."""
    from tests.conftest import require_tool

    require_tool("strace")
    sandbox = LocalSandbox(_task(), LocalSandboxConfig(isolation="none", trace=SPEC))
    try:
        res, trace = sandbox.run_traced('kill -9 "$(sed -n "s/^TracerPid:\t//p" /proc/$$/status)"; '
                                        "sleep 0.5; /bin/echo unseen", SPEC)
        assert trace.lost and trace.reachable, (res, trace.lost)  # strace took the shell with it (its notes)
        assert "unseen" not in trace.text
        kinds, _ = TraceGuard().read_trace(_task(), sandbox, "", trace)
        assert "tracer_lost" in kinds, kinds
        res, trace = sandbox.run_traced("/bin/echo seen", SPEC)  # the next command: a new tracer
        assert not trace.lost and 'execve("/bin/echo", ["/bin/echo", "seen"]' in trace.text
        assert "seen" in res.output
        plain = LocalSandbox(_task(), LocalSandboxConfig(isolation="none"))
        try:  # a sandbox whose shells are not traced says so before running anything
            with pytest.raises(TraceUnavailable, match="not traced"):
                plain.run_traced("touch ran", SPEC)
            assert plain.run("test -e ran || echo absent").output.strip() == "absent"
        finally:
            plain.close()
    finally:
        sandbox.close()


@pytest.mark.parametrize("isolation", ["bwrap", "none"])
def test_the_trace_follows_children_by_the_tracers_pids(isolation):
    """A child's lines carry the tracer's pid for it; in a pid namespace of its own its parent's
    ``clone`` returns another number, read through ``--pidns-translation``: a test binary's child is
    a test process either way (``spawn:`` of what it starts)."""
    from tests.conftest import require_bwrap, require_tool

    require_tool("strace")
    if isolation == "bwrap":
        require_bwrap()
    sandbox = LocalSandbox(_task(), LocalSandboxConfig(isolation=isolation, trace=SPEC))
    try:
        sandbox.run('mkdir -p "$TMPDIR/b" && cp /bin/bash "$TMPDIR/b/x.test"', timeout=30)
        _, trace = sandbox.run_traced(""""$TMPDIR/b/x.test" -c '/bin/true; /bin/echo hi'""", SPEC)
        kinds, _ = TraceGuard().read_trace(_task(), sandbox, "", trace)
        assert {"spawn:true", "spawn:echo"} <= set(kinds), (kinds, trace.text[-2000:])
    finally:
        sandbox.close()


def test_ha_grade_reports_a_trace_taken_from_the_host(tmp_path):
    """Through the CLI: the gold patch of the Go task, graded by ``ha grade`` in the local sandbox,
    resolves, and its report says the run's OS trace was taken from the host, out of reach."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.conftest import require_bwrap, require_tool

    require_bwrap()
    require_tool("go")
    require_tool("strace")
    task = _task()
    preds, out = tmp_path / "preds.jsonl", tmp_path / "g"
    preds.write_text(json.dumps({"instance_id": task.instance_id, "model_name_or_path": "m",
                                 "model_patch": task.gold_patch}) + "\n")
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run([sys.executable, "-m", "ha_cli.main", "grade", "--suite", "mini", "--instances",
                           task.instance_id, "--predictions", str(preds), "--out", str(out)],
                          check=False, capture_output=True, text=True, timeout=300, cwd=root, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, PYTHONPATH=str(root)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    body = json.loads((out / "logs" / task.instance_id / "report.json").read_text())[task.instance_id]
    assert body["resolved"] and body["trace_from"] == "host", body
