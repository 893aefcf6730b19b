"""``ha train --backend verl``: everything verl 0.9.1 needs to train on the repair environments,
written to ``<out>/verl/``, then ``python -m verl.trainer.main_ppo`` launched with it.

- ``agent_loop.yaml``: the agent-loop registry entry for ``verl_loop.HarnessAgentLoop`` with the
  harness spec, the task source, the sandbox and the truncation policy;
- ``train.parquet``: verl's RL dataset, one row per task (``agent_name``, ``prompt`` (the issue, as
  ``raw_prompt``), ``extra_info.instance_id``);
- ``val.parquet``: the validation pool, ``--val-tasks N`` tasks held out of the selection (a seeded
  draw; never trained on). Without one, verl's validation is off (``val_before_train=false``,
  ``test_freq=-1``; verl still wants a file to build its loader, so the training file is named
  there and never evaluated);
- ``overrides.txt``: the Hydra overrides of the paper's setting (GRPO without std normalisation,
  rollout n=4, 46 tasks per update, lr 1e-6 constant, no KL, no entropy, token-mean loss, 64K
  context, 60 turns), a checkpoint every ``--save-every`` updates (verl's own default saves none),
  then the user's ``--override`` values. The advantage estimator is
  ``verl_advantage``'s (the group baseline over the rollouts that carry a gradient, as the local
  backend's), registered in verl's Ray workers by a setup hook.

With ``--evolve`` / ``--skill-teacher``, also ``coevolution.json`` (the plan verl's trainer process
reads: ``ha_evolve.verl_coevolution``) and its overrides (verl's sync trainer, the co-evolving
agent-loop manager), and the agent loop reads the harness board.

``--dry-run`` writes the files and prints the command without verl, a GPU or a cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from ha_envs.env import MAX_TURNS
from ha_envs.harness import HarnessSpec
from ha_envs.task import Task

AGENT_NAME = "harnessadapt"
ROOT = Path(__file__).resolve().parents[2]


def agent_loop_yaml(path: Path, harness: HarnessSpec, tasks: dict[str, Any], sandbox: str = "local",
                    truncated: str = "drop", max_turns: int | None = None, env: str = "local",
                    board: str | None = None) -> Path:
    """verl's agent-loop YAML for our loop; ``env``: ``local`` (the env in verl's agent-loop worker)
    or ``ray`` (an actor on a node with sandbox slots: policy on GPU nodes, sandboxes on CPU nodes);
    ``board``: the harness board's name (``verl_board``), read at every episode's start."""
    import yaml

    entry: dict[str, Any] = {"name": AGENT_NAME, "_target_": "ha_agents.train.verl_loop.HarnessAgentLoop",
                             "harness": harness.to_dict(), "tasks": tasks, "sandbox": sandbox, "truncated": truncated,
                             "env": env}
    if max_turns:
        entry["max_turns"] = max_turns
    if board:
        entry["board"] = board
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump([entry], sort_keys=False))
    return path


def write_dataset(tasks: list[Task], path: Path, harness: HarnessSpec | None = None) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for i, t in enumerate(sorted(tasks, key=lambda t: t.instance_id)):
        extra: dict[str, Any] = {"index": i, "instance_id": t.instance_id}
        if harness is not None:
            extra["harness"] = json.dumps(harness.to_dict())
        rows.append({"data_source": f"harnessadapt/{t.benchmark}", "agent_name": AGENT_NAME,
                     "prompt": [{"role": "user", "content": t.problem_statement}], "ability": "software-repair",
                     "reward_model": {"style": "env", "ground_truth": ""}, "extra_info": extra})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def paper_overrides(model: str, train_file: Path, loop_yaml: Path, out: Path, updates: int, tasks_per_update: int = 46,
                    group_size: int = 4, lr: float = 1e-6, context: int = 65536, prompt_length: int = 16384,
                    engine: str = "vllm", gpus_per_node: int = 8, nnodes: int = 1, norm_std: bool = False,
                    loss_agg: str = "token-mean", kl_coef: float = 0.0, entropy_coef: float = 0.0,
                    temperature: float = 1.0, val_file: Path | None = None, save_every: int = 1,
                    agent_name: str = AGENT_NAME) -> list[str]:
    from .verl_advantage import NAME, SETUP_HOOK

    if prompt_length >= context:
        raise ValueError(f"prompt length {prompt_length} leaves no response budget in a {context}-token context")
    validation = [f"data.val_files={val_file}"] if val_file is not None else [
        f"data.val_files={train_file}", "trainer.val_before_train=false", "trainer.test_freq=-1"]
    return [
        f"algorithm.adv_estimator={NAME}",
        f"+ray_kwargs.ray_init.runtime_env.worker_process_setup_hook={SETUP_HOOK}",
        f"algorithm.norm_adv_by_std_in_grpo={str(norm_std).lower()}",
        "algorithm.use_kl_in_reward=false",
        f"data.train_files={train_file}",
        *validation,
        f"data.train_batch_size={tasks_per_update}",
        f"data.max_prompt_length={prompt_length}",
        f"data.max_response_length={context - prompt_length}",
        "data.return_raw_chat=true",
        f"actor_rollout_ref.model.path={model}",
        f"actor_rollout_ref.actor.optim.lr={lr}",
        "actor_rollout_ref.actor.optim.lr_scheduler_type=constant",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={tasks_per_update}",
        f"actor_rollout_ref.actor.use_kl_loss={str(bool(kl_coef)).lower()}",
        f"actor_rollout_ref.actor.kl_loss_coef={kl_coef}",
        f"actor_rollout_ref.actor.entropy_coeff={entropy_coef}",
        f"actor_rollout_ref.actor.loss_agg_mode={loss_agg}",
        f"actor_rollout_ref.rollout.name={engine}",
        "actor_rollout_ref.rollout.mode=async",
        f"actor_rollout_ref.rollout.n={group_size}",
        f"actor_rollout_ref.rollout.temperature={temperature}",
        f"actor_rollout_ref.rollout.max_model_len={context}",
        "actor_rollout_ref.rollout.calculate_log_probs=true",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loop_yaml}",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={agent_name}",
        f"trainer.total_training_steps={updates}",
        f"trainer.n_gpus_per_node={gpus_per_node}",
        f"trainer.nnodes={nnodes}",
        f"trainer.default_local_dir={out / 'checkpoints'}",
        f"trainer.save_freq={max(1, save_every)}",  # verl's default (-1) saves nothing: the trained weights would be lost
        "trainer.project_name=harnessadapt",
        f"trainer.experiment_name={out.name}",
        "trainer.logger=[console]",
    ]


def _task_source(args: argparse.Namespace) -> dict[str, Any]:
    if getattr(args, "benchmark", None):
        src: dict[str, Any] = {"benchmark": args.benchmark}
        if args.data:
            src["data"] = str(Path(args.data).resolve())
        return src
    if getattr(args, "jsonl", None):
        return {"jsonl": str(Path(args.jsonl).resolve())}
    return {"suite": args.suite or "mini"}


def split_validation(tasks: list[Task], n: int, seed: int = 0) -> tuple[list[Task], list[Task]]:
    """(training tasks, ``n`` held-out validation tasks): a seeded draw, so a rerun holds out the same."""
    if n < 0 or (n and n >= len(tasks)):
        raise ValueError(f"--val-tasks {n}: hold out at least 0 and fewer than the {len(tasks)} selected tasks")
    if not n:
        return list(tasks), []
    order = sorted(tasks, key=lambda t: t.instance_id)
    random.Random(seed).shuffle(order)
    held = {t.instance_id for t in order[:n]}
    return [t for t in tasks if t.instance_id not in held], [t for t in tasks if t.instance_id in held]


def launch(args: argparse.Namespace, tasks: list[Task], spec: HarnessSpec, out: Path,
           coevolution: Callable[[list[Task], Path], list[str]] | None = None) -> int:
    """``coevolution``: given the training tasks and the verl directory, writes the co-evolution
    plan and returns its overrides (``ha train --evolve``; the agent loop then reads the harness board)."""
    from .verl_board import BOARD_NAME

    d = out / "verl"
    loop_yaml = agent_loop_yaml(d / "agent_loop.yaml", spec, _task_source(args), args.sandbox, args.truncated,
                                args.max_turns or MAX_TURNS, env=getattr(args, "env_placement", "local") or "local",
                                board=BOARD_NAME if coevolution is not None else None)
    tasks, held_out = split_validation(tasks, getattr(args, "val_tasks", 0) or 0, args.seed)
    train_file = write_dataset(tasks, d / "train.parquet")
    val_file = write_dataset(held_out, d / "val.parquet") if held_out else None
    overrides = paper_overrides(str(Path(args.model).resolve()) if Path(args.model).exists() else args.model,
                                train_file, loop_yaml, out, args.updates, args.tasks_per_update, args.group_size,
                                args.lr, args.context_tokens, engine=args.rollout_engine,
                                gpus_per_node=args.gpus_per_node, nnodes=args.nnodes, norm_std=args.norm_adv_by_std,
                                loss_agg=args.loss_agg, kl_coef=args.kl_coef, entropy_coef=args.entropy_coef,
                                temperature=args.temperature, val_file=val_file,
                                save_every=args.save_every)
    overrides += (coevolution(tasks, d) if coevolution is not None else []) + list(args.override)
    (d / "overrides.txt").write_text("\n".join(overrides) + "\n")
    if len(tasks) < args.tasks_per_update:
        print(f"warning: {args.tasks_per_update} tasks per update but the dataset has {len(tasks)}: verl's loader "
              f"would form no batch; pass --tasks-per-update {len(tasks)} or more tasks", file=sys.stderr)
    if coevolution is not None:
        print(f"co-evolution: {d / 'coevolution.json'} (at every epoch's start, in the trainer process; the "
              f"accepted harness reaches the agent loops through the board {BOARD_NAME!r})")
    print(f"agent loop: {loop_yaml}\ndataset: {train_file} ({len(tasks)} tasks)\n"
          + (f"validation: {val_file} ({len(held_out)} held-out tasks)\n" if val_file else
             "validation: off (pass --val-tasks N to hold out a pool)\n") + f"overrides: {d / 'overrides.txt'}")
    return start(overrides, args.dry_run)


def start(overrides: list[str], dry_run: bool) -> int:
    """Print verl's command; unless ``dry_run``, run it (on a machine with GPUs and the verl extra)."""
    cmd = [sys.executable, "-m", "verl.trainer.main_ppo", *overrides]
    print("command:\n  PYTHONPATH=" + shlex.quote(str(ROOT)) + " " + " ".join(shlex.quote(c) for c in cmd))
    if dry_run:
        return 0
    try:
        import verl  # noqa: F401
    except ImportError:
        raise ValueError("--backend verl needs the verl extra: pip install -e '.[verl]' (verl[verl-core]==0.9.1)") from None
    try:
        import torch

        gpus = torch.cuda.device_count()
    except ImportError:
        gpus = 0
    if gpus == 0:
        raise ValueError("--backend verl trains on GPUs (vLLM/SGLang rollouts, FSDP/Megatron actors) and this machine "
                         "has none; run with --dry-run here and launch the printed command on a GPU node")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    return subprocess.call(cmd, env=env)
