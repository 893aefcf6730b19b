"""``ha train``: GRPO on repair tasks, locally (``--backend local``) or through verl
(``--backend verl``: writes the agent-loop YAML, the dataset and the Hydra overrides, launches
``python -m verl.trainer.main_ppo``; ``--dry-run`` prints them)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ha_cli.model_check import add_preflight_arg, non_negative_int, positive_int
from ha_cli.sampling import add_max_tokens, model_options
from ha_cli.selection import add_source


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a policy with GRPO (local torch trainer, or verl on a GPU node)",
                       description="GRPO on repair tasks. Per update: sample tasks, collect a group per task with "
                       "the current policy, drop/mask per the batch policy, update; metrics.jsonl, a plot and "
                       "checkpoints go to --out.")
    add_source(p)
    p.add_argument("--backend", choices=["local", "verl"], default="local")
    p.add_argument("--model", required=True, help="a local Hugging Face model directory (nothing is downloaded)")
    p.add_argument("--init-model", choices=["qwen", "llama"], default=None,
                   help="build a tiny randomly initialised model of this family at --model when it does not exist")
    p.add_argument("--harness", default=None, help="preset (default h0; train-edit: the small text-tool harness) or "
                   "spec file")
    p.add_argument("--updates", type=non_negative_int, default=10)
    p.add_argument("--tasks-per-update", type=positive_int, default=46)
    p.add_argument("--group-size", type=positive_int, default=4)
    p.add_argument("--lr", type=float, default=1e-6)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--mini-batches", type=int, default=1, help="optimizer steps per update")
    p.add_argument("--loss-agg", choices=["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"], default="token-mean")
    p.add_argument("--norm-adv-by-std", action="store_true", help="divide advantages by the group std (off: the paper)")
    p.add_argument("--kl-coef", type=float, default=0.0)
    p.add_argument("--entropy-coef", type=float, default=0.0)
    p.add_argument("--truncated", choices=["drop", "keep"], default="drop",
                   help="truncated episodes: dropped from the batch (the paper) or trained with their reward")
    add_max_tokens(p, 512)
    p.add_argument("--context-tokens", type=positive_int, default=None,
                   help="token budget of an episode (default: the model's positions, at most 65536; more than the "
                   "model's positions, with its rope scaling, is refused)")
    p.add_argument("--max-turns", type=int, default=None, help="override the harness's max turns")
    p.add_argument("--warm-start", type=int, default=0, metavar="EPOCHS",
                   help="local: first fine-tune for EPOCHS epochs on two demonstrations per task, recorded through "
                        "the env and grader: the oracle's fix and a give-up (the null policy)")
    p.add_argument("--warm-start-lr", type=float, default=3e-3)
    p.add_argument("--warm-start-harness", default=None, metavar="HARNESS",
                   help="record the demonstrations under this harness (default: --harness), and under --harness the "
                        "give-up and the same calls (the policy's habits): a tool HARNESS has and --harness lacks "
                        "fails there as an unknown tool, until evolution adds it")
    p.add_argument("--freeze-policy", action="store_true",
                   help="roll out and measure every update, never change the weights: with --evolve, the "
                        "'evolution with the policy frozen' arm of the paper's ablation")
    p.add_argument("--pool-k", type=int, default=0, metavar="K",
                   help="drop tasks the initial policy solves in all K samples (counted as preparation rollouts)")
    p.add_argument("--exclude-benchmark", choices=["verified", "multilingual", "pro"], default=None,
                   help="refuse training instances of this evaluation benchmark; warn on shared repositories")
    p.add_argument("--workers", type=positive_int, default=2)
    p.add_argument("--sandbox", choices=["local", "docker"], default="local")
    p.add_argument("--env-placement", choices=["local", "ray"], default="local",
                   help="where the training episodes' envs and sandboxes run: here, or Ray actors on nodes with sandbox "
                        "slots (RAY_ADDRESS, else a local Ray) while the policy stays here (local backend) or on verl's "
                        "GPU workers (verl backend)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-every", type=int, default=1)
    p.add_argument("--out", default="runs/train")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    p.add_argument("--optimizer-from", default=None, metavar="CHECKPOINT",
                   help="local: start a new run with the optimizer state (AdamW moments) of a checkpoint directory "
                        "(its trainer.pt), usually the one whose weights --model points at (CHECKPOINT/model); "
                        "default: a fresh optimizer")
    p.add_argument("--no-progress", action="store_true")
    add_size_args(p)
    add_preflight_arg(p)
    _add_evolution_args(p)
    _add_verl_args(p)
    _add_agent_args(p)
    p.set_defaults(func=cmd_train)


def _add_agent_args(p: argparse.ArgumentParser) -> None:
    a = p.add_argument_group("a user's own harness through the gateway (local backend)")
    a.add_argument("--agent", default=None, metavar="NAME",
                   help="train the policy as this harness runs it: every GRPO episode is mini-swe-agent (2.4.x, its own "
                        "venv) behind a gateway in front of the policy being trained, in token mode, graded by this "
                        "library's grader (as `ha gateway eval --agent`); --warm-start records its demonstrations "
                        "through the same harness")
    a.add_argument("--msa-venv", default=None, help="mini-swe-agent's venv (default $HA_MSA_VENV, else .venv-msa; "
                   "`make msa-venv` creates it)")
    a.add_argument("--step-limit", type=positive_int, default=60, help="mini-swe-agent's step limit (model calls); "
                   "reaching it ends the episode max_turns (truncated)")
    a.add_argument("--command-timeout", type=float, default=120.0, help="seconds per command in the sandbox")
    a.add_argument("--episode-timeout", type=float, default=1800.0, help="wall-clock seconds per episode "
                   "(agent_timeout, truncated)")


def _add_evolution_args(p: argparse.ArgumentParser) -> None:
    e = p.add_argument_group("harness evolution at every epoch's start (local backend; verl: in the one verl run)")
    e.add_argument("--evolve", action="store_true", help="at the start of every epoch (--evolve-every updates) evolve "
                   "the harness under the dual-rate gate against the policy being trained, then train on it frozen")
    e.add_argument("--evolve-every", type=int, default=5, metavar="N", help="updates per epoch (default 5)")
    e.add_argument("--evolve-rounds", type=int, default=5,
                   help="rounds per evolution at most (the paper's 5); fewer when the proposer has nothing new")
    e.add_argument("--evolve-group-size", type=int, default=4, help="rollouts per task and side of each comparison "
                   "(with --gate-tasks: the evolution batch, tasks x rollouts, drawn from the training pool)")
    e.add_argument("--evolve-candidates", type=int, default=1)
    e.add_argument("--proposer", default="rule", help="rule | llm | cli (as ha evolve run)")
    e.add_argument("--teacher", default=None, help="llm proposer: the teacher model (openai:NAME@URL)")
    e.add_argument("--skill-teacher", default=None, metavar="MODEL",
                   help="at every epoch's start (with or without --evolve): preparation rollouts, then this model "
                        "(openai:NAME@URL, ...) writes a screened mechanism-level skill per task, shown to the gate's "
                        "both sides and to the epoch's GRPO rollouts, never at evaluation (OUT/skills/epoch-N)")
    e.add_argument("--teacher-command", default=None, help="cli proposer: the command run in the work directory")
    from ha_cli.gate_args import add_gate_args

    add_gate_args(p, tasks_default=46)


def add_size_args(p: argparse.ArgumentParser) -> None:
    s = p.add_argument_group("precision and size (local backend)")
    s.add_argument("--dtype", choices=["fp32", "bf16", "fp16"], default=None,
                   help="the weights' dtype (default fp32); a LoRA adapter stays fp32")
    s.add_argument("--lora-rank", type=non_negative_int, default=0, metavar="R",
                   help="train a LoRA adapter of rank R (peft), the base weights frozen; 0: full fine-tuning (default)")
    s.add_argument("--lora-alpha", type=float, default=None, help="LoRA scaling numerator (default: 2 x rank)")
    s.add_argument("--lora-targets", default=None, metavar="NAME,...",
                   help="module names the adapter wraps (default: the attention and MLP projections, "
                        "q/k/v/o_proj and gate/up/down_proj, the model has); checked against the model")
    s.add_argument("--gradient-checkpointing", action="store_true",
                   help="recompute each decoder layer in the backward pass (less activation memory, more compute)")
    s.add_argument("--merge", action="store_true",
                   help="LoRA: every checkpoint also holds the merged plain model (checkpoint/model); without it "
                        "checkpoints hold the adapter (checkpoint/adapter) and the merged model is written at the end")


def size_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``LocalConfig``'s precision and size fields from the flags of ``add_size_args`` (shared with
    ``ha engineer sft|train``)."""
    targets = tuple(t.strip() for t in args.lora_targets.split(",") if t.strip()) if args.lora_targets else None
    return {"dtype": args.dtype or "fp32", "lora_rank": args.lora_rank, "lora_alpha": args.lora_alpha,
            "lora_targets": targets, "gradient_checkpointing": args.gradient_checkpointing, "merge_on_save": args.merge}


