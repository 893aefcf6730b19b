"""Co-evolution inside one verl run, on CPU: verl's real ``RayPPOTrainer.fit`` drives our
``CoEvolvingAgentLoopManager`` (named by verl's ``agent_loop_manager_class`` setting, loaded as
verl's ``init_workers`` loads it) whose real ``AgentLoopWorker`` s run ``HarnessAgentLoop`` on a
private local Ray. Stood in, because they need GPUs or vLLM: the rollout server (the scripted
``ScriptedServer`` of test_verl: the same answers every episode), the weight sync to it
(``checkpoint_manager``: records its calls) and the actor's update (``_update_actor``: one AdamW
step on a tiny CPU model through verl's own policy loss, with the batch verl built). verl's
dataloader, dataset, advantage, metrics and step counting run as they are.

The scripted policy fixes the task with a ``bash`` call; the run starts from a harness without
``bash``, so its episodes fail until evolution (the rule proposer, on the agent loop's
trajectories) offers ``bash`` back: the gate takes that decision on agent-loop rollouts at epoch 1's
start, the board hands the harness to the workers, and the training rollouts after it resolve."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, replace
from types import SimpleNamespace

import pytest

if not os.environ.get("CI"):
    pytest.importorskip("verl")

import torch  # noqa: E402

from ha_agents.cluster.ray_start import init_ray  # noqa: E402
from ha_agents.llm.fake_server import FakeOpenAIServer  # noqa: E402
from ha_agents.records.log import read_jsonl  # noqa: E402
from ha_agents.train.recipes import TRAIN_HARNESS  # noqa: E402
from ha_agents.train.verl_board import BOARD_NAME  # noqa: E402
from ha_agents.train.verl_launch import agent_loop_yaml, write_dataset  # noqa: E402
from ha_envs.harness import load_spec  # noqa: E402
from ha_envs.loaders import load_suite  # noqa: E402
from ha_evolve.schedule import EvolveConfig  # noqa: E402
from ha_evolve.verl_coevolution import VerlCoEvolvePlan, write_plan  # noqa: E402

from tests.ha_agents.train.test_verl import ROOT, SUBMIT, TASK, _config, _gold_call, model_dir  # noqa: E402,F401
from tests.ha_agents.train.verl_stub import ScriptedServer  # noqa: E402

SKILL = ("Before changing anything, reproduce the failure with the smallest input you can, then check every "
         "branch that handles a missing or nested value.")


class _WeightSync:
    """Stands in for verl's CheckpointEngineManager (trainer -> vLLM weight sync)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int | None]] = []

    def update_weights(self, step: int) -> None:
        self.calls.append(("update", step))

    def sleep_replicas(self) -> None:
        self.calls.append(("sleep", None))


def _trainer_class():
    from omegaconf import OmegaConf
    from transformers import AutoModelForCausalLM
    from verl.protocol import DataProto
    from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    class CpuUpdateTrainer(RayPPOTrainer):
        """verl's trainer; only the actor update (a GPU worker-group call) is a CPU stand-in."""

        def setup_cpu_actor(self, model_dir: str) -> None:
            self.model = AutoModelForCausalLM.from_pretrained(model_dir)
            self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
            self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda _: 1.0)
            self.updates: list[dict] = []

        def _update_actor(self, batch):
            p, n = batch.batch["prompts"].shape[1], 400
            ids, attn = batch.batch["input_ids"][:, :p + n], batch.batch["attention_mask"][:, :p + n]
            logits = self.model(input_ids=ids, attention_mask=attn).logits[:, p - 1:-1].float()
            logp = torch.log_softmax(logits, -1).gather(-1, ids[:, p:].unsqueeze(-1)).squeeze(-1)
            cfg = OmegaConf.create({"clip_ratio": 0.2, "clip_ratio_low": 0.2, "clip_ratio_high": 0.2,
                                    "clip_ratio_c": 3.0, "global_batch_info": {}})
            loss, _ = compute_policy_loss_vanilla(batch.batch["old_log_probs"][:, :n], logp,
                                                  batch.batch["advantages"][:, :n],
                                                  batch.batch["response_mask"][:, :n].float(), "token-mean", cfg)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.sched.step()
            state_steps = {int(s["step"]) for s in self.opt.state.values()}
            self.updates.append({"global_step": self.global_steps, "optimizer_steps": state_steps,
                                 "scheduler_steps": self.sched.last_epoch,
                                 "harness": sorted(set(batch.non_tensor_batch["harness_hash"])),
                                 "skill": sorted(set(batch.non_tensor_batch["skill"].tolist()))})
            return DataProto(meta_info={"metrics": {"actor/pg_loss": [float(loss)]}})

    return CpuUpdateTrainer


