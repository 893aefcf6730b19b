"""GRPO groups on a Ray cluster: the path of ``collect(..., executor="ray")``.

A task's pending samples are one unit of placement (one node, one snapshot: :func:`run_group`),
groups spread over the nodes, and at most ``workers`` episodes are in flight (at least one group).
Records come back to the driver (:class:`_Driver`, in the calling process) as they finish, and it
alone writes the log. A group lost with its node runs once more elsewhere; a node whose Docker
daemon is gone is drained for a while and its members run elsewhere.
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Callable

from ha_envs.sandbox import SandboxError
from ha_envs.task import Task
from ha_envs.termination import MASKED, Termination

from ..episode import EpisodeConfig, error_record, run_sample
from ..records.episode_record import EpisodeRecord
from .ray_start import SLOTS, group_resources, init_ray

log = logging.getLogger(__name__)

DRAIN = "_drain"
"""A group's last item when its node's Docker daemon is gone: ``{DRAIN: node, "runs": [...], "why": ...,
"started": bool}``, the members it did not run (``started`` False: it found the daemon gone before
starting any) or that ran into the dead daemon; the driver drains the node and runs them elsewhere."""
DRAIN_RETRY_S = 120.0
"""A drained node is tried again after this long (``HA_DRAIN_RETRY_S``): a restarted daemon serves again."""
HANDBACKS = 3
"""A group handed back unstarted this often (every node it reached had no daemon) is masked."""
INFRA = MASKED - {Termination.MODEL_ERROR}
"""Masked endings a dead daemon can cause (a model server's fault is not the node's)."""


def run_group(task: Task, samples: list[int], model: str, config: EpisodeConfig, skill: str | None,
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
    stamp = {"snapshot": how["snapshot"], "env_cache": how["env"], **({"image_cache": how["image"]} if docker else {})}
    back: list[int] = []
    with ThreadPoolExecutor(max_workers=len(samples)) as pool:
        futures = [pool.submit(run_sample, task, k, model, config, skill) for k in samples]
        for fut in as_completed(futures):
            rec = fut.result()
            if docker and rec.mask_sample and rec.termination in INFRA:
                why = why or daemon_gone()
                if why:
                    back.append(rec.run)
                    continue
            yield rec.with_fields(node=node, **stamp)
    if back:
        yield {DRAIN: node, "runs": sorted(back), "why": why, "started": True}


def collect_on_ray(todo: list[tuple[Task, int]], model: str, config: EpisodeConfig, workers: int,
                   finished: Callable[[EpisodeRecord], None], skills: dict[str, str],
                   group_fn: Callable[..., Any] = run_group, store: Any = "auto") -> None:
    """Run ``todo`` (task, sample) pairs on Ray: the Ray this process already runs, else the cluster
    in RAY_ADDRESS, else a private local one (never a cluster it was not asked to join). A group
    asks for one ``sandbox_slots`` per member where the cluster declares them (``SLOTS``), else one
    CPU. ``finished`` takes each record as it comes back. On more than one node the driver's
    snapshots and environments are moved, not rebuilt: an ``ArtifactStore`` on this node serves each
    to the nodes that lack it (``store``: ``auto``, or None for none). ``group_fn`` runs one group
    on its node (``run_group``; ``benchmarks/bench_cluster.py`` gives a no-op one to measure this driver)."""
    import ray

    from ha_envs.sandbox.provision.workcopy import snapshot_key

    from .artifact_store import start_store

    init_ray()
    own_store = store == "auto"
    if own_store:
        store = start_store()
    try:
        artifacts = {} if store is None else {t.instance_id: (snapshot_key(t), store) for t, _ in todo}
        _Driver(model, config, ray.put(config), workers, finished, skills, group_fn, artifacts).run(todo)
    finally:
        if own_store and store is not None:
            ray.kill(store)


class _Driver:
    """``collect_on_ray``'s loop: submit groups while the in-flight bound allows, take records as they come."""

    def __init__(self, model: str, config: EpisodeConfig, config_ref: Any, workers: int,
                 finished: Callable[[EpisodeRecord], None], skills: dict[str, str], group_fn: Callable[..., Any],
                 artifacts: dict[str, Any]) -> None:
        import ray

        self.model, self.config, self.config_ref, self.workers = model, config, config_ref, workers
        self.finished, self.skills, self.artifacts = finished, skills, artifacts
        self.remote_group = ray.remote(group_fn)
        self.queue: list[tuple[Task, list[int], int, int]] = []  # (task, members, attempt, hand-backs)
        self.pending: dict[Any, tuple[Task, set[int], int, int]] = {}  # generator -> (task, members to come, ...)
        self.drained: dict[str, float] = {}  # node -> when it was drained
        self.retry_s = float(os.environ.get("HA_DRAIN_RETRY_S", DRAIN_RETRY_S))
        self.in_flight = self.submitted = 0

    def run(self, todo: list[tuple[Task, int]]) -> None:
        import ray

        by_task: dict[str, tuple[Task, list[int]]] = {}
        for t, k in todo:
            by_task.setdefault(t.instance_id, (t, []))[1].append(k)
        self.queue = [(t, ks, 1, 0) for t, ks in by_task.values()]
        while self.queue or self.pending:
            self._submit()
            if not self.pending:  # every node is drained: wait for the first retry
                wake = min(self.drained.values()) + self.retry_s - time.monotonic()
                time.sleep(min(max(wake, 0.5), self.retry_s))
                continue
            ready, _ = ray.wait(list(self.pending), num_returns=1)
            self._take(ready[0])

    def _submit(self) -> None:
        """Start queued groups while the bound allows (always one when nothing is in flight)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        while self.queue and (not self.pending or self.in_flight + len(self.queue[0][1]) <= max(1, self.workers)):
            healthy = _healthy(self.drained, self.retry_s) if self.drained else None
            if healthy == []:
                return  # every node is drained: wait for a retry (or for what is in flight)
            t, ks, attempt, handbacks = self.queue.pop(0)
            self.submitted += 1
            # Ray's label constraints were seen to place a group on an excluded node: node affinity,
            # the healthy nodes in turn
            strategy = "SPREAD" if healthy is None else NodeAffinitySchedulingStrategy(
                node_id=healthy[self.submitted % len(healthy)], soft=False)
            gen = self.remote_group.options(
                num_returns="streaming", scheduling_strategy=strategy, max_retries=0, **group_resources(len(ks))
            ).remote(t, ks, self.model, self.config_ref, self.skills.get(t.instance_id), self.artifacts.get(t.instance_id))
            self.pending[gen] = (t, set(ks), attempt, handbacks)
            self.in_flight += len(ks)

    def _take(self, gen: Any) -> None:
        """The next item of a group that has one: a record, its end, a hand-back, or its loss."""
        import ray

        t, left, attempt, handbacks = self.pending[gen]
        try:
            rec = ray.get(next(gen))
        except StopIteration:
            self._forget(gen)
            return
        except Exception as exc:  # noqa: BLE001 - a lost node, raylet or worker mid-group
            self._forget(gen)
            log.warning("a Ray group of %s failed (%s); re-running its %d unfinished episode(s)",
                        t.instance_id, exc, len(left))
            self._again(t, sorted(left), attempt, exc)
            return
        if DRAIN in rec:
            self._drain(t, left, attempt, handbacks, rec)
            return
        rec = EpisodeRecord.from_json(rec)  # a group_fn of one's own may send lines
        if rec.node in self.drained:
            log.warning("node %s: its Docker daemon answers again; no longer drained", rec.node)
            self.drained.pop(rec.node)
        left.discard(rec.run)
        self.in_flight -= 1
        self.finished(rec)

    def _forget(self, gen: Any) -> None:
        _, left, _, _ = self.pending.pop(gen)
        self.in_flight -= len(left)

    def _drain(self, t: Task, left: set[int], attempt: int, handbacks: int, item: dict[str, Any]) -> None:
        """A group handed members back from a node without its Docker daemon: drain the node, run them elsewhere."""
        runs = [k for k in item["runs"] if k in left]
        left.difference_update(runs)
        self.in_flight -= len(runs)
        node = item[DRAIN]
        if node not in self.drained:
            log.warning("node %s drained: its Docker daemon is gone (%s); no group goes there for %.0f s",
                        node, item["why"], self.retry_s)
        self.drained[node] = time.monotonic()
        log.warning("re-running %d episode(s) of %s from the drained node %s elsewhere", len(runs), t.instance_id, node)
        exc = SandboxError(f"the node's Docker daemon is gone: {item['why']}")
        if item.get("started"):
            self._again(t, runs, attempt, exc)
        elif handbacks + 1 < HANDBACKS:  # nothing ran: not an attempt
            self.queue.append((t, runs, attempt, handbacks + 1))
        else:
            self._masked(t, runs, exc)

    def _again(self, t: Task, runs: list[int], attempt: int, exc: BaseException) -> None:
        """Members that did not come back run once more elsewhere; twice lost, they are masked
        infrastructure faults (each (task, run) recorded once)."""
        if attempt < 2:
            self.queue.append((t, runs, attempt + 1, 0))
        else:
            self._masked(t, runs, exc)

    def _masked(self, t: Task, runs: list[int], exc: BaseException) -> None:
        for k in runs:
            self.finished(error_record(t, self.model, self.config.harness, exc, time.monotonic()).with_fields(run=k))


def _healthy(drained: dict[str, float], retry_s: float) -> list[str]:
    """Live nodes that can hold a group (those with sandbox slots where the cluster declares them,
    as ``group_resources`` asks, else those with CPUs), less the nodes drained within ``retry_s``."""
    import ray

    now = time.monotonic()
    alive = [n for n in ray.nodes() if n.get("Alive")]
    need = SLOTS if any(n.get("Resources", {}).get(SLOTS) for n in alive) else "CPU"
    return sorted(n["NodeID"] for n in alive if n.get("Resources", {}).get(need)
                  and now - drained.get(n["NodeID"], -float("inf")) >= retry_s)
