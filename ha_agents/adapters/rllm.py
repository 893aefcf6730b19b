"""rllm adapter: a harness-wrapped repair env with rllm's ``BaseEnv`` interface
(``rllm/environments/base/base_env.py``)::

    env = HarnessRepairEnv.from_dict({"instance_id": "mini__ttl_cache", "harness": "h2"})
    obs, info = env.reset()                       # first messages; info["tools"], info["harness_hash"]
    obs, reward, done, info = env.step(model_text)  # message deltas; info["mask_sample"], info["grade"]
    env.close()

rllm is not on PyPI (it installs from its Git repository, and its ``verl`` extra pins verl 0.8.0
where this project uses 0.9.1), so this class follows the interface by duck typing: ``reset``,
``step``, ``close``, ``from_dict``, ``is_multithread_safe`` and the ``idx`` property. Where rllm
is importable it also subclasses rllm's ``BaseEnv``, so rllm's workflows find and reset it.

rllm's workflows call ``reset(task)`` with the dataset row and ``step`` with the agent's
``Action`` (its ``.action`` is unwrapped), a string, or an assistant message dict. Observations
are OpenAI-form message deltas; ``info`` is ``TextEpisode``'s metadata; the reward is the
grader's verdict at the last step.
"""

from __future__ import annotations

from typing import Any, Mapping

from ha_envs.env import EpisodeOverError

from .base import AdapterConfig, TextEpisode

try:  # rllm is optional and not on PyPI; without it the interface is matched by duck typing
    from rllm.environments.base.base_env import BaseEnv as _Base
except ImportError:
    _Base = object


class HarnessRepairEnv(_Base):  # type: ignore[misc, valid-type]
    """One repair task at a time; ``reset(task)`` may switch to another row's task or harness."""

    def __init__(self, config: AdapterConfig | None = None, **fields: Any) -> None:
        """Either an ``AdapterConfig`` or its fields (``instance_id``/``task``, ``harness``,
        ``sandbox``, ``suite``, ``max_turns``, ``seed``), as rllm passes ``env_args``."""
        self.config = config or AdapterConfig.from_mappings(fields)
        self.episode: TextEpisode | None = None

    @staticmethod
    def from_dict(info: dict[str, Any]) -> HarnessRepairEnv:
        return HarnessRepairEnv(AdapterConfig.from_mappings(info))

    @staticmethod
    def is_multithread_safe() -> bool:
        """Each instance owns its sandbox; instances may step in parallel threads."""
        return True

    @property
    def idx(self) -> Any:
        """rllm's position of this env in a batch (None until set)."""
        return getattr(self, "_idx", None)

    @idx.setter
    def idx(self, value: Any) -> None:
        self._idx = value

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI schemas of the harness's tools (after ``reset``)."""
        return self.episode.tools if self.episode else []

    def reset(self, task: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        if task:
            config = AdapterConfig.from_mappings(vars(self.config), task)
            if config != self.config and self.episode is not None:
                self.episode.close()
                self.episode = None
            self.config = config
        if self.episode is None:
            self.episode = TextEpisode(self.config)
        return self.episode.reset()

    def step(self, action: Any) -> tuple[list[dict[str, Any]], float, bool, dict[str, Any]]:
        if self.episode is None:
            raise EpisodeOverError("step() before reset(): call reset() first")
        return self.episode.step(getattr(action, "action", action))

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()
            self.episode = None


__all__ = ["HarnessRepairEnv"]
