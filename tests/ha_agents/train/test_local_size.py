"""The local trainer's precision and size settings: the memory estimate against hand-computed
numbers; gradient checkpointing, LoRA (targets, the adapter-disabled reference, saving, merging) on
the tiny test model; bf16 + LoRA against fp32 full fine-tuning on SmolLM2-135M-Instruct (the
`smollm2_dir` session fixture, converted once); and the flags through `ha train`."""

from __future__ import annotations

import json
import math
import os
import random
import re

import pytest

from ha_agents.train.base import Sample
from ha_agents.train.memory import estimate_memory

if not os.environ.get("CI"):
    pytest.importorskip("torch")
    pytest.importorskip("peft")

import torch  # noqa: E402

from tests.ha_agents.conftest import with_rollout_logprobs  # noqa: E402


def test_memory_estimate_matches_hand_computed_numbers():
    # 1,000 parameters, 100 trainable: bf16 base, fp32 adapter (the LoRA case)
    e = estimate_memory(1000, 100, "bf16", "fp32", layers=2, hidden=8, intermediate=16, vocab=50, tokens=10)
    assert e.weights == 900 * 2 + 100 * 4 == 2200
    assert e.grads == 400 and e.adam == 800 and e.reference == 0
    # per token and layer (10 x 8 + 4 x 16) values x 2 bytes = 288; x 10 tokens x 2 layers = 5760;
    # the head: 10 tokens x 50 x 4 bytes x 2 (logits, log-softmax) = 4000
    assert e.activations == 5760 + 4000
    assert e.total == 2200 + 400 + 800 + 9760
    # full fine-tuning in fp32 with a KL reference and gradient checkpointing
    f = estimate_memory(1000, 1000, "fp32", "fp32", layers=2, hidden=8, intermediate=16, vocab=50, tokens=10,
                        checkpointing=True, reference=True)
    assert (f.weights, f.grads, f.adam, f.reference) == (4000, 4000, 8000, 4000)
    # one hidden state per layer (10 x 2 x 8 x 4 = 640) + one layer recomputed (10 x 144 x 4 = 5760) + head
    assert f.activations == 640 + 5760 + 4000
    assert "activations ~" in f.line() and "(estimate" in f.line() and "1,000 trainable" in f.line()
    with pytest.raises(ValueError, match="unknown dtype 'int4'"):
        estimate_memory(10, 1, "int4", "fp32", layers=1, hidden=1, intermediate=1, vocab=1, tokens=1)
    with pytest.raises(ValueError, match="trainable parameters"):
        estimate_memory(10, 11, "fp32", "fp32", layers=1, hidden=1, intermediate=1, vocab=1, tokens=1)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from ha_agents.train.models import init_model

    return init_model(tmp_path_factory.mktemp("tiny-size"), "llama", hidden=32, layers=2, heads=2, vocab_size=1500)


def _samples(n=4, prompt_len=40, vocab=1400, seed=0, lengths=(20, 40)):
    """One GRPO group: a shared prompt, each member's own continuation (mask 1 on ~70% of it)."""
    rng = random.Random(seed)
    prompt = [rng.randrange(10, vocab) for _ in range(prompt_len)]
    out = []
    for i in range(n):
        L = rng.randint(*lengths)
        ids = prompt + [rng.randrange(10, vocab) for _ in range(L)]
        mask = [0] * (prompt_len + 1) + [int(rng.random() < 0.7) for _ in range(L - 1)]
        out.append(Sample(token_ids=ids, loss_mask=mask, logprobs=[None] * len(ids), reward=float(i % 2),
                          advantage=0.5 if i % 2 else -0.5, group="g", instance_id="g", run=i + 1))
    return out


