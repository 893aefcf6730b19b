"""``ha tasks validate --executor ray``: each task validated (gold resolves, empty does not) as a Ray
task on a node with sandbox slots, at most ``workers`` at once, spread over the nodes. The results
come back to this process, which alone writes them, each stamped with its node. A task lost with its
node is validated once more elsewhere; lost twice, it is a result with cause ``machine``."""

from __future__ import annotations

import logging
from typing import Any, Callable

from ha_envs.grading.grader import Grader
from ha_envs.task import Task
from ha_envs.validate import ValidationResult, validate_task

from .ray_start import group_resources, init_ray

log = logging.getLogger(__name__)


def _validate(task: Task, grader: Grader, retries: int) -> ValidationResult:
    import ray

    res = validate_task(task, grader, retries)
    res.node = ray.get_runtime_context().get_node_id()
    return res


def validate_on_ray(tasks: list[Task], grader: Grader, workers: int = 2, retries: int = 0,
                    on_result: Callable[[ValidationResult], None] | None = None) -> list[ValidationResult]:
    """Like ``ha_envs.validate.validate_tasks``, on Ray (``RAY_ADDRESS``, else a private local Ray)."""
    import ray

    init_ray()
    remote = ray.remote(_validate)
    grader_ref = ray.put(grader)
    queue: list[tuple[Task, int]] = [(t, 1) for t in tasks]
    pending: dict[Any, tuple[Task, int]] = {}
    done: dict[str, ValidationResult] = {}
    while queue or pending:
        while queue and len(pending) < max(1, workers):
            t, attempt = queue.pop(0)
            ref = remote.options(scheduling_strategy="SPREAD", max_retries=0, **group_resources(1)).remote(
                t, grader_ref, retries)
            pending[ref] = (t, attempt)
        [ref], _ = ray.wait(list(pending), num_returns=1)
        t, attempt = pending.pop(ref)
        try:
            res = ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - a lost node or worker (validate_task itself raises nothing)
            if attempt < 2:
                log.warning("validating %s was lost (%s); once more elsewhere", t.instance_id, exc)
                queue.append((t, attempt + 1))
                continue
            res = ValidationResult(t.instance_id, False, [f"lost twice with its Ray node or worker: {exc}"],
                                   repo=t.repo or "", cause="machine")
        done[res.instance_id] = res
        if on_result is not None:
            on_result(res)
    return [done[t.instance_id] for t in tasks]


__all__ = ["validate_on_ray"]
