"""The OS trace of a Docker grading run, taken from the exec's stream (``sandbox/dockertrace.py``):
forgeries that rewrite the trace, append to it or kill the tracer, in real containers of the
bundled Go task; the bundled Go, Rust and JavaScript tasks' gold patches graded in Docker; and the
parser's and the stream's rules on appended lines and a tracer's end, on written text."""

from __future__ import annotations

import pytest

from ha_envs.grading.grader import Grader
from ha_envs.grading.ostrace import record
from ha_envs.grading.sandboxes import docker_sandbox_factory
from ha_envs.sandbox import dockertrace
from ha_envs.sandbox.hosttrace import TraceSpec, TraceUnavailable

from .test_abuse_escapes import assert_graded_zero

GO_MUTE_TRACER = '''package money

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// muteTracer appends well-formed lines (and the root shell's trailer) to the tracer's own output
// through /proc/<tracer>/fd/2, then kills the tracer: what the binary does next is not traced.
func muteTracer() {
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\\n") {
		if !strings.HasPrefix(line, "TracerPid:") {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "TracerPid:")))
		if pid <= 0 {
			return
		}
		if f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/fd/2", os.O_WRONLY, 0); err == nil {
			_, _ = f.WriteString("1 getpid() = 1\\n1 +++ exited with 0 +++\\n")
			_ = f.Close()
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		time.Sleep(200 * time.Millisecond)
	}
}
'''


def _go():
    from tests.ha_envs.test_real_envs import require_docker
    from tests.conftest import require_tool

    require_docker()
    require_tool("strace")
    from ha_envs.loaders import load_suite

    return next(t for t in load_suite("mini") if t.instance_id == "mini__go_ledger")


def _reexec_patch(task, tmp_path, before_child: str, extra: dict[str, str]) -> str:
    """The Go re-run forgery (``spawn:test-binary``), with ``before_child`` called first and ``after``."""
    from .test_abuse_inproc import _patch
    from .verdict_payloads import GO_REEXEC

    reexec = GO_REEXEC.replace("\tchild := exec.Command", f"\t{before_child}\n\tchild := exec.Command") \
        if before_child else GO_REEXEC.replace("\t_ = child.Wait()\n\tos.Exit(0)",
                                               "\t_ = child.Wait()\n\twipeTrace()\n\tos.Exit(0)")
    assert reexec != GO_REEXEC
    return _patch(task.source_dir, {"money/zz_locale.go": reexec, **extra}, {}, tmp_path)


def test_a_trace_rewritten_into_well_formed_lines_earns_nothing_in_docker(tmp_path, monkeypatch):
    """``WELL_FORMED`` (the re-run forgery overwrites the trace file, through a symlink of its own,
    with lines as strace writes them): against the trace as a file in the grading container
    (``run_traced`` unavailable: ``ostrace.wrap``, grader 17's Docker path) it earns 1.0 with the
    canaries off; from the exec's stream there is no file to rewrite, and the re-run stays seen."""
    from ha_envs.sandbox.docker import DockerSandbox

    from .inproc_payloads import WELL_FORMED

    task = _go()
    patch = _reexec_patch(task, tmp_path, "", {"money/zz_cache.go": WELL_FORMED})
    report = Grader(docker_sandbox_factory(), canaries=False).grade(task, patch)
    assert_graded_zero(report)
    assert report.status == "verdict_tampered" and "spawn:test-binary" in report.watch, (report.status, report.watch)
    assert report.trace_from == "docker stream" and "trace_garbled" not in report.watch, report.watch

    def no_stream(self, *a, **k):
        raise TraceUnavailable("the old path, for the comparison")

    monkeypatch.setattr(DockerSandbox, "run_traced", no_stream)
    old = Grader(docker_sandbox_factory(), canaries=False).grade(task, patch)
    assert old.reward == 1.0 and old.trace_from == "sandbox, within reach", (old.status, old.watch, old.tampering)


def test_killing_the_tracer_in_docker_is_tampering(tmp_path):
    """The test binary tries to append well-formed lines to strace's output (``/proc/<strace>/fd/2``:
    refused, strace is non-dumpable) and kills strace before it re-runs itself: the exec's status, told by the daemon, is strace's 137,
    not the root shell's 0 -> ``tracer_lost``, whatever was appended. (The run cripples itself as
    well: strace's seccomp filter outlives it, and every traced call, ``openat`` and ``execve``
    among them, then fails with ENOSYS, so the go command's next builds fail: reward 0 either way,
    ``unresolved`` or ``verdict_tampered``; the status check alone is what
    ``test_the_tracer_s_end_is_told_by_the_exec_status_not_by_the_stream`` holds.)"""
    task = _go()
    patch = _reexec_patch(task, tmp_path, "muteTracer()", {"money/zz_tracer.go": GO_MUTE_TRACER})
    report = Grader(docker_sandbox_factory(), canaries=False).grade(task, patch)
    assert_graded_zero(report)
    assert report.status in ("verdict_tampered", "unresolved") and "tracer_lost" in report.watch, \
        (report.status, report.watch)
    assert "spawn:test-binary" not in report.watch, report.watch  # killed before the re-run
    assert report.trace_from == "docker stream"


