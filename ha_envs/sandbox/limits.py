"""Process and memory limits for a local sandbox, and finding the processes it started.

Preferred: a cgroup per sandbox (v1 ``pids`` + ``memory`` hierarchies, or v2 with both
controllers), which bounds every descendant and lists them exactly. Fallback when no cgroup is
writable: rlimits (address space; process count, which the kernel enforces only inside a user
namespace for root), with a one-time warning.
"""

from __future__ import annotations

import logging
import os
import resource
import signal
import time
import uuid
from pathlib import Path
from typing import Callable

log = logging.getLogger(__name__)
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def now_ticks() -> int:
    """Current time in the unit of /proc/<pid>/stat's starttime (clock ticks of CLOCK_BOOTTIME)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _CLK_TCK)


def proc_stat(pid: int) -> tuple[int, int] | None:
    """(session id, start time in ticks) of a process, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    # fields[0] is state (field 3); session is field 6, starttime field 22.
    return int(fields[3]), int(fields[19])


class Limits:
    """Resource limits for one sandbox; ``pids()`` lists every process under them."""

    _warned = False

    def __init__(self, memory_bytes: int, max_pids: int, session_id_hint: str = "",
                 file_bytes: int | None = None) -> None:
        self.memory_bytes = memory_bytes
        self.max_pids = max_pids
        self.file_bytes = file_bytes
        """RLIMIT_FSIZE for every process (the largest file one may write); None: unlimited."""
        # the owner's pid in the name: reaper.py removes a killed run's cgroups
        self.name = f"harnessadapt-{os.getpid()}-{session_id_hint or uuid.uuid4().hex[:12]}"
        self.dirs: list[Path] = []
        self._oom_file: Path | None = None
        self.procs_file: Path | None = None
        self.pids_current: Path | None = None
        self._setup_cgroups()
        if not self.dirs and not Limits._warned:
            Limits._warned = True
            log.warning("no writable cgroup: the local sandbox limits memory and processes with rlimits only")

    @property
    def uses_cgroup(self) -> bool:
        return bool(self.dirs)

    def _setup_cgroups(self) -> None:
        own = _own_cgroups()
        v1_pids, v1_mem = Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup/memory")
        try:
            if (v1_pids / "cgroup.procs").exists() and (v1_mem / "cgroup.procs").exists():
                pids_dir = _mkcg(v1_pids, own.get("pids", "/"), self.name)
                mem_dir = _mkcg(v1_mem, own.get("memory", "/"), self.name)
                (pids_dir / "pids.max").write_text(str(self.max_pids))
                (mem_dir / "memory.limit_in_bytes").write_text(str(self.memory_bytes))
                self.dirs = [pids_dir, mem_dir]
                self.procs_file = pids_dir / "cgroup.procs"
                self.pids_current = pids_dir / "pids.current"
                return
            root = Path("/sys/fs/cgroup")
            if (root / "cgroup.controllers").exists():
                parent = root / own.get("", "/").lstrip("/")
                enabled = (parent / "cgroup.subtree_control").read_text().split()
                if "pids" in enabled and "memory" in enabled:
                    cg = parent / self.name
                    cg.mkdir(exist_ok=True)
                    (cg / "pids.max").write_text(str(self.max_pids))
                    (cg / "memory.max").write_text(str(self.memory_bytes))
                    (cg / "memory.swap.max").write_text("0") if (cg / "memory.swap.max").exists() else None
                    self.dirs = [cg]
                    self.procs_file = cg / "cgroup.procs"
                    self.pids_current = cg / "pids.current"
        except OSError as exc:
            log.debug("cgroup setup failed: %s", exc)
            self.release()

    def enter_prefix(self) -> list[str]:
        """argv prefix that moves the new process into the cgroups before it execs."""
        if not self.dirs:
            return []
        moves = "; ".join(f"echo $$ > {d / 'cgroup.procs'}" for d in self.dirs)
        return ["/bin/sh", "-c", f"{moves}; exec \"$@\"", "ha-enter"]

    def preexec(self) -> None:
        """rlimits applied in the child: the file size cap always, memory and processes when no
        cgroup is available (the fallback)."""
        if self.file_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_bytes, self.file_bytes))
        if not self.dirs:
            resource.setrlimit(resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes))
            resource.setrlimit(resource.RLIMIT_NPROC, (self.max_pids, self.max_pids))

    def oom_kills(self) -> int:
        """How many processes the memory limit has killed so far (0 when unknown); the file that
        holds the counter is found once and then read alone."""
        files = [self._oom_file] if self._oom_file is not None else [
            d / name for d in self.dirs for name in ("memory.oom_control", "memory.events")]
        for f in files:
            try:
                text = f.read_text()
            except OSError:
                continue
            for line in text.splitlines():
                k, _, v = line.partition(" ")
                if k == "oom_kill":
                    self._oom_file = f
                    return int(v)
        return 0

    def at_pid_limit(self) -> bool:
        """The process limit is (nearly) full now, or refused a fork since the last check (the
        cgroup's ``pids.events`` counter: a fork bomb that is thinning out still counts)."""
        if self.pids_current is None:
            return False
        try:
            if int(self.pids_current.read_text()) >= self.max_pids - 2:
                return True
            events = self.pids_current.with_name("pids.events")
            if not events.exists():
                return False
            refused = int(events.read_text().split()[1])
        except (OSError, ValueError, IndexError):
            return False
        hit, self._refused = refused > getattr(self, "_refused", 0), refused
        return hit

    def pids(self, session_id: int | None = None) -> list[int]:
        """Processes under these limits: the cgroup's members, else the session's members."""
        if self.procs_file is not None:
            try:
                return [int(p) for p in self.procs_file.read_text().split()]
            except OSError:
                return []
        if session_id is None:
            return []
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                st = proc_stat(int(entry))
                if st and st[0] == session_id:
                    found.append(int(entry))
        return found

    def kill_started_since(self, ticks: int, session_id: int | None, spare: set[int]) -> int:
        """SIGKILL every process under the limits started at or after ``ticks``, except ``spare``."""
        killed = 0
        for _ in range(500):  # repeat: a dying fork bomb can still fork a few
            victims = []
            for pid in self.pids(session_id):
                st = proc_stat(pid)
                if pid not in spare and st and st[1] >= ticks:
                    victims.append(pid)
            if not victims:
                break
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
            time.sleep(0.002)
        return killed

    def release(self) -> None:
        """Kill what is left in the cgroups and remove them."""
        for d in self.dirs:
            empty_and_remove(d)
        self.dirs = []
        self.procs_file = None
        self.pids_current = None


