"""What the framework adapters share: which episode to run (``AdapterConfig``, read from the
per-row dicts frameworks pass) and one harness-wrapped env driven by text turns (``TextEpisode``).

The adapters only translate: turns, limits, grading and masking stay in the harness-wrapped
``RepairEnv``, so an episode run through SkyRL or rllm is the episode ``ha eval`` would run.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

import gymnasium as gym

import ha_envs
from ha_envs.task import Task

CHAT_KEYS = ("role", "content", "tool_call_id", "name")
"""The OpenAI message fields an observation keeps (provenance fields stay in the env)."""


class AdapterConfigError(ValueError):
    """The framework's config names no task, or a field the adapter does not know."""


@dataclass(frozen=True)
class AdapterConfig:
    """One episode's task and harness, as a framework hands them over (SkyRL's ``env_config`` and
    ``extras``, an rllm dataset row). Later mappings win; unknown keys are ignored, since the same
    rows carry the framework's own fields (``prompt``, ``reward_spec``, ...)."""

    task: Task | str
    """An instance id of ``suite`` (key ``task`` or ``instance_id``), or a ``Task``."""
    harness: Any = "h0"
    """A preset name, a HarnessSpec YAML/JSON path or a ``HarnessSpec``."""
    sandbox: str = "local"
    """``local`` (bubblewrap) or ``docker``."""
    suite: str = "mini"
    """The suite an instance id is looked up in."""
    max_turns: int | None = None
    """Overrides the harness's turn limit (and so its hash). SkyRL sets it to ``generator.max_turns``."""
    seed: int | None = None
    """Passed to ``reset``."""

    @classmethod
    def from_mappings(cls, *layers: Mapping[str, Any] | None) -> AdapterConfig:
        known = {f.name for f in fields(cls)}
        merged: dict[str, Any] = {}
        for layer in layers:
            for key, value in (layer or {}).items():
                key = "task" if key == "instance_id" else key
                if key in known and value is not None:
                    merged[key] = value
        if "task" not in merged:
            raise AdapterConfigError("no task: give `instance_id` (an id of the suite) or `task` in the env "
                                     "config or the dataset row")
        if merged.get("max_turns") is not None:
            merged["max_turns"] = int(merged["max_turns"])
        return cls(**merged)

    def make_env(self) -> gym.Env:
        limits = {"max_turns": self.max_turns} if self.max_turns is not None else {}
        return ha_envs.make(task=self.task, harness=self.harness, sandbox=self.sandbox, suite=self.suite, **limits)


def chat_messages(observation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Observation messages in OpenAI form: role and content (tool call id and name on tool turns)."""
    out = []
    for m in observation:
        keep = CHAT_KEYS if m["role"] == "tool" else CHAT_KEYS[:2]
        out.append({k: m[k] for k in keep if k in m})
    return out


class TextEpisode:
    """A harness-wrapped env driven by the model's text turns, with framework-neutral metadata:
    ``instance_id``, ``harness``, ``harness_hash``, ``tools`` (OpenAI schemas), ``turn``,
    ``termination``, ``truncated``, ``mask_sample`` (an infrastructure fault: drop the sample) and,
    once graded, ``resolved`` and ``grade`` (status, flags, error)."""

    def __init__(self, config: AdapterConfig) -> None:
        self.config = config
        self.env = config.make_env()
        self._static: dict[str, Any] = {}

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self._static.get("tools", []))

    def reset(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        obs, info = self.env.reset(seed=self.config.seed)
        self._static = {k: info.get(k) for k in ("instance_id", "harness", "harness_hash", "tools")}
        return chat_messages(obs), self._metadata(info, truncated=False)

    def step(self, action: Any) -> tuple[list[dict[str, Any]], float, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return chat_messages(obs), float(reward), bool(terminated or truncated), self._metadata(info, truncated)

    def close(self) -> None:
        self.env.close()

    def _metadata(self, info: dict[str, Any], truncated: bool) -> dict[str, Any]:
        meta = dict(self._static, turn=info.get("turn", 0), termination=info.get("termination"),
                    truncated=bool(truncated), mask_sample=bool(info.get("mask_sample", False)))
        if info.get("error"):
            meta["error"] = info["error"]
        if "grade" in info:
            grade = info["grade"]
            meta["resolved"] = bool(grade["resolved"])
            meta["grade"] = {k: grade[k] for k in ("status", "resolved", "flags", "error")}
        return meta


__all__ = ["AdapterConfig", "AdapterConfigError", "TextEpisode", "chat_messages"]
