"""Starting Ray for a library call: the cluster it was asked to join, or a private local one.

``ray.init()`` with no address joins whatever cluster already runs on the machine (it reads
``/tmp/ray/ray_current_cluster``), so a test or a user's evaluation could land on someone else's
cluster, and then fail because ``num_cpus`` may not be given when connecting. Here the address is
explicit: the ``address`` argument, else ``RAY_ADDRESS``, else ``"local"`` (a new private instance).

Sandbox slots: each node declares how many sandboxes it can hold as the custom resource
``sandbox_slots`` (``SLOTS``), derived from its cores and memory (``node_slots``: one per core, at
most one per 2 GiB; ``HA_SANDBOX_SLOTS`` overrides). A private instance declares it itself; on a
cluster start each node with ``ray start ... --resources "$(python -m ha_agents.cluster.ray_start)"``.
A GRPO group asks for one slot per member (``group_resources``), so it fits on one node.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from typing import Any

SLOTS = "sandbox_slots"
GIB_PER_SLOT = 2
_INIT = threading.Lock()  # episodes in threads (remote envs) may all ask for Ray at once


def node_slots() -> int:
    """Sandboxes this machine can hold: ``HA_SANDBOX_SLOTS``, else one per core and at most one per
    ``GIB_PER_SLOT`` GiB of memory."""
    if os.environ.get("HA_SANDBOX_SLOTS"):
        n = int(os.environ["HA_SANDBOX_SLOTS"])
        if n < 1:
            raise ValueError(f"HA_SANDBOX_SLOTS={n}: at least 1")
        return n
    cores = os.cpu_count() or 1
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    except (ValueError, OSError, AttributeError):
        mem_gib = cores * GIB_PER_SLOT
    return max(1, min(cores, int(mem_gib // GIB_PER_SLOT)))


def group_resources(members: int) -> dict[str, Any]:
    """Ray options for one group of ``members`` episodes: one slot each where the cluster declares
    slots (capped at the largest node's, so the group can always be placed), else CPUs likewise."""
    import ray

    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    most = max((r.get(SLOTS, 0) for r in nodes), default=0)
    if most >= 1:
        return {"num_cpus": 0, "resources": {SLOTS: min(members, int(most))}}
    cpus = max((r.get("CPU", 0) for r in nodes), default=1)
    return {"num_cpus": max(1, min(members, int(cpus)))}


def init_ray(address: str | None = None, **local_options: Any) -> str:
    """Initialise Ray once per process; returns the address used (``local`` for a private one).
    ``local_options`` (``num_cpus``, ``runtime_env``, ...) apply to a private instance; joining a
    cluster keeps only ``runtime_env`` (the cluster owns its resources)."""
    import ray

    target = address or os.environ.get("RAY_ADDRESS") or "local"
    with _INIT:
        if ray.is_initialized():
            return target
        _init(ray, target, local_options)
    return target


def _init(ray: Any, target: str, local_options: dict[str, Any]) -> None:
    opts: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False}
    if target == "local":
        local_options.setdefault("resources", {SLOTS: node_slots()})
        opts.update(include_dashboard=False, **local_options)
    elif "runtime_env" in local_options:
        opts["runtime_env"] = local_options["runtime_env"]
    keep = _main_thread_handlers()
    ray.init(address=target, **opts)
    for signum, handler in keep.items():  # ray.init makes SIGTERM a bare sys.exit: the run's own stop comes back
        signal.signal(signum, handler)


def _main_thread_handlers() -> dict[int, Any]:
    """The Python SIGINT/SIGTERM handlers in force (only the main thread may set them; elsewhere none)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not None}


__all__ = ["GIB_PER_SLOT", "SLOTS", "group_resources", "init_ray", "node_slots"]


if __name__ == "__main__":  # the --resources value of `ray start` for this machine
    print(json.dumps({SLOTS: node_slots()}))