@pytest.mark.parametrize("iid", ["mini__go_ledger", "mini__rust_intervals", "mini__js_template"])
def test_gold_patches_in_docker_are_resolved_with_the_stream_trace(iid):
    from tests.ha_envs.test_real_envs import require_docker
    from tests.conftest import require_tool

    require_docker()
    require_tool("strace")
    from ha_envs.loaders import load_suite

    task = next(t for t in load_suite("mini") if t.instance_id == iid)
    report = Grader(docker_sandbox_factory()).grade(task, task.gold_patch)
    assert report.resolved and report.reward == 1.0 and not report.tampering, (report.status, report.tampering)
    assert report.trace_from == "docker stream"
    assert not {"tracer_lost", "trace_garbled", "trace_cut"} & set(report.watch), report.watch


_REACH = r"""s=$(sed -n 's/^TracerPid:\t//p' /proc/$$/status)
echo "forged-$((40 + 2))" > /proc/$s/fd/2 && echo APPENDED
(for i in $(seq 400); do /bin/true; done) & timeout 3 cat /proc/$s/fd/2 > /tmp/stolen; wait
wc -c < /tmp/stolen | sed 's/^/STOLEN /'
"""
_SEIZE = """python3 -c "import ctypes; print('PTRACE', ctypes.CDLL(None).ptrace(0x4206, $s, 0, 0))"
"""
"""Only against the non-dumpable strace: seized by the python that it traces, a plain strace and
its tracee wait on each other until the run's timeout."""


@pytest.mark.parametrize("nodump", [True, False], ids=["non-dumpable", "plain-strace"])
def test_a_test_process_cannot_reach_strace_s_pipe(nodump, monkeypatch):
    """A process of the traced run looks strace up (``TracerPid``) and tries its output pipe through
    ``/proc/<strace>/fd/2``: append a line, read (steal) what strace writes; ptrace-seize strace.
    With ``nodump.so`` preloaded (``tracer.py``) each is refused and the trace is whole; a plain strace
    (the control) lets the first two through: the pipe is then within reach (``trace_from`` says so;
seizing it froze the run there, measured, so the control does not try)."""
    from ha_envs.grading.ostrace import TRACED
    from ha_envs.sandbox import tracer
    from ha_envs.sandbox.docker import DockerSandbox, DockerSandboxConfig

    task = _go()
    if not nodump:
        plain = {h: n for h, n in tracer.tracer_files().items() if n != tracer.NODUMP}
        monkeypatch.setattr(tracer, "tracer_files", lambda: plain)
    assert (tracer.NODUMP in tracer.tracer_files().values()) == nodump
    sandbox = DockerSandbox(task, DockerSandboxConfig(warm=0), role="grader")
    try:
        res, trace = sandbox.run_traced(_REACH + (_SEIZE if nodump else ""), TraceSpec(TRACED), timeout=120)
    finally:
        sandbox.close()
    assert res.exit_code == 0 and not trace.lost and trace.reachable != nodump, (res.output, trace.lost)
    stolen = int(res.output.split("STOLEN ", 1)[1].split()[0])
    if nodump:
        assert "APPENDED" not in res.output and "forged-42" not in trace.text and stolen == 0, res.output
        assert "PTRACE -1" in res.output, res.output
        assert trace.text.count('execve("/bin/true"') == 400, trace.text[-2000:]  # none stolen
    else:
        assert "APPENDED" in res.output and "forged-42" in trace.text, res.output
        assert stolen > 0 and trace.text.count('execve("/bin/true"') < 400, res.output  # lines taken out


# -- appended lines only add; the tracer's end is the daemon's word ------------------------------

_GO = '10 execve("/usr/bin/go", ["go", "test"], 0x1 /* 3 vars */) = 0\n10 clone(child_stack=NULL, flags=SIGCHLD) = 11\n' \
    '11 execve("/tmp/go-build1/b001/money.test", ["money.test"], 0x1 /* 3 vars */) = 0\n'
