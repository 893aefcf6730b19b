"""Sandboxes: where an episode's commands run (see base.py for the protocol)."""

from typing import Any

from ..task import Task
from .base import EnvLostError, RunResult, Sandbox, SandboxError
from .local import LocalSandbox, LocalSandboxConfig, bwrap_available
from .provision.workcopy import Snapshot, prepare_snapshot

__all__ = ["EnvLostError", "LocalSandbox", "LocalSandboxConfig", "RunResult", "Sandbox", "SandboxError", "Snapshot",
           "bwrap_available", "prepare_snapshot", "prepare_task", "make_sandbox"]


def make_sandbox(kind: str, task: Task, **options: Any) -> Sandbox:
    """A sandbox backend by name: ``local`` (bubblewrap + cgroups) or ``docker``."""
    if kind == "local":
        return LocalSandbox(task, config=LocalSandboxConfig(**options))
    if kind == "docker":
        from .docker import DockerSandbox, DockerSandboxConfig

        return DockerSandbox(task, config=DockerSandboxConfig(**options))
    raise ValueError(f"unknown sandbox {kind!r}; available: local, docker")


def prepare_task(task: Task, environments: bool = False) -> str | None:
    """What every episode of ``task`` starts from, made once before any starts: its snapshot and,
    with ``environments``, the interpreter environment (``provision.pyenv``) or ``node_modules``
    (``provision.nodeenv``) a local sandbox of it needs, so a first build (minutes) is neither paid
    inside one episode's time budget nor unannounced. A snapshot that cannot be made raises; an
    environment that cannot be built is returned as a message and not raised: each episode of the
    task then tries the build again at its sandbox's start and ends masked with the cause, as before,
    while the other tasks run."""
    prepare_snapshot(task)
    if not environments:
        return None
    from .provision.nodeenv import node_env
    from .provision.pyenv import python_env

    try:
        python_env(task)
        node_env(task)
    except Exception as exc:  # noqa: BLE001 - reported here, masked per episode at its sandbox start
        return f"{type(exc).__name__}: {exc}"
    return None
