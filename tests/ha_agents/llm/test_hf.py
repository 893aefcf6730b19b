"""The local transformers backend: a tiny randomly initialised model built on the spot (no hub),
driven token-faithfully by the AgentLoop."""

from __future__ import annotations

import math
import os

import pytest

import ha_envs
from ha_agents.chat.template import CHATML
from ha_agents.loop import AgentLoop

if not os.environ.get("CI"):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, tokenizer):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-gpt2")
    tok = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", bos_token="<|endoftext|>",
                                  pad_token="<|endoftext|>")
    tok.save_pretrained(path)
    cfg = GPT2Config(vocab_size=tokenizer.get_vocab_size(), n_positions=8192, n_embd=32, n_layer=1, n_head=2,
                     eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id)
    GPT2LMHeadModel(cfg).save_pretrained(path)
    return str(path)


def test_transformers_client_in_token_mode(tiny_task, tokenizer, tiny_model):
    from ha_agents.llm.hf import TransformersClient

    client = TransformersClient(tiny_model, max_tokens=24)
    returned = []
    real = client.complete

    def spy(messages, tools, prompt_ids=None):
        out = real(messages, tools, prompt_ids)
        returned.append(out.token_ids)
        return out

    client.complete = spy
    env = ha_envs.make(task=tiny_task, harness="h0")
    try:
        traj = AgentLoop(client, CHATML, tokenizer).run(env)
    finally:
        env.close()
    # a random model writes no tool call: three format errors end the episode, unmasked
    assert traj.termination == "format_errors" and not traj.mask_sample and len(returned) == 3
    ones = [t for t, m in zip(traj.token_ids, traj.loss_mask) if m == 1]
    assert ones == [t for r in returned for t in r]
    model_lps = [lp for lp, m in zip(traj.logprobs, traj.loss_mask) if m == 1 and lp is not None]
    assert len(model_lps) == sum(len(r) for r in returned) and all(lp <= 0 and math.isfinite(lp) for lp in model_lps)
    assert traj.model_calls[0]["completion_tokens"] == len(returned[0])


def test_missing_model_is_a_clear_error(tmp_path):
    from ha_agents.llm.base import LLMError
    from ha_agents.llm.hf import TransformersClient

    with pytest.raises(LLMError, match="cannot load a model"):
        TransformersClient(str(tmp_path / "nothing"))


def test_cli_token_mode_with_a_local_model(tiny_model, tmp_path):
    import json

    from ha_cli.main import main

    out = tmp_path / "hf"
    assert main(["eval", "--suite", "mini", "--instances", "mini__semver_ranges", "--model", f"hf:{tiny_model}",
                 "--tokenizer", tiny_model, "--template", "hermes", "--harness", "h0", "--out", str(out)]) == 0
    [rec] = [json.loads(l) for l in (out / "trajectories.jsonl").read_text().splitlines()]
    assert rec["termination"] == "format_errors" and rec["model"] == tiny_model
    assert len(rec["token_ids"]) == len(rec["loss_mask"]) == len(rec["logprobs"]) > 100
    assert 0 < sum(rec["loss_mask"]) < len(rec["loss_mask"]) and not rec["token_error"]


def test_concurrent_clients_of_one_directory_load_it_once_and_sample_alike(tmp_path):
    """`ha eval --workers N` builds a client per episode: N threads loading one model directory at
    once share one copy (the load is serialised: racing loads met 'Cannot copy out of meta tensor'),
    and a seeded call gives the same tokens from every client; a rewritten directory loads again."""
    import threading

    from ha_agents.llm.hf import TransformersClient
    from ha_agents.train.models import init_model

    path = init_model(tmp_path / "m", "qwen", hidden=32, layers=1, heads=2, seed=0)
    clients, errors = [], []

    def make():
        try:
            clients.append(TransformersClient(str(path), max_tokens=8, temperature=1.0))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=make) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(clients) == 4
    assert len({id(c.model) for c in clients}) == 1 and len({id(c._lock) for c in clients}) == 1
    outs = {tuple(c.complete([], [], prompt_ids=[1, 2, 3], seed=5).token_ids) for c in clients}
    assert len(outs) == 1
    init_model(tmp_path / "m", "qwen", hidden=32, layers=1, heads=2, seed=1)  # a new checkpoint in place
    assert TransformersClient(str(path), max_tokens=8).model is not clients[0].model