def _add_verl_args(p: argparse.ArgumentParser) -> None:
    v = p.add_argument_group("verl backend")
    v.add_argument("--dry-run", action="store_true", help="verl: write the files and print the command, do not launch")
    v.add_argument("--rollout-engine", choices=["vllm", "sglang"], default="vllm")
    v.add_argument("--gpus-per-node", type=int, default=8)
    v.add_argument("--nnodes", type=int, default=1)
    v.add_argument("--override", action="append", default=[], metavar="KEY=VALUE", help="verl: extra Hydra override")
    v.add_argument("--val-tasks", type=int, default=0, metavar="N", help="verl: hold N tasks of the selection out of "
                   "training as the validation pool (default 0: verl's validation off)")


def resolve_harness(ref: str) -> Any:
    from ha_envs.harness import load_spec

    return load_spec(ref)


def _need_torch() -> None:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        raise ValueError("the local backend needs torch and transformers: pip install -e '.[hf]'") from None


def _claim(args: argparse.Namespace, tasks: list, spec: Any, out: Path, only_check: bool = False) -> None:
    """The run's identity in ``out`` (``ha_agents.train.session.claim_training``): another run's folder is refused."""
    from ha_agents.train.session import claim_training

    weights = (args.dtype or "fp32", args.lora_rank) if args.backend == "local" else None
    claim_training(out, tasks, backend=args.backend, model=str(args.model), harness=spec, seed=args.seed,
                   temperature=args.temperature, weights=weights, only_check=only_check,
                   agent=getattr(args, "agent", None))


