"""The trainer seam: what any RL algorithm implements to train on repair trajectories.

A ``Trainer`` gets a batch of ``Sample`` (one trajectory each: token ids, loss mask, rollout
logprobs, reward, advantage, termination, group) and updates its policy; it saves and loads
checkpoints and hands out its current policy as an ``LLMClient`` for the next rollouts. The driver
(``driver.train``) owns the loop; trainers never see the environment.

Which records reach a trainer (``BatchPolicy``, applied by ``prepare_batch``; documented once here,
shared by every backend):

- **masked** (``mask_sample``: sandbox or model-server failures, no verdict): dropped, always;
- **no trainable tokens** (chat mode, or ``token_error``: ids the backend did not return): dropped,
  always (ids are never guessed);
- **truncated** (``max_turns``, ``context_limit``, ``agent_timeout``): ``truncated="drop"`` (the
  paper's choice, the default) or ``"keep"`` (trained with the reward of the graded state);
- advantages: reward minus the group mean over the records that remain (std normalisation
  optional), computed by ``ha_agents.train.grpo.group_advantages``, the one implementation;
- groups whose remaining members all have the same reward carry no signal (advantage 0) and are
  left out of the batch unless ``keep_zero_advantage``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from .grpo import group_advantages
from ..llm.base import LLMClient
from ..records.episode_record import classify



@dataclass
class Sample:
    token_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float | None]
    """Rollout (sampler) logprobs per token; None where the sampler gave none (prompt, observations)."""
    reward: float
    advantage: float
    group: str
    termination: str | None = None
    instance_id: str = ""
    run: int = 1

    @property
    def n_trainable(self) -> int:
        return sum(self.loss_mask)


@dataclass(frozen=True)
class BatchPolicy:
    truncated: str = "drop"
    """``drop`` (the paper) or ``keep`` truncated episodes."""
    normalize_std: bool = False
    keep_zero_advantage: bool = False

    def __post_init__(self) -> None:
        if self.truncated not in ("drop", "keep"):
            raise ValueError(f"truncated must be 'drop' or 'keep', got {self.truncated!r}")


@dataclass
class Batch:
    samples: list[Sample]
    dropped: dict[str, int] = field(default_factory=dict)
    """Why records were left out: masked, no_tokens, truncated, zero_advantage."""


def prepare_batch(records: Sequence[Mapping[str, Any]], policy: BatchPolicy = BatchPolicy()) -> Batch:
    """Records (``trajectories.jsonl`` lines) -> the samples an update trains on, in a stable order."""
    dropped: Counter[str] = Counter()
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (classify(r).group, int(r.get("run", 1)))):
        o = classify(r)
        if o.masked:
            dropped["masked"] += 1
        elif r.get("token_error") or not any(r.get("loss_mask") or ()):
            dropped["no_tokens"] += 1
        elif o.truncated and policy.truncated == "drop":
            dropped["truncated"] += 1
        else:
            groups[o.group].append(r)
    samples: list[Sample] = []
    for g, members in groups.items():
        rewards = [float(r["reward"]) for r in members]
        adv = group_advantages(rewards, normalize_std=policy.normalize_std)
        if not policy.keep_zero_advantage and all(a == 0 for a in adv):
            dropped["zero_advantage"] += len(members)
            continue
        for r, a in zip(members, adv):
            samples.append(Sample(token_ids=list(r["token_ids"]), loss_mask=list(r["loss_mask"]),
                                  logprobs=list(r.get("logprobs") or [None] * len(r["token_ids"])),
                                  reward=float(r["reward"]), advantage=float(a), group=g,
                                  termination=r.get("termination"), instance_id=r["instance_id"],
                                  run=int(r.get("run", 1))))
    return Batch(samples, dict(dropped))


@runtime_checkable
class Trainer(Protocol):
    """What an RL algorithm implements. ``update`` returns scalar metrics (loss, grad_norm, ...)."""

    def update(self, samples: list[Sample]) -> dict[str, float]: ...

    def save(self, path: Path) -> None: ...

    def load(self, path: Path) -> None: ...

    def client(self) -> LLMClient:
        """The current policy, for the next rollouts (the same weights, not a copy, in process)."""
        ...