def test_one_verl_run_evolves_at_epoch_starts_on_agent_loop_rollouts(model_dir, tmp_path):
    from transformers import AutoTokenizer
    from verl.trainer.ppo.utils import Role, create_rl_sampler
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
    from verl.utils.import_utils import load_class_from_fqn

    start = replace(TRAIN_HARNESS, name="no-bash", tools=tuple(c for c in TRAIN_HARNESS.tools if c.name != "bash"))
    start = start.validate()
    [task] = [t for t in load_suite("mini") if t.instance_id == TASK]
    data = write_dataset([task], tmp_path / "train.parquet")
    teacher = FakeOpenAIServer(lambda body: {"content": f"## Contrast\nBoth failed.\n## Skill\n{SKILL}\n"}).__enter__()
    plan = VerlCoEvolvePlan(out=str(tmp_path / "run"), task_source={"suite": "mini"}, instances=[TASK],
                            harness=start.to_dict(), every=2, proposer="rule", model_label="tiny",
                            skill_teacher=f"openai:teacher@{teacher.url}",
                            evolve=asdict(EvolveConfig(rounds=1, group_size=2, tasks=1, decide_by="point", workers=1,
                                                       bootstrap_samples=0)))
    overrides = write_plan(tmp_path / "plan.json", plan)
    assert overrides[0] == "trainer.use_v1=false"  # verl's sync trainer (RayPPOTrainer)
    cfg = _config(model_dir, agent_loop_yaml(tmp_path / "loop.yaml", start, {"suite": "mini"}, board=BOARD_NAME),
                  response_length=3000, extra=[
                      *overrides, f"data.train_files={data}", f"data.val_files={data}", "data.train_batch_size=1", "data.dataloader_num_workers=0",
                      "data.max_prompt_length=4096", "data.max_response_length=3000", "data.return_raw_chat=true",
                      "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.rollout.calculate_log_probs=true",
                      "actor_rollout_ref.rollout.agent.num_workers=1", "algorithm.adv_estimator=grpo",
                      "algorithm.rollout_correction.bypass_mode=true", "trainer.total_training_steps=3",
                      "trainer.val_before_train=false", "trainer.test_freq=-1", "trainer.save_freq=-1",
                      "trainer.balance_batch=false", "trainer.logger=[console]", "trainer.device=cpu"])
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    ds = RLHFDataset(data_files=[str(data)], tokenizer=tok, config=cfg.data)
    trainer = _trainer_class()(config=cfg, tokenizer=tok, role_worker_mapping={Role.ActorRollout: object},
                               resource_pool_manager=SimpleNamespace(get_n_gpus=lambda: 1), train_dataset=ds,
                               val_dataset=ds, collate_fn=collate_fn, train_sampler=create_rl_sampler(cfg.data, ds))
    trainer.setup_cpu_actor(str(model_dir))
    trainer.actor_rollout_wg, trainer.checkpoint_manager = SimpleNamespace(), _WeightSync()
    init_ray(address="local", num_cpus=2, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), "CI": os.environ.get("CI", "")}})
    try:
        manager_cls = load_class_from_fqn(cfg.actor_rollout_ref.rollout.agent.agent_loop_manager_class, "AgentLoopManager")
        trainer.async_rollout_manager = manager_cls.create(
            config=cfg, llm_client=ScriptedServer(str(model_dir), [_gold_call(), SUBMIT]))
        trainer.fit()
    finally:
        import ray

        ray.shutdown()
        teacher.__exit__()
    run = tmp_path / "run"
    epochs = read_jsonl(run / "verl_epochs.jsonl")
    # the hook ran at the epoch starts (steps 1 and 3 of 3, every 2), no other step
    assert [(e["epoch"], e["step"]) for e in epochs] == [(1, 1), (2, 3)]
    with_bash = json.loads(json.dumps(epochs[0]))["harness_after"]
    assert epochs[0]["harness_before"] == start.hash and epochs[0]["accepted"]
    # the board: 1 the start; per epoch: the preparation's (no skills), the comparisons' (skills), the accepted
    assert [e["board_version"] for e in epochs] == [3, 6]
    assert epochs[1]["harness_before"] == with_bash  # epoch 2 starts from what epoch 1 accepted
    # the gate decided on agent-loop rollouts: both sides' records came from the manager's workers
    [proposal] = [r for r in read_jsonl(run / "evolve" / "evolution.jsonl") if r.get("kind") == "proposal"
                  and r["epoch"] == 1]
    assert proposal["accepted"] and proposal["candidate_hash"] == with_bash and "bash" in " ".join(proposal["diff"])
    assert proposal["rollouts"]["current"] == proposal["rollouts"]["candidate"] == 2
    cur = read_jsonl(run / "evolve" / "rollouts" / start.hash / "e1r1" / "trajectories.jsonl")
    cand = read_jsonl(run / "evolve" / "rollouts" / with_bash / "e1r1" / "trajectories.jsonl")
    assert {r["source"] for r in cur + cand} == {"verl-agent-loop"} and {r["model"] for r in cand} == {"tiny@update-0"}
    assert [r["resolved"] for r in cur] == [False, False] and [r["resolved"] for r in cand] == [True, True]
    assert {r["harness_hash"] for r in cand} == {with_bash}
    assert [r["seed"] for r in cur] == [r["seed"] for r in cand] and None not in [r["seed"] for r in cur]  # common seeds
    # training went on under the accepted harness, with its counters intact (no re-init)
    assert [u["global_step"] for u in trainer.updates] == [1, 2, 3]
    assert [u["optimizer_steps"] for u in trainer.updates] == [{1}, {2}, {3}]
    assert [u["scheduler_steps"] for u in trainer.updates] == [1, 2, 3]
    assert all(u["harness"] == [with_bash] for u in trainer.updates)
    # skills: taught on a preparation batch without any, then shown to both gate sides and to training
    assert [e["skills"] for e in epochs] == [{TASK: SKILL}] * 2
    assert {r["skill"] for r in read_jsonl(run / "skills" / "epoch-1" / "preparation" / "trajectories.jsonl")} == {None}
    assert {r["skill"] for r in cur + cand} == {SKILL} and all(u["skill"] == [1.0] for u in trainer.updates)
    assert (run / "harness.yaml").exists() and load_spec(run / "harness.yaml").hash == with_bash
    assert trainer.global_steps == 4  # verl's counter stands after its last step (3) as fit leaves it
    assert trainer.checkpoint_manager.calls == [("update", 0), ("sleep", None), ("update", 1), ("sleep", None),
                                                ("update", 2), ("sleep", None), ("update", 3)]


