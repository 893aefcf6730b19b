"""The Docker daemon as both the sandbox and the image builder use it: the client, retries of
transient daemon errors, the ownership labels of containers and the reaping of a dead owner's
leftovers. Kept below ``docker.py`` and ``images.py`` so neither imports the other."""

from __future__ import annotations

import os
import socket
from typing import Any, Callable, TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from .base import SandboxError
from .reaper import pid_alive

T = TypeVar("T")
LABEL = "harnessadapt"


def transient(exc: BaseException) -> bool:
    """Daemon errors worth retrying: 5xx answers and broken connections (not 4xx, not missing images)."""
    import docker.errors
    import requests

    if isinstance(exc, docker.errors.ImageNotFound | docker.errors.NotFound):
        return False
    if isinstance(exc, docker.errors.APIError):
        return exc.status_code is None or exc.status_code >= 500
    return isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.ReadTimeout | ConnectionError)


def retrying(fn: Callable[[], T], attempts: int = 4) -> T:
    return Retrying(stop=stop_after_attempt(attempts), wait=wait_exponential(multiplier=0.2, max=2.0),
                    retry=retry_if_exception(transient), reraise=True)(fn)


def docker_client(timeout: float = 120.0) -> Any:
    import docker

    try:
        client = docker.from_env(timeout=timeout)
        retrying(client.ping)
        return client
    except Exception as exc:  # noqa: BLE001 - any failure here means "no usable daemon"
        raise SandboxError(f"no Docker daemon answers ({exc}); start dockerd or use sandbox='local'") from exc


def daemon_gone(timeout: float = 10.0) -> str:
    """'' when this machine's Docker daemon (``DOCKER_HOST``) answers a ping, else why not (after a
    few quick tries: a daemon that restarts answers again within them)."""
    try:
        docker_client(timeout=timeout).close()
        return ""
    except SandboxError as exc:
        return str(exc)


def owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def reap_orphans(client: Any) -> int:
    """Remove containers left by dead processes of this host (a crashed run)."""
    host = socket.gethostname()

    def orphaned(c: Any) -> bool:
        h, _, pid = c.labels.get(f"{LABEL}.owner", "").rpartition(":")
        return h == host and pid.isdigit() and not pid_alive(int(pid))

    return remove_containers([c for c in client.containers.list(all=True, filters={"label": LABEL}) if orphaned(c)])


def remove_containers(containers: Any) -> int:
    """Remove each container (force), counting those removed; one already gone is skipped."""
    removed = 0
    for c in containers:
        try:
            c.remove(force=True)
            removed += 1
        except Exception:  # noqa: BLE001 - already gone
            pass
    return removed


__all__ = ["LABEL", "docker_client", "owner", "reap_orphans", "remove_containers", "retrying", "transient"]
