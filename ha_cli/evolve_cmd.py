"""``ha evolve run | log | prompts``: harness evolution against a fixed model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ha_cli.model_check import add_preflight_arg, positive_int
from ha_cli.selection import add_source as _add_source
from ha_cli.selection import select_tasks as _tasks
from ha_cli.gate_args import add_gate_args
from ha_cli.harness_cmd import _spec
from ha_cli.sampling import add_sampling_args

if TYPE_CHECKING:
    from ha_agents.runs.identity import RunIdentity


def cmd_evolve_run(args: argparse.Namespace) -> int:
    from ha_evolve.proposers import ProposerOptions, make_proposer
    from ha_evolve.report import figures, table
    from ha_evolve.schedule import EvolveConfig, Evolution
    from ha_cli.gate_args import gate_config
    from ha_cli.sampling import greedy_warning, model_options
    from ha_agents.runs.identity import check, claim

    tasks = _tasks(args)
    proposer = make_proposer(args.proposer, ProposerOptions(teacher=args.teacher or "", command=args.teacher_command or ""))
    config = EvolveConfig(rounds=args.rounds, group_size=args.group_size, candidates=args.candidates,
                          attribute=args.attribute, epoch=args.epoch,
                          workers=args.workers, executor=args.executor, seed=args.seed, **gate_config(args)).validate()
    out = Path(args.out)
    options = model_options(args)
    identity = _identity(args, tasks, options)
    problem = check(out, identity)  # another command's folder, or another evolution: refused either way
    if problem is not None:
        raise problem
    if out.exists() and any(out.iterdir()) and not args.resume:
        raise ValueError(f"{out} is not empty: pass --resume to continue that run, or another --out")
    note = greedy_warning(args.model, options, args.group_size)
    if note:
        print(f"warning: {note}", file=sys.stderr)
    from ha_agents.episode import EpisodeConfig
    from ha_cli.model_check import preflight

    preflight(args, [("--model", args.model), ("--teacher", args.teacher if args.proposer == "llm" else None)],
              options, tasks=tasks)
    episodes = EpisodeConfig.create(_spec(args.harness), sandbox=args.sandbox, model_options=options,
                                    env_placement=args.env_placement)
    claim(out, identity)
    evo = Evolution(out, tasks, args.model, episodes, proposer, config,
                    progress=lambda text: print(text, file=sys.stderr, flush=True))
    from ha_agents.runs.model_faults import ModelStopped

    try:
        final = evo.run()
    except ModelStopped as exc:
        raise ModelStopped(f"{exc} (ha evolve run: the same command with --resume)") from None
    print(table(out))
    paths = figures(out)
    final.save(out / "harness.yaml")
    print(f"\nfrozen harness: {final.name} ({final.hash}) -> {out / 'harness.yaml'}")
    print(f"log: {out / 'evolution.jsonl'}; figures: {', '.join(str(p) for p in paths)}")
    return 0


def _identity(args: argparse.Namespace, tasks: list, options) -> "RunIdentity":
    """What an evolution's results depend on; more --rounds extend it (its ``runs``)."""
    from ha_agents.runs.identity import command_identity, model_fields

    fields = {**model_fields(args.model), "temperature": options.temperature, "top_p": options.top_p,
              "seed": args.seed, "harness_hash": _spec(args.harness).hash, "sandbox": args.sandbox,
              "proposer": args.proposer, "teacher": args.teacher or args.teacher_command or "",
              "group_size": args.group_size, "candidates": args.candidates, "decide_by": args.decide_by,
              "alpha": args.alpha, "level": args.level, "gate_tasks": args.gate_tasks,
              "alpha_epochs": args.alpha_epochs}
    return command_identity("evolve", fields, tasks, args.rounds)


