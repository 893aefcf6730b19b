"""Rollout collection: tasks x group size, in parallel, streamed to JSONL, resumable.

``collect(tasks, group_size, model, config, out=...)`` runs every (task, sample) episode with a bounded
worker pool (threads here, or Ray tasks on a cluster with ``executor="ray"``: ``ha_agents.cluster.groups``). Before any episode
starts, each task's snapshot is prepared once, so all samples of a GRPO group start from the same
prepared copy (a reset is a copy of it, not a clone or checkout). Each record is appended and
fsynced to ``trajectories.jsonl`` as its episode ends; a rerun skips the (task, sample) pairs already
there. ``sample`` is the record's ``run`` field (1-based).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ha_envs.harness import HarnessSpec
from ha_envs.sandbox import prepare_task
from ha_envs.task import Task

from ..episode import EpisodeConfig, run_sample
from ..llm.registry import check_model_spec
from ..records.episode_record import EpisodeRecord, episode_records
from ..records.log import JsonlLog
from .interrupt import run_pool
from .model_faults import MAX_MODEL_ERRORS, ModelErrorStreak
from .progress import EpisodeProgress, prepare_each



def group_records(records: Iterable[Mapping[str, Any]], tasks: Iterable[Any], group_size: int) -> list[EpisodeRecord]:
    """The records of these tasks' groups (runs 1..``group_size``) among ``records`` (a log's lines)."""
    ids = {t.instance_id for t in tasks}
    return episode_records(r for r in records if r["instance_id"] in ids and int(r["run"]) <= group_size)


def _prepare_tasks(tasks: list[Task], config: EpisodeConfig, executor: str, show: bool) -> None:
    """Once per task, before any episode: its snapshot (every sample of its group copies it; a first
    clone can take minutes) and, where episodes run local sandboxes in this process, its environment
    (a first build can take minutes too), each slow one announced with an ETA. A failed build is
    said here and masks only that task's episodes (``prepare_task``)."""
    here = executor == "threads" and config.sandbox == "local" and config.env_placement == "local"
    unique = list({t.instance_id: t for t in tasks}.values())

    def prepare(task: Task) -> None:
        failed = prepare_task(task, environments=here)
        if failed:
            sys.stderr.write(f"environment of {task.instance_id} could not be built; its episodes will end masked "
                             f"(sandbox_error): {failed[:500]}\n")

    prepare_each(unique, prepare, "snapshots and environments" if here else "snapshots", show=show)


def collect(tasks: list[Task], group_size: int, model: Any, config: "EpisodeConfig | str | HarnessSpec" = "h0", *,
            out: Path | str | None = None, log: JsonlLog | None = None, workers: int = 2, executor: str = "threads",
            on_record: Callable[[dict[str, Any]], None] | None = None, progress_bar: bool = True,
            skills: dict[str, str] | None = None, max_model_errors: int | None = MAX_MODEL_ERRORS
            ) -> list[EpisodeRecord]:
    """Run ``group_size`` episodes of every task; returns all records of these tasks (old and new).
    ``config``: how every episode runs (an :class:`EpisodeConfig`, or a harness for the default
    one). ``progress_bar``: show :class:`~ha_agents.runs.progress.EpisodeProgress` on stderr.
    ``skills``: instance id -> a training-time skill every sample of that task sees.
    ``max_model_errors``: stop (:class:`~ha_agents.runs.model_faults.ModelStopped`) after this many
    ``model_error`` episodes in a row, leaving them unrecorded so a rerun resumes them (0: never).

    ``model`` is a model spec string (``oracle``, ``openai:NAME@URL``, ...), which can travel to
    Ray workers (each episode builds its own client), or, with threads, a client object shared by
    the episodes (the local trainer's in-process policy)."""
    if not isinstance(model, str) and executor != "threads":
        raise ValueError("a client object can only run with executor='threads'; pass a model spec string for Ray")
    config = EpisodeConfig.of(config)
    check_model_spec(model)  # a wrong model name fails here, not as one masked record per episode
    if log is None:
        if out is None:
            raise ValueError("collect() needs out= (a directory) or log=")
        Path(out).mkdir(parents=True, exist_ok=True)
        log = JsonlLog(Path(out) / "trajectories.jsonl")
    done = log.done()
    todo = [(t, k) for t in tasks for k in range(1, group_size + 1) if (t.instance_id, k) not in done]
    _prepare_tasks([t for t, _ in todo], config, executor, progress_bar)
    bar = None
    if progress_bar:
        earlier = group_records(log.records, tasks, group_size)
        bar = EpisodeProgress(len(tasks) * group_size, done=len(earlier),
                              resolved=sum(bool(r.get("resolved")) for r in earlier))

    streak = ModelErrorStreak(max_model_errors, len(todo), log.path)

    def write(rec: dict[str, Any]) -> None:
        log.append(rec)
        if bar is not None:
            bar.update(rec)
        if on_record:
            on_record(rec)

    def finished(rec: dict[str, Any]) -> None:
        for r in streak.take(rec):
            write(r)
        if streak.stopped:
            raise streak.error()

    def one(t: Task, k: int) -> list[dict[str, Any]]:
        """An episode, unless the run has stopped; the streak is told in this thread, so the next
        episode this worker takes already sees a stop."""
        if streak.stopped:
            return []
        return streak.take(run_sample(t, k, model, config, (skills or {}).get(t.instance_id)))

    try:
        if executor == "threads":  # Ctrl-C / SIGTERM: nothing new starts, what finished is kept (run_pool)
            run_pool(lambda tk: one(tk[0], tk[1]), todo, workers, lambda recs: [write(r) for r in recs])
        elif executor == "ray":
            from ..cluster.groups import collect_on_ray

            collect_on_ray(todo, model, config, workers, finished, skills or {})
        else:
            raise ValueError(f"unknown executor {executor!r}; use threads or ray")
        if streak.stopped:
            raise streak.error()
        for r in streak.flush():
            write(r)
    finally:
        if bar is not None:
            bar.close()
    return group_records(log.records, tasks, group_size)
