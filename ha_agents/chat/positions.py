"""How many tokens a model can attend over, read from its own ``config.json``, and the run's context
budget checked against it before anything starts.

A budget past the model's positions does not fail: the model reads garbage past them, and a run
learns from it. The model's reach is ``max_position_embeddings``, or, with rope scaling in the
config, ``original_max_position_embeddings x factor`` where that is more (YaRN on Qwen3: 32,768 x 4
= 131,072 over a config that says 40,960). ``resolve_context`` is what ``ha train`` and ``ha eval
--tokenizer DIR`` call: the budget asked for, checked; or, asked for none, the model's reach (at
most :data:`DEFAULT_CONTEXT`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_CONTEXT = 65536
"""The budget when none is asked for and the model's config does not say less."""


@dataclass(frozen=True)
class Positions:
    """A model's reach, with where it was read."""

    config: Path
    max_positions: int
    rope_scaling: dict[str, Any] | None

    @property
    def reach(self) -> int:
        rope = self.rope_scaling or {}
        factor = float(rope.get("factor") or 1.0)
        original = int(rope.get("original_max_position_embeddings") or self.max_positions)
        return max(self.max_positions, int(original * factor)) if rope else self.max_positions

    def describe(self) -> str:
        rope = json.dumps(self.rope_scaling) if self.rope_scaling else "no rope_scaling"
        return f"{self.config}: max_position_embeddings {self.max_positions}, {rope}"


def model_positions(model_dir: str | Path) -> Positions | None:
    """The reach in ``model_dir/config.json`` (a multimodal model's ``text_config`` included); None
    when there is no config (a bare ``tokenizer.json``) or it names no positions."""
    path = Path(model_dir) / "config.json"
    if not path.is_file():
        return None
    try:
        cfg = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable model config ({exc})") from exc
    cfg = cfg.get("text_config") or cfg if isinstance(cfg, dict) else {}
    n = cfg.get("max_position_embeddings")
    if not isinstance(n, int) or n <= 0:
        return None
    rope = cfg.get("rope_scaling")
    return Positions(path, n, rope if isinstance(rope, dict) and rope.get("factor") else None)


def resolve_context(model_dir: str | Path, asked: int | None, setting: str = "--context-tokens") -> int:
    """The run's context budget: ``asked`` when the model reaches that far (else a ``ValueError``
    naming the setting and the rope scaling that would make it fit), or the model's reach up to
    :data:`DEFAULT_CONTEXT` when nothing was asked."""
    pos = model_positions(model_dir)
    if asked is None:
        return DEFAULT_CONTEXT if pos is None else min(DEFAULT_CONTEXT, pos.reach)
    if pos is None or asked <= pos.reach:
        return asked
    original = int((pos.rope_scaling or {}).get("original_max_position_embeddings") or pos.max_positions)
    factor = math.ceil(asked / original * 4) / 4  # to a quarter, as model cards write it
    rope = {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original}
    raise ValueError(
        f"{setting} {asked} is more than the {pos.reach} positions the model can attend over ({pos.describe()}). "
        f"Lower {setting} to at most {pos.reach}, or give the model rope scaling that reaches it: in its config.json "
        f"\"rope_scaling\": {json.dumps(rope)} (and the same to the server: vLLM --hf-overrides "
        f"'{{\"rope_scaling\": {json.dumps(rope)}}}'), if the model card says it supports that")


__all__ = ["DEFAULT_CONTEXT", "Positions", "model_positions", "resolve_context"]