def empty_and_remove(cg: Path, wait_s: float = 10.0) -> bool:
    """Kill every process in cgroup ``cg`` and remove it; True once it is gone. A killed process
    leaves its cgroup only when the kernel has reaped it, so an ``rmdir`` right after ``SIGKILL``
    can meet ``EBUSY`` on a loaded machine: this waits (up to ``wait_s``) for the cgroup to empty."""
    kill_file = cg / "cgroup.kill"
    if kill_file.exists():
        try:
            kill_file.write_text("1")
        except OSError:
            pass
    deadline = time.monotonic() + wait_s
    while True:
        try:
            pids = [int(p) for p in (cg / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return True
        except OSError:
            pids = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            cg.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            if time.monotonic() >= deadline:
                log.debug("cannot remove cgroup %s: %s", cg, exc)
                return False
        time.sleep(0.02)


class DiskWatch:
    """A disk quota on directories no filesystem quota covers (the work copy).

    Walking a large tree after every command would cost more than the command; instead the free
    space of the filesystem holding it is read (one ``statvfs``), and only when it fell by more
    than the room left under the quota is the real usage measured (``measure``, bytes). So the
    quota holds to within what a command writes between two polls (RLIMIT_FSIZE bounds any single
    file at the quota)."""

    def __init__(self, fs_path: str, measure: Callable[[], int], quota_bytes: int, used: int | None = None) -> None:
        """``used``: the usage now when the caller knows it (a fresh copy of a measured snapshot)."""
        self.fs_path = fs_path
        self.measure = measure
        self.quota = quota_bytes
        self.used = measure() if used is None else used
        self._free = self._free_now()

    def _free_now(self) -> int:
        try:
            st = os.statvfs(self.fs_path)
        except OSError:
            return 0
        return st.f_bavail * st.f_frsize

    def check(self) -> str | None:
        """None while under the quota, else the reason to stop (usage re-measured when in doubt)."""
        free = self._free_now()
        if self._free - free <= self.quota - self.used:
            return None
        self.used, self._free = self.measure(), free
        if self.used > self.quota:
            return (f"disk quota ({self.quota >> 20} MiB) exceeded: the work copy and temporary files "
                    f"hold {self.used >> 20} MiB; delete files to go on")
        return None


def tree_bytes(*roots: str) -> int:
    """Bytes allocated under ``roots`` (symlinks not followed, each inode counted once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in filenames + dirnames:
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return total


def _own_cgroups() -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(","):
                out[c] = path
    except OSError:
        pass
    return out


def _mkcg(mount: Path, own: str, name: str) -> Path:
    parent = mount / own.lstrip("/")
    if not parent.is_dir():
        parent = mount
    cg = parent / name
    cg.mkdir(exist_ok=True)
    return cg
