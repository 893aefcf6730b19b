"""Harbor's task format in and out: ``task.toml`` models (``models.py``), Harbor task folders as
Tasks (``load.py``), the oracle ``solution/solve.sh`` as a gold patch (``oracle.py``), and tasks
written as Harbor tasks (``export.py``). Nothing here imports the ``harbor`` package."""

from .load import BENCHMARK, load_harbor, load_harbor_task
from .models import HarborTaskError, TaskConfig, read_task_config

__all__ = ["BENCHMARK", "HarborTaskError", "TaskConfig", "load_harbor", "load_harbor_task", "read_task_config"]
