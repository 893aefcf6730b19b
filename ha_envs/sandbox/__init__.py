"""Sandboxes: where an episode's commands run (see base.py for the protocol)."""

from typing import Any

from ..task import Task
from .base import EnvLostError, RunResult, Sandbox, SandboxError
from .local import LocalSandbox, LocalSandboxConfig, bwrap_available
from .provision.workcopy import Snapshot, prepare_snapshot

__all__ = ["EnvLostError", "LocalSandbox", "LocalSandboxConfig", "RunResult", "Sandbox", "SandboxError", "Snapshot",
           "bwrap_available", "prepare_snapshot", "make_sandbox"]


def make_sandbox(kind: str, task: Task, **options: Any) -> Sandbox:
    """A sandbox backend by name: ``local`` (bubblewrap + cgroups) or ``docker``."""
    if kind == "local":
        return LocalSandbox(task, config=LocalSandboxConfig(**options))
    if kind == "docker":
        from .docker import DockerSandbox, DockerSandboxConfig

        return DockerSandbox(task, config=DockerSandboxConfig(**options))
    raise ValueError(f"unknown sandbox {kind!r}; available: local, docker")
