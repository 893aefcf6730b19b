"""``make()``: a repair env inside a harness. It sits above both ``env.py`` and the harness package
(whose wrappers build on ``env.py``), so neither imports the other."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from .env import SandboxMaker
from .harness import build, load_spec
from .task import Task


def make(task: Task | str | None = None, harness: Any = "h0", sandbox: str | SandboxMaker = "local",
         **kwargs: Any) -> gym.Env:
    """A repair env wrapped in a harness: a preset name (``h0``, ``h1``, ``h2``, ``openhands``), a
    path to a YAML/JSON HarnessSpec, or a HarnessSpec. This is the entry point of the gym id
    ``ha_envs/Repair-v0``."""
    # Limits given here win over the spec's (and so change its hash: the record stays honest).
    spec = load_spec(harness).with_limits(kwargs.pop("max_turns", None), kwargs.pop("command_timeout_s", None),
                                          kwargs.pop("max_format_errors", None))
    return build(spec, task=task, sandbox=sandbox, **kwargs)


__all__ = ["make"]
