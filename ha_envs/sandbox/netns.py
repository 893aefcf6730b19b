"""A network namespace of its own for a local sandbox with network on.

``bwrap --share-net`` puts the sandbox in the host's network namespace: concurrent gradings share
one loopback (test suites that bind a fixed port collide: redis in ``benchmarks/VALIDATION.md``),
and code under test reaches every service listening on the host's ``127.0.0.1``. Instead, bwrap
keeps the namespace it makes (``--unshare-all``: only a loopback of its own) and ``slirp4netns``
gives it a user-mode route out: a ``tap0`` device, NAT to the outside, and with
``--disable-host-loopback`` no way to the host's loopback. slirp4netns runs outside the sandbox, as
this process's child; it exits when the sandbox closes it, or when this process dies (``--exit-fd``:
the write end is ours).
"""

from __future__ import annotations

import ipaddress
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

from .base import SandboxError

SLIRP = "slirp4netns"
SLIRP_DNS = "10.0.2.3"
"""slirp4netns's own resolver inside the namespace (it forwards to the host's)."""


def available() -> bool:
    return shutil.which(SLIRP) is not None


def _net_ns(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def _children_map() -> dict[int, list[int]]:
    """parent pid -> its children, read from ``/proc/*/stat`` (``/proc/PID/task/*/children`` is
    not in every kernel)."""
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])  # after "(comm)": state, ppid
        out.setdefault(ppid, []).append(int(entry))
    return out


def namespace_pid(root: int, timeout: float = 10.0) -> int:
    """The first process under ``root`` (bwrap, or what enters its cgroup first) that lives in
    another network namespace than this one: the sandbox's."""
    mine = _net_ns("self")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        todo, seen, children = [root], set(), _children_map()
        while todo:
            pid = todo.pop(0)
            if pid in seen:
                continue
            seen.add(pid)
            ns = _net_ns(pid)
            if ns is not None and ns != mine:
                return pid
            todo += children.get(pid, [])
        time.sleep(0.01)
    raise SandboxError(f"the sandbox's network namespace did not appear within {timeout:.0f} s (process {root})")


class UserNet:
    """slirp4netns attached to the network namespace of ``pid``: its own loopback, a route out, no
    route to the host's loopback."""

    def __init__(self, pid: int, timeout: float = 10.0) -> None:
        ready_r, ready_w = os.pipe()
        self._exit_r, self._exit_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [SLIRP, "--configure", "--mtu=65520", "--disable-host-loopback", f"--ready-fd={ready_w}",
                 f"--exit-fd={self._exit_r}", str(pid), "tap0"],
                pass_fds=(ready_w, self._exit_r), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE)
        except OSError as exc:
            for fd in (ready_r, ready_w, self._exit_r, self._exit_w):
                os.close(fd)
            raise SandboxError(f"cannot start {SLIRP}: {exc}") from exc
        os.close(ready_w)
        os.close(self._exit_r)
        try:
            got, _, _ = select.select([ready_r], [], [], timeout)
            ok = bool(got) and os.read(ready_r, 1) == b"1"
        finally:
            os.close(ready_r)
        if not ok:
            err = self._stop()
            raise SandboxError(f"{SLIRP} did not bring up the sandbox's network within {timeout:.0f} s: {err[-500:]}")

    def _stop(self) -> str:
        if self._exit_w >= 0:
            os.close(self._exit_w)  # slirp4netns exits when this end closes
            self._exit_w = -1
        try:
            _, err = self.proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return (err or b"").decode(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None or self._exit_w >= 0:
            self._stop()


def resolv_conf(host: str = "/etc/resolv.conf") -> str | None:
    """A resolv.conf for the namespace when the host's names only loopback resolvers (which the
    namespace cannot reach): slirp4netns's resolver. None when the host's works as it is."""
    try:
        text = Path(host).read_text()
    except OSError:
        return None
    servers = [line.split()[1] for line in text.splitlines() if line.startswith("nameserver") and len(line.split()) > 1]
    try:
        if servers and not all(ipaddress.ip_address(s.split("%")[0]).is_loopback for s in servers):
            return None
    except ValueError:
        return None
    return f"nameserver {SLIRP_DNS}\n"
