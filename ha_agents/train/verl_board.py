"""The harness board: how an accepted harness and the epoch's skills reach every verl agent-loop
worker without a restart.

A small named Ray actor (``HarnessBoard``) holds the current harness (a ``HarnessSpec`` as a
mapping), the skills (instance id -> text, shown to the episode as a non-trainable message) and a
version that grows by one at each ``publish``. ``HarnessAgentLoop`` with ``board: NAME`` in its
agent-loop YAML reads the board at the start of every episode (verl builds a loop per episode), so
an episode runs under the harness published last before it started; its ``reward_extra_info``
records the harness hash and the board version it ran under. The trainer process (the
co-evolution hook, ``ha_evolve.verl_coevolution``) publishes; the agent-loop workers only read.

The board lives in the Ray job that creates it (verl's trainer job): its name is looked up in the
job's namespace, so every worker of the run sees the same board and another run's board is never
read.
"""

from __future__ import annotations

from typing import Any

BOARD_NAME = "harnessadapt_board"
"""The board's actor name in the training job's Ray namespace."""


class HarnessBoard:
    """The current harness and skills of one run, with a version (0: nothing published yet)."""

    def __init__(self) -> None:
        self.version = 0
        self.harness: dict[str, Any] | None = None
        self.harness_hash = ""
        self.skills: dict[str, str] = {}

    def publish(self, harness: dict[str, Any], skills: dict[str, str] | None = None) -> int:
        """Make ``harness`` (a spec mapping) and ``skills`` current; returns the new version."""
        from ha_envs.harness import HarnessSpec

        spec = HarnessSpec.from_dict(harness).validate()  # a broken spec never reaches a worker
        self.harness, self.harness_hash = spec.to_dict(), spec.hash
        self.skills = {str(k): str(v) for k, v in (skills or {}).items()}
        self.version += 1
        return self.version

    def get(self) -> dict[str, Any]:
        return {"version": self.version, "harness": self.harness, "harness_hash": self.harness_hash,
                "skills": dict(self.skills)}


def open_board(name: str = BOARD_NAME) -> Any:
    """The run's board actor, created when it does not exist yet (in the caller's Ray job)."""
    import ray

    return ray.remote(HarnessBoard).options(name=name, get_if_exists=True, num_cpus=0).remote()


def publish(board: Any, spec: Any, skills: dict[str, str] | None = None) -> int:
    """Publish a ``HarnessSpec`` (and skills) to ``board`` (an actor handle); returns the version."""
    import ray

    return int(ray.get(board.publish.remote(spec.to_dict(), skills or {})))


_handles: dict[str, Any] = {}


async def read_board(name: str) -> dict[str, Any]:
    """The board's state, read from an agent-loop worker (the handle is looked up once per process)."""
    import ray

    handle = _handles.get(name)
    if handle is None:
        try:
            handle = _handles[name] = ray.get_actor(name)
        except ValueError:
            raise ValueError(f"the agent loop reads the harness board {name!r}, which this Ray job has not "
                             "started: the co-evolution trainer starts it (ha train --backend verl --evolve), "
                             "or drop 'board' from the agent-loop YAML") from None
    return await handle.get.remote()


__all__ = ["BOARD_NAME", "HarnessBoard", "open_board", "publish", "read_board"]
