"""Every open sandbox of this process, so that a run told to stop (Ctrl-C, SIGTERM) ends them at once.

Sandboxes join when they are made and leave when they close. :func:`stop_all` refuses new ones from
then on (making or starting one raises :class:`SandboxError`) and closes those open: their processes
killed, their containers removed, their work copies deleted. The threads that ran episodes in them
then fail fast and unwind. :func:`remove_leftovers` removes what such a thread had not cleaned up
yet when the process must end before it does (this process's temporary directories and containers).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any

from .base import SandboxError

log = logging.getLogger(__name__)
STOPPING = "the run is stopping (interrupted): no new sandbox starts"
_open: "weakref.WeakSet[Any]" = weakref.WeakSet()
_stopping = threading.Event()
_lock = threading.Lock()


def join(sandbox: Any) -> None:
    """Count ``sandbox`` as open (its ``close()`` will be called by :func:`stop_all`)."""
    check()
    with _lock:
        _open.add(sandbox)


def leave(sandbox: Any) -> None:
    with _lock:
        _open.discard(sandbox)


def check() -> None:
    """Raise :class:`SandboxError` once the run is stopping (called before anything starts)."""
    if _stopping.is_set():
        raise SandboxError(STOPPING)


def stopping() -> bool:
    return _stopping.is_set()


def stop_all() -> int:
    """Refuse new sandboxes and close every open one; returns how many were closed."""
    _stopping.set()
    with _lock:
        sandboxes = list(_open)
        _open.clear()
    for sandbox in sandboxes:
        try:
            sandbox.close()
        except Exception as exc:  # noqa: BLE001 - one that cannot close must not keep the others open
            log.warning("closing a sandbox while stopping: %s", exc)
    return len(sandboxes)


def resume() -> None:
    """Allow sandboxes again (a process that goes on after a stopped run, e.g. a test)."""
    _stopping.clear()


def remove_leftovers(tmp: str | None = None) -> dict[str, int]:
    """Remove this process's sandbox and grading directories and, when it used Docker, its
    containers; for the end of a stopped run whose worker threads may not have unwound."""
    removed = {"dirs": 0, "containers": 0}
    mine = (f"ha-sbx-{os.getpid()}-", f"ha-grade-{os.getpid()}-")
    root = Path(tmp or tempfile.gettempdir())
    try:
        entries = [e for e in root.iterdir() if e.name.startswith(mine)]
    except OSError:
        entries = []
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed["dirs"] += 1
    if "docker" in sys.modules:  # only a process that talked to Docker can own containers
        removed["containers"] = _remove_own_containers()
    return removed


def _remove_own_containers() -> int:
    from .daemon import LABEL, docker_client, owner, remove_containers

    try:
        client = docker_client(30)
        containers = client.containers.list(all=True, filters={"label": f"{LABEL}.owner={owner()}"})
    except Exception as exc:  # noqa: BLE001 - no daemon: nothing of ours can be left there
        log.warning("cannot list this run's containers: %s", exc)
        return 0
    return remove_containers(containers)
