"""The episode record: one finished episode, one line of ``trajectories.jsonl``.

``EpisodeRecord`` is the typed form; ``to_json()`` gives the line's mapping and ``from_json()``
reads it back, older files included (schema 1 had no ``schema`` field and no ``node``; unknown
fields are kept in ``extra`` so nothing a newer writer added is lost on a round trip).

``classify(record)`` is the one place that decides what a record means for learning: its group,
whether it was truncated, masked, or succeeded. Every reader (the local trainer's batch, verl's
agent loop, the GRPO rates, evolution statistics, compare, the viewer) asks it rather than
reading ``termination`` and ``mask_sample`` itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from ha_envs.env import MASKED, TRUNCATED

SCHEMA_VERSION = 2


@dataclass(frozen=True)
class Outcome:
    """What a record means for learning."""

    group: str
    """Records of the same task (and, when set, the same ``group`` field) share a GRPO group."""
    success: bool
    """Reward above zero (the grader resolved the task)."""
    truncated: bool
    """The episode ran out of budget (``TRUNCATED``): graded as it stands, dropped by GRPO."""
    masked: bool
    """An infrastructure fault (``mask_sample`` or a ``MASKED`` termination): no verdict at all."""

    @property
    def usable(self) -> bool:
        """Counts toward GRPO's baseline and the trainable rate (neither truncated nor masked)."""
        return not (self.truncated or self.masked)


def classify(record: "Mapping[str, Any] | EpisodeRecord") -> Outcome:
    """The outcome of one record, as every reader must see it."""
    r = record.to_json() if isinstance(record, EpisodeRecord) else record
    termination = r.get("termination")
    return Outcome(group=str(r.get("group") or r["instance_id"]),
                   success=float(r.get("reward") or 0.0) > 0.0,
                   truncated=termination in TRUNCATED,
                   masked=bool(r.get("mask_sample", False)) or termination in MASKED)


@dataclass(frozen=True)
class EpisodeRecord:
    """One finished episode. Field order is the line's key order."""

    instance_id: str
    benchmark: str = ""
    model: str = ""
    """What produced the actions: a model spec (``openai:...``, ``hf:...``) or a scripted model
    (``oracle``, ``null``). Schema 1 also wrote it as ``policy``."""
    harness: str = ""
    harness_hash: str = ""
    run: int = 1
    """1-based sample index within the (task, run directory)."""
    reward: float = 0.0
    resolved: bool = False
    termination: str | None = None
    mask_sample: bool = False
    error: str = ""
    turns: int = 0
    tool_counts: dict[str, int] = field(default_factory=dict)
    hooks: dict[str, Any] = field(default_factory=dict)
    edits: int = 0
    test_runs: int = 0
    delivery: Any = None
    timings: dict[str, float] = field(default_factory=dict)
    patch: str = ""
    grade: dict[str, Any] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    model_calls: list[dict[str, Any]] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float | None] = field(default_factory=list)
    token_error: str = ""
    skill: str | None = None
    seed: int | None = None
    duration_s: float = 0.0
    grader_version: str = ""
    dataset: str = ""
    grading_scripts: Any = None
    task_fingerprint: str = ""
    group: str | None = None
    """GRPO group when it differs from the instance id (the trainers set it)."""
    node: str | None = None
    """Which machine ran the episode (a Ray node id, or None when local)."""
    schema: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields this version does not know (a newer writer's), kept for the round trip."""

    def outcome(self) -> Outcome:
        return classify(self)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        extra = d.pop("extra")
        d["policy"] = d["model"]  # schema-1 readers look for it
        for k in ("group", "node"):
            if d[k] is None:
                del d[k]
        d.update(extra)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "EpisodeRecord":
        if "instance_id" not in d:
            raise ValueError(f"not an episode record (no instance_id): keys {sorted(d)[:8]}")
        known = {f.name for f in fields(cls)} - {"extra"}
        kw = {k: v for k, v in d.items() if k in known}
        if not kw.get("model") and d.get("policy"):
            kw["model"] = d["policy"]
        kw["schema"] = int(d.get("schema", 1))
        kw["run"] = int(d.get("run", 1))
        extra = {k: v for k, v in d.items() if k not in known and k != "policy"}
        return cls(**kw, extra=extra)


__all__ = ["EpisodeRecord", "Outcome", "SCHEMA_VERSION", "classify"]