_AWK = '12 execve("/usr/bin/awk", ["awk"], 0x1 /* 3 vars */'
_CLONE = "11 clone(child_stack=NULL, flags=SIGCHLD) = 12\n"
_FORGED = {  # (the trace with a line appended by the test binary, the trace without it)
    "second-unfinished": (f"{_AWK} <unfinished ...>\n" '12 openat(AT_FDCWD, "x", O_RDONLY <unfinished ...>\n'
                          "12 <... execve resumed>) = 0\n" + _CLONE),
    "resumed-other-call": f"{_AWK} <unfinished ...>\n12 <... openat resumed>) = 3\n12 <... execve resumed>) = 0\n{_CLONE}",
    "child-claimed-twice": f"10 clone(child_stack=NULL, flags=SIGCHLD) = 12\n{_AWK}) = 0\n{_CLONE}",
    "prefix-glued": f"99 {_AWK}) = 0\n{_CLONE}",
}


@pytest.mark.parametrize("form", sorted(_FORGED))
def test_lines_appended_to_the_stream_cannot_hide_a_real_one(form):
    """The test binary's child starts awk (printed before its parent's ``clone`` returns, as strace
    often does): ``spawn:awk``. A line appended where it would hide that spawn, or join with
    strace's own lines, is ``trace_garbled``, an alarm no gold run raises."""
    assert record(_GO + f"{_AWK}) = 0\n{_CLONE}", (), "") == ["spawn:awk"]
    assert "trace_garbled" in record(_GO + _FORGED[form], (), ""), form


def test_an_abandoned_call_glued_to_the_next_line_is_strace_s_own():
    """Seen in Go builds: ``PID ???(`` and another pid's line straight after it; the glued line
    is read, and nothing is garbled."""
    text = _GO + f"{_CLONE}11 ???({_AWK}) = 0\n"
    assert record(text, (), "") == ["spawn:awk"]


def _read(out: bytes, trace: bytes) -> dockertrace.StreamRead:
    read = dockertrace.StreamRead(TraceSpec("execve"), 1 << 20, 1 << 20)
    read.pump([(out, None), (None, trace)])
    return read


def test_the_tracer_s_end_is_told_by_the_exec_status_not_by_the_stream():
    ok_status, ok = dockertrace.finish(_read(b"PASS\n\nHA_TRACED_RC 3\n", b"5 execve() = 0\n"), 0, False)
    assert (ok_status, ok.lost, ok.origin, ok.reachable) == (3, False, "docker stream", False)
    assert dockertrace.finish(_read(b"\nHA_TRACED_RC 0\n", b"5 execve() = 0\n"), 0, False, nodump=False)[1].reachable
    # strace killed (137); the forgery's trailer and lines are all there: still lost
    status, killed = dockertrace.finish(_read(b"PASS\n\nHA_TRACED_RC 0\n", b"5 execve() = 0\n1 +++ exited with 0 +++\n"),
                                        137, False)
    assert killed.lost and status == 137
    # a root shell that never printed its trailer (killed): lost even with status 0
    assert dockertrace.finish(_read(b"PASS\n", b"5 execve() = 0\n"), 0, False)[1].lost
    # timed out: the grader killed everything itself; the run is tests_timed_out, not tampering
    assert not dockertrace.finish(_read(b"", b"5 execve() = 0\n"), 137, True)[1].lost
    with pytest.raises(TraceUnavailable):  # strace could not start its root: nothing ran
        dockertrace.finish(_read(b"", b"strace: ptrace(PTRACE_TRACEME, ...): Operation not permitted\n"), 1, False)


def test_the_trailer_is_cut_from_the_log():
    read = _read(b"ok  \texample.com/x\t0.01s\n\nHA_TRACED_RC 0\n", b"5 execve() = 0\n")
    dockertrace.finish(read, 0, False)
    assert bytes(read.out.head) == b"ok  \texample.com/x\t0.01s\n" and read.out.total == len(read.out.head)


def test_the_disk_quota_stops_a_traced_run_too():
    """The traced exec is held to the work copy's quota as ``run`` is: polled while it runs (a
    writer past it is killed) and measured at its end; said in a note either way, and a tracer
    killed for it is the host's doing (no ``lost``)."""
    from ha_envs.grading.ostrace import TRACED
    from ha_envs.sandbox.docker import DockerSandbox, DockerSandboxConfig

    task = _go()
    sandbox = DockerSandbox(task, DockerSandboxConfig(warm=0, disk_bytes=64 << 20), role="grader")
    try:
        writer = "for i in $(seq 40); do head -c 8000000 /dev/zero > f$i.bin; sleep 0.2; done; echo finished"
        res, trace = sandbox.run_traced(writer, TraceSpec(TRACED), timeout=120)
    finally:
        sandbox.close()
    assert any("disk quota (64 MiB) exceeded" in n for n in res.notes), (res.notes, res.output)
    assert "finished" not in res.output and not trace.lost and not res.timed_out, res  # killed on the way
