"""GRPO policy losses in torch, shared by every backend that computes its own loss.

``policy_loss(logp, old_logp, advantages, mask, config)`` returns ``(loss, metrics)``:

- per-token ratio ``exp(logp - old_logp)`` against the **rollout** logprobs (so several
  mini-batches per update stay valid), PPO clipping with ``clip_low`` / ``clip_high``;
- aggregation (``agg``): ``token-mean`` over the mask-1 tokens of the batch (default; the
  normaliser can be given, so micro-batches of one mini-batch share it), ``seq-mean-token-mean``,
  ``seq-mean-token-sum``;
- optional KL to a reference policy (``kl_coef``, the k3 estimator) and entropy bonus
  (``entropy_coef``), both off by default as in the paper.

Metrics: clip fraction, approximate KL to the rollout policy, and (when given) entropy and KL.
Losses are registered by name (``LOSSES``) so a user can add one (``register_loss``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch


@dataclass(frozen=True)
class LossConfig:
    name: str = "grpo"
    agg: str = "token-mean"
    clip_low: float = 0.2
    clip_high: float = 0.2
    kl_coef: float = 0.0
    entropy_coef: float = 0.0


AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")


def aggregate(mat: torch.Tensor, mask: torch.Tensor, agg: str, norm: float | None = None,
              n_seqs: int | None = None) -> torch.Tensor:
    """``mat``, ``mask``: [B, T]. ``norm``: token count to divide by (token-mean; default: this
    batch's mask-1 tokens); ``n_seqs``: sequences to divide by (seq-mean; default: this batch's)."""
    mask = mask.to(mat.dtype)
    if agg == "token-mean":
        denom = norm if norm is not None else mask.sum().clamp(min=1.0)
        return (mat * mask).sum() / denom
    per_seq_sum = (mat * mask).sum(-1)
    if agg == "seq-mean-token-mean":
        per_seq = per_seq_sum / mask.sum(-1).clamp(min=1.0)
    elif agg == "seq-mean-token-sum":
        per_seq = per_seq_sum
    else:
        raise ValueError(f"unknown loss aggregation {agg!r}; use {', '.join(AGG_MODES)}")
    return per_seq.sum() / (n_seqs if n_seqs is not None else max(1, mat.shape[0]))


def grpo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
              config: LossConfig, norm: float | None = None, n_seqs: int | None = None,
              ref_logp: torch.Tensor | None = None, entropy: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    """``logp``, ``old_logp``, ``mask``: [B, T]; ``advantages``: [B] or [B, T]."""
    adv = advantages if advantages.dim() == 2 else advantages[:, None].expand_as(logp)
    log_ratio = (logp - old_logp).clamp(-20.0, 20.0)
    ratio = torch.exp(log_ratio)
    unclipped = -adv * ratio
    clipped = -adv * ratio.clamp(1.0 - config.clip_low, 1.0 + config.clip_high)
    pg = torch.maximum(unclipped, clipped)
    loss = aggregate(pg, mask, config.agg, norm, n_seqs)
    m = mask.to(logp.dtype)
    n = m.sum().clamp(min=1.0)
    metrics = {"clip_frac": float(((clipped > unclipped).to(m.dtype) * m).sum() / n),
               "approx_kl": float((0.5 * log_ratio.detach() ** 2 * m).sum() / n)}
    if config.kl_coef and ref_logp is not None:
        d = (ref_logp - logp).clamp(-20.0, 20.0)
        kl = torch.exp(d) - d - 1.0  # k3: unbiased, non-negative
        loss = loss + config.kl_coef * aggregate(kl, mask, config.agg, norm, n_seqs)
        metrics["kl_ref"] = float((kl.detach() * m).sum() / n)
    if config.entropy_coef and entropy is not None:
        loss = loss - config.entropy_coef * aggregate(entropy, mask, config.agg, norm, n_seqs)
        metrics["entropy"] = float((entropy.detach() * m).sum() / n)
    return loss, metrics


LossFn = Callable[..., "tuple[torch.Tensor, dict[str, float]]"]
LOSSES: dict[str, LossFn] = {"grpo": grpo_loss}


def register_loss(name: str) -> Callable[[LossFn], LossFn]:
    def deco(fn: LossFn) -> LossFn:
        LOSSES[name] = fn
        return fn
    return deco


def get_loss(name: str) -> LossFn:
    try:
        return LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown policy loss {name!r}; registered: {', '.join(LOSSES)}") from None


