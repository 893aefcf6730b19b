"""The harness board with verl's real AgentLoopWorker on a private local Ray (CPU): a harness and a
skill published between two generate calls reach the same worker's next episodes, no restart.
The rollout server is the scripted stand-in of test_verl (verl's servers need a GPU)."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

if not os.environ.get("CI"):
    pytest.importorskip("verl")

from ha_agents.cluster.ray_start import init_ray  # noqa: E402
from ha_agents.train.recipes import TRAIN_HARNESS  # noqa: E402
from ha_agents.train.verl_board import BOARD_NAME, HarnessBoard, open_board, publish  # noqa: E402
from ha_agents.train.verl_launch import agent_loop_yaml  # noqa: E402
from ha_envs.harness.spec import Component  # noqa: E402

from tests.ha_agents.train.test_verl import ROOT, SUBMIT, TASK, _batch, _config, _gold_call, _loop, model_dir  # noqa: E402,F401
from tests.ha_agents.train.verl_stub import ScriptedServer  # noqa: E402

SKILL = "Before editing, read the function the failing test calls and check its boundary cases."


def test_board_hands_a_new_harness_and_skill_to_the_running_worker(model_dir, tmp_path):
    import ray
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    hooked = replace(TRAIN_HARNESS, name="train-hooked", hooks=(Component("repo_overview"),)).validate()
    assert hooked.hash != TRAIN_HARNESS.hash
    y = agent_loop_yaml(tmp_path / "loop.yaml", TRAIN_HARNESS, {"suite": "mini"}, board=BOARD_NAME)
    cfg = _config(model_dir, y, response_length=3000)
    init_ray(address="local", num_cpus=2, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), "CI": os.environ.get("CI", "")}})
    try:
        board = open_board()
        assert publish(board, TRAIN_HARNESS) == 1
        worker = ray.remote(AgentLoopWorker).remote(cfg, ScriptedServer(str(model_dir), [_gold_call(), SUBMIT]))
        pid = ray.get(worker.__ray_call__.remote(lambda self: os.getpid()))
        first = ray.get(worker.generate_sequences.remote(_batch(1)))
        assert publish(board, hooked, {TASK: SKILL}) == 2
        second = ray.get(worker.generate_sequences.remote(_batch(1)))
        assert ray.get(worker.__ray_call__.remote(lambda self: os.getpid())) == pid  # the same worker process
    finally:
        ray.shutdown()
    nt1, nt2 = first.non_tensor_batch, second.non_tensor_batch
    assert list(nt1["harness_hash"]) == [TRAIN_HARNESS.hash] and list(nt1["harness_version"]) == [1.0]
    assert list(nt2["harness_hash"]) == [hooked.hash] and list(nt2["harness_version"]) == [2.0]
    assert list(nt1["skill"]) == [0.0] and list(nt2["skill"]) == [1.0]
    assert first.batch["rm_scores"].sum(-1).tolist() == second.batch["rm_scores"].sum(-1).tolist() == [1.0]
    # the skill is in the prompt (no gradient) of the second batch only, never in a response
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))

    def decoded(out, i):  # (prompt, response) text of sample i, padding left out
        attn = out.batch["attention_mask"][i].bool()
        return (tok.decode(out.batch["prompts"][i][attn[:4096]]), tok.decode(out.batch["responses"][i][attn[4096:]]))

    assert SKILL in decoded(second, 0)[0] and SKILL not in decoded(first, 0)[0]
    assert SKILL not in decoded(second, 0)[1]


def test_board_refuses_a_broken_spec_and_counts_versions():
    board = HarnessBoard()
    assert board.get() == {"version": 0, "harness": None, "harness_hash": "", "skills": {}}
    bad = TRAIN_HARNESS.to_dict()
    bad["tools"] = bad["tools"] + [{"name": "no_such_tool"}]
    with pytest.raises(Exception, match="no_such_tool"):
        board.publish(bad)
    assert board.get()["version"] == 0
    assert board.publish(TRAIN_HARNESS.to_dict(), {"t": "s"}) == 1
    assert board.get()["harness_hash"] == TRAIN_HARNESS.hash and board.get()["skills"] == {"t": "s"}


def test_a_rows_seed_reaches_every_turn_and_training_rows_carry_none(model_dir, tmp_path):
    """Evolution's rows carry an episode seed (common seeds on both gate sides): turn t samples with
    seed + t; a training row (no seed) leaves the server its own randomness."""
    import asyncio

    async def episode(extra):
        server = ScriptedServer(str(model_dir), [_gold_call(), SUBMIT])
        loop, _ = _loop(model_dir, tmp_path, server)
        out = await loop.run({"temperature": 1.0}, raw_prompt=[{"role": "user", "content": "x"}],
                             extra_info={"instance_id": TASK, **extra})
        return out, server.calls

    out, calls = asyncio.run(episode({"seed": 41, "record": True}))
    assert [c["seed"] for c in calls] == [41, 42] and out.reward_score == 1.0
    import json

    detail = json.loads(out.extra_fields["reward_extra_info"]["episode"])  # what the proposer reads
    assert detail["tool_counts"] == {"bash": 1, "submit": 1} and detail["messages"][0]["role"] in ("system", "user")
    assert any(m["role"] == "assistant" for m in detail["messages"])
    out, calls = asyncio.run(episode({}))
    assert [c["seed"] for c in calls] == [None, None] and out.extra_fields["reward_extra_info"]["episode"] == ""


def test_evolution_batches_are_padded_to_the_workers_with_rows_that_run_nothing(model_dir, tmp_path):
    """verl splits a batch evenly over its agent-loop workers: evolution's 3 rows for 2 workers get
    one ``pad`` row, which the loop answers without an env or a model call (no gradient, no record)."""
    import asyncio

    from ha_agents.episode import EpisodeConfig
    from ha_envs.loaders import load_suite
    from ha_evolve.verl_coevolution import _rows

    [task] = [t for t in load_suite("mini") if t.instance_id == TASK]
    batch = _rows([(task, 1), (task, 2), (task, 3)], EpisodeConfig(TRAIN_HARNESS, seed=5), step=7, divisor=2)
    rows = list(batch.non_tensor_batch["extra_info"])
    assert len(batch) == 4 and [r["pad"] for r in rows] == [False, False, False, True]
    assert [r["run"] for r in rows[:3]] == [1, 2, 3] and len({r["seed"] for r in rows[:3]}) == 3
    assert batch.meta_info == {"global_steps": 7, "validate": False}
    assert len(batch.chunk(2)) == 2  # verl's own split now holds

    async def pad_episode():
        server = ScriptedServer(str(model_dir), [SUBMIT])
        loop, _ = _loop(model_dir, tmp_path, server)
        out = await loop.run({"temperature": 1.0}, raw_prompt=batch.non_tensor_batch["raw_prompt"][3], extra_info=rows[3])
        return out, server.calls

    out, calls = asyncio.run(pad_episode())
    assert calls == [] and sum(out.response_mask) == 0 and out.extra_fields["reward_extra_info"]["mask_sample"] == 1.0
