"""Harness-R1's engineer on verl 0.9.1's real classes, on CPU: ``EngineerAgentLoop`` driven by the
scripted stand-in for verl's server over a locally built tokenizer, against a real frozen target
(``tool_user`` under ``h0`` on bundled tasks, re-run in the local sandbox); and
``ha engineer train --backend verl --dry-run``: the files verl reads, its Hydra config composed."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

if not os.environ.get("CI"):
    pytest.importorskip("verl")

from tests.ha_agents.train.verl_stub import ScriptedServer  # noqa: E402

IDS = ["mini__invoice_rounding", "mini__semver_ranges"]
ADD = "<patch>ops: [{op: add_tool, tool: run_tests}]</patch>"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A tiny engineer model, the target's run on two bundled tasks (it fails both: h0 lacks the
    tool it needs) and the failure batches of that run, from the CLI as a user makes them."""
    from ha_agents.train.models import init_model
    from ha_cli.main import main

    root = tmp_path_factory.mktemp("verl-engineer")
    model = init_model(root / "engineer", "qwen", hidden=32, layers=1, heads=2, vocab_size=2000)
    src = ["--suite", "mini", "--instances", *IDS]
    assert main(["eval", *src, "--model", "tool_user", "--harness", "h0", "--no-progress", "--out", str(root / "t")]) == 0
    assert main(["engineer", "batches", *src, "--run", str(root / "t"), "--n", "2", "--out", str(root / "b.json")]) == 0
    return root, model


def _loop(root: Path, model: Path, server, response_length: int = 2048):
    from hydra import compose, initialize_config_dir
    from transformers import AutoTokenizer
    import verl
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from ha_evolve.harness_r1.harness_edit import Target
    from ha_evolve.harness_r1.verl_engineer import EngineerAgentLoop, engineer_loop_yaml

    target = Target.create("tool_user", "h0", runs=1)
    y = engineer_loop_yaml(root / "loop.yaml", target, {"suite": "mini"}, root / "b.json", root / "e")
    with initialize_config_dir(config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer/config"),
                               version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=[
            f"actor_rollout_ref.model.path={model}", "actor_rollout_ref.rollout.name=vllm",
            "actor_rollout_ref.rollout.prompt_length=8192", f"actor_rollout_ref.rollout.response_length={response_length}",
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={y}"])
    tok = AutoTokenizer.from_pretrained(str(model), local_files_only=True)

    return EngineerAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tok, processor=None,
                             dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data), hf_model_type="qwen2",
                             target=target.to_dict(), tasks={"suite": "mini"}, batches=str(root / "b.json"),
                             out=str(root / "e")), tok


def _episode(root, model, server, **kw):
    async def go():
        loop, tok = _loop(root, model, server, **kw)
        return await loop.run({"temperature": 1.0}, raw_prompt=[{"role": "user", "content": "x"}],
                              extra_info={"batch": 0}), tok
    return asyncio.run(go())


def test_one_turn_episodes_are_rewarded_by_re_running_the_target(setup):
    root, model = setup
    server = ScriptedServer(str(model), [ADD])
    out, tok = _episode(root, model, server)
    info = out.extra_fields["reward_extra_info"]
    assert out.reward_score == 1.0 and info["kind"] == "helpful" and info["rollouts"] > 0, info
    # the reply's tokens are the model's, all trained on; its logprobs kept; one generate call
    end = tok.convert_tokens_to_ids("<|im_end|>")
    assert out.response_ids == list(tok.encode(ADD, add_special_tokens=False)) + [end]
    assert out.response_mask == [1] * len(out.response_ids) and len(out.response_logprobs) == len(out.response_ids)
    assert len(server.calls) == 1 and server.calls[0]["max_tokens"] == 2048
    prompt = tok.decode(out.prompt_ids)
    assert "## Failures" in prompt and all(i in prompt for i in IDS) and prompt.endswith("<|im_start|>assistant\n")
    again, _ = _episode(root, model, ScriptedServer(str(model), [ADD]))  # the same applied spec: cached
    assert again.reward_score == 1.0 and again.extra_fields["reward_extra_info"]["rollouts"] == 0
    assert again.extra_fields["reward_extra_info"]["cache_hits"] > 0


