"""Artifacts across a Ray cluster: each prepared once, then moved to the nodes that need it.

An artifact is a cache entry named by its content: a task's snapshot (``workcopy.snapshot_dest``)
or its environment (a Python prefix or a node env, ``artifacts.env_dest``). The driver's cache is
the cluster's copy: an ``ArtifactStore`` actor on the driver's node serves what it holds, packed
once into Ray's object store and pulled by each node that lacks it (a node that has it never asks).

Snapshots are prepared by the driver before any group starts. Environments are built where they
are first needed: the first node to ask for one the driver lacks gets a lease and builds it
(``fetch`` answers ``build``), then publishes it (``publish``: installed into the driver's cache and
held for the next node); a node asking meanwhile waits for that build instead of starting its own,
and takes the lease over when the builder gives up (``abandon``) or is gone for
``HA_ARTIFACT_BUILD_WAIT_S`` seconds. So each environment is built once in the cluster, on the
node that needed it first, and the build load spreads over the nodes.

``node_artifacts`` is the node's side, run once per group before its members start; it says how
each artifact came to be there: ``cached``, ``copied`` or ``built`` (``None``: the task needs no
environment).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

KINDS = {"snapshot": "snapshots", "python-env": "envs", "node-env": "envs"}
"""Artifact kind -> its directory in the cache."""
KEEP_BYTES = 4 << 30
"""Packed archives the store holds in the object store at once, in bytes (``HA_ARTIFACT_STORE_BYTES``);
the least recently served leave first (the newest always stays). A left one is packed again when asked."""
BUILD_WAIT_S = 3600.0
"""How long a node waits for another node's build of an environment before building it itself."""


def _ready(kind: str, path: Path) -> bool:
    return (path / ".git" / "ha-base").is_file() if kind == "snapshot" else (path / ".ha-ready").is_file()


