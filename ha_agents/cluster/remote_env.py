"""A repair env whose sandbox lives on another node: a Ray actor owns the harness-wrapped
``RepairEnv`` (and so its sandbox, its snapshot and its grading), the caller keeps the policy and
the token bookkeeping.

On a cluster the policy runs on GPU nodes (verl's agent loop, the local trainer's model) and the
sandboxes on CPU nodes. ``RemoteEnv`` has the env's own ``reset`` / ``step`` / ``end`` / ``abort``
/ ``close`` semantics; the actor asks for one ``sandbox_slots`` (``ray_start.SLOTS``) where the
cluster declares them, so it lands on a node built for sandboxes, else for one CPU. A lost actor
(its node, raylet or worker died) is an infrastructure fault, as a dead container is for the env
itself, but its own: ``reset`` raises ``EnvLostError`` (a ``SandboxError``); ``step``, ``end`` and
``abort`` end the episode masked (``Termination.ENV_LOST``, reward 0), and a run gives such an
episode one more try on whichever node Ray gives the new env. ``close`` ends the actor.

``EpisodeConfig(env_placement="ray")`` runs every episode's env this way (``ha eval`` / ``ha
train --env-placement ray``); verl's agent loop takes ``env: ray`` in its YAML.
"""

from __future__ import annotations

from typing import Any

from ha_envs.sandbox import EnvLostError
from ha_envs.task import Task
from ha_envs.termination import Termination

from ..episode import ENV_PLACEMENTS


class EnvActor:
    """The actor side: the env and its sandbox, on a node with sandbox slots."""

    def __init__(self, task: Task, harness: Any, sandbox: str, env_options: dict[str, Any], store: Any = None) -> None:
        import ray

        from ha_envs import make

        from .artifact_store import node_artifacts

        # the snapshot, environment and image from the caller's store where this node lacks them
        self.artifacts = node_artifacts(task, None, store, sandbox) if store is not None else {}
        self.env = make(task=task, harness=harness, sandbox=sandbox, **env_options)
        self.node = ray.get_runtime_context().get_node_id()

    def where(self) -> str:
        return self.node

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> Any:
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        return self.env.step(action)

    def end(self, reason: str) -> Any:
        return self.env.get_wrapper_attr("end")(reason)

    def abort(self, error: str, reason: str) -> Any:
        return self.env.get_wrapper_attr("abort")(error, reason)

    def close(self) -> None:
        self.env.close()


def _lost(exc: BaseException) -> bool:
    """The actor (or its node) is gone, as opposed to the env raising inside a live actor."""
    from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

    return isinstance(exc, (RayActorError, ActorDiedError, ActorUnavailableError))


class RemoteEnv:
    """A harness-wrapped ``RepairEnv`` in a Ray actor; see the module's docstring."""

    def __init__(self, task: Task, harness: Any = "h0", sandbox: str = "local", *,
                 env_options: dict[str, Any] | None = None, actor_options: dict[str, Any] | None = None) -> None:
        import ray

        from ha_envs.harness import load_spec

        from .artifact_store import shared_store
        from .ray_start import group_resources, init_ray

        if callable(sandbox):
            raise ValueError("a remote env needs a sandbox name (local or docker), not a callable")
        init_ray()  # the Ray this process runs, else RAY_ADDRESS, else a private one
        self.task = task
        self.spec = load_spec(harness)
        opts = dict(actor_options) if actor_options is not None else group_resources(1)
        self._actor = ray.remote(EnvActor).options(max_restarts=0, max_task_retries=0, **opts).remote(
            task, self.spec, sandbox, dict(env_options or {}), shared_store())
        self.node: str | None = None
        self._lost: str | None = None

    def get_wrapper_attr(self, name: str) -> Any:
        if name in ("end", "abort", "task"):
            return getattr(self, name)
        raise AttributeError(f"RemoteEnv has no attribute {name!r} (reset, step, end, abort, close, task)")

    def _call(self, method: str, *args: Any) -> Any:
        import ray

        if self._lost:
            raise _Lost(self._lost)
        try:
            return ray.get(getattr(self._actor, method).remote(*args))
        except Exception as exc:  # noqa: BLE001 - told apart below
            if _lost(exc):
                self._lost = f"the env's actor was lost ({type(exc).__name__}: {str(exc).splitlines()[0][:300]})"
                raise _Lost(self._lost) from exc
            raise

    def _ended(self, error: str) -> tuple[list, float, bool, bool, dict[str, Any]]:
        return [], 0.0, True, False, {"instance_id": self.task.instance_id, "termination": Termination.ENV_LOST,
                                       "mask_sample": True, "error": error, "env_node": self.node}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        try:
            if self.node is None:
                self.node = self._call("where")
            obs, info = self._call("reset", seed, options)
        except _Lost as exc:
            raise EnvLostError(f"cannot start the sandbox for {self.task.instance_id}: {exc}") from exc
        info["env_node"] = self.node
        return obs, info

    def _step_like(self, method: str, *args: Any) -> Any:
        try:
            obs, reward, term, trunc, info = self._call(method, *args)
        except _Lost as exc:
            return self._ended(str(exc))
        info["env_node"] = self.node
        return obs, reward, term, trunc, info

    def step(self, action: Any) -> Any:
        return self._step_like("step", action)

    def end(self, reason: str = "context_limit") -> Any:
        return self._step_like("end", reason)

    def abort(self, error: str, reason: str = "sandbox_error") -> Any:
        return self._step_like("abort", error, reason)

    def close(self) -> None:
        import ray

        try:
            if not self._lost:
                self._call("close")
        except Exception:  # noqa: BLE001 - closing a lost or broken env: nothing more to free here
            pass
        finally:
            ray.kill(self._actor, no_restart=True)


class _Lost(RuntimeError):
    pass


def _make_on_ray(task: Task, harness: Any, sandbox: Any, env_options: dict[str, Any]) -> RemoteEnv:
    return RemoteEnv(task, harness, sandbox, env_options=env_options)


ENV_PLACEMENTS["ray"] = _make_on_ray

__all__ = ["EnvActor", "RemoteEnv"]
