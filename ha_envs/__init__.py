"""ha_envs: tasks, sandboxes, grading and the Gymnasium repair environment.

``gymnasium.make("ha_envs/Repair-v0", task=..., sandbox="local")`` or ``ha_envs.make(...)``.

The names below are imported on first use (PEP 562), so ``import ha_envs.task`` (the CLI, a
loader) does not pay for the environment, the harness and the grader; only the registration with
Gymnasium happens at import.
"""

from importlib import import_module
from typing import Any

import gymnasium

if "ha_envs/Repair-v0" not in gymnasium.registry:
    gymnasium.register(id="ha_envs/Repair-v0", entry_point="ha_envs.factory:make")

_EXPORTS = {
    "MASKED": ".termination", "TERMINATIONS": ".env", "TRUNCATED": ".termination", "Termination": ".termination",
    "StepInfo": ".env", "EpisodeOverError": ".env", "RepairEnv": ".env",
    "make": ".factory", "GradeReport": ".grading", "Grader": ".grading", "GradingError": ".grading",
    "load_jsonl": ".loaders", "load_suite": ".loaders", "resolve_tasks": ".loaders",
    "EnvironmentSpec": ".task", "Task": ".task", "TaskError": ".task", "TestSpec": ".task",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ha_envs' has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