class ArtifactStore:
    """The driver's artifacts, served to the nodes (a Ray actor on the driver's node; async, so a
    node waiting for another's build holds no thread). ``root``: the driver's cache directory."""

    def __init__(self, root: str, keep_bytes: int | None = None, build_wait_s: float | None = None) -> None:
        self.root = Path(root).resolve()
        self.keep_bytes = int(keep_bytes if keep_bytes is not None
                              else os.environ.get("HA_ARTIFACT_STORE_BYTES", KEEP_BYTES))
        self.build_wait_s = float(build_wait_s if build_wait_s is not None
                                  else os.environ.get("HA_ARTIFACT_BUILD_WAIT_S", BUILD_WAIT_S))
        self.refs: "OrderedDict[str, tuple[Any, str, int, str]]" = OrderedDict()  # path -> (ref, sha256, bytes, built at)
        self.building: dict[str, asyncio.Event] = {}
        self.counts = {"packed": 0, "served": 0, "leases": 0, "published": 0, "abandoned": 0}

    def _path(self, kind: str, name: str) -> Path:
        if kind not in KINDS:
            raise ValueError(f"unknown artifact kind {kind!r}; one of {', '.join(KINDS)}")
        if not name or "/" in name or name in (".", "..") or name.startswith("."):
            raise ValueError(f"{name!r} is not an entry name of this store")
        return self.root / KINDS[kind] / name

    async def fetch(self, kind: str, name: str) -> list[Any]:
        """``["copy", [ref], sha256, built_at]`` when the driver's cache has the artifact
        (``built_at``: where the archive's paths point, for relocation; the ref in a list, so the caller fetches the archive itself,
        to its own node); else ``["build"]``, and the caller holds the lease: build, then ``publish``
        or ``abandon``. Snapshots are the driver's to prepare: never leased."""
        path = self._path(kind, name)
        while True:
            if _ready(kind, path):
                ref, sha256, built_at = await self._archive(kind, path)
                self.counts["served"] += 1
                return ["copy", [ref], sha256, built_at]
            if kind == "snapshot":
                return ["build"]
            event = self.building.get(name)
            if event is None:
                self.building[name] = asyncio.Event()
                self.counts["leases"] += 1
                return ["build"]
            try:
                await asyncio.wait_for(event.wait(), timeout=self.build_wait_s)
            except asyncio.TimeoutError:  # the builder is gone or stuck: the next to ask builds it
                if self.building.get(name) is event:
                    del self.building[name]

    async def publish(self, kind: str, name: str, refs: list[Any], sha256: str, built_at: str) -> None:
        """A leased build is done: install it into the driver's cache (relocated from ``built_at``)
        and hold its archive for the next node; waiters are woken either way."""
        from ha_envs.sandbox.provision.artifacts import install_env

        import ray

        path = self._path(kind, name)
        try:
            data = await refs[0]
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: install_env(kind, path, data, sha256, built_at))
            self.counts["published"] += 1
            self._hold(str(path), ray.put(data), sha256, len(data), built_at)  # the store's own copy, on its node
        finally:
            self._release(name)

    async def fetch_image(self, tag: str) -> list[Any]:
        """``["copy", [piece refs], sha256]`` when the driver's Docker daemon has the image ``tag``
        (saved once, in pieces, into the object store), else ``["missing"]``."""
        import ray

        from ha_envs.sandbox.provision.images import image_exists, save_image
        from ha_envs.sandbox.daemon import docker_client

        key = f"image:{tag}"
        if key not in self.refs:
            def save() -> tuple[list[Any], str, int] | None:
                try:
                    client = docker_client(timeout=30)
                    if not image_exists(client, tag):
                        return None
                except Exception:  # noqa: BLE001 - no daemon on the driver's node: nothing to serve
                    return None
                digest, refs, size = hashlib.sha256(), [], 0
                for piece in save_image(tag):
                    digest.update(piece)
                    refs.append(ray.put(piece))
                    size += len(piece)
                return refs, digest.hexdigest(), size

            saved = await asyncio.get_running_loop().run_in_executor(None, save)
            if saved is None:
                return ["missing"]
            self.counts["packed"] += 1
            self._hold(key, saved[0], saved[1], saved[2], "")
        self.refs.move_to_end(key)
        refs, sha256, _, _ = self.refs[key]
        self.counts["served"] += 1
        return ["copy", list(refs), sha256]

    async def abandon(self, name: str) -> None:
        """A leased build failed: the next node to ask builds it."""
        self.counts["abandoned"] += 1
        self._release(name)

    def _release(self, name: str) -> None:
        event = self.building.pop(name, None)
        if event is not None:
            event.set()

    async def _archive(self, kind: str, path: Path) -> tuple[Any, str, str]:
        import ray

        key = str(path)
        if key not in self.refs:
            from ha_envs.sandbox.provision.artifacts import pack_env
            from ha_envs.sandbox.provision.workcopy import pack_snapshot

            pack = pack_snapshot if kind == "snapshot" else pack_env
            data = await asyncio.get_running_loop().run_in_executor(None, pack, path)
            self.counts["packed"] += 1
            self._hold(key, ray.put(data), hashlib.sha256(data).hexdigest(), len(data), key)
        self.refs.move_to_end(key)
        ref, sha256, _, built_at = self.refs[key]
        return ref, sha256, built_at

    def _hold(self, key: str, ref: Any, sha256: str, size: int, built_at: str) -> None:
        self.refs[key] = (ref, sha256, size, built_at)
        self.refs.move_to_end(key)
        while len(self.refs) > 1 and sum(r[2] for r in self.refs.values()) > self.keep_bytes:
            self.refs.popitem(last=False)  # the least recently served leaves the object store

    async def stats(self) -> dict[str, Any]:
        return dict(self.counts, held=len(self.refs), held_bytes=sum(r[2] for r in self.refs.values()),
                    building=sorted(self.building))


def start_store() -> Any | None:
    """The driver's ``ArtifactStore`` (on this node) where there is another node to serve, else None."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from ha_envs.sandbox.provision.workcopy import cache_root

    if sum(1 for n in ray.nodes() if n.get("Alive")) < 2:
        return None
    here = ray.get_runtime_context().get_node_id()
    return ray.remote(ArtifactStore).options(
        num_cpus=0, max_restarts=1,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
    ).remote(str(cache_root()))


STORE_NAME = "ha-artifact-store"


def shared_store() -> Any | None:
    """This Ray job's ``ArtifactStore`` for remote envs (one, named, on the node of the process that
    first asks: the driver's, whose cache holds the snapshots it prepared), where there is another
    node to serve; None on a single node."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from ha_envs.sandbox.provision.workcopy import cache_root

    if sum(1 for n in ray.nodes() if n.get("Alive")) < 2:
        return None
    here = ray.get_runtime_context().get_node_id()
    return ray.remote(ArtifactStore).options(
        name=STORE_NAME, get_if_exists=True, num_cpus=0, max_restarts=1,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
    ).remote(str(cache_root()))