def cmd_train(args: argparse.Namespace) -> int:
    from ha_cli.model_check import preflight
    from ha_cli.selection import select_tasks as _tasks

    tasks = _tasks(args)
    if args.agent is not None:
        return _train_agent(args, tasks, Path(args.out))
    preflight(args, [("--skill-teacher", args.skill_teacher),
                     ("--teacher", args.teacher if args.evolve and args.proposer == "llm" else None)])
    # the gate's settings, checked before anything is built
    evolve_config = _evolve_config(args) if args.evolve or args.skill_teacher else None
    spec = resolve_harness(args.harness or "h0")
    if args.max_turns:
        spec = spec.with_limits(max_turns=args.max_turns)
    out = Path(args.out)
    if args.backend == "verl":
        return _train_verl(args, tasks, spec, out, evolve_config)
    _need_torch()
    from ha_agents.train.reporting import UpdateReporter
    from ha_agents.train.session import LocalSession
    from ha_evolve.coevolution import CoEvolution

    session = LocalSession.start(local_run(args, spec, out), tasks)
    report = UpdateReporter(args.updates, out)
    loop = CoEvolution.of(session, coevolve_config(args, evolve_config)) if evolve_config is not None else None
    history = session.train(report, loop=loop)
    report.close()
    session.finish()
    model = out / "checkpoint" / "model"
    return _finish(out, history, f"ha eval --model hf:{model} --tokenizer {model} "
                   f"--harness {out / 'checkpoint' / 'harness.yaml'}")


def _finish(out: Path, history: list, evaluate: str) -> int:
    """The end of a local run: the last update's row, the faults, where things are."""
    print(json.dumps(history[-1] if history else {}, default=str))
    from ha_envs.grading.faults import fault_summary, network_note, records_under
    records = records_under(out / "rollouts")
    print(fault_summary(records) + network_note(records), end="", file=sys.stderr)
    print(f"\nmetrics: {out / 'metrics.jsonl'}\nplot: {out / 'training.png'}\ncheckpoint: {out / 'checkpoint'} "
          f"(evaluate it: {evaluate})")
    return 0


