"""Rollout collection: tasks x group size, in parallel, streamed to JSONL, resumable.

``collect(tasks, group_size, agent, harness, out)`` runs every (task, sample) episode with a bounded
worker pool (threads here, or Ray tasks on a cluster with ``executor="ray"``). Before any episode
starts, each task's snapshot is prepared once, so all samples of a GRPO group start from the same
prepared copy (a reset is a copy of it, not a clone or checkout). Each record is appended and
fsynced to ``trajectories.jsonl`` as its episode ends; a rerun skips the (task, sample) pairs already
there. ``sample`` is the record's ``run`` field (1-based).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable

from ha_envs.harness import HarnessSpec, load_spec
from ha_envs.sandbox import prepare_snapshot
from ha_envs.task import Task

from .episode import TokenMode, check_agent_spec, error_record, run_episode
from .llm.options import ModelOptions
from .progress import EpisodeProgress

log = logging.getLogger(__name__)


class TrajectoryLog:
    """Append-only JSONL; a line cut off by a killed writer is dropped (and the file mended) on open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.records: list[dict[str, Any]] = self._load()

    def _load(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        records, good_bytes = [], 0
        with self.path.open("rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break
                try:
                    records.append(json.loads(raw))
                except json.JSONDecodeError:
                    break
                good_bytes += len(raw)
        if good_bytes != self.path.stat().st_size:
            with self.path.open("r+b") as fh:
                fh.truncate(good_bytes)
        return records

    def done(self) -> set[tuple[str, int]]:
        return {(r["instance_id"], int(r["run"])) for r in self.records}

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=True) + "\n"
        with self._lock:
            with self.path.open("a") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            self.records.append(record)


def episode_seed(seed: int, instance_id: str, sample: int) -> int:
    """The sampling seed of one episode: stable across processes and reruns (not Python's salted
    ``hash``), different for every task and sample."""
    digest = hashlib.sha256(f"{seed}/{instance_id}/{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _episode(task: Task, sample: int, agent: Any, harness: HarnessSpec, sandbox: str,
             env_kwargs: dict[str, Any], token_mode: TokenMode | None = None, skill: str | None = None,
             seed: int | None = None, model_options: ModelOptions | None = None) -> dict[str, Any]:
    t0 = time.monotonic()
    try:
        record = run_episode(task, agent, harness, sandbox, env_kwargs, token_mode, skill,
                             seed=None if seed is None else episode_seed(seed, task.instance_id, sample),
                             model_options=model_options)
    except Exception as exc:  # noqa: BLE001 - one broken episode must not take the run (and its queue) down
        log.warning("episode %s #%d failed: %s", task.instance_id, sample, exc, exc_info=True)
        record = error_record(task, agent, harness, exc, t0)
    record["run"] = sample
    return record


def collect(tasks: list[Task], group_size: int, agent: Any, harness: "str | HarnessSpec" = "h0",
            out: Path | str | None = None, log: TrajectoryLog | None = None, sandbox: str = "local",
            workers: int = 2, executor: str = "threads", env_kwargs: dict[str, Any] | None = None,
            on_record: Callable[[dict[str, Any]], None] | None = None, progress_bar: bool = True,
            token_mode: TokenMode | None = None, skills: dict[str, str] | None = None,
            seed: int | None = None, model_options: ModelOptions | None = None) -> list[dict[str, Any]]:
    """Run ``group_size`` episodes of every task; returns all records of these tasks (old and new).
    ``progress_bar``: show :class:`~ha_agents.progress.EpisodeProgress` on stderr. ``skills``:
    instance id -> a training-time skill every sample of that task sees. ``seed``: each
    episode samples with ``episode_seed(seed, instance_id, sample)`` (reproducible, and different
    across a group's members); None leaves sampling to the client.

    ``agent`` is a model spec string (``oracle``, ``openai:NAME@URL``, ...), which can travel to
    Ray workers (each episode builds its own client), or, with threads, a client object shared by
    the episodes (the local trainer's in-process policy)."""
    if not isinstance(agent, str) and executor != "threads":
        raise ValueError("a client object can only run with executor='threads'; pass a model spec string for Ray")
    spec = load_spec(harness)
    check_agent_spec(agent)  # a wrong model name fails here, not as one masked record per episode
    if log is None:
        if out is None:
            raise ValueError("collect() needs out= (a directory) or log=")
        Path(out).mkdir(parents=True, exist_ok=True)
        log = TrajectoryLog(Path(out) / "trajectories.jsonl")
    done = log.done()
    todo = [(t, k) for t in tasks for k in range(1, group_size + 1) if (t.instance_id, k) not in done]
    for task in {t.instance_id: t for t, _ in todo}.values():
        prepare_snapshot(task)  # once per task: every sample of its group copies this snapshot
    bar = None
    if progress_bar:
        ids = {t.instance_id for t in tasks}
        earlier = [r for r in log.records if r["instance_id"] in ids and int(r["run"]) <= group_size]
        bar = EpisodeProgress(len(tasks) * group_size, done=len(earlier),
                              resolved=sum(bool(r.get("resolved")) for r in earlier))
    kw = dict(env_kwargs or {})

    def finished(rec: dict[str, Any]) -> None:
        log.append(rec)
        if bar is not None:
            bar.update(rec)
        if on_record:
            on_record(rec)

    try:
        if executor == "threads":
            with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
                futures = [pool.submit(_episode, t, k, agent, spec, sandbox, kw, token_mode,
                                       (skills or {}).get(t.instance_id), seed, model_options) for t, k in todo]
                for fut in as_completed(futures):
                    finished(fut.result())
        elif executor == "ray":
            _collect_ray(todo, agent, spec, sandbox, kw, workers, finished, token_mode, skills or {}, seed, model_options)
        else:
            raise ValueError(f"unknown executor {executor!r}; use threads or ray")
    finally:
        if bar is not None:
            bar.close()
    ids = {t.instance_id for t in tasks}
    return [r for r in log.records if r["instance_id"] in ids and int(r["run"]) <= group_size]


def _collect_ray(todo: list[tuple[Task, int]], agent: str, spec: HarnessSpec, sandbox: str, kw: dict[str, Any],
                 workers: int, finished: Callable[[dict[str, Any]], None], token_mode: TokenMode | None,
                 skills: dict[str, str], seed: int | None = None, model_options: ModelOptions | None = None) -> None:
    """Ray tasks, at most ``workers`` in flight; connects to the cluster in RAY_ADDRESS or starts a
    local one. Records come back to this process, which alone writes the log."""
    import ray

    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), ignore_reinit_error=True, log_to_driver=False,
                 include_dashboard=False)
    remote = ray.remote(num_cpus=1, max_retries=2)(_episode)
    spec_ref = ray.put(spec)
    pending: list[Any] = []
    queue = list(todo)
    while queue or pending:
        while queue and len(pending) < max(1, workers):
            t, k = queue.pop(0)
            pending.append(remote.remote(t, k, agent, spec_ref, sandbox, kw, token_mode, skills.get(t.instance_id), seed,
                                         model_options))
        ready, pending = ray.wait(pending, num_returns=1)
        finished(ray.get(ready[0]))
