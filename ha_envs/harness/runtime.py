"""What the tools and hooks layers share during an episode: one :class:`HarnessRuntime`, made by
``build()`` and handed to both layers at construction, so neither reads the other's attributes.

The tools layer starts it at each reset (a fresh :class:`~ha_envs.harness.state.EpisodeState` and
an in-sandbox toolbox client); the hooks layer reads what the tools did and records what it vetoed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..sandbox.base import Sandbox
from .state import EpisodeState
from .toolbox import ToolboxClient
from .tools import Tool


@dataclass
class HarnessRuntime:
    tools: dict[str, tuple[Tool, dict[str, Any]]]
    """The harness's tools by name, with the options its spec set, in the order the model sees them."""
    track_edits: bool = False
    """A hook needs edits made through bash (costs one git status per command)."""
    state: EpisodeState = field(default_factory=EpisodeState)
    toolbox: ToolboxClient | None = None
    """The in-sandbox toolbox of the current episode (installed lazily by the first call that needs it)."""

    @classmethod
    def of(cls, tools: list[tuple[Tool, dict[str, Any]]], track_edits: bool = False) -> "HarnessRuntime":
        return cls({t.name: (t, opts) for t, opts in tools}, track_edits)

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(self.tools)

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI schemas of the tools."""
        return [t.openai_schema() for t, _ in self.tools.values()]

    @property
    def tool_parameters(self) -> dict[str, dict[str, Any]]:
        """Each tool's JSON schema of arguments (what the parser checks a call against)."""
        return {name: t.parameters for name, (t, _) in self.tools.items()}

    def start(self, sandbox: Sandbox, command_timeout_s: float) -> None:
        """A new episode: fresh state, a toolbox client for this episode's sandbox (the harness's
        command limit caps its calls, at most 60 s)."""
        self.state = EpisodeState(track_edits=self.track_edits)
        self.toolbox = ToolboxClient(sandbox, min(60.0, command_timeout_s))


__all__ = ["HarnessRuntime"]