AGENT_REFUSED = {  # flags that act on this library's wrapper stack, and why --agent cannot take them
    "evolve": "--evolve evolves this library's wrapper stack (its tools, prompts and hooks); with --agent the episodes "
              "run the user's own harness, which evolution does not change",
    "skill_teacher": "--skill-teacher's skills are shown by this library's wrapper stack; a harness behind the gateway "
                     "sends its own prompts",
    "harness": "--harness names this library's wrapper stack; with --agent the episodes run the user's harness "
               "(its own prompts and tools)",
    "warm_start_harness": "--warm-start-harness records wrapper-stack demonstrations; with --agent, --warm-start "
                          "records them through the agent itself",
    "max_turns": "--max-turns is a wrapper-stack limit; with --agent use --step-limit (mini-swe-agent's own)",
    "pool_k": "--pool-k samples the policy through this library's wrapper stack; measure the tasks with `ha gateway "
              "eval --agent` and pass the kept ones with --instances",
}


def _refuse_agent(args: argparse.Namespace) -> None:
    """What ``--agent`` cannot do, said before anything is built (exit 2)."""
    from ha_agents.train.gateway import AGENTS

    if args.agent not in AGENTS:
        raise ValueError(f"--agent {args.agent}: only {', '.join(AGENTS)} is supported")
    if args.backend != "local":
        raise ValueError("--agent with --backend verl: verl's agent loop runs this library's wrapper stack in its own "
                         "workers; training a user's harness through the gateway runs with --backend local")
    if args.env_placement != "local":
        raise ValueError("--agent with --env-placement ray: the gateway's episodes run their harness and sandbox on "
                         "this machine; use --env-placement local")
    for flag, why in AGENT_REFUSED.items():
        if getattr(args, flag):
            raise ValueError(why)


def _train_agent(args: argparse.Namespace, tasks: list, out: Path) -> int:
    """``--agent mini-swe-agent``: the driver's loop with the gateway as the rollout source."""
    from dataclasses import replace

    from ha_agents.gateway.msa import MSA_VENV, MsaConfig
    from ha_agents.train import BatchPolicy, RolloutLedger, TrainConfig, build_pool, train
    from ha_agents.train.gateway import GatewaySource, warm_start_gateway
    from ha_agents.train.reporting import PhaseProgress, UpdateReporter
    from ha_agents.train.session import local_trainer, start_optimizer

    _refuse_agent(args)
    msa = MsaConfig(venv=args.msa_venv or MSA_VENV, step_limit=args.step_limit, command_timeout_s=args.command_timeout,
                    episode_timeout_s=args.episode_timeout, sandbox=args.sandbox)
    harness = msa.harness(msa.check())  # no venv, or not 2.4.x: said here, before a model is loaded
    _need_torch()
    run = replace(local_run(args, resolve_harness("h0"), out), agent=harness, warm_start=None)
    trainer = local_trainer(run, tasks)
    start_optimizer(trainer, run)
    if args.exclude_benchmark:
        from ha_envs.swe_datasets import load_benchmark

        tasks = build_pool(tasks, evaluation=load_benchmark(args.exclude_benchmark), model=None, k=1,
                           out=out / "pool", seed=args.seed, ledger=RolloutLedger(), workers=args.workers).tasks
    (out / "gateway.json").write_text(json.dumps({"agent": args.agent, "harness": harness.name, "harness_hash":
                                                  harness.hash, "venv": msa.venv, "step_limit": msa.step_limit,
                                                  "sandbox": msa.sandbox}, indent=1) + "\n")
    if args.warm_start and not args.resume:
        print(f"warm start: {args.agent} demonstrations of {len(tasks)} task(s) through the gateway, then "
              f"{args.warm_start} SFT epochs", file=sys.stderr, flush=True)
        ws = warm_start_gateway(trainer, tasks, msa, out, args.warm_start, args.warm_start_lr, PhaseProgress(),
                                args.workers)
        print(f"warm start: {ws['resolved']}/{ws['demonstrations']} demonstrations resolved, {ws['tokens']} tokens, "
              f"SFT loss {ws['sft_loss_first']:.3f} -> {ws['sft_loss_last']:.4f}", file=sys.stderr)
    config = TrainConfig(updates=args.updates, tasks_per_update=args.tasks_per_update, group_size=args.group_size,
                         workers=args.workers, seed=args.seed, save_every=args.save_every,
                         batch=BatchPolicy(truncated=args.truncated, normalize_std=args.norm_adv_by_std),
                         progress=not args.no_progress, freeze_policy=args.freeze_policy)
    source = GatewaySource(msa, trainer.token_mode, args.max_tokens, args.workers, not args.no_progress)
    report = UpdateReporter(args.updates, out)
    history = train(trainer, tasks, config, out, resume=args.resume, ledger=RolloutLedger(), on_update=report,
                    source=source)
    report.close()
    if getattr(trainer, "peft", None) is not None and not args.merge and (out / "checkpoint").is_dir():
        trainer.save_merged(out / "checkpoint" / "model")  # the final policy as a plain model directory
    model = out / "checkpoint" / "model"
    return _finish(out, history, f"ha gateway eval --agent {args.agent} --model hf:{model} --msa-venv {msa.venv} "
                   f"--step-limit {msa.step_limit}")