def test_invalid_truncated_and_failed_replies(setup):
    root, model = setup
    bad, _ = _episode(root, model, ScriptedServer(str(model), ["<patch>ops: [{op: explode}]</patch>"]))
    info = bad.extra_fields["reward_extra_info"]
    assert (bad.reward_score, info["kind"], info["rollouts"], info["mask_sample"]) == (0.0, "invalid", 0.0, 0.0)
    assert set(bad.response_mask) == {1}  # the engineer's own mistake: trained on
    cut, _ = _episode(root, model, ScriptedServer(str(model), [ADD * 40]), response_length=16)
    info = cut.extra_fields["reward_extra_info"]
    assert (cut.reward_score, info["truncated"], info["kind"]) == (0.0, 1.0, "truncated")
    assert len(cut.response_ids) == 16 and set(cut.response_mask) == {0}
    gone, _ = _episode(root, model, ScriptedServer(str(model), [ADD], fail_at=0))
    info = gone.extra_fields["reward_extra_info"]
    assert (gone.reward_score, info["mask_sample"], info["kind"]) == (0.0, 1.0, "masked")
    assert set(gone.response_mask) == {0}


def test_ha_engineer_train_verl_dry_run_writes_what_verl_reads(setup, capsys):
    from hydra import compose, initialize_config_dir
    from transformers import AutoTokenizer
    import verl
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from ha_cli.main import main

    root, model = setup
    out = root / "v"
    capsys.readouterr()
    assert main(["engineer", "train", "--suite", "mini", "--instances", *IDS, "--batches", str(root / "b.json"),
                 "--engineer", str(model), "--backend", "verl", "--dry-run", "--updates", "3", "--batches-per-update", "1",
                 "--model", "tool_user", "--out", str(out), "--context-tokens", "16384", "--max-tokens", "1024"]) == 0
    printed = capsys.readouterr().out
    assert "verl.trainer.main_ppo" in printed and "(1 batches)" in printed
    ov = (out / "verl" / "overrides.txt").read_text().split()
    with initialize_config_dir(config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer/config"),
                               version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=ov)
    a = cfg.actor_rollout_ref
    assert a.rollout.agent.default_agent_loop == "harnessadapt-engineer" and a.rollout.n == 8
    assert (a.actor.clip_ratio_low, a.actor.clip_ratio_high, a.actor.optim.lr) == (0.2, 0.28, 1e-6)
    assert not a.actor.use_kl_loss and cfg.trainer.total_training_steps == 3
    assert cfg.algorithm.norm_adv_by_std_in_grpo  # Harness-R1's sigma-normalisation, by default
    assert cfg.data.max_prompt_length == 16384 - 1024 and cfg.data.max_response_length == 1024
    import yaml

    [entry] = yaml.safe_load((out / "verl" / "agent_loop.yaml").read_text())
    assert entry["_target_"] == "ha_evolve.harness_r1.verl_engineer.EngineerAgentLoop" and entry["target"]["model"] == "tool_user"
    assert Path(entry["batches"]) == (root / "b.json").resolve()
    ds = RLHFDataset(data_files=[str(out / "verl" / "train.parquet")], tokenizer=AutoTokenizer.from_pretrained(str(model)),
                     config=cfg.data)
    assert len(ds) == 1 and ds[0]["agent_name"] == "harnessadapt-engineer" and ds[0]["extra_info"]["batch"] == 0
    assert main(["engineer", "train", "--suite", "mini", "--instances", *IDS, "--batches", str(root / "b.json"),
                 "--engineer", str(model), "--backend", "verl", "--dry-run", "--no-normalize-std", "--model",
                 "tool_user", "--out", str(root / "v2")]) == 0
    assert "algorithm.norm_adv_by_std_in_grpo=false" in (root / "v2" / "verl" / "overrides.txt").read_text().split()
    assert main(["engineer", "train", "--suite", "mini", "--batches", str(root / "b.json"), "--engineer", str(model),
                 "--backend", "verl", "--resume", "--model", "tool_user", "--out", str(out)]) == 2
