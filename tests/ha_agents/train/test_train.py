"""The trainer seam and the GRPO maths: advantages equal verl's, the loss has no gradient on
mask-0 tokens and matches verl's vanilla PPO loss, the batch policy, the local trainer's update
(packed == naive), sampling seeds, the task sampler and the rollout ledger."""

from __future__ import annotations

import math
import os
import random

import pytest

from ha_agents.train import BatchPolicy, RolloutLedger, Sample, TaskSampler, prepare_batch
from ha_envs.loaders import load_suite

if not os.environ.get("CI"):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")

import torch  # noqa: E402

from tests.ha_agents.conftest import with_rollout_logprobs  # noqa: E402

from ha_agents.train.losses import LossConfig, aggregate, grpo_loss  # noqa: E402
from ha_agents.train.local import _length_buckets  # noqa: E402
from ha_agents.episode import EpisodeConfig


def _records(rng: random.Random, groups: int, binary: bool = True) -> list[dict]:
    recs = []
    for g in range(groups):
        for k in range(rng.randint(2, 6)):
            n = rng.randint(5, 12)
            recs.append({"instance_id": f"t{g}", "run": k + 1, "reward": float(rng.random() < 0.5) if binary else rng.random(),
                         "termination": "submitted", "mask_sample": False, "token_ids": list(range(n)),
                         "loss_mask": [0, 0] + [1] * (n - 2), "logprobs": [None] * n, "token_error": ""})
    return recs


