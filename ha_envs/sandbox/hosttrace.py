"""An OS-level trace of one sandboxed command, taken from outside the sandbox.

The sandbox's persistent shell is a process of this host (bubblewrap's bash, a ``docker exec``'d
bash: its pid in the host's pid namespace). Before the command is sent, the host's ``strace``
attaches to that shell (``strace -f -p PID``) and follows everything the command starts; after the
command it detaches (``SIGINT``) and the trace is read back. The tracer and its file stay on the host:

- the file is in a fresh ``0700`` folder of the host's temporary directory, which no sandbox mounts
  (bubblewrap's ``/tmp`` is a private tmpfs; a container sees only its own), so the traced
  processes cannot find, read or rewrite it;
- the tracer runs in the host's pid namespace, which the traced processes (in the sandbox's pid
  namespace) cannot see or signal; a tracee cannot detach itself;
- a tracer that ended before it was told to (killed, crashed) while the shell it traced lives on
  is reported (``HostTrace.lost``) instead of read as a quiet run.

Nothing of the command runs before the tracer is attached: the command is written to the shell
only after strace reports the attach (``Process N attached``), and the shell then stops at strace's
``PTRACE_INTERRUPT`` before it reads it. strace cannot use ``--seccomp-bpf`` when it attaches (a
seccomp filter is installed by the traced process itself, before ``execve``), so every system call
of the traced processes stops them, not only the traced ones: about twice the time of the in-sandbox
trace on a Go or Rust test run (``benchmarks/RESULTS.md``).

Unisolated (the local sandbox without bubblewrap) the test processes run as this host's user in
its pid namespace: they can see and signal the tracer and read the host's temporary directory, so
there the trace is out of reach of nothing (``docs/security.md``).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class TraceUnavailable(RuntimeError):
    """The host cannot trace this sandbox from outside (no strace, no ptrace permission, the
    shell's host pid unknown); nothing of the command ran."""


@dataclass(frozen=True)
class TraceSpec:
    """What to trace: strace's ``-e trace=`` list and how much of the trace to read back."""

    syscalls: str
    string_limit: int = 512
    max_bytes: int = 48 << 20


@dataclass(frozen=True)
class HostTrace:
    """A command's trace as the host's strace wrote it."""

    text: str
    truncated: bool
    """The trace was longer than ``TraceSpec.max_bytes`` and was cut there."""
    lost: bool
    """The tracer ended before the command did while the traced shell lived on (killed or crashed):
    what the command did after that is not in ``text``."""
    reachable: bool = False
    """The traced processes could reach the tracer and its file (an unisolated sandbox)."""


def strace_binary() -> str | None:
    return shutil.which("strace")


def status_field(pid: int, name: str) -> str | None:
    """A field of ``/proc/PID/status`` (``TracerPid``, ``NSpid``, ``PPid``); None when gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def _start_ticks(pid: int) -> int:
    """When ``pid`` started (clock ticks since boot); a huge number when it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 1 << 62


def descendant_named(pid: int, comm: str, depth: int = 4) -> int | None:
    """The first process named ``comm`` at or below ``pid`` going down by each process's oldest
    child (bubblewrap's bash under its two bwraps: a process the commands left behind, reparented
    to the sandbox's pid 1, started after the shell, whatever its name)."""
    for _ in range(depth + 1):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == comm:
                return pid
            children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        except (OSError, ValueError):
            return None
        if not children:
            return None
        pid = min(children, key=_start_ticks)
    return None


class HostTracer:
    """``strace -f -p PID`` into a host file, for the span of one command (``attach``, ``finish``)."""

    def __init__(self, pid: int, spec: TraceSpec) -> None:
        self.pid, self.spec = pid, spec
        self.dir = tempfile.mkdtemp(prefix="ha-trace-")  # 0700
        self.out = os.path.join(self.dir, "trace")
        self.proc: subprocess.Popen[bytes] | None = None

    def attach(self, wait_s: float = 15.0) -> None:
        """Start strace on the shell and return once it is attached; TraceUnavailable otherwise."""
        strace = strace_binary()
        if strace is None:
            self.discard()
            raise TraceUnavailable("strace is not installed on this host")
        argv = [strace, "-f", "--pidns-translation", "-e", "status=successful", "-s", str(self.spec.string_limit),
                "-e", f"trace={self.spec.syscalls}", "-o", self.out, "-p", str(self.pid)]
        try:
            with open(os.path.join(self.dir, "stderr"), "wb") as err:
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                             start_new_session=True)
        except OSError as exc:
            self.discard()
            raise TraceUnavailable(f"cannot start strace: {exc}") from exc
        deadline = time.monotonic() + wait_s
        said = b""
        while time.monotonic() < deadline:
            said = Path(self.dir, "stderr").read_bytes()
            if f"Process {self.pid} attached".encode() in said and \
                    status_field(self.pid, "TracerPid") == str(self.proc.pid):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.005)
        self.discard()
        raise TraceUnavailable(f"strace could not attach to pid {self.pid}: "
                               f"{said.decode(errors='replace').strip()[-300:] or 'no answer'}")

    def finish(self) -> HostTrace:
        """Detach, read the trace back and remove it."""
        assert self.proc is not None
        ended_early = self.proc.poll() is not None
        lost = ended_early and (self.proc.returncode < 0 or os.path.exists(f"/proc/{self.pid}"))
        if not ended_early:
            self.proc.send_signal(signal.SIGINT)  # strace detaches from every tracee and exits
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                lost = True
        try:
            with open(self.out, "rb") as f:
                data = f.read(self.spec.max_bytes + 1)
        except OSError:
            data = b""
        self.discard()
        cut = len(data) > self.spec.max_bytes
        return HostTrace(data[:self.spec.max_bytes].decode("utf-8", errors="backslashreplace"), cut, lost)

    def discard(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_traced(sandbox: Any, host_pid: Callable[[], int | None], command: str, spec: TraceSpec,
               timeout: float | None, head_bytes: int | None, tail_bytes: int | None,
               reachable: bool = False) -> tuple[Any, HostTrace]:
    """``sandbox.run(command)`` with its shell traced from this host for the span of the command:
    (its RunResult, the trace). ``host_pid``: the shell's pid on this host, None when unknown.
    TraceUnavailable (nothing ran) when the host cannot trace it."""
    up = sandbox.run(":", timeout=60)  # the shell up (started, or restarted after a death) before the attach
    pid = host_pid()
    if pid is None:
        raise TraceUnavailable("the sandbox shell's pid on this host is unknown")
    tracer = HostTracer(pid, spec)
    tracer.attach()
    try:
        result = sandbox.run(command, timeout, head_bytes, tail_bytes)
    except BaseException:
        tracer.discard()
        raise
    trace = tracer.finish()
    if up.notes:  # what the sandbox did before the command (a dead shell replaced) is the command's to report
        result = dataclasses.replace(result, notes=tuple(up.notes) + tuple(result.notes))
    return result, dataclasses.replace(trace, reachable=reachable)