def cmd_evolve_plan(args: argparse.Namespace) -> int:
    """The gate's plan for a batch size, before any rollout: its error budget and the smallest effect it detects."""
    from ha_evolve.gate_plan import GatePlan
    from ha_cli.gate_args import gate_config

    fields = gate_config(args)
    if fields["tasks"] is None:
        raise ValueError("ha evolve plan needs --gate-tasks N (tasks per round)")
    if not 0 < args.base_rate < 1 or not 0 < args.power < 1:
        raise ValueError("--base-rate and --power must lie strictly between 0 and 1")
    rule = "point" if fields["decide_by"] == "gate" else fields["decide_by"]
    plan = GatePlan(rule, fields["alpha"], fields["tasks"], args.group_size, args.rounds, args.candidates, args.epochs,
                    fields["min_tasks"], args.power, args.base_rate, fields["alpha_epochs"]).validate()
    print(plan.text())
    return 0


def cmd_evolve_log(args: argparse.Namespace) -> int:
    from ha_evolve.report import figures, table

    if not (Path(args.dir) / "evolution.jsonl").is_file():
        raise ValueError(f"{args.dir} holds no evolution.jsonl")
    print(table(args.dir))
    if args.figures:
        for p in figures(args.dir):
            print(f"figure: {p}")
    return 0


def cmd_evolve_prompts(args: argparse.Namespace) -> int:
    from ha_evolve.proposers import PROMPTS

    for path in sorted(PROMPTS.glob("*.md")):
        print(f"==> {path.name} ({path})\n{path.read_text()}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    evolve = sub.add_parser("evolve", help="evolve the harness against a fixed model (dual-rate gate)").add_subparsers(
        dest="evolve_command", required=True)
    p = evolve.add_parser("run", help="rounds of propose -> validate -> compare -> gate")
    _add_source(p)
    p.add_argument("--model", "--policy", dest="model", default="oracle",
                   help="the fixed model: a model spec as for `ha eval` (--policy: old name)")
    p.add_argument("--harness", default="h0", help="the harness to start from (preset or spec path)")
    p.add_argument("--proposer", default="rule", help="rule | llm | cli")
    p.add_argument("--teacher", default=None, help="llm proposer: the teacher model (openai:NAME@URL)")
    p.add_argument("--teacher-command", default=None, help="cli proposer: the command run in the work directory")
    p.add_argument("--rounds", type=positive_int, default=5)
    p.add_argument("--group-size", type=positive_int, default=4)
    p.add_argument("--candidates", type=positive_int, default=1, help="proposals per round (they share the current side)")
    p.add_argument("--attribute", action="store_true", help="leave-one-component-out after an acceptance")
    p.add_argument("--epoch", type=int, default=1)
    p.add_argument("--sandbox", default="local")
    p.add_argument("--workers", type=positive_int, default=2)
    p.add_argument("--executor", choices=["threads", "ray"], default="threads",
                   help="threads here, or Ray: a GRPO group per Ray task on a node with sandbox slots (RAY_ADDRESS, "
                        "else a local Ray)")
    p.add_argument("--env-placement", choices=["local", "ray"], default="local",
                   help="each episode's env and sandbox here, or in a Ray actor on a sandbox node")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/evolve")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    add_preflight_arg(p)
    add_sampling_args(p)
    add_gate_args(p)
    p.set_defaults(func=cmd_evolve_run)
    p = evolve.add_parser("plan", help="the gate's error budget and the smallest effect a batch size can detect, "
                                       "before spending any rollout")
    p.add_argument("--group-size", type=positive_int, default=4, help="rollouts per task and side")
    p.add_argument("--rounds", type=positive_int, default=5)
    p.add_argument("--candidates", type=positive_int, default=1)
    p.add_argument("--epochs", type=positive_int, default=1, help="epochs planned (the run's bound is epochs x alpha)")
    p.add_argument("--base-rate", type=float, default=0.5, help="the pass rate the effect is measured from (0.5: the "
                   "largest variance)")
    p.add_argument("--power", type=float, default=0.8)
    add_gate_args(p, tasks_default=46)
    p.set_defaults(func=cmd_evolve_plan)
    p = evolve.add_parser("log", help="the evolution log as a table (the paper's Table 15 layout)")
    p.add_argument("dir")
    p.add_argument("--figures", action="store_true", help="also (re)draw the figures")
    p.set_defaults(func=cmd_evolve_log)
    p = evolve.add_parser("prompts", help="show the teacher prompts")
    p.set_defaults(func=cmd_evolve_prompts)