def test_gradient_checkpointing_gives_the_same_loss_and_gradients(tiny_model):
    from ha_agents.train.local import LocalConfig, LocalTrainer

    got = {}
    for ckpt in (False, True):
        tr = LocalTrainer(tiny_model, LocalConfig(lr=1e-3, gradient_checkpointing=ckpt, seed=0))
        samples = with_rollout_logprobs(LocalTrainer(tiny_model, LocalConfig(seed=0)), _samples())
        mlp, forward, runs, calls = tr.model.model.layers[0].mlp, tr.model.model.layers[0].mlp.forward, [], []
        mlp.register_forward_hook(lambda *a: calls.append(1))  # module calls (a recomputation fires no hook)
        mlp.forward = lambda *a, **k: runs.append(1) or forward(*a, **k)  # every run, recomputations included
        m = tr.update(samples)
        grads = torch.cat([p.grad.flatten() for p in tr.model.parameters() if p.grad is not None])
        got[ckpt] = (m["loss"], grads, len(runs) - len(calls), tr.model.training)
    (l0, g0, c0, t0), (l1, g1, c1, t1) = got[False], got[True]
    assert c0 == 0 and c1 > 0  # the layer really ran again in the backward pass (recomputed)
    assert not t0 and not t1  # the model is back in eval mode (dropout off) after the update
    assert math.isclose(l0, l1, rel_tol=1e-6, abs_tol=1e-7)
    assert torch.allclose(g0, g1, atol=1e-6, rtol=1e-5)


def test_lora_targets_are_checked_against_the_model(tiny_model):
    from ha_agents.train.local import LocalConfig, LocalTrainer

    with pytest.raises(ValueError, match=r"--lora-targets qkv: no linear layer of that name.*q_proj"):
        LocalTrainer(tiny_model, LocalConfig(lora_rank=4, lora_targets=("q_proj", "qkv")))
    with pytest.raises(ValueError, match="need a LoRA adapter"):
        LocalTrainer(tiny_model, LocalConfig(lora_alpha=8.0))
    with pytest.raises(ValueError, match="unknown dtype 'fp8'"):
        LocalTrainer(tiny_model, LocalConfig(dtype="fp8"))
    with pytest.raises(ValueError, match="--dtype fp16 needs --lora-rank R"):  # AdamW's eps is 0 in fp16
        LocalTrainer(tiny_model, LocalConfig(dtype="fp16"))
    tr = LocalTrainer(tiny_model, LocalConfig(lora_rank=4, lora_targets=("q_proj", "v_proj")))
    wrapped = {n.rsplit(".", 1)[-1] for n, m in tr.model.named_modules() if hasattr(m, "lora_A")}
    assert wrapped == {"q_proj", "v_proj"}
    default = LocalTrainer(tiny_model, LocalConfig(lora_rank=4))
    wrapped = {n.rsplit(".", 1)[-1] for n, m in default.model.named_modules() if hasattr(m, "lora_A")}
    assert wrapped == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


def test_fp16_lora_updates_and_samples(tiny_model):
    from ha_agents.train.local import LocalConfig, LocalTrainer

    tr = LocalTrainer(tiny_model, LocalConfig(lr=1e-2, dtype="fp16", lora_rank=4, seed=0))
    assert {p.dtype for p in tr.model.parameters() if not p.requires_grad} == {torch.float16}
    for _ in range(3):
        m = tr.update(with_rollout_logprobs(tr, _samples()))
        assert math.isfinite(m["loss"]) and math.isfinite(m["grad_norm"]) and m["grad_norm"] > 0
    assert len(tr.client().complete([], [], prompt_ids=list(range(20, 40)), max_tokens=5).token_ids) >= 1


def test_lora_kl_reference_is_the_base_model_with_the_adapter_off(tiny_model):
    from ha_agents.train.local import LocalConfig, LocalTrainer
    from ha_agents.train.losses import LossConfig

    tr = LocalTrainer(tiny_model, LocalConfig(lr=0.05, lora_rank=4, loss=LossConfig(kl_coef=0.1), seed=0))
    assert tr.ref_model is None  # no second copy
    samples = with_rollout_logprobs(tr, _samples())
    base = LocalTrainer(tiny_model, LocalConfig(seed=0))
    micro = [samples[0]]
    assert torch.allclose(tr._reference(micro), base._micro(base.model, micro)[0], atol=1e-6)
    tr.update(samples)
    with torch.no_grad():
        moved = tr._micro(tr.model, micro)[0]
    # the policy moved; the reference did not
    assert not torch.allclose(moved, base._micro(base.model, micro)[0], atol=1e-4)
    assert torch.allclose(tr._reference(micro), base._micro(base.model, micro)[0], atol=1e-6)