VERL_REFUSED = {  # local-backend flags, and why verl cannot take them
    "freeze_policy": "--freeze-policy is a local-backend measurement (rollouts without updates); with verl, evaluate "
                     "the model with ha eval instead",
    "optimizer_from": "--optimizer-from reads a local-backend checkpoint (trainer.pt); verl restores its own optimizer "
                      "state from its checkpoints (trainer.resume_mode)",
    "dtype": "--dtype is a local-backend setting; verl takes the dtypes from its config (--override "
             "actor_rollout_ref.actor.fsdp_config.model_dtype=bf16 ...)",
    "lora_rank": "--lora-rank is a local-backend setting; verl has its own LoRA settings (--override "
                 "actor_rollout_ref.model.lora_rank=R actor_rollout_ref.model.lora_alpha=A)",
    "gradient_checkpointing": "--gradient-checkpointing is a local-backend setting; with verl use --override "
                              "actor_rollout_ref.model.enable_gradient_checkpointing=True",
    "merge": "--merge writes the local trainer's merged LoRA model; verl writes its own checkpoints",
    "pool_k": "--pool-k samples the initial policy, which --backend verl does not run here: build the pool with ha "
              "eval (or --backend local) and pass the kept tasks with --instances",
}


def _train_verl(args: argparse.Namespace, tasks: list, spec: Any, out: Path, evolve_config: Any = None) -> int:
    coevolution = _verl_coevolution(args, spec, out, evolve_config) if evolve_config is not None else None
    for flag, why in VERL_REFUSED.items():
        if getattr(args, flag):
            raise ValueError(why)
    if args.exclude_benchmark:  # the same refusal as the local backend's, before anything is written
        from ha_agents.train import build_pool
        from ha_envs.swe_datasets import load_benchmark

        report = build_pool(tasks, evaluation=load_benchmark(args.exclude_benchmark))
        print(f"task pool: {len(report.tasks)} of {len(tasks)} (none is a {args.exclude_benchmark} instance; "
              f"repositories shared with it: {len(report.repo_overlap)})", file=sys.stderr)
        tasks = report.tasks
    from ha_agents.chat.positions import resolve_context
    from ha_agents.train.verl_launch import launch

    args.context_tokens = resolve_context(args.model, args.context_tokens)  # the model is a local directory
    _claim(args, tasks, spec, out)
    return launch(args, tasks, spec, out, coevolution)