def node_artifacts(task: Any, snapshot_key: str | None, store: Any | None,
                   sandbox: str = "local") -> dict[str, str | None]:
    """Make the task's snapshot and environment ready on this node (once per group, before its
    members start): ``{"snapshot": how, "env": how, "image": how}``, each ``cached``, ``copied``
    (from the driver's store), ``built`` (here) or, for the environment, ``None`` (the task needs
    none) or ``failed`` (its build failed here: the episodes meet that failure as an environment
    fault). ``image`` (Docker sandboxes only, else ``None``): the image the task's environment
    image derives from (``images.image_sources``), ``cached``, ``copied`` from the driver's daemon,
    or ``missing`` (neither has it: the sandbox pulls or builds it as on one machine)."""
    return {"snapshot": _node_snapshot(task, snapshot_key, store), "env": _node_env(task, store),
            "image": _node_image(task, store) if sandbox == "docker" else None}


def _node_image(task: Any, store: Any | None) -> str:
    from ha_envs.sandbox.provision.images import image_exists, image_sources, load_image
    from ha_envs.sandbox.daemon import docker_client

    names = image_sources(task)
    try:
        client = docker_client(timeout=30)
        if any(image_exists(client, n) for n in names):
            return "cached"
    except Exception as exc:  # noqa: BLE001 - the sandbox meets it (and the group is drained)
        log.warning("%s: no Docker daemon on this node (%s)", task.instance_id, exc)
        return "missing"
    if store is None:
        return "missing"
    import ray

    for name in names:
        try:
            answer = ray.get(store.fetch_image.remote(name))
            if answer[0] == "copy":
                load_image((ray.get(ref) for ref in answer[1]), answer[2], name)
                return "copied"
        except Exception as exc:  # noqa: BLE001 - the next source, else pulled or built here
            log.warning("%s: the driver's image %s could not be had (%s)", task.instance_id, name, exc)
    return "missing"


def _node_snapshot(task: Any, key: str | None, store: Any | None) -> str:
    from ha_envs.sandbox.provision.workcopy import install_snapshot, prepare_snapshot, snapshot_dest, snapshot_key

    key = key or snapshot_key(task)
    dest = snapshot_dest(task, key)
    if (dest / ".git" / "ha-base").is_file():
        return "cached"
    if store is not None:
        import ray

        try:
            answer = ray.get(store.fetch.remote("snapshot", dest.name))
            if answer[0] == "copy":
                install_snapshot(task, key, ray.get(answer[1][0]), answer[2])
                return "copied"
        except Exception as exc:  # noqa: BLE001 - the store or the transfer failed: build it here instead
            log.warning("%s: the driver's snapshot could not be had (%s); building it on this node",
                        task.instance_id, exc)
    prepare_snapshot(task)
    return "built"


def _node_env(task: Any, store: Any | None) -> str | None:
    from ha_envs.sandbox.provision.artifacts import build_env, env_dest, env_ready, install_env, pack_env
    from ha_envs.sandbox.provision.workcopy import touch

    kind_dest = env_dest(task)
    if kind_dest is None:
        return None
    kind, dest = kind_dest
    if env_ready(dest):
        touch(dest)
        return "cached"
    if store is None:
        return _build_here(task, build_env)
    import ray

    try:
        answer = ray.get(store.fetch.remote(kind, dest.name))
    except Exception as exc:  # noqa: BLE001 - the store is gone: build it here
        log.warning("%s: the artifact store did not answer (%s); building its environment on this node",
                    task.instance_id, exc)
        return _build_here(task, build_env)
    if answer[0] == "copy":
        try:
            install_env(kind, dest, ray.get(answer[1][0]), answer[2], answer[3])
            return "copied"
        except Exception as exc:  # noqa: BLE001 - a damaged transfer: build it here
            log.warning("%s: the driver's environment could not be installed (%s); building it here",
                        task.instance_id, exc)
            return _build_here(task, build_env)
    how = _build_here(task, build_env)  # we hold the lease
    try:
        if how != "built":
            raise RuntimeError("the build failed")
        data = pack_env(dest)
        ray.get(store.publish.remote(kind, dest.name, [ray.put(data)], hashlib.sha256(data).hexdigest(), str(dest)))
    except Exception as exc:  # noqa: BLE001 - the others build it themselves
        log.warning("%s: its environment was not shared with the other nodes (%s)", task.instance_id, exc)
        try:
            ray.get(store.abandon.remote(dest.name))
        except Exception:  # noqa: BLE001 - the store is gone
            pass
    return how


def _build_here(task: Any, build: Any) -> str:
    try:
        build(task)
        return "built"
    except Exception as exc:  # noqa: BLE001 - the episodes meet it again, as an environment fault
        log.warning("%s: building its environment failed on this node: %s", task.instance_id, exc)
        return "failed"


__all__ = ["ArtifactStore", "KEEP_BYTES", "STORE_NAME", "node_artifacts", "shared_store", "start_store"]