def test_lora_checkpoint_saves_the_adapter_and_merges_into_a_plain_model(tiny_model, tmp_path):
    from ha_agents.llm.hf import TransformersClient
    from ha_agents.train.local import LocalConfig, LocalTrainer

    cfg = LocalConfig(lr=0.05, lora_rank=4, seed=0)
    tr = LocalTrainer(tiny_model, cfg)
    samples = with_rollout_logprobs(tr, _samples())
    tr.update(samples)
    tr.save(tmp_path / "ckpt")
    assert {p.name for p in (tmp_path / "ckpt" / "adapter").iterdir()} >= {"adapter_config.json",
                                                                           "adapter_model.safetensors"}
    assert not (tmp_path / "ckpt" / "model").exists()  # without merge_on_save: the adapter only
    # resumed into a fresh trainer: the same adapter, optimizer step and outputs
    again = LocalTrainer(tiny_model, cfg)
    again.load(tmp_path / "ckpt")
    assert again.step == 1
    with torch.no_grad():
        want = tr._micro(tr.model, [samples[0]])[0]
        assert torch.equal(again._micro(again.model, [samples[0]])[0], want)
    # a full-fine-tuning trainer is told what the checkpoint is
    with pytest.raises(ValueError, match="holds a LoRA adapter"):
        LocalTrainer(tiny_model, LocalConfig()).load(tmp_path / "ckpt")
    # merged: a plain model directory the hf: spec loads, computing what the adapter model computes
    merged = tr.save_merged(tmp_path / "merged")
    assert (merged / "model.safetensors").is_file() and not (merged / "adapter_config.json").exists()
    plain = TransformersClient(str(merged), max_tokens=4)
    assert not any("lora" in n for n, _ in plain.model.named_parameters())
    ids = torch.tensor([samples[0].token_ids])
    with torch.no_grad():
        assert torch.allclose(plain.model(input_ids=ids).logits, tr.model(input_ids=ids).logits, atol=1e-5)
    # the adapter is left as it was (merging changed nothing in the trainer)
    with torch.no_grad():
        assert torch.equal(tr._micro(tr.model, [samples[0]])[0], want)


def test_smollm2_bf16_lora_matches_fp32_full_and_moves_only_the_adapter(smollm2_dir):
    """On SmolLM2-135M-Instruct, one fixed batch (a 19-token request, a fix and a give-up, 8-13
    tokens each): at step 0, bf16 + LoRA computes the fp32 full model's per-token logprobs within
    0.15 nats (mean within 0.05; measured 0.06 and 0.02: bf16 keeps 8 bits of mantissa), the NLL
    within 1% and the GRPO loss within what the per-token bound allows (measured 0.2% and 0.6-2.3%);
    a GRPO update then changes the adapter and leaves every base weight bit-identical."""
    from ha_agents.train.local import LocalConfig, LocalTrainer

    model, _ = smollm2_dir
    full = LocalTrainer(model, LocalConfig(lr=1e-3, seed=0))
    tok = full.tokenizer
    prompt = tok.encode("Fix the bug in add(a, b) so that it returns the sum.\n")
    samples = []
    for text, adv in ((" def add(a, b):\n    return a + b\n", 1.0), (" I cannot fix this bug, submitting.", -0.5)):
        ids = prompt + tok.encode(text)
        samples.append(Sample(token_ids=ids, loss_mask=[0] * (len(prompt) + 1) + [1] * (len(ids) - len(prompt) - 1),
                              logprobs=[None] * len(ids), reward=0.0, advantage=adv, group="g", instance_id="g"))
    with_rollout_logprobs(full, samples)
    lora = LocalTrainer(model, LocalConfig(lr=1e-3, dtype="bf16", lora_rank=8, seed=0))
    with torch.no_grad():
        a, mask = full._micro(full.model, samples)[:2]
        b = lora._micro(lora.model, samples)[0]
    diff = (a - b)[mask > 0].abs()
    assert diff.max() < 0.15 and diff.mean() < 0.05, (diff.max(), diff.mean())
    nll = [float(-(x * mask).sum() / mask.sum()) for x in (a, b)]
    assert math.isclose(nll[0], nll[1], rel_tol=0.01), nll

    base = {n: p.detach().clone() for n, p in lora.model.named_parameters() if not p.requires_grad}
    adapter = {n: p.detach().clone() for n, p in lora.model.named_parameters() if p.requires_grad}
    assert base and adapter and all("lora_" in n for n in adapter)
    assert all(p.dtype == torch.bfloat16 for p in base.values()) and all(p.dtype == torch.float32
                                                                         for p in adapter.values())
    # the GRPO loss at step 0 against the fp32 rollout logprobs: ratio 1 for fp32, exp(bf16 - fp32) for LoRA
    adv = torch.tensor([s.advantage for s in samples])
    want = float(full.loss_fn(a, a, adv, mask, full.config.loss)[0])
    own = float(lora.loss_fn(b.float(), a, adv, mask, lora.config.loss)[0])  # its own logprobs: ratio exp(b - a)
    m = lora.update(samples)  # one fp32 full update would add ~12 s (bf16 ~15 s without bf16 matmul in the CPU)
    # the update's loss is the GRPO loss of the adapter model's own logprobs against the rollout's, exactly ...
    assert math.isclose(m["loss"], own, rel_tol=1e-4), (m["loss"], own)
    # ... and near the fp32 model's (0.6% on a CPU without bf16 matmul, 2.3% on one with AMX: bf16 kernels
    # round differently): each token's ratio exp(b - a) is off 1 by at most expm1(max|b - a|), so the
    # loss, a weighted mean of ratio x advantage at step 0 (no clipping within 0.15 nats), by that x max|adv|
    assert abs(own - want) <= float(adv.abs().max()) * math.expm1(float(diff.max())), (own, want, diff.max())
    after = dict(lora.model.named_parameters())
    assert all(torch.equal(after[n], p) for n, p in base.items())  # bit-identical base
    assert any(not torch.equal(after[n], p) for n, p in adapter.items())  # the adapter moved
    assert m["grad_norm"] > 0


