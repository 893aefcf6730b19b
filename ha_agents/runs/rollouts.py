"""Rollout collection: tasks x group size, in parallel, streamed to JSONL, resumable.

``collect(tasks, group_size, model, config, out=...)`` runs every (task, sample) episode with a bounded
worker pool (threads here, or Ray tasks on a cluster with ``executor="ray"``). Before any episode
starts, each task's snapshot is prepared once, so all samples of a GRPO group start from the same
prepared copy (a reset is a copy of it, not a clone or checkout). Each record is appended and
fsynced to ``trajectories.jsonl`` as its episode ends; a rerun skips the (task, sample) pairs already
there. ``sample`` is the record's ``run`` field (1-based).
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Iterable

from ha_envs.harness import HarnessSpec
from ha_envs.sandbox import SandboxError, live, prepare_snapshot
from ha_envs.task import Task

from ..episode import EpisodeConfig, error_record, run_episode
from ..llm.registry import check_model_spec
from ..records.log import JsonlLog
from .interrupt import run_pool
from .model_faults import MAX_MODEL_ERRORS, ModelErrorStreak
from .progress import EpisodeProgress
from .ray_cluster import init_ray

log = logging.getLogger(__name__)


def _episode(task: Task, sample: int, model: Any, config: EpisodeConfig, skill: str | None = None) -> dict[str, Any]:
    """One episode's record. An episode whose remote env was lost with its node (``env_placement="ray"``)
    runs once more, with the same seed, on whichever node Ray gives the new env; lost again, it is
    the masked record (one per (task, run) either way)."""
    from .remote_env import LOST

    for attempt in (1, 2):
        t0 = time.monotonic()
        try:
            record = run_episode(task, model, config, skill=skill, seed=config.episode_seed(task.instance_id, sample))
        except Exception as exc:  # noqa: BLE001 - one broken episode must not take the run (and its queue) down
            if not live.stopping():  # stopping, its sandbox was closed under it: no record is kept anyway
                log.warning("episode %s #%d failed: %s", task.instance_id, sample, exc, exc_info=True)
            record = error_record(task, model, config.harness, exc, t0)
        if attempt == 1 and record.get("mask_sample") and LOST in str(record.get("error") or ""):
            log.warning("episode %s #%d: %s; running it once more", task.instance_id, sample, record["error"])
            continue
        break
    record["run"] = sample
    if attempt == 2:
        record["env_attempts"] = 2
    return record


def group_records(records: Iterable[dict[str, Any]], tasks: Iterable[Any], group_size: int) -> list[dict[str, Any]]:
    """The records of these tasks' groups (runs 1..``group_size``) among ``records`` (a log's)."""
    ids = {t.instance_id for t in tasks}
    return [r for r in records if r["instance_id"] in ids and int(r["run"]) <= group_size]


def collect(tasks: list[Task], group_size: int, model: Any, config: "EpisodeConfig | str | HarnessSpec" = "h0", *,
            out: Path | str | None = None, log: JsonlLog | None = None, workers: int = 2, executor: str = "threads",
            on_record: Callable[[dict[str, Any]], None] | None = None, progress_bar: bool = True,
            skills: dict[str, str] | None = None, max_model_errors: int | None = MAX_MODEL_ERRORS
            ) -> list[dict[str, Any]]:
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
    for task in {t.instance_id: t for t, _ in todo}.values():
        prepare_snapshot(task)  # once per task: every sample of its group copies this snapshot
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
        return streak.take(_episode(t, k, model, config, (skills or {}).get(t.instance_id)))

    try:
        if executor == "threads":  # Ctrl-C / SIGTERM: nothing new starts, what finished is kept (run_pool)
            run_pool(lambda tk: one(tk[0], tk[1]), todo, workers, lambda recs: [write(r) for r in recs])
        elif executor == "ray":
            _collect_ray(todo, model, config, workers, finished, skills or {})
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


DRAIN = "_drain"
"""A group's last item when its node's Docker daemon is gone: ``{DRAIN: node, "runs": [...], "why": ...,
"started": bool}``, the members it did not run (``started`` False: it found the daemon gone before
starting any) or that ran into the dead daemon; the driver drains the node and runs them elsewhere."""
DRAIN_RETRY_S = 120.0
"""A drained node is tried again after this long (``HA_DRAIN_RETRY_S``): a restarted daemon serves again."""
HANDBACKS = 3
"""A group handed back unstarted this often (every node it reached had no daemon) is masked."""


INFRA = ("sandbox_error", "grading_error", "internal_error")
"""Masked terminations a dead daemon can cause."""


def _group(task: Task, samples: list[int], model: str, config: EpisodeConfig, skill: str | None,
           artifacts: tuple[str | None, Any] | None = None):
    """One GRPO group (a task's pending samples) on one node, as a Ray streaming generator: the
    task's snapshot and environment (and, for Docker sandboxes, its source image) are made ready
    once there (``artifact_store.node_artifacts``; ``artifacts``: the snapshot's key and the driver's
    ``ArtifactStore``) and the members run side by side; each record comes back as it finishes,
    stamped with the node that ran it and how its artifacts came to be there (``built``,
    ``copied`` or ``cached``). With Docker sandboxes, a node whose daemon is gone runs nothing
    more: a member masked by a sandbox fault while the daemon does not answer is not recorded
    but handed back (``DRAIN``), as are the members not started."""
    import ray

    from ha_envs.sandbox.daemon import daemon_gone

    from .artifact_store import node_artifacts

    node = ray.get_runtime_context().get_node_id()
    docker = config.sandbox == "docker"
    why = daemon_gone() if docker else ""
    if why:
        yield {DRAIN: node, "runs": list(samples), "why": why, "started": False}
        return
    how = node_artifacts(task, *(artifacts or (None, None)), sandbox=config.sandbox)
    back: list[int] = []
    with ThreadPoolExecutor(max_workers=len(samples)) as pool:
        futures = [pool.submit(_episode, task, k, model, config, skill) for k in samples]
        for fut in as_completed(futures):
            rec = fut.result()
            if docker and rec.get("mask_sample") and rec.get("termination") in INFRA:
                why = why or daemon_gone()
                if why:
                    back.append(int(rec["run"]))
                    continue
            rec["node"] = node
            rec["snapshot"] = how["snapshot"]
            rec["env_cache"] = how["env"]
            if docker:
                rec["image_cache"] = how["image"]
            yield rec
    if back:
        yield {DRAIN: node, "runs": sorted(back), "why": why, "started": True}


def _collect_ray(todo: list[tuple[Task, int]], model: str, config: EpisodeConfig, workers: int,
                 finished: Callable[[dict[str, Any]], None], skills: dict[str, str],
                 group_fn: Callable[..., Any] = _group, store: Any = "auto") -> None:
    """Ray on the Ray this process already runs, else the cluster in RAY_ADDRESS, else a private
    local one (never a cluster it was not asked to join). A task's pending samples are one unit of
    placement (one node, one snapshot; ``_group``), groups spread over the nodes, and at most
    ``workers`` episodes are in flight (at least one group). A group asks for one ``sandbox_slots``
    per member where the cluster declares them (``ray_cluster.SLOTS``), else one CPU. Records come
    back to this process as they finish, which alone writes the log. On more than one node the
    driver's snapshots and environments are moved, not rebuilt: an ``ArtifactStore`` on this node
    serves each to the nodes that lack it (``store``: ``auto``, or None for none). ``group_fn`` runs one group on its
    node (``_group``; ``benchmarks/bench_cluster.py`` gives a no-op one to measure this driver)."""
    import ray

    from .artifact_store import start_store

    init_ray()
    config_ref = ray.put(config)
    own_store = store == "auto"
    if own_store:
        store = start_store()
    try:
        _drive(todo, model, config, config_ref, workers, finished, skills, group_fn, store)
    finally:
        if own_store and store is not None:
            ray.kill(store)


def _drive(todo: list[tuple[Task, int]], model: str, config: EpisodeConfig, config_ref: Any, workers: int,
           finished: Callable[[dict[str, Any]], None], skills: dict[str, str], group_fn: Callable[..., Any],
           store: Any) -> None:
    """``_collect_ray``'s loop: submit groups while the in-flight bound allows, take records as they come."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from ha_envs.provision.workcopy import snapshot_key

    from .ray_cluster import group_resources

    artifacts: dict[str, Any] = {}
    if store is not None:
        for t, _ in todo:
            if t.instance_id not in artifacts:
                artifacts[t.instance_id] = (snapshot_key(t), store)
    remote_group = ray.remote(group_fn)
    by_task: dict[str, tuple[Task, list[int]]] = {}
    for t, k in todo:
        by_task.setdefault(t.instance_id, (t, []))[1].append(k)
    queue = [(t, ks, 1, 0) for t, ks in by_task.values()]  # (task, members, attempt, hand-backs)
    pending: dict[Any, tuple[Task, set[int], int, int]] = {}  # generator -> (task, members to come, attempt, hand-backs)
    drained: dict[str, float] = {}  # node -> when it was drained
    retry_s = float(os.environ.get("HA_DRAIN_RETRY_S", DRAIN_RETRY_S))
    in_flight = submitted = 0

    def masked(t: Task, runs: list[int], exc: BaseException) -> None:
        for k in runs:
            err = error_record(t, model, config.harness, exc, time.monotonic())
            err["run"] = k
            finished(err)

    def again(t: Task, runs: list[int], attempt: int, exc: BaseException) -> None:
        """Members that did not come back run once more elsewhere; twice lost, they are masked
        infrastructure faults (each (task, run) recorded once)."""
        if attempt < 2:
            queue.append((t, runs, attempt + 1, 0))
        else:
            masked(t, runs, exc)

    while queue or pending:
        while queue and (not pending or in_flight + len(queue[0][1]) <= max(1, workers)):
            healthy = _healthy(drained, retry_s) if drained else None
            if healthy == []:
                break  # every node is drained: wait for a retry (or for what is in flight)
            t, ks, attempt, handbacks = queue.pop(0)
            submitted += 1
            strategy = "SPREAD" if healthy is None else NodeAffinitySchedulingStrategy(
                node_id=healthy[submitted % len(healthy)], soft=False)  # Ray's label constraints were
            # seen to place a group on an excluded node: node affinity, the healthy nodes in turn
            gen = remote_group.options(num_returns="streaming", scheduling_strategy=strategy, max_retries=0,
                                       **group_resources(len(ks))).remote(t, ks, model, config_ref,
                                                                          skills.get(t.instance_id),
                                                                          artifacts.get(t.instance_id))
            pending[gen] = (t, set(ks), attempt, handbacks)
            in_flight += len(ks)
        if not pending:
            wake = min(drained.values()) + retry_s - time.monotonic()
            time.sleep(min(max(wake, 0.5), retry_s))
            continue
        ready, _ = ray.wait(list(pending), num_returns=1)
        gen = ready[0]
        t, left, attempt, handbacks = pending[gen]
        try:
            rec = ray.get(next(gen))
        except StopIteration:
            pending.pop(gen)
            in_flight -= len(left)
            continue
        except Exception as exc:  # noqa: BLE001 - a lost node, raylet or worker mid-group
            pending.pop(gen)
            in_flight -= len(left)
            log.warning("a Ray group of %s failed (%s); re-running its %d unfinished episode(s)",
                        t.instance_id, exc, len(left))
            again(t, sorted(left), attempt, exc)
            continue
        if DRAIN in rec:
            runs = [k for k in rec["runs"] if k in left]
            left.difference_update(runs)
            in_flight -= len(runs)
            node = rec[DRAIN]
            if node not in drained:
                log.warning("node %s drained: its Docker daemon is gone (%s); no group goes there for %.0f s",
                            node, rec["why"], retry_s)
            drained[node] = time.monotonic()
            log.warning("re-running %d episode(s) of %s from the drained node %s elsewhere", len(runs),
                        t.instance_id, node)
            exc = SandboxError(f"the node's Docker daemon is gone: {rec['why']}")
            if rec.get("started"):
                again(t, runs, attempt, exc)
            elif handbacks + 1 < HANDBACKS:  # nothing ran: not an attempt
                queue.append((t, runs, attempt, handbacks + 1))
            else:
                masked(t, runs, exc)
            continue
        if rec.get("node") in drained:
            log.warning("node %s: its Docker daemon answers again; no longer drained", rec["node"])
            drained.pop(rec["node"])
        left.discard(int(rec["run"]))
        in_flight -= 1
        finished(rec)


def _healthy(drained: dict[str, float], retry_s: float) -> list[str]:
    """Live nodes that can hold a group (those with sandbox slots where the cluster declares them,
    as ``group_resources`` asks, else those with CPUs), less the nodes drained within ``retry_s``."""
    import ray

    from .ray_cluster import SLOTS

    now = time.monotonic()
    alive = [n for n in ray.nodes() if n.get("Alive")]
    need = SLOTS if any(n.get("Resources", {}).get(SLOTS) for n in alive) else "CPU"
    return sorted(n["NodeID"] for n in alive if n.get("Resources", {}).get(need)
                  and now - drained.get(n["NodeID"], -float("inf")) >= retry_s)
