"""verl's GRPO advantage under the local backend's batch rule: the group baseline is taken over
the members that carry a gradient.

verl's ``grpo`` estimator centres every response on the mean of its whole group, masked and
truncated ones included, then zeroes the masked ones: rewards [1, 1, 0, 1 (truncated, dropped)]
give [0.25, 0.25, -0.75, 0]. The local backend (``base.prepare_batch``) drops those rollouts
before it centres, giving [1/3, 1/3, -2/3]. The agent loop (``verl_loop``) already gives a masked
episode, and a truncated one under ``truncated: drop``, an all-zero response mask; this estimator
reads that mask as "left out of the batch" and centres each group on the members that remain,
through the same function the local backend uses (``ha_agents.train.grpo.group_advantages``: mean
centred, optional unbiased-std scaling as ``torch.std``, a one-member group gets 0).

``ha train --backend verl`` selects it (``algorithm.adv_estimator=harnessadapt_grpo``) and
registers it in every Ray worker of verl's job, the TaskRunner that computes advantages included,
through Ray's ``worker_process_setup_hook`` (:func:`register`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .grpo import group_advantages

NAME = "harnessadapt_grpo"
SETUP_HOOK = f"{__name__}.register"
"""The value of ``ray_kwargs.ray_init.runtime_env.worker_process_setup_hook``."""


def masked_group_advantage(token_level_rewards: Any, response_mask: Any, index: Any, epsilon: float = 1e-6,
                           norm_adv_by_std_in_grpo: bool | None = None, config: Any = None) -> tuple[Any, Any]:
    """verl's estimator signature. ``token_level_rewards`` and ``response_mask``: (batch, response
    length); ``index``: the group id of each row. Returns (advantages, returns), both (batch,
    response length): each kept row's reward minus its group's kept mean (divided by the group's
    std when ``norm_adv_by_std_in_grpo``, read from ``config`` when not given), times its mask;
    rows with an empty mask get 0 and count in no baseline."""
    import torch

    if norm_adv_by_std_in_grpo is None:
        norm_adv_by_std_in_grpo = bool(_get(config, "norm_adv_by_std_in_grpo", True))
    scores = token_level_rewards.sum(dim=-1)
    kept = response_mask.sum(dim=-1) > 0
    groups: dict[Any, list[int]] = defaultdict(list)
    for i in range(scores.shape[0]):
        if bool(kept[i]):
            groups[index[i]].append(i)
    adv = torch.zeros_like(scores)
    with torch.no_grad():
        for rows in groups.values():
            values = group_advantages([float(scores[i]) for i in rows], normalize_std=norm_adv_by_std_in_grpo,
                                      eps=epsilon)
            for i, a in zip(rows, values):
                adv[i] = a
        out = adv.unsqueeze(-1) * response_mask
    return out, out


def _get(config: Any, key: str, default: Any) -> Any:
    if config is None:
        return default
    if hasattr(config, "get"):
        return config.get(key, default)
    return getattr(config, key, default)


def register() -> None:
    """Register the estimator under ``NAME`` in verl's registry (idempotent)."""
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

    if ADV_ESTIMATOR_REGISTRY.get(NAME) is not masked_group_advantage:
        register_adv_est(NAME)(masked_group_advantage)
