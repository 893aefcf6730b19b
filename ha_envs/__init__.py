"""ha_envs: tasks, sandboxes, grading and the Gymnasium repair environment.

``gymnasium.make("ha_envs/Repair-v0", task=..., sandbox="local")`` or ``ha_envs.make(...)``.
"""

import gymnasium

from .env import MASKED, TERMINATIONS, TRUNCATED, EpisodeOverError, RepairEnv
from .factory import make
from .grading import GradeReport, Grader, GradingError
from .loaders import load_jsonl, load_suite, resolve_tasks
from .task import EnvironmentSpec, Task, TaskError, TestSpec

if "ha_envs/Repair-v0" not in gymnasium.registry:
    gymnasium.register(id="ha_envs/Repair-v0", entry_point="ha_envs.factory:make")

__all__ = ["EnvironmentSpec", "EpisodeOverError", "GradeReport", "Grader", "GradingError", "MASKED",
           "RepairEnv", "TERMINATIONS", "TRUNCATED", "Task", "TaskError", "TestSpec", "load_jsonl", "load_suite",
           "make", "resolve_tasks"]
