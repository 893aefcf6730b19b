"""An OS-level trace of a Docker grading run that leaves the container as strace writes it.

The test command runs in a ``docker exec`` of its own whose process *is* strace (the host's, from
``TRACER_DIR``: ``tracer.py``), with no ``-o``: strace writes its trace to its own stderr, the exec's
stderr pipe, which the daemon carries to this host as frames of its own kind beside stdout's
(docker-py's ``demux``). The traced command's first act is ``exec 2>&1 </dev/null``, so no test
process holds that pipe; their output goes to stdout, the log. So the trace is never a file in the
container: nothing there can rewrite or truncate what strace already wrote, which has left.

What a process inside (root there, in strace's pid namespace, same uid, no capability) can still
do, and why the grader is not fooled by it:

- reach strace's pipe through ``/proc/<strace>/fd/2`` (to append lines, or to open it for reading
  and *steal* what strace writes: both measured on a plain strace), or ``ptrace`` strace itself:
  refused where strace is non-dumpable (``tracer.py``'s ``nodump.so``, preloaded when the host has a
  C compiler). Without it the trace is within reach (``HostTrace.reachable``: ``trace_from`` says
  ``docker stream, within reach``). Appended lines would only add anyway: a kind the gold run lacks
  is ``verdict_tampered``; a witness given both P and F fails ``witness.check``; lines that would
  join with or re-parent strace's own (a second ``<unfinished ...>`` for a pid, a ``resumed`` of
  another call, a child claimed by two parents, a prefix glued onto strace's next line) are
  ``trace_garbled`` (``ostrace._joined``, ``_parents``). Stolen lines are not seen.
- *kill* strace: the exec's exit status is strace's, told by the daemon, which nothing inside can
  write. The traced root shell always ends ``exit 0`` after the command, and strace exits with
  its root's status, so anything but 0 (a signal: 128+N; a killed root shell: strace re-raises its
  signal) is ``lost`` -> ``tracer_lost``, whatever lines were appended after the kill. The command's
  own status comes back as a trailer on stdout (``RC_MARK``), as forgeable as the status itself
  always was. (strace's seccomp filter outlives it: every traced call fails with ENOSYS after.)
- not closed: processes started in the container before the run (none in a grading container)
  are not traced; strace buffers its output (``-o``: blocks), so the last lines before a kill die
  with it (the kill is seen) (``docs/security.md``).

strace waits for every traced process, so after the command the root shell kills what the command
left running (started since the run began: boot-clock ticks, as ``DockerSandbox._kill_since``), else
a forgotten server would hold the run to its timeout.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from .hosttrace import HostTrace, TraceSpec, TraceUnavailable
from .shell import Captured, _feed, ansi_c_quote
from .tracer import NODUMP

ORIGIN = "docker stream"
"""``HostTrace.origin`` (and ``GradeReport.trace_from``) of a trace read from the exec's stream."""
RC_MARK = "HA_TRACED_RC"
_TRAILER = re.compile(rb"\n" + RC_MARK.encode() + rb" (\d+)\n\Z")


def traced_argv(tracer_dir: str, spec: TraceSpec, command: str, ticks: int, nodump: bool) -> list[str]:
    """The exec's argv: strace (through its own loader; ``nodump``: made non-dumpable, ``tracer.py``)
    over a root shell that moves fd 2 off the trace's pipe, runs ``command``, kills what it left,
    prints its status and exits 0."""
    reap = (f"for d in /proc/[0-9]*; do p=${{d#/proc/}}; [ \"$p\" = 1 ] || [ \"$p\" = $$ ] || [ \"$p\" = $PPID ] "
            f"&& continue; read -r s < \"$d/stat\" 2>/dev/null || continue; s=${{s##*) }}; set -- $s; "
            f"[ \"${{20}}\" -ge {ticks} ] 2>/dev/null && kill -9 \"$p\" 2>/dev/null; done")
    root = (f"exec 2>&1 </dev/null; bash -c {ansi_c_quote(command)}; rc=$?; {reap}; "
            f"printf '\\n{RC_MARK} %d\\n' \"$rc\"; exit 0")
    preload = ["--preload", f"{tracer_dir}/{NODUMP}"] if nodump else []
    return [f"{tracer_dir}/ld.so", *preload, "--library-path", tracer_dir, f"{tracer_dir}/strace", "-f", "-qq", "--seccomp-bpf",
            "-e", "status=successful", "-s", str(spec.string_limit), "-e", f"trace={spec.syscalls}", "-o", "/dev/stderr", "--",
            "bash", "--noprofile", "--norc", "-c", root]


@dataclass
class StreamRead:
    """What one traced exec sent: stdout (head and tail kept) and stderr (the trace, capped)."""

    spec: TraceSpec
    head: int
    tail: int
    out: Captured = field(default_factory=lambda: Captured(bytearray(), bytearray(), 0, None, False))
    trace: bytearray = field(default_factory=bytearray)
    trace_cut: bool = False
    error: BaseException | None = None

    def pump(self, stream: Any) -> None:
        """Read the demultiplexed stream to its end (run in a thread)."""
        try:
            for out, err in stream:
                if out:
                    _feed(self.out, out, self.head, self.tail)
                if err:
                    room = self.spec.max_bytes - len(self.trace)
                    self.trace += err[:max(room, 0)]
                    self.trace_cut |= len(err) > room
        except Exception as exc:  # noqa: BLE001 - the caller decides (a dropped connection: no trace)
            self.error = exc

    def start(self, stream: Any) -> threading.Thread:
        t = threading.Thread(target=self.pump, args=(stream,), daemon=True)
        t.start()
        return t


def finish(read: StreamRead, exit_code: int | None, timed_out: bool, nodump: bool = True) -> tuple[int | None, HostTrace]:
    """(the command's exit status, the trace) from a finished exec whose process was strace
    (``nodump``: a non-dumpable one; else its pipe was within the traced processes' reach).
    TraceUnavailable when strace never traced anything (it could not start its root here)."""
    text = bytes(read.trace).decode("utf-8", errors="backslashreplace")
    m = _TRAILER.search((bytes(read.out.head) + bytes(read.out.tail))[-64:])  # contiguous: a cut tail holds >= 64
    if m is None and exit_code != 0 and not timed_out and read.out.total == 0 and \
            not re.search(r"^\d+ ", text, re.M):
        raise TraceUnavailable(f"strace did not start in the container (status {exit_code}): {text[-300:]!r}")
    if m is not None:  # the root shell's trailer: the command's status, not part of its output
        n = len(m.group(0))
        from_tail = min(n, len(read.out.tail))
        del read.out.tail[len(read.out.tail) - from_tail:]
        del read.out.head[len(read.out.head) - (n - from_tail):]
        read.out.total -= n
    lost = not timed_out and (exit_code != 0 or m is None)
    status = int(m.group(1)) if m is not None and not lost else exit_code
    return status, HostTrace(text, read.trace_cut, lost, reachable=not nodump, origin=ORIGIN)
