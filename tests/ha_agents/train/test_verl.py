"""The verl 0.9.1 adapter with the real verl classes on CPU: HarnessAgentLoop driven by a scripted
stand-in for verl's LLMServerClient over a locally built tokenizer, verl's AgentLoopWorker on a
local Ray loading our agent-loop YAML through the real Hydra config, verl's GRPO advantage on the
batch it produces, one policy-gradient step through verl's own loss on a tiny model, the dataset
writer read back by verl's RLHFDataset, and `ha train --backend verl --dry-run`."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from ha_envs.loaders import load_suite

if not os.environ.get("CI"):
    pytest.importorskip("verl")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from ha_agents.cluster.ray_start import init_ray  # noqa: E402
from ha_agents.train.recipes import TRAIN_HARNESS  # noqa: E402
from ha_agents.train.verl_launch import agent_loop_yaml, paper_overrides, write_dataset  # noqa: E402

from tests.ha_agents.train.verl_stub import ScriptedServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
TASK = "mini__ini_interpolation"


def _gold_call() -> str:
    [task] = [t for t in load_suite("mini") if t.instance_id == TASK]
    cmd = "cat > /tmp/fix.patch <<'HA_EOF'\n" + task.gold_patch + "HA_EOF\ngit apply /tmp/fix.patch"
    return "<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": cmd}}) + "\n</tool_call>"


SUBMIT = "<tool_call>\n" + json.dumps({"name": "submit", "arguments": {}}) + "\n</tool_call>"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from ha_agents.train.models import init_model

    return init_model(tmp_path_factory.mktemp("verl-model"), "qwen", hidden=32, layers=1, heads=2, vocab_size=2000)


def _config(model_dir: Path, loop_yaml: Path, response_length: int = 6000, extra: list[str] = ()):
    from hydra import compose, initialize_config_dir
    import verl

    with initialize_config_dir(config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer/config"),
                               version_base=None):
        return compose(config_name="ppo_trainer", overrides=[
            f"actor_rollout_ref.model.path={model_dir}", "actor_rollout_ref.rollout.name=vllm",
            "actor_rollout_ref.rollout.prompt_length=4096", f"actor_rollout_ref.rollout.response_length={response_length}",
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loop_yaml}",
            "actor_rollout_ref.rollout.agent.default_agent_loop=harnessadapt", *extra])


def _loop(model_dir, tmp_path, server, response_length=6000, truncated="drop", harness=TRAIN_HARNESS):
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from ha_agents.train.verl_loop import HarnessAgentLoop

    y = agent_loop_yaml(tmp_path / "loop.yaml", TRAIN_HARNESS, {"suite": "mini"})
    cfg = _config(model_dir, y, response_length)
    tok = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    return HarnessAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tok, processor=None,
                            dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data), hf_model_type="qwen2",
                            harness=harness.to_dict(), tasks={"suite": "mini"}, truncated=truncated), tok


def _episode(model_dir, tmp_path, server, **kw):
    """Build the loop inside the event loop (verl binds it at construction) and run one episode."""
    async def go():
        loop, tok = _loop(model_dir, tmp_path, server, **kw)
        out = await loop.run({"temperature": 1.0}, raw_prompt=[{"role": "user", "content": "x"}],
                             extra_info={"instance_id": TASK})
        tok.last_messages, tok.last_info = loop.messages, loop.final_info
        return out, tok

    return asyncio.run(go())


def test_adapter_episode_is_token_faithful_and_rewarded(model_dir, tmp_path):
    from ha_agents.chat.template import ModelTemplate

    server = ScriptedServer(str(model_dir), ["Let me look first, without a tool call.", _gold_call(), SUBMIT])
    out, tok = _episode(model_dir, tmp_path, server)
    assert out.reward_score == 1.0
    assert out.extra_fields["reward_extra_info"] == {"resolved": 1.0, "truncated": 0.0, "termination": "submitted",
                                                     "mask_sample": 0.0, "harness_hash": TRAIN_HARNESS.hash, "turns": 3.0,
                                                     "env_node": "", "harness_version": 0.0, "skill": 0.0, "episode": ""}
    # one request id for the episode; each call's max_tokens is the response budget left
    assert len({c["request_id"] for c in server.calls}) == 1 and len(server.calls) == 3
    assert server.calls[0]["max_tokens"] == 6000
    assert all(c["max_tokens"] == 6000 - (c["prompt_len"] - len(out.prompt_ids)) for c in server.calls)
    # masks alternate: three model turns (mask 1) separated by observations (mask 0)
    m = out.response_mask
    runs = [m[0]] + [b for a, b in zip(m, m[1:]) if a != b]
    assert runs == [1, 0, 1, 0, 1]
    assert out.response_logprobs is not None and len(out.response_logprobs) == len(out.response_ids)
    ones = [t for t, k in zip(out.response_ids, m) if k]
    expect = [t for text in (server.script) for t in list(tok.encode(text, add_special_tokens=False)) + [tok.convert_tokens_to_ids("<|im_end|>")]]
    assert ones == expect
    # prompt + response equal one full render of the final conversation by the model's template
    env_tools = [{"type": "function", "function": s} for s in []]  # tools come from the env below
    import ha_envs

    env = ha_envs.make(task=[t for t in load_suite("mini") if t.instance_id == TASK][0], harness=TRAIN_HARNESS)
    try:
        obs, info = env.reset()
    finally:
        env.close()
    del env_tools
    template = ModelTemplate(tok)
    # rebuild the final conversation: the env's first messages, then turn by turn what was decoded
    ids = out.prompt_ids + out.response_ids
    text = tok.decode(ids, skip_special_tokens=False)
    assert text.startswith(template.prompt(obs, info["tools"]))
    assert text.count("<|im_start|>assistant\n") == 3 and text.endswith("<|im_end|>")
    assert tok.encode(text, add_special_tokens=False) == ids  # ids are the canonical encoding of their text
    full = template.render(tok.last_messages, info["tools"], add_generation_prompt=False)
    assert full.endswith("<|im_end|>\n") and tok.encode(full[:-1], add_special_tokens=False) == ids


def test_truncation_is_detected_and_dropped_or_kept(model_dir, tmp_path):
    long = "<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": "echo " + "a b " * 400}}) + "\n</tool_call>"
    for policy in ("drop", "keep"):
        server = ScriptedServer(str(model_dir), [long] * 5)
        out, _ = _episode(model_dir, tmp_path, server, response_length=700, truncated=policy)
        info = out.extra_fields["reward_extra_info"]
        assert info["termination"] == "context_limit" and info["truncated"] == 1.0 and info["mask_sample"] == 0.0
        assert len(out.response_ids) <= 700 and all(c["max_tokens"] <= 700 for c in server.calls)
        assert (sum(out.response_mask) == 0) == (policy == "drop")


def test_server_failure_is_masked(model_dir, tmp_path):
    server = ScriptedServer(str(model_dir), ["thinking", SUBMIT], fail_at=1)
    out, _ = _episode(model_dir, tmp_path, server)
    info = out.extra_fields["reward_extra_info"]
    assert info["mask_sample"] == 1.0 and info["termination"] == "model_error" and out.reward_score == 0.0
    assert sum(out.response_mask) == 0


def test_episodes_end_through_the_wrapper_stack(model_dir, tmp_path):
    """Out of context and a failed server end the episode from outside, through every layer: the
    hooks layer's firings and the tools layer's counts are in the final info (the base alone has
    neither)."""
    from dataclasses import replace

    from ha_envs.harness.spec import Component

    hooked = replace(TRAIN_HARNESS, hooks=(Component("repo_overview"),))
    long = "<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": "echo " + "a b " * 400}}) + "\n</tool_call>"
    for server, termination in ((ScriptedServer(str(model_dir), [long] * 5), "context_limit"),
                                (ScriptedServer(str(model_dir), ["thinking", SUBMIT], fail_at=1), "model_error")):
        out, tok = _episode(model_dir, tmp_path, server, response_length=700, harness=hooked)
        info = tok.last_info
        assert out.extra_fields["reward_extra_info"]["termination"] == info["termination"] == termination
        assert info["hooks"]["repo_overview"]["count"] == 1  # the hooks layer's end of episode
        assert info["edits"] == 0 and info["tool_errors"] == 0  # the tools layer's


def test_dataset_reads_back_through_verls_rlhf_dataset(model_dir, tmp_path):
    from transformers import AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    tasks = load_suite("mini")[:3]
    path = write_dataset(tasks, tmp_path / "train.parquet")
    cfg = _config(model_dir, agent_loop_yaml(tmp_path / "l.yaml", TRAIN_HARNESS, {"suite": "mini"}))
    ds = RLHFDataset(data_files=[str(path)], tokenizer=AutoTokenizer.from_pretrained(str(model_dir)), config=cfg.data)
    assert len(ds) == 3
    row = ds[1]
    assert row["agent_name"] == "harnessadapt" and row["extra_info"]["instance_id"] == sorted(
        t.instance_id for t in tasks)[1]
    assert row["raw_prompt"][0]["role"] == "user"


def test_agent_loop_worker_on_local_ray_then_verls_advantage_and_loss(model_dir, tmp_path):
    import ray
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto
    from verl.trainer.ppo.core_algos import agg_loss, compute_grpo_outcome_advantage, compute_policy_loss_vanilla

    y = agent_loop_yaml(tmp_path / "loop.yaml", TRAIN_HARNESS, {"suite": "mini"})
    cfg = _config(model_dir, y, response_length=3000)
    init_ray(address="local", num_cpus=2, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), "CI": os.environ.get("CI", "")}})
    try:
        server = ScriptedServer(str(model_dir), [_gold_call(), SUBMIT])
        bad = ScriptedServer(str(model_dir), [SUBMIT])
        out_good = ray.get(ray.remote(AgentLoopWorker).remote(cfg, server).generate_sequences.remote(_batch(2)))
        out_bad = ray.get(ray.remote(AgentLoopWorker).remote(cfg, bad).generate_sequences.remote(_batch(2)))
    finally:
        ray.shutdown()
    batch = DataProto.concat([out_good, out_bad])
    assert batch.batch["responses"].shape == (4, 3000) and batch.batch["prompts"].shape[1] == 4096
    rm = batch.batch["rm_scores"]
    assert rm.sum(-1).tolist() == [1.0, 1.0, 0.0, 0.0]
    last = batch.batch["attention_mask"][:, 4096:].sum(-1) - 1
    assert all(rm[i, last[i]] == rm[i].sum() for i in range(4))  # the reward sits at the last token
    assert list(batch.non_tensor_batch["termination"]) == ["submitted"] * 4
    # one GRPO group of four: verl's estimator, then its loss on a tiny model's logprobs
    index = np.array(["g"] * 4, dtype=object)
    adv, _ = compute_grpo_outcome_advantage(rm, batch.batch["response_mask"], index, norm_adv_by_std_in_grpo=False)
    assert [round(float(a[0]), 3) for a in adv] == [0.5, 0.5, -0.5, -0.5]
    from omegaconf import OmegaConf
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
    ids = batch.batch["input_ids"][:, :4096 + 600]
    attn = batch.batch["attention_mask"][:, :4096 + 600]
    logits = model(input_ids=ids, attention_mask=attn).logits[:, 4095:-1].float()
    logp = torch.log_softmax(logits, -1).gather(-1, ids[:, 4096:].unsqueeze(-1)).squeeze(-1)
    mask = batch.batch["response_mask"][:, :600].float()
    old = batch.batch["rollout_log_probs"][:, :600]
    acfg = OmegaConf.create({"clip_ratio": 0.2, "clip_ratio_low": 0.2, "clip_ratio_high": 0.2, "clip_ratio_c": 3.0,
                             "global_batch_info": {}})
    loss, _ = compute_policy_loss_vanilla(old, logp, adv[:, :600], mask, loss_agg_mode="token-mean", config=acfg)
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
    opt.step()
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert torch.isfinite(agg_loss(logp.detach(), mask, "token-mean"))


def test_agent_loop_worker_drives_the_remote_env_on_a_sandbox_node(model_dir, tmp_path):
    """verl's AgentLoopWorker on a policy node, our loop with ``env: ray``: each episode's env and
    sandbox run in an actor on the node with sandbox slots (its own cache), the tokens stay with
    the loop; the episodes are rewarded as in-process ones and say which node ran their env."""
    import ray
    from ray.cluster_utils import Cluster
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    from ha_agents.cluster.ray_start import SLOTS

    y = agent_loop_yaml(tmp_path / "loop.yaml", TRAIN_HARNESS, {"suite": "mini"}, env="ray")
    cfg = _config(model_dir, y, response_length=3000)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "resources": {"policy": 1}})
    try:
        sbx = cluster.add_node(num_cpus=1, resources={SLOTS: 2}, env_vars={"HA_CACHE_DIR": str(tmp_path / "sbx")})
        cluster.wait_for_nodes()
        init_ray(address=cluster.address,
                 runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), "CI": os.environ.get("CI", "")}})
        server = ScriptedServer(str(model_dir), [_gold_call(), SUBMIT])
        worker = ray.remote(AgentLoopWorker).options(resources={"policy": 1}).remote(cfg, server)
        out = ray.get(worker.generate_sequences.remote(_batch(2)))
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert out.batch["rm_scores"].sum(-1).tolist() == [1.0, 1.0]
    assert list(out.non_tensor_batch["termination"]) == ["submitted"] * 2
    assert list(out.non_tensor_batch["env_node"]) == [sbx.node_id] * 2
    assert (tmp_path / "sbx" / "snapshots").is_dir()  # the sandbox node prepared the task, not the policy node


def _batch(n: int):
    from verl.protocol import DataProto

    return DataProto.from_single_dict({
        "dummy_tensor": torch.zeros(n, 1, dtype=torch.uint8),
        "raw_prompt": np.array([[{"role": "user", "content": "fix it"}]] * n, dtype=object),
        "extra_info": np.array([{"instance_id": TASK, "index": 0}] * n, dtype=object),
        "agent_name": np.array(["harnessadapt"] * n, dtype=object),
        "index": np.array([0] * n, dtype=object), "uid": np.array(["g"] * n, dtype=object)})


def test_ha_train_verl_dry_run_writes_what_verl_reads(model_dir, tmp_path, capsys):
    from ha_cli.main import main

    out = tmp_path / "verl-run"
    assert main(["train", "--backend", "verl", "--dry-run", "--model", str(model_dir), "--suite", "mini", "--limit", "4",
                 "--harness", "h0", "--updates", "7", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "verl.trainer.main_ppo" in text
    assert "warning: 46 tasks per update but the dataset has 4" in captured.err
    ov = (out / "verl" / "overrides.txt").read_text().split()
    for want in ("algorithm.adv_estimator=harnessadapt_grpo", "algorithm.norm_adv_by_std_in_grpo=false",
                 "actor_rollout_ref.rollout.n=4", "data.train_batch_size=46", "actor_rollout_ref.actor.optim.lr=1e-06",
                 "actor_rollout_ref.actor.optim.lr_scheduler_type=constant", "actor_rollout_ref.actor.use_kl_loss=false",
                 "actor_rollout_ref.actor.entropy_coeff=0.0", "actor_rollout_ref.actor.loss_agg_mode=token-mean",
                 "actor_rollout_ref.rollout.max_model_len=32768",  # the model's positions: no --context-tokens
                 "trainer.total_training_steps=7",
                 "trainer.save_freq=1"):
        assert want in ov
    import yaml

    [entry] = yaml.safe_load((out / "verl" / "agent_loop.yaml").read_text())
    assert entry["_target_"] == "ha_agents.train.verl_loop.HarnessAgentLoop" and entry["max_turns"] == 60
    assert entry["env"] == "local"
    assert main(["train", "--backend", "verl", "--dry-run", "--model", str(model_dir), "--suite", "mini", "--limit", "4",
                 "--env-placement", "ray", "--out", str(tmp_path / "v-ray")]) == 0
    assert yaml.safe_load((tmp_path / "v-ray" / "verl" / "agent_loop.yaml").read_text())[0]["env"] == "ray"
    capsys.readouterr()
    # verl's own Hydra config accepts every override we write
    from hydra import compose, initialize_config_dir
    import verl

    with initialize_config_dir(config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer/config"),
                               version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=ov)
    assert cfg.algorithm.adv_estimator == "harnessadapt_grpo" and cfg.actor_rollout_ref.rollout.n == 4
    assert cfg.ray_kwargs.ray_init.runtime_env.worker_process_setup_hook == "ha_agents.train.verl_advantage.register"
    assert cfg.data.max_prompt_length + cfg.data.max_response_length == 32768
    # without --dry-run on a machine without GPUs: a clear error
    assert main(["train", "--backend", "verl", "--model", str(model_dir), "--suite", "mini", "--limit", "1",
                 "--out", str(tmp_path / "v2")]) == 2
    assert "has none" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no response budget"):
        paper_overrides("m", tmp_path, tmp_path, tmp_path, 1, prompt_length=70000)
