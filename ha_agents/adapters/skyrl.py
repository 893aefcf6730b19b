"""SkyRL-Gym adapter (extra ``adapters``: ``skyrl-gym``): a harness-wrapped repair env as a
``BaseTextEnv``, registered as ``harnessadapt``::

    from .skyrl import register
    register()   # in every process that runs SkyRL's generator (skyrl_gym.make looks ids up there)
    env = skyrl_gym.make("harnessadapt", env_config={"harness": "h0"}, extras={"instance_id": "mini__ttl_cache"})
    prompt, meta = env.init([])               # the harness's system and task messages; meta["tools"]
    out = env.step(model_text)                # observations (message deltas), reward, done, metadata

- ``init`` replaces the dataset's prompt with the env's own first messages (the harness's system
  prompt, whose hash the record carries, and the task); the prompt given is ignored.
- ``step`` takes the model's raw text turn; the harness's parser reads it (a text-format parser:
  Hermes, Qwen3-XML or h0's bash blocks, since SkyRL's generator renders prompts without
  ``tools=``). A malformed turn is a format-error observation, never an exception.
- The reward is the grader's verdict, at the last step only; ``postprocessed_action`` is never set
  (token-in, token-out stays intact).
- Metadata (``TextEpisode``) carries ``mask_sample``, ``termination``, the grade summary, the
  instance id, the harness hash and the tool schemas. SkyRL's stock generator reads only the reward
  and ``get_metrics()``; a generator that drops masked samples reads ``metadata["mask_sample"]``.
- The tools run inside the harness (hooks, limits, turn counting), not as SkyRL tool groups, so
  ``tool_groups`` stays empty; ``tools`` holds their OpenAI schemas.
"""

from __future__ import annotations

from typing import Any, Mapping

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from .base import AdapterConfig, TextEpisode

ENV_ID = "harnessadapt"


class HarnessTextEnv(BaseTextEnv):
    """One repair episode for SkyRL. ``env_config`` (SkyRL's ``skyrl_gym_config.<env id>``) holds
    the defaults, ``extras`` (the dataset row's extra columns) the per-task fields; both are read
    by :class:`AdapterConfig` (``instance_id``, ``harness``, ``sandbox``, ``suite``, ``max_turns``)."""

    def __init__(self, env_config: Mapping[str, Any] | None = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.episode = TextEpisode(AdapterConfig.from_mappings(env_config, extras))
        self.last_metadata: dict[str, Any] = {}

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI schemas of the harness's tools (after ``init``)."""
        return self.episode.tools

    def init(self, prompt: ConversationType | None = None) -> tuple[ConversationType, dict[str, Any]]:
        messages, self.last_metadata = self.episode.reset()
        self.turns, self.max_turns = 0, self.episode.env.get_wrapper_attr("max_turns")
        return messages, self.last_metadata

    def step(self, action: str) -> BaseTextEnvStepOutput:
        observations, reward, done, self.last_metadata = self.episode.step(action)
        self.turns = self.last_metadata["turn"]
        return BaseTextEnvStepOutput(observations=observations, reward=reward, done=done,
                                     metadata=self.last_metadata, postprocessed_action=None)

    def get_metrics(self) -> dict[str, Any]:
        """Numeric per-episode metrics (SkyRL averages them over a batch)."""
        return {"resolved": float(self.last_metadata.get("resolved", False)), "turns": self.turns,
                "truncated": float(self.last_metadata.get("truncated", False)),
                "mask_sample": float(self.last_metadata.get("mask_sample", False))}

    def close(self) -> None:
        self.episode.close()


def register(env_id: str = ENV_ID) -> str:
    """Register :class:`HarnessTextEnv` with SkyRL-Gym under ``env_id`` (once per process; a second
    call is a no-op). Returns the id, for ``env_class`` in the dataset rows."""
    if env_id not in skyrl_gym.registry:
        skyrl_gym.register(id=env_id, entry_point=f"{__name__}:HarnessTextEnv")
    return env_id


__all__ = ["ENV_ID", "HarnessTextEnv", "register"]
