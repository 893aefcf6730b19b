"""An OS-level trace of one sandboxed command, taken from outside the sandbox.

For the traced command the sandbox's persistent shell is started anew as a child of this host's
``strace`` (``strace -f --seccomp-bpf ... -o HOSTFILE -- bwrap ... bash``: ``ShellTrace.prefix``),
and the command is its first; strace follows everything it starts, and the trace up to the
command's end is read back (``ShellTrace.read``). The tracer and its file stay on the host:

- the file is in a fresh ``0700`` folder of the host's temporary directory, which no sandbox mounts
  (bubblewrap's ``/tmp`` is a private tmpfs), so the traced processes cannot find, read or rewrite it;
- the tracer runs in a pid namespace above the sandbox's (its own under bubblewrap, below), which
  the traced processes cannot see or signal; a tracee cannot detach itself, and nothing of the command runs before strace
  traces it (it starts the shell itself);
- bubblewrap dies with its parent (``--die-with-parent``), now strace: no tracer, no sandbox. A
  tracer that ended by a signal during the command is reported (``HostTrace.lost``).

Strace starts the shell, so it can use ``--seccomp-bpf`` (only the traced calls stop the processes).
Under bubblewrap it runs in a pid namespace of its own (``ShellTrace.prefix``), above the sandbox's.
Unisolated (the local sandbox without bubblewrap) the test processes run as this host's user in
its pid namespace: they can see and signal the tracer and read the host's temporary directory, so
there the trace is out of reach of nothing (``docs/security.md``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass


class TraceUnavailable(RuntimeError):
    """The host cannot trace this sandbox from outside (no strace, or a shell under it does not
    come up: no ptrace permission); nothing of the command ran."""


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
    """The tracer ended by a signal while the command ran (killed): what the command did after that
    is not in ``text``."""
    reachable: bool = False
    """The traced processes could reach the tracer and its file (an unisolated sandbox), or its
    output pipe (Docker without ``nodump.so``: ``tracer.py``)."""
    origin: str = "host"
    """Where it was taken: "host" (a host strace's file, above), or "docker stream" (a strace in a
    grading container writing to the exec's stream, ``dockertrace.py``)."""


def strace_binary() -> str | None:
    return shutil.which("strace")


class ShellTrace:
    """The host side of one traced shell: strace's argv prefix, and its file, read from an offset
    through a descriptor opened before strace starts (so a shell that died, its folder removed,
    can still be read)."""

    def __init__(self, spec: TraceSpec) -> None:
        self.spec = spec
        self.dir = tempfile.mkdtemp(prefix="ha-trace-")  # 0700
        self.out = os.path.join(self.dir, "trace")
        with open(self.out, "wb"):
            pass
        self.file = open(self.out, "rb")  # noqa: SIM115  (held for the shell's life)
        self.reading = False

    def prefix(self, pid_namespace: bool = False) -> list[str]:
        """``strace ... --``, to put before the shell's argv; TraceUnavailable without strace.
        ``pid_namespace`` (the shell makes one of its own: bubblewrap): strace runs as the first
        process of a pid namespace of its own with its own ``/proc`` (``unshare``, when installed),
        where reading a tracee's pid as strace's (``--pidns-translation``) scans a handful of
        processes instead of the host's hundreds (0.6 s against 2.7-4.9 s for the Rust task's tests)."""
        strace = strace_binary()
        if strace is None:
            raise TraceUnavailable("strace is not installed on this host")
        unshare = shutil.which("unshare") if pid_namespace else None
        return ([unshare, "--pid", "--fork", "--mount-proc", "--kill-child"] if unshare else []) + [strace, "-f", "--seccomp-bpf", "-qq", "--pidns-translation", "-e", "status=successful",
                "-s", str(self.spec.string_limit), "-e", f"trace={self.spec.syscalls}", "-o", self.out, "--"]

    def size(self) -> int:
        return os.fstat(self.file.fileno()).st_size

    def read(self, start: int, lost: bool, reachable: bool) -> HostTrace:
        """The trace from byte ``start`` (strace writes each line as it handles the call)."""
        self.file.seek(start)
        data = self.file.read(self.spec.max_bytes + 1)
        cut = len(data) > self.spec.max_bytes
        return HostTrace(data[:self.spec.max_bytes].decode("utf-8", errors="backslashreplace"), cut, lost, reachable)

    def discard(self) -> None:
        """Remove the folder; the descriptor too unless a command's trace is being read."""
        shutil.rmtree(self.dir, ignore_errors=True)
        if not self.reading:
            self.file.close()