def _verl_coevolution(args: argparse.Namespace, spec: Any, out: Path, evolve: Any) -> Any:
    """``--evolve`` / ``--skill-teacher`` with verl: the settings checked now (as the local backend's
    ``CoEvolveConfig``), and the writer of the plan verl's trainer process reads
    (``ha_evolve.verl_coevolution``), given the training tasks once the validation pool is held out."""
    from dataclasses import asdict

    from ha_agents.train.verl_launch import _task_source
    from ha_evolve.proposers import make_proposer
    from ha_evolve.verl_coevolution import VerlCoEvolvePlan, write_plan

    config = coevolve_config(args, evolve).validate()
    options = config.proposer_options
    if config.proposer is not None:
        make_proposer(config.proposer, options)  # an unknown proposer or a missing teacher fails here

    def compose(train_tasks: list, verl_dir: Path) -> list[str]:
        plan = VerlCoEvolvePlan(out=str(out.resolve()), task_source=_task_source(args),
                                instances=[t.instance_id for t in train_tasks], harness=spec.to_dict(),
                                every=config.every, proposer=config.proposer, proposer_options=asdict(options),
                                evolve=asdict(evolve), skill_teacher=config.skill_teacher,
                                model_label=config.model_label, sandbox=args.sandbox, env_placement=args.env_placement)
        return write_plan(verl_dir / "coevolution.json", plan)

    return compose


def local_run(args: argparse.Namespace, spec: Any, out: Path) -> Any:
    """The flags of a local-backend run as the library's ``LocalRun`` (``ha_agents.train.session``):
    one ``EpisodeConfig`` (training, the pool, skill preparation and evolution run variants of it:
    the epoch's harness, a seed, so every setting reaches them all), the trainer's config, the warm start."""
    from ha_agents.episode import EpisodeConfig
    from ha_agents.train import BatchPolicy, TrainConfig
    from ha_agents.train.local import LocalConfig
    from ha_agents.train.losses import LossConfig
    from ha_agents.train.session import LocalRun, WarmStart

    episodes = EpisodeConfig(spec, sandbox=args.sandbox, model_options=model_options(args, temperature=None, top_p=None),
                             env_placement=args.env_placement).validate()
    train = TrainConfig(
        updates=args.updates, tasks_per_update=args.tasks_per_update, group_size=args.group_size, episodes=episodes,
        workers=args.workers, seed=args.seed, save_every=args.save_every,
        batch=BatchPolicy(truncated=args.truncated, normalize_std=args.norm_adv_by_std),
        progress=not args.no_progress, freeze_policy=args.freeze_policy)
    local = LocalConfig(lr=args.lr, temperature=args.temperature, mini_batches=args.mini_batches,
                        max_tokens=args.max_tokens, seed=args.seed,
                        loss=LossConfig(agg=args.loss_agg, kl_coef=args.kl_coef, entropy_coef=args.entropy_coef),
                        **size_settings(args))
    warm = (WarmStart(args.warm_start, args.warm_start_lr,
                      resolve_harness(args.warm_start_harness) if args.warm_start_harness else None)
            if args.warm_start else None)
    return LocalRun(args.model, out, train, local, context_tokens=args.context_tokens, init_model=args.init_model,
                    warm_start=warm, optimizer_from=Path(args.optimizer_from) if args.optimizer_from else None,
                    pool_k=args.pool_k, exclude_benchmark=args.exclude_benchmark, resume=args.resume)


def coevolve_config(args: argparse.Namespace, evolve: Any) -> Any:
    """``--evolve`` / ``--skill-teacher`` parsed into the library's ``CoEvolveConfig`` (``evolve``: the
    schedule's settings, ``_evolve_config``); ``ha_evolve.coevolution.CoEvolution`` runs it."""
    from ha_evolve.coevolution import CoEvolveConfig
    from ha_evolve.proposers import ProposerOptions

    return CoEvolveConfig(
        every=args.evolve_every, proposer=args.proposer if args.evolve else None,
        proposer_options=ProposerOptions(teacher=args.teacher or "", command=args.teacher_command or ""),
        evolve=evolve, skill_teacher=args.skill_teacher, model_label=str(args.model))


def _evolve_config(args: argparse.Namespace) -> Any:
    """The schedule's settings of ``--evolve-*`` and the gate's flags (shared with ``ha evolve run``), checked."""
    from ha_cli.gate_args import gate_config
    from ha_evolve.schedule import EvolveConfig

    return EvolveConfig(rounds=args.evolve_rounds, group_size=args.evolve_group_size,
                        candidates=args.evolve_candidates, workers=args.workers, seed=args.seed,
                        **gate_config(args)).validate()
