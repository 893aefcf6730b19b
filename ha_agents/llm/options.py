"""Model options a user sets once for a run (``ha eval --temperature ... --model-kwargs FILE``):
plain data, so they travel with the model spec to every episode, Ray workers included, and are
recorded in ``summary.json``."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ModelOptions:
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    """Cap per model call (token mode: also never more than the context left)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Further request fields (``--model-kwargs FILE``), sent as they are (e.g. ``top_k``,
    ``repetition_penalty``, ``chat_template_kwargs``)."""
    api_key_env: str = "OPENAI_API_KEY"
    """The environment variable holding the API key (the key itself is never recorded)."""
    max_attempts: int | None = field(default=None, repr=False)
    """HTTP attempts per model call (``openai:``; default the client's, 6). Out of ``repr``: how
    patient the client is does not change what the model draws (``EpisodeConfig.draw_key``)."""
    backoff_max_s: float | None = field(default=None, repr=False)
    """The longest wait between two attempts (``openai:``; default the client's, 30 s)."""

    def record(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, {})}

    def api_key(self) -> str:
        return os.environ.get(self.api_key_env, "")


def load_model_kwargs(path: str | Path) -> dict[str, Any]:
    """A JSON or YAML mapping of request fields."""
    from ha_envs.harness.spec import read_data_file

    data = read_data_file(path, "--model-kwargs file")
    if not isinstance(data, dict):
        raise ValueError(f"--model-kwargs {path}: expected a mapping of request fields, got {type(data).__name__}")
    return data
