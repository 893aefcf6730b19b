"""The episode record: one finished episode, one line of ``trajectories.jsonl``.

``EpisodeRecord`` is the typed form, and what travels: ``run_episode`` returns one, ``collect``
returns a list, ``evaluate``'s summary holds the run's. ``to_json()`` gives the line's mapping and
``from_json()`` reads it back, older files normalised once on reading (schema 1 had no ``schema``
field and no ``node``, and wrote ``policy`` for the model; unknown fields are kept in ``extra`` so
nothing a newer writer added is lost on a round trip). ``termination`` is a :class:`Termination`.

A record is frozen: a run adds what it knows after the episode (the sample index, the node) with
``with_fields``. It is also a read-only mapping of its line (``record["run"]``, ``dict(record)``,
``json.dumps(dict(record))``), so code that filters lines by key reads records and log lines alike.

``classify(record)`` is the one place that decides what a record means for learning: its group,
whether it was truncated, masked, or succeeded. Every reader (the local trainer's batch, verl's
agent loop, the GRPO rates, evolution statistics, compare, the viewer) asks it rather than
reading ``termination`` and ``mask_sample`` itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ha_envs.termination import MASKED, TRUNCATED, Termination

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
    termination = record.get("termination")
    return Outcome(group=str(record.get("group") or record["instance_id"]),
                   success=float(record.get("reward") or 0.0) > 0.0,
                   truncated=termination in TRUNCATED,
                   masked=bool(record.get("mask_sample", False)) or termination in MASKED)


@dataclass(frozen=True)
class EpisodeRecord(Mapping):
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
    termination: Termination | None = None
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
    steps: list[dict[str, Any]] = field(default_factory=list)
    """A multi-step Harbor task's graded steps, in order (``ha_envs/harbor/steps.py``): each one's
    ``name``, ``reward`` (1 or 0), ``verifier_reward`` (what its verifier wrote; None when no valid
    reward), ``status``, ``ending`` (submitted, max_turns, ..., ``setup_failed``: the step's ``setup.sh`` failed) and ``min_reward``; ``[]`` otherwise."""
    schema: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields this version does not know (a newer writer's), kept for the round trip."""

    def __post_init__(self) -> None:
        if self.termination is not None and not isinstance(self.termination, Termination):
            object.__setattr__(self, "termination", Termination(self.termination))

    def outcome(self) -> Outcome:
        return classify(self)

    def with_fields(self, **values: Any) -> "EpisodeRecord":
        """A copy with these fields set; names that are not fields go to ``extra`` (written on the line)."""
        known = {k: v for k, v in values.items() if k in _FIELDS}
        extra = {k: v for k, v in values.items() if k not in _FIELDS}
        return replace(self, **known, extra={**self.extra, **extra} if extra else self.extra)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        extra = d.pop("extra")
        if d["termination"] is not None:
            d["termination"] = d["termination"].value
        d["policy"] = d["model"]  # schema-1 readers look for it
        for k in ("group", "node", "steps"):
            if not _shown(self, k):
                del d[k]
        d.update(extra)
        return d

    # the read-only mapping of the line, without copying the messages and tokens
    def _keys(self) -> list[str]:
        keys = [f for f in _FIELDS if _shown(self, f)]
        return keys + ["policy"] + [k for k in self.extra if k not in keys and k != "policy"]

    def __getitem__(self, key: str) -> Any:
        if key in _FIELDS and _shown(self, key):
            return getattr(self, key)
        if key == "policy":
            return self.model
        if key in self.extra:
            return self.extra[key]
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "EpisodeRecord":
        if isinstance(d, EpisodeRecord):
            return d
        if "instance_id" not in d:
            raise ValueError(f"not an episode record (no instance_id): keys {sorted(d)[:8]}")
        kw = {k: v for k, v in d.items() if k in _FIELDS}
        if not kw.get("model") and d.get("policy"):
            kw["model"] = d["policy"]
        kw["schema"] = int(d.get("schema", 1))
        kw["run"] = int(d.get("run", 1))
        extra = {k: v for k, v in d.items() if k not in _FIELDS and k != "policy"}
        return cls(**kw, extra=extra)


_FIELDS = tuple(f.name for f in fields(EpisodeRecord) if f.name != "extra")


def _shown(record: EpisodeRecord, name: str) -> bool:
    """Whether a field is on the record's line: ``group`` and ``node`` only when set, ``steps``
    only for a multi-step task (lines of other tasks stay as they were)."""
    if name in ("group", "node"):
        return getattr(record, name) is not None
    return name != "steps" or bool(record.steps)


def episode_records(lines: Iterable[Mapping[str, Any]]) -> list[EpisodeRecord]:
    """Lines of a trajectories file (or records already typed) as records."""
    return [EpisodeRecord.from_json(d) for d in lines]


def read_episodes(path: "str | Path") -> list[EpisodeRecord]:
    """The records of a ``trajectories.jsonl`` file (a cut last line left out), typed."""
    from .log import read_jsonl

    return episode_records(read_jsonl(Path(path)))


__all__ = ["EpisodeRecord", "Outcome", "SCHEMA_VERSION", "classify", "episode_records", "read_episodes"]
