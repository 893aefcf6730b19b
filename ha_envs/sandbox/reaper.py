"""Leftovers of killed runs: the local sandbox's temporary directories and cgroups carry the pid of
the process that made them (``ha-sbx-<pid>-*``, ``ha-grade-<pid>-*``, cgroup ``harnessadapt-<pid>-*``);
the first local sandbox of a process removes those whose owner is gone, as the Docker sandbox does
for containers. A ``kill -9`` of a run so leaves nothing behind for long."""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

from .limits import _own_cgroups, empty_and_remove

log = logging.getLogger(__name__)
_OWNED = re.compile(r"^(?:ha-sbx|ha-grade|ha-watch)-(\d+)-")
_CGROUP = re.compile(r"^harnessadapt-(\d+)-")
_done = False
_lock = threading.Lock()


def owned_prefix(kind: str) -> str:
    """The temporary-directory prefix for this process (``kind``: ``ha-sbx`` or ``ha-grade``)."""
    return f"{kind}-{os.getpid()}-"


def pid_alive(pid: int) -> bool:
    """Whether a process of this host with that pid exists (one we may not signal counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cgroup_dirs() -> list[Path]:
    """Where this package's cgroups can be: the v1 pids/memory hierarchies and the v2 tree, at the
    top and under this process's own cgroup."""
    own = _own_cgroups()
    roots = []
    for ctrl, mount in (("pids", Path("/sys/fs/cgroup/pids")), ("memory", Path("/sys/fs/cgroup/memory")),
                        ("", Path("/sys/fs/cgroup"))):
        if mount.is_dir():
            roots += [mount, mount / own.get(ctrl, "/").lstrip("/")]
    return list(dict.fromkeys(p for p in roots if p.is_dir()))


def reap(tmp: str | None = None) -> dict[str, int]:
    """Remove dead owners' directories and cgroups now; returns how many of each."""
    removed = {"dirs": 0, "cgroups": 0}
    root = Path(tmp or tempfile.gettempdir())
    try:
        entries = list(root.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        m = _OWNED.match(entry.name)
        if m and int(m.group(1)) != os.getpid() and not pid_alive(int(m.group(1))) and entry.is_dir() \
                and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed["dirs"] += 1
    for parent in _cgroup_dirs():
        try:
            children = [c for c in parent.iterdir() if c.is_dir()]
        except OSError:
            continue
        for cg in children:
            m = _CGROUP.match(cg.name)
            if not m or int(m.group(1)) == os.getpid() or pid_alive(int(m.group(1))):
                continue
            if empty_and_remove(cg):
                removed["cgroups"] += 1
    if removed["dirs"] or removed["cgroups"]:
        log.info("removed leftovers of dead runs: %d directories, %d cgroups", removed["dirs"], removed["cgroups"])
    return removed


def reap_once() -> None:
    global _done
    with _lock:
        if not _done:
            _done = True
            reap()
