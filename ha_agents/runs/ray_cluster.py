"""Starting Ray for a library call: the cluster it was asked to join, or a private local one.

``ray.init()`` with no address joins whatever cluster already runs on the machine (it reads
``/tmp/ray/ray_current_cluster``), so a test or a user's evaluation could land on someone else's
cluster, and then fail because ``num_cpus`` may not be given when connecting. Here the address is
explicit: the ``address`` argument, else ``RAY_ADDRESS``, else ``"local"`` (a new private instance).
"""

from __future__ import annotations

import os
from typing import Any


def init_ray(address: str | None = None, **local_options: Any) -> str:
    """Initialise Ray once per process; returns the address used (``local`` for a private one).
    ``local_options`` (``num_cpus``, ``runtime_env``, ...) apply to a private instance; joining a
    cluster keeps only ``runtime_env`` (the cluster owns its resources)."""
    import ray

    target = address or os.environ.get("RAY_ADDRESS") or "local"
    if ray.is_initialized():
        return target
    opts: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False}
    if target == "local":
        opts.update(include_dashboard=False, **local_options)
    elif "runtime_env" in local_options:
        opts["runtime_env"] = local_options["runtime_env"]
    ray.init(address=target, **opts)
    return target


__all__ = ["init_ray"]