@pytest.mark.parametrize("norm", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_advantages_equal_verls_grpo_estimator(norm, seed):
    import numpy as np

    if not os.environ.get("CI"):
        pytest.importorskip("verl")
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    rng = random.Random(seed)
    recs = _records(rng, groups=7, binary=seed != 2)
    batch = prepare_batch(recs, BatchPolicy(normalize_std=norm, keep_zero_advantage=True))
    ours = {(s.instance_id, s.run): s.advantage for s in batch.samples}
    T = max(len(r["token_ids"]) for r in recs)
    scores = torch.zeros(len(recs), T)
    mask = torch.zeros(len(recs), T)
    for i, r in enumerate(recs):
        scores[i, len(r["token_ids"]) - 1] = r["reward"]  # reward at the last token, as verl places it
        mask[i, : len(r["token_ids"])] = 1
    adv, _ = compute_grpo_outcome_advantage(scores, mask, np.array([r["instance_id"] for r in recs], dtype=object),
                                            norm_adv_by_std_in_grpo=norm)
    for i, r in enumerate(recs):
        assert ours[(r["instance_id"], r["run"])] == pytest.approx(float(adv[i, 0]), abs=1e-5)


def test_loss_has_no_gradient_on_mask0_tokens_and_is_a_token_mean():
    g = torch.Generator().manual_seed(0)
    B, T = 3, 9
    logp = (-torch.rand(B, T, generator=g) * 3).requires_grad_()
    old = logp.detach() + 0.3 * torch.randn(B, T, generator=g)
    adv = torch.tensor([1.0, -0.5, 0.25])
    mask = (torch.rand(B, T, generator=g) > 0.4).float()
    # on-policy (ratio 1, nothing clipped): every mask-1 token has a gradient, no mask-0 token has one
    on, _ = grpo_loss(logp, logp.detach(), adv, mask, LossConfig())
    on.backward()
    assert torch.all(logp.grad[mask == 0] == 0) and torch.all(logp.grad[mask == 1] != 0)
    logp.grad = None
    loss, m = grpo_loss(logp, old, adv, mask, LossConfig())
    loss.backward()
    assert torch.all(logp.grad[mask == 0] == 0)
    ratio = torch.exp(logp.detach() - old)
    pg = torch.maximum(-adv[:, None] * ratio, -adv[:, None] * ratio.clamp(0.8, 1.2))
    assert float(loss.detach()) == pytest.approx(float((pg * mask).sum() / mask.sum()), rel=1e-6)
    assert 0 < m["clip_frac"] < 1
    # seq-mean-token-mean weighs sequences equally
    seq = aggregate(pg, mask, "seq-mean-token-mean")
    assert float(seq) == pytest.approx(float(((pg * mask).sum(-1) / mask.sum(-1)).mean()), rel=1e-6)
    with pytest.raises(ValueError, match="unknown loss aggregation"):
        aggregate(pg, mask, "token-median")


def test_loss_equals_verls_vanilla_policy_loss():
    if not os.environ.get("CI"):
        pytest.importorskip("verl")
    from omegaconf import OmegaConf
    from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla

    g = torch.Generator().manual_seed(1)
    logp = -torch.rand(4, 11, generator=g) * 2
    old = logp + 0.4 * torch.randn(4, 11, generator=g)
    adv = torch.randn(4, 1, generator=g).expand(4, 11)
    mask = (torch.rand(4, 11, generator=g) > 0.3).float()
    cfg = OmegaConf.create({"clip_ratio": 0.2, "clip_ratio_low": 0.2, "clip_ratio_high": 0.2, "clip_ratio_c": 1e9,
                            "global_batch_info": {}})
    theirs, _ = compute_policy_loss_vanilla(old, logp, adv, mask, loss_agg_mode="token-mean", config=cfg)
    ours, _ = grpo_loss(logp, old, adv, mask, LossConfig())
    assert float(ours) == pytest.approx(float(theirs), rel=1e-5)


def test_batch_policy_drops_what_it_documents():
    base = {"token_ids": [1, 2, 3], "loss_mask": [0, 1, 1], "logprobs": [None, -1.0, -1.0], "token_error": "",
            "mask_sample": False, "termination": "submitted"}
    recs = [dict(base, instance_id="a", run=1, reward=1.0), dict(base, instance_id="a", run=2, reward=0.0),
            dict(base, instance_id="a", run=3, reward=1.0, mask_sample=True, termination="sandbox_error"),
            dict(base, instance_id="a", run=4, reward=0.0, token_error="turn 1: no ids", loss_mask=[0, 0, 0]),
            dict(base, instance_id="a", run=5, reward=1.0, termination="max_turns"),
            dict(base, instance_id="b", run=1, reward=1.0), dict(base, instance_id="b", run=2, reward=1.0)]
    b = prepare_batch(recs)
    assert b.dropped == {"masked": 1, "no_tokens": 1, "truncated": 1, "zero_advantage": 2}
    assert [(s.instance_id, s.run, s.advantage) for s in b.samples] == [("a", 1, 0.5), ("a", 2, -0.5)]
    kept = prepare_batch(recs, BatchPolicy(truncated="keep"))
    assert [(s.run, round(s.advantage, 4)) for s in kept.samples if s.instance_id == "a"] == [
        (1, 0.3333), (2, -0.6667), (5, 0.3333)]
    with pytest.raises(ValueError, match="truncated must be"):
        BatchPolicy(truncated="sometimes")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from ha_agents.train.models import init_model

    return init_model(tmp_path_factory.mktemp("tiny-train"), "llama", hidden=32, layers=1, heads=2, vocab_size=1500)


def _samples(trainer, n=5, seed=0):
    rng = random.Random(seed)
    prompt = [rng.randrange(10, 1400) for _ in range(40)]  # one group: one prompt, then each member's own turns
    out = []
    for i in range(n):
        L = rng.randint(20, 60)
        ids = prompt + [rng.randrange(10, 1400) for _ in range(L)]
        mask = [0] * 40 + [0] + [rng.random() < 0.7 for _ in range(L - 1)]
        L += 40
        out.append(Sample(token_ids=ids, loss_mask=[int(m) for m in mask], logprobs=[None] * L,
                          reward=float(i % 2), advantage=0.5 if i % 2 else -0.5, group="g", instance_id="g", run=i + 1))
    return with_rollout_logprobs(trainer, out)  # the current policy's, as the in-process sampler reports them


def test_local_update_packed_equals_naive_and_reports_metrics(tiny_model):
    from ha_agents.train.local import LocalConfig, LocalTrainer

    grads = []
    metrics = []
    for pack, mbt in ((True, 240), (True, 16384), (False, 240)):
        tr = LocalTrainer(tiny_model, LocalConfig(lr=1e-3, pack=pack, micro_batch_tokens=mbt))
        mbs = tr._micro_batches(_samples(tr))
        if pack and mbt == 240:  # the group's shared prompt runs once (prefix sharing), in more than one micro-batch
            assert len(mbs) > 1 and all(tr._shared_prefix(m) >= 40 for m in mbs if len(m) > 1)
        if pack and mbt > 240:  # one micro-batch, whose members run in more than one length bucket
            assert len(mbs) == 1 and len(_length_buckets([len(s.token_ids) - 40 for s in mbs[0]])) > 1
        m = tr.update(_samples(tr))
        metrics.append(m)
        grads.append(torch.cat([p.detach().flatten() for p in tr.model.parameters()]))
    # the packed paths are the same update as the naive one
    assert torch.allclose(grads[0], grads[2], atol=1e-5) and torch.allclose(grads[1], grads[2], atol=1e-5)
    m = metrics[0]
    assert m["grad_norm"] > 0 and m["tokens"] == sum(s.n_trainable for s in _samples(tr)) - sum(
        s.loss_mask[0] for s in _samples(tr))
    assert m["logprob_mismatch_mean"] < 1e-5 and m["logprob_mismatch_max"] < 1e-4
    assert m["clip_frac"] == 0.0  # one optimizer step: ratio 1 everywhere


def test_length_buckets_keep_padding_bounded():
    lengths = [870, 70, 600, 870, 66, 700]
    buckets = _length_buckets(lengths)
    assert sorted(i for b in buckets for i in b) == list(range(6))  # every member once
    assert buckets == [[0, 3, 5], [2], [1, 4]]  # longest first; each within 0.75 of its longest
    for b in buckets:
        assert min(lengths[i] for i in b) >= 0.75 * max(lengths[i] for i in b)


def test_mini_batches_are_optimizer_steps_and_clip(tiny_model):
    from ha_agents.train.local import LocalConfig, LocalTrainer

    tr = LocalTrainer(tiny_model, LocalConfig(lr=0.05, mini_batches=3))
    m = tr.update(_samples(tr, n=6))
    assert m["optimizer_steps"] == 3 and tr.step == 1
    assert m["clip_frac"] > 0  # later mini-batches see a moved policy against the rollout logprobs


def test_sampling_differs_across_calls_and_repeats_with_a_seed(tiny_model):
    from ha_agents.llm.hf import TransformersClient

    c = TransformersClient(str(tiny_model), max_tokens=12, temperature=1.0)
    prompt = list(range(20, 40))
    a, b = (c.complete([], [], prompt_ids=prompt).token_ids for _ in range(2))
    assert a != b  # two members of one group are not the same sample
    s1, s2 = (c.complete([], [], prompt_ids=prompt, seed=7).token_ids for _ in range(2))
    assert s1 == s2


def test_task_sampler_epochs_and_state():
    tasks = load_suite("mini")
    s = TaskSampler(tasks, seed=3)
    first = [t.instance_id for t in s.next(5)] + [t.instance_id for t in s.next(5)]
    assert len(set(first)) == 10
    state = s.state_dict()
    nxt = [t.instance_id for t in s.next(5)]  # crosses into the next epoch
    assert len(set(nxt)) == 5
    r = TaskSampler(tasks, seed=3)
    r.load_state_dict(state)
    assert [t.instance_id for t in r.next(5)] == nxt
    led = RolloutLedger()
    led.add("training", 8)
    led.add("preparation", 4)
    assert led.total == 12
    with pytest.raises(ValueError):
        led.add("evaluation", 1)
    with pytest.raises(ValueError, match="no tasks"):
        TaskSampler([])


def test_pool_refuses_evaluation_instances_and_warns_on_repositories(caplog):
    import dataclasses

    from ha_agents.train import build_pool

    tasks = load_suite("mini")
    with pytest.raises(ValueError, match="evaluation instances: mini__ttl_cache"):
        build_pool(tasks, evaluation=[t for t in tasks if t.instance_id == "mini__ttl_cache"])
    train_t = [dataclasses.replace(t, repo="acme/shared") if i == 0 else t for i, t in enumerate(tasks[:4])]
    ev = [dataclasses.replace(tasks[5], repo="acme/shared")]
    rep = build_pool(train_t, n=2, evaluation=ev, seed=1)
    assert len(rep.tasks) == 2 and rep.repo_overlap == {"acme/shared": [tasks[0].instance_id]}
    assert "share repository acme/shared" in caplog.text
    assert math.isclose(len(build_pool(train_t, n=None).tasks), 4)


def test_group_members_differ_and_each_episode_reproduces(tiny_model, tmp_path):
    """collect() seeds every (task, sample): a group's members sample differently, and rerunning a
    sample with the same seed gives the same episode (what resume relies on)."""
    from ha_agents.runs.rollouts import collect
    from ha_agents.train.local import LocalConfig, LocalTrainer
    from ha_agents.train.recipes import TRAIN_HARNESS

    tr = LocalTrainer(tiny_model, LocalConfig(max_tokens=24, context_tokens=8192))
    tasks = [t for t in load_suite("mini") if t.instance_id == "mini__ini_interpolation"]
    a = collect(tasks, 2, tr.client(), EpisodeConfig.create(TRAIN_HARNESS, token_mode=tr.token_mode, seed=5), out=tmp_path / "a",
                progress_bar=False)
    b = collect(tasks, 1, tr.client(), EpisodeConfig.create(TRAIN_HARNESS, token_mode=tr.token_mode, seed=5), out=tmp_path / "b",
                progress_bar=False)
    ones = [[t for t, m in zip(r["token_ids"], r["loss_mask"]) if m] for r in sorted(a, key=lambda r: r["run"])]
    assert ones[0] != ones[1] and a[0]["seed"] != a[1]["seed"]
    assert [t for t, m in zip(b[0]["token_ids"], b[0]["loss_mask"]) if m] == ones[0]
