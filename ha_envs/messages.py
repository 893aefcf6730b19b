"""Chat messages with provenance, and the Gymnasium spaces of the repair env.

An observation is the list of **new** messages since the last step. Each is a plain dict (so it
goes straight into a chat template or a JSONL line) with ``role``, ``content``, ``source`` (who
wrote it: ``task``, ``system``, ``tool``, ``hook:<name>``, ``skill``) and ``trainable`` (always
False for observations: only the policy's own tokens are trained on).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from gymnasium import spaces

SOURCES = ("task", "system", "tool", "skill")
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "


def message(role: str, content: str, source: str, **extra: Any) -> dict[str, Any]:
    """A message dict; ``extra`` carries optional fields such as ``tool_call_id`` and ``name``."""
    if not is_valid_source(source):
        raise ValueError(f"unknown message source {source!r}")
    return {"role": role, "content": content, "source": source, "trainable": False, **extra}


def is_valid_source(source: str) -> bool:
    return source in SOURCES or (source.startswith("hook:") and len(source) > 5)


class MessageListSpace(spaces.Space[list]):
    """Space of observations: a list of message dicts as built by :func:`message`."""

    def __init__(self, max_messages: int = 64, max_chars: int = 1 << 22, seed: int | None = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)
        self.max_messages = max_messages
        self.max_chars = max_chars

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        if not isinstance(x, list) or len(x) > self.max_messages:
            return False
        for m in x:
            if not isinstance(m, dict):
                return False
            if not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
                return False
            if not isinstance(m.get("source"), str) or not is_valid_source(m["source"]):
                return False
            if m.get("trainable") is not False or len(m["content"]) > self.max_chars:
                return False
        return True

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, Any]]:
        n = int(self.np_random.integers(1, 4))
        return [message("user", _random_text(self.np_random, 40), "tool") for _ in range(n)]

    def __repr__(self) -> str:
        return f"MessageListSpace(max_messages={self.max_messages})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MessageListSpace) and other.max_messages == self.max_messages


class AssistantMessageSpace(spaces.Space[Any]):
    """Space of actions: one assistant message, as raw text or ``{"content", "tool_calls"}``.

    ``sample()`` draws harmless alphanumeric text (no tool call), so random agents and the env
    checker exercise the format-error path and never run arbitrary commands."""

    def __init__(self, max_chars: int = 1 << 20, seed: int | None = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)
        self.max_chars = max_chars

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        if isinstance(x, str):
            return len(x) <= self.max_chars
        if isinstance(x, dict):
            content = x.get("content")
            calls = x.get("tool_calls")
            return (content is None or isinstance(content, str)) and (calls is None or isinstance(calls, Sequence))
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        return _random_text(self.np_random, 60)

    def __repr__(self) -> str:
        return "AssistantMessageSpace()"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AssistantMessageSpace)


def _random_text(rng: np.random.Generator, max_len: int) -> str:
    n = int(rng.integers(1, max_len))
    return "".join(_ALNUM[i] for i in rng.integers(0, len(_ALNUM), size=n))