def test_ha_train_verl_evolve_dry_run_composes_the_one_run_configuration(model_dir, tmp_path, capsys):
    """The CLI: ``--evolve --skill-teacher`` with verl writes the plan, names our manager in verl's
    own setting, the sync trainer and the board; verl's Hydra config takes every override and the
    manager class loads as verl's init_workers loads it."""
    import yaml
    from hydra import compose, initialize_config_dir
    import verl
    from verl.utils.import_utils import load_class_from_fqn

    from ha_cli.main import main
    from ha_evolve.verl_manager import CoEvolvingAgentLoopManager

    out = tmp_path / "run"
    assert main(["train", "--backend", "verl", "--dry-run", "--model", str(model_dir), "--suite", "mini", "--limit", "4",
                 "--val-tasks", "1", "--tasks-per-update", "3", "--updates", "6", "--evolve", "--evolve-every", "3",
                 "--evolve-rounds", "2", "--evolve-group-size", "2", "--gate-tasks", "3", "--decide-by", "point",
                 "--skill-teacher", "oracle", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "co-evolution: " in captured.out and "verl.trainer.main_ppo" in captured.out
    d = out / "verl"
    plan = json.loads((d / "coevolution.json").read_text())
    train_ids = {r["instance_id"] for r in __import__("pyarrow.parquet", fromlist=["x"]).read_table(
        d / "train.parquet").column("extra_info").to_pylist()}
    assert set(plan["instances"]) == train_ids and len(train_ids) == 3  # the held-out task is never evolved on
    assert plan["out"] == str(out.resolve()) and plan["every"] == 3 and plan["proposer"] == "rule"
    assert plan["skill_teacher"] == "oracle" and plan["task_source"] == {"suite": "mini"}
    assert plan["evolve"]["rounds"] == 2 and plan["evolve"]["group_size"] == 2 and plan["evolve"]["tasks"] == 3
    assert plan["evolve"]["decide_by"] == "point" and plan["harness"]["name"] == "h0"
    [entry] = yaml.safe_load((d / "agent_loop.yaml").read_text())
    assert entry["board"] == BOARD_NAME
    ov = (d / "overrides.txt").read_text().split()
    for want in ("trainer.use_v1=false", "+actor_rollout_ref.rollout.agent.agent_loop_manager_class="
                 "ha_evolve.verl_manager.CoEvolvingAgentLoopManager", f"+harnessadapt.coevolution={d / 'coevolution.json'}",
                 "trainer.total_training_steps=6", "data.train_batch_size=3"):
        assert want in ov
    with initialize_config_dir(config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer/config"),
                               version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=ov)
    assert cfg.trainer.use_v1 is False and cfg.harnessadapt.coevolution == str(d / "coevolution.json")
    assert load_class_from_fqn(cfg.actor_rollout_ref.rollout.agent.agent_loop_manager_class,
                               "AgentLoopManager") is CoEvolvingAgentLoopManager
    # without either flag: no plan, no board, verl's own manager
    assert main(["train", "--backend", "verl", "--dry-run", "--model", str(model_dir), "--suite", "mini", "--limit", "2",
                 "--out", str(tmp_path / "plain")]) == 0
    assert not (tmp_path / "plain" / "verl" / "coevolution.json").exists()
    assert "board" not in yaml.safe_load((tmp_path / "plain" / "verl" / "agent_loop.yaml").read_text())[0]
    assert not any("agent_loop_manager_class" in o for o in (tmp_path / "plain" / "verl" / "overrides.txt").read_text().split())


def test_a_resumed_run_publishes_the_last_epochs_harness_and_skips_logged_epoch_starts(tmp_path):
    """verl resumed from a checkpoint: the board gets the harness and skills the last logged epoch
    start left (not the plan's start), and an epoch already logged does not run again."""
    import ray

    from ha_agents.records.log import JsonlLog
    from ha_agents.train.verl_board import open_board
    from ha_evolve.verl_coevolution import VerlEpochStart

    start = TRAIN_HARNESS
    later = replace(TRAIN_HARNESS, name="later", tools=tuple(c for c in TRAIN_HARNESS.tools if c.name != "create_file"))
    later = later.validate()
    out = tmp_path / "run"
    (out / "evolve" / "specs").mkdir(parents=True)
    later.save(out / "evolve" / "specs" / f"{later.hash}.yaml")
    JsonlLog(out / "verl_epochs.jsonl").append({"epoch": 1, "step": 1, "harness_before": start.hash,
                                                "harness_after": later.hash, "skills": {TASK: SKILL}})
    plan = VerlCoEvolvePlan(out=str(out), task_source={"suite": "mini"}, instances=[TASK], harness=start.to_dict(),
                            every=2, evolve=asdict(EvolveConfig(rounds=1, group_size=2, tasks=1, decide_by="point")))
    generated = []
    init_ray(address="local", num_cpus=1)
    try:
        epoch_start = VerlEpochStart(plan, generated.append, total_steps=4)
        state = ray.get(open_board(plan.board).get.remote())
        assert state["harness_hash"] == later.hash and state["skills"] == {TASK: SKILL} and state["version"] == 1
        assert epoch_start.epoch_of(1) == 1 and epoch_start.epoch_of(2) is None and epoch_start.epoch_of(3) == 2
        assert epoch_start.at_step(1) is None and epoch_start.at_step(2) is None and generated == []
    finally:
        ray.shutdown()
    with pytest.raises(ValueError, match="not in"):
        VerlEpochStart(replace(plan, instances=["no_such_task"]), generated.append, total_steps=4)
