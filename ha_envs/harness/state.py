"""What the harness remembers during one episode, shared by its tools and hooks."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from ..sandbox.shell import text_bytes

TEST_COMMAND = re.compile(
    r"(\bpy\.?test\b|\bunittest\b|runtests\.py|\bbin/test\b|\btox\b|\bnox\b|\bgo\s+test\b|\bcargo\s+test\b|"
    r"\b(npm|yarn|pnpm)\s+(run\s+)?test\b|\bnode\s+--test\b|\bjest\b|\bmocha\b|\bvitest\b|\bmake\s+(check|test)\b|"
    r"\bctest\b|\bmvn\s+test\b|\bgradle\w*\s+test\b)"
)


def looks_like_test_run(command: str) -> bool:
    return bool(TEST_COMMAND.search(command))


def digest(text: str) -> str:
    return hashlib.sha1(text_bytes(text)).hexdigest()[:16]


@dataclass
class Step:
    turn: int
    key: str
    """The action, canonicalised (tool name and sorted arguments)."""
    observation: str
    """A digest of what the tools answered."""
    error: bool


@dataclass
class EpisodeState:
    turn: int = 0
    track_edits: bool = False
    """Set when a hook needs to know about edits made through bash (costs one git status per command)."""
    fingerprint: str | None = None
    last_edit_turn: int | None = None
    last_test_turn: int | None = None
    edits: int = 0
    test_runs: int = 0
    steps: list[Step] = field(default_factory=list)
    tool_errors: int = 0
    delivery: dict[str, Any] | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    """Free per-episode memory for hooks (e.g. 'review shown'), keyed by hook name."""

    _events: int = 0
    _last_edit: int = 0
    _last_test: int = 0

    def mark_edit(self) -> None:
        self._events += 1
        self.edits += 1
        self.last_edit_turn, self._last_edit = self.turn, self._events

    def mark_test(self) -> None:
        self._events += 1
        self.test_runs += 1
        self.last_test_turn, self._last_test = self.turn, self._events

    @property
    def tested_since_edit(self) -> bool:
        """Tests ran after the last edit (in event order, so edit-then-test in one turn counts)."""
        return self._last_test > self._last_edit