TASK = "mini__ini_interpolation"
TRAIN = ["train", "--suite", "mini", "--instances", TASK, "--harness", "train-edit", "--updates", "1",
         "--tasks-per-update", "1", "--group-size", "2", "--max-tokens", "8", "--max-turns", "1",
         "--context-tokens", "8192", "--no-progress"]


def test_ha_train_lora_flags_print_the_estimate_and_write_adapter_and_merged_model(tmp_path, capsys):
    """`ha train --dtype bf16 --lora-rank 4 --gradient-checkpointing` on a tiny model: the memory
    estimate is printed at start with the adapter's parameter count; the checkpoint holds the
    adapter and, at the end, the merged plain model; bad targets and verl are refused clearly."""
    from safetensors import safe_open

    from ha_cli.main import main

    model, out = tmp_path / "m", tmp_path / "o"
    rc = main([*TRAIN, "--model", str(model), "--init-model", "qwen", "--dtype", "bf16", "--lora-rank", "4",
               "--lora-targets", "q_proj,v_proj", "--gradient-checkpointing", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    # hidden 64, 2 layers, rank 4 on q_proj and v_proj (64 -> 64): 2 layers x 2 modules x 4 x (64 + 64)
    assert re.search(r"memory estimate \(computed, not measured\): [\d,]+ parameters, 2,048 trainable .*"
                     r"activations ~[\d.]+ GiB \(estimate", err), err
    ckpt = out / "checkpoint"
    assert (ckpt / "adapter" / "adapter_model.safetensors").is_file()
    cfg = json.loads((ckpt / "adapter" / "adapter_config.json").read_text())
    assert cfg["r"] == 4 and cfg["lora_alpha"] == 8 and sorted(cfg["target_modules"]) == ["q_proj", "v_proj"]
    with safe_open(str(ckpt / "model" / "model.safetensors"), "pt") as f:  # merged: plain names, bf16
        assert not [k for k in f.keys() if "lora" in k or "base_layer" in k]
        assert f.get_tensor(next(iter(f.keys()))).dtype == torch.bfloat16
    assert f"merged the LoRA adapter into {ckpt / 'model'}" in err

    rc = main([*TRAIN, "--model", str(model), "--lora-rank", "4", "--lora-targets", "qkv", "--out", str(tmp_path / "b")])
    assert rc == 2 and "--lora-targets qkv: no linear layer of that name in the model" in capsys.readouterr().err
    rc = main([*TRAIN, "--model", str(model), "--merge", "--out", str(tmp_path / "c")])
    assert rc == 2 and "need a LoRA adapter: pass --lora-rank" in capsys.readouterr().err
    rc = main([*TRAIN, "--backend", "verl", "--model", str(model), "--lora-rank", "4", "--dry-run",
               "--out", str(tmp_path / "v")])
    assert rc == 2 and "actor_rollout_ref.model.lora_rank" in capsys.readouterr().err
