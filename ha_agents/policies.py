"""Scripted policies: deterministic, model-free, used by ``ha eval`` and the tests.

A policy sees what a model would (the observation deltas and info) and returns one assistant
message. ``oracle`` reaches the gold patch through the env's own actions (a bash here-document and
``git apply``), so it exercises the same path a model does; ``null`` submits at once.
"""

from __future__ import annotations

import secrets
from typing import Any, Protocol

from ha_envs.task import Task


class Policy(Protocol):
    name: str

    def start(self, task: Task, info: dict[str, Any]) -> None:
        """Called after reset with the episode's task."""

    def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        """One assistant message for the next step."""


def bash(command: str) -> str:
    return f"```bash\n{command}\n```"


class NullPolicy:
    name = "null"

    def start(self, task: Task, info: dict[str, Any]) -> None:
        pass

    def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        return bash("submit")


class OraclePolicy:
    """Writes the gold patch through a here-document, applies it with git, then submits."""

    name = "oracle"

    def __init__(self) -> None:
        self._plan: list[str] = []

    def start(self, task: Task, info: dict[str, Any]) -> None:
        if not task.gold_patch.strip():
            raise ValueError(f"task {task.instance_id} has no gold patch")
        patch = task.gold_patch if task.gold_patch.endswith("\n") else task.gold_patch + "\n"
        tag = f"HA_PATCH_{secrets.token_hex(6)}"
        self._plan = [
            bash(f"cat > /tmp/gold.patch <<'{tag}'\n{patch}{tag}"),
            bash("git apply --whitespace=nowarn /tmp/gold.patch && git status --short"),
            bash("submit"),
        ]

    def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        return self._plan.pop(0) if self._plan else bash("submit")


POLICIES = {"oracle": OraclePolicy, "null": NullPolicy}


def make_policy(name: str) -> Policy:
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; available: {', '.join(POLICIES)}") from None
