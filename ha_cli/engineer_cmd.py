"""``ha engineer batches | prompt | score | base | sft-data | sft | train | eval | ablate``: Harness-R1
from the command line.

- ``batches``: the failure batches of a target's run (partitioned before anything runs);
- ``prompt``: what the engineer reads for one batch; ``score``: a patch scored the way the env
  scores it (fresh base and patched runs of the frozen target, common seeds, cached);
- ``base``: every batch's base outcomes, computed once and cached (what every later command reuses);
- ``sft-data``: a teacher's patches scored, the verified ones (or all) as an inspectable JSONL;
- ``sft``: the engineer's cold start on such a file (``--engineer`` a local model directory);
- ``train``: GRPO of the engineer, K patches per batch, through ``ha_agents.train.driver`` (resumable);
- ``eval``: an engineer's patches on each batch and on held-out tasks, with paired CIs;
- ``ablate``: a patch's lifecycle ablation (each point's operations, and its tools, dropped).

Every command that runs the target writes under ``--out`` and shares the outcome cache there:
run them with one ``--out`` and no (target, harness, tasks) key runs twice."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ha_cli.model_check import add_preflight_arg, non_negative_int, positive_int
from ha_cli.sampling import add_max_tokens, add_sampling_args, model_options
from ha_cli.selection import add_source as _add_source
from ha_cli.train_cmd import add_size_args
from ha_cli.selection import select_tasks as _tasks


def _records(run: str) -> list[dict[str, Any]]:
    path = Path(run) / "trajectories.jsonl"
    if not path.is_file():
        raise ValueError(f"{run}: no trajectories.jsonl (give the output directory of the target's `ha eval`)")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _batches(path: str) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{path}: no such batches file (write one with `ha engineer batches`)")
    data = json.loads(p.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("batches"), list):
        raise ValueError(f"{path}: not a batches file (no `batches` list)")
    return data


def _pick(data: dict[str, Any], k: int) -> list[str]:
    if not 0 <= k < len(data["batches"]):
        raise ValueError(f"--batch {k}: the file has batches 0..{len(data['batches']) - 1}")
    return list(data["batches"][k])


def cmd_batches(args: argparse.Namespace) -> int:
    from ha_evolve.harness_r1.harness_edit import failure_batches, partition

    tasks = {t.instance_id: t for t in _tasks(args)}
    records = _records(args.run)
    parts = partition(sorted(tasks), tuple(args.fractions), seed=args.partition_seed)
    only = set(parts[args.partition]) if args.partition else None
    batches = failure_batches(records, tasks, args.n, seed=args.seed, only=only)
    if not batches:
        raise ValueError(_no_batch(records, tasks, args, only))
    out = {"run": str(Path(args.run).resolve()), "n": args.n, "seed": args.seed, "partition": args.partition,
           "partitions": parts, "batches": batches}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    failed = sum(len(b) for b in batches)
    print(f"{len(batches)} batches of {args.n} failed tasks ({failed} tasks) -> {args.out}"
          + (f" (partition {args.partition}: {len(only or ())} tasks)" if args.partition else ""))
    return 0


def _no_batch(records: list[dict[str, Any]], tasks: dict[str, Any], args: argparse.Namespace,
              only: set[str] | None) -> str:
    """Why ``ha engineer batches`` found no batch of ``--n`` failed tasks, and what to change."""
    from ha_evolve.harness_r1.harness_edit import failure_batches

    failed = sum(len(b) for b in failure_batches(records, tasks, 1, only=only))
    where = f"of the {len(only or ())} tasks of partition {args.partition}" if args.partition else \
        f"of the {len(tasks)} selected tasks"
    return (f"no batch of {args.n} failed tasks: {args.run} holds {failed} failed, unmasked task(s) {where} (a batch "
            "takes one benchmark's tasks the target failed in every run); pass a smaller --n"
            + (", another --partition or other --fractions" if args.partition else "") + ", or a run with more tasks")


def cmd_prompt(args: argparse.Namespace) -> int:
    from ha_envs.harness import load_spec
    from ha_evolve.harness_r1.harness_edit import engineer_prompt

    data = _batches(args.batches)
    tasks = {t.instance_id: t for t in _tasks(args)}
    batch = _pick(data, args.batch)
    print(engineer_prompt(load_spec(args.harness), batch, _records(data["run"]), tasks, args.budget_chars))
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from ha_evolve.harness_r1.harness_edit import HarnessEditEnv

    data = _batches(args.batches)
    _pick(data, args.batch)
    tasks = _tasks(args)
    patch_text = Path(args.patch).read_text() if args.patch != "-" else sys.stdin.read()
    env = HarnessEditEnv(_target(args), tasks, data["batches"], _records(data["run"]), args.out, args.budget_chars)
    env.reset(options={"batch": args.batch})
    _, reward, _, _, info = env.step(patch_text)
    result = {"batch": args.batch, "reward": reward, **info}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    with (Path(args.out) / "scores.jsonl").open("a") as fh:
        fh.write(json.dumps(result, default=str) + "\n")
    if args.json:
        print(json.dumps(result, indent=1, default=str))
        return 0
    print(f"patch: {info['stage']}" + (f" ({info['reason']})" if info["reason"] else ""))
    if "delta" in info:
        lo, hi = info["delta_ci"]
        print(f"reward (patched - base, mean over {len(info['tasks']) - len(info['masked'])} tasks): {reward:+.3f} "
              f"[{lo:+.3f}, {hi:+.3f}]; rollouts {info['rollouts']}, cache hits {info['cache_hits']}")
        for i in info["tasks"]:
            print(f"  {i}: base {info['base'].get(i)}  patched {info['patched'].get(i)}")
    else:
        print("reward 0.0; no rollout ran")
    return 0


def _add_target(p: argparse.ArgumentParser, out: str) -> None:
    g = p.add_argument_group("the frozen target")
    g.add_argument("--model", required=True, help="the frozen target (a model spec as for `ha eval`)")
    g.add_argument("--harness", default="h0", help="the target's base harness")
    g.add_argument("--runs", type=positive_int, default=2, help="episodes per task on each side (m)")
    g.add_argument("--seed", type=int, default=0,
                   help="the target's common seeds (both sides; the scoring runs draw from a stream of their own, "
                        "disjoint from the selection run's)")
    g.add_argument("--model-revision", default=None, metavar="REV",
                   help="the target's weights revision (a checkpoint tag or hash): with an openai: server, what tells "
                        "new weights served under the same name apart in the outcome cache")
    g.add_argument("--sandbox", choices=["local", "docker"], default="local")
    g.add_argument("--workers", type=positive_int, default=2)
    g.add_argument("--budget-chars", type=int, default=24000, help="the prompt's character budget")
    p.add_argument("--out", default=out, help="outputs, the outcome cache and the runs (share one across commands)")
    add_preflight_arg(p)
    add_sampling_args(p)


def _target(args: argparse.Namespace) -> Any:
    from ha_agents.llm.weights import weights_warning
    from ha_cli.model_check import preflight
    from ha_evolve.harness_r1.harness_edit import Target

    options = model_options(args, max_tokens=None)  # --max-tokens is the engineer's
    if not getattr(args, "dry_run", False):  # a dry run contacts no model
        preflight(args, [("--model", args.model)], options)
    warning = weights_warning(args.model, args.model_revision)
    if warning:
        print(warning, file=sys.stderr)
    return Target.create(args.model, args.harness, sandbox=args.sandbox, runs=args.runs, seed=args.seed,
                         temperature=options.temperature, top_p=options.top_p, workers=args.workers,
                         revision=args.model_revision)


def _env(args: argparse.Namespace, data: dict[str, Any] | None = None, batches: list[list[str]] | None = None):
    from ha_evolve.harness_r1.harness_edit import HarnessEditEnv

    if args.runs < 1:
        raise ValueError(f"--runs {args.runs}: at least 1")
    data = data or _batches(args.batches)
    return HarnessEditEnv(_target(args), _tasks(args), batches if batches is not None else data["batches"],
                          _records(data["run"]), Path(args.out), args.budget_chars)


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))


def cmd_base(args: argparse.Namespace) -> int:
    from ha_evolve.harness_r1.harness_edit import run_side

    env = _env(args)
    rows = []
    for k, b in enumerate(env.batches):
        side = run_side(env.target, env.base_spec, b, env.tasks, env.cache, env.out / "runs")
        rows.append({"batch": k, "tasks": b, "rates": side.rates, "masked": side.masked, "rollouts": side.rollouts,
                     "cached": side.cached})
        print(f"batch {k}: base " + ", ".join(f"{i} {side.rates.get(i, 'masked')}" for i in b)
              + (" (cached)" if side.cached else f" ({side.rollouts} rollouts)"), flush=True)
    _write(Path(args.out) / "base.jsonl", rows)
    return 0


def _client(spec: str, args: argparse.Namespace, flag: str) -> Any:
    """The client of ``flag``'s model spec (the teacher, the engineer), checked first."""
    from ha_agents.llm.registry import make_model
    from ha_cli.model_check import preflight

    options = model_options(args, temperature="engineer_temperature", top_p=None, max_tokens=None)
    preflight(args, [(flag, spec)], options if flag == "--model" else None)
    return make_model(spec, options)


def _row_line(r: dict[str, Any]) -> str:
    i = r["info"]
    tail = f"{r['reward']:+.3f} [{i['delta_ci'][0]:+.3f}, {i['delta_ci'][1]:+.3f}]" if "delta_ci" in i else i.get("reason", "")[:90]
    return f"batch {r['batch']}: {r['kind']:<8} {tail}; rollouts {i.get('rollouts', 0)}, cache hits {i.get('cache_hits', 0)}"


def cmd_sft_data(args: argparse.Namespace) -> int:
    from ha_evolve.harness_r1.engineer import sft_data

    teacher = _client(args.teacher, args, "--teacher")  # checked before the target's runs start
    env = _env(args)
    out = Path(args.out)
    scores = out / "teacher-scores.jsonl"
    scores.unlink(missing_ok=True)

    def on_row(r: dict[str, Any]) -> None:
        with scores.open("a") as fh:
            fh.write(json.dumps(r, default=str) + "\n")
        print(_row_line(r), flush=True)

    rows = sft_data(teacher, env, args.samples, args.engineer_seed, args.eps, args.keep, on_row)
    _write(out / "sft.jsonl", rows)
    print(f"{len(rows)} demonstrations ({args.keep}) from {len(env.batches)} batches -> {out / 'sft.jsonl'}")
    return 0 if rows else 1


def _local_trainer(args: argparse.Namespace) -> Any:
    """The engineer on the local trainer, in its dtype, LoRA and checkpointing settings (``ha train``'s
    flags: a 1–3B engineer in bf16 + LoRA on one GPU); the memory estimate printed first."""
    from ha_agents.train.local import LocalConfig, LocalTrainer

    from .train_cmd import size_settings

    config = LocalConfig(lr=args.lr, temperature=args.engineer_temperature or 1.0, max_tokens=args.max_tokens,
                         context_tokens=args.context_tokens, seed=args.engineer_seed, **size_settings(args)).validate()
    trainer = LocalTrainer(args.engineer, config)
    print(trainer.memory_estimate().line(), file=sys.stderr, flush=True)
    return trainer


def _save_merged(trainer: Any, out: Path) -> None:
    """With LoRA (and no ``--merge``), the engineer as a plain model directory at ``out`` too."""
    if getattr(trainer, "peft", None) is not None and not trainer.config.merge_on_save:
        trainer.save_merged(out)
        print(f"merged the LoRA adapter into {out}", file=sys.stderr)


def cmd_sft(args: argparse.Namespace) -> int:
    from ha_evolve.harness_r1.engineer import read_rows, sft_samples

    rows = read_rows(args.data)
    if not rows:
        raise ValueError(f"{args.data}: no demonstrations")
    if not (Path(args.engineer) / "config.json").is_file():
        if not args.init_model:
            raise ValueError(f"--engineer {args.engineer}: no model there (pass --init-model qwen|llama to build a tiny one)")
        from ha_agents.train.models import init_model, suite_corpus

        # the tokenizer learns the engineer's texts: prompts (with the template's role markers) and replies
        corpus = suite_corpus() + [m["content"] for r in rows for m in r["messages"]] + [r["reply"] for r in rows] * 4
        init_model(args.engineer, args.init_model, seed=args.engineer_seed, corpus=corpus,
                   hidden=args.init_hidden, layers=args.init_layers)
        print(f"built a tiny {args.init_model}-family engineer at {args.engineer}", file=sys.stderr)
    trainer = _local_trainer(args)
    samples = sft_samples(rows, trainer.token_mode)
    losses = trainer.sft(samples, epochs=args.epochs)
    out = Path(args.out)
    trainer.save(out)
    _save_merged(trainer, out / "model")
    (out / "sft.json").write_text(json.dumps({"data": str(Path(args.data).resolve()), "samples": len(samples),
                                              "epochs": args.epochs, "lr": args.lr, "losses": losses}, indent=1))
    print(f"SFT on {len(samples)} demonstrations, {args.epochs} epochs: loss {losses[0]:.3f} -> {losses[-1]:.3f}; "
          f"the engineer: {out / 'model'} (--engineer for `ha engineer train`, hf:{out / 'model'} elsewhere)")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from ha_agents.train.base import BatchPolicy
    from ha_agents.train.driver import TrainConfig, train
    from ha_evolve.harness_r1.engineer import EngineerSource, batch_items

    if args.backend == "verl":
        from .train_cmd import VERL_REFUSED

        for flag in ("dtype", "lora_rank", "gradient_checkpointing", "merge"):
            if getattr(args, flag):
                raise ValueError(VERL_REFUSED[flag])
    data = _batches(args.batches)
    if args.backend == "verl":
        return _train_verl(args, data)
    trainer = _local_trainer(args)
    items = batch_items(data["batches"])
    source = EngineerSource(_env(args, data), trainer.token_mode)
    config = TrainConfig(updates=args.updates, tasks_per_update=args.batches_per_update, group_size=args.k,
                         seed=args.engineer_seed, progress=False,
                         batch=BatchPolicy(normalize_std=args.normalize_std))

    def show(row: dict[str, Any]) -> None:
        print(f"update {row['update']}: reward {row['reward_mean']:+.3f}, valid {row['valid_rate']:.2f}, "
              f"no-op {row['no_op_rate']:.2f}, helpful {row['helpful_rate']:.2f}, harmful {row['harmful_rate']:.2f}, "
              f"masked {row['masked_share']:.2f}; target rollouts {row['comparison_rollouts']}, "
              f"cache hits {row['cache_hits']}", flush=True)

    history = train(trainer, items, config, Path(args.out) / "engineer", resume=args.resume, on_update=show,
                    source=source)
    if (Path(args.out) / "engineer" / "checkpoint").is_dir():
        _save_merged(trainer, Path(args.out) / "engineer" / "checkpoint" / "model")
    print(f"{len(history)} updates -> {Path(args.out) / 'engineer' / 'metrics.jsonl'}; "
          f"the engineer: {Path(args.out) / 'engineer' / 'checkpoint' / 'model'}")
    return 0


def _train_verl(args: argparse.Namespace, data: dict[str, Any]) -> int:
    """verl's GRPO of the engineer: the one-turn agent loop (``ha_evolve.harness_r1.verl_engineer``), a row per
    failure batch, Harness-R1's recipe (K patches per batch, lr 1e-6 constant, clip 0.2 / 0.28, no
    KL), written to OUT/verl; then verl's trainer, or with --dry-run its command."""
    from ha_agents.train.verl_launch import _task_source, paper_overrides, start
    from ha_evolve.harness_r1.verl_engineer import AGENT_NAME, engineer_loop_yaml, write_batch_dataset

    if args.resume:
        raise ValueError("--resume is the local backend's; verl resumes from its checkpoints (trainer.resume_mode)")
    d = Path(args.out) / "verl"
    target = _target(args)
    loop_yaml = engineer_loop_yaml(d / "agent_loop.yaml", target, _task_source(args), Path(args.batches), Path(args.out),
                                   args.budget_chars)
    train_file = write_batch_dataset(data["batches"], d / "train.parquet")
    model = str(Path(args.engineer).resolve()) if Path(args.engineer).exists() else args.engineer
    overrides = paper_overrides(model, train_file, loop_yaml, Path(args.out), args.updates, args.batches_per_update, args.k,
                                args.lr, args.context_tokens, prompt_length=args.context_tokens - args.max_tokens,
                                engine=args.rollout_engine, gpus_per_node=args.gpus_per_node, nnodes=args.nnodes,
                                norm_std=args.normalize_std, temperature=args.engineer_temperature or 1.0,
                                agent_name=AGENT_NAME)
    overrides += ["actor_rollout_ref.actor.clip_ratio_low=0.2", "actor_rollout_ref.actor.clip_ratio_high=0.28",
                  *args.override]
    (d / "overrides.txt").write_text("\n".join(overrides) + "\n")
    if len(data["batches"]) < args.batches_per_update:
        print(f"warning: {args.batches_per_update} batches per update but the file has {len(data['batches'])}: verl's "
              "loader would form no batch", file=sys.stderr)
    print(f"agent loop: {loop_yaml}\ndataset: {train_file} ({len(data['batches'])} batches)\n"
          f"overrides: {d / 'overrides.txt'}")
    return start(overrides, args.dry_run)


PROPOSER_ROUNDS = 5
"""A proposer's rounds per batch in ``ha engineer eval`` (the evolution schedule's default rounds)."""


def cmd_eval(args: argparse.Namespace) -> int:
    from ha_evolve.harness_r1.engineer import evaluate

    data = _batches(args.batches)
    env = _env(args, data)
    held: list[str] = list(args.heldout_instances or [])
    unknown = [i for i in held if i not in env.tasks]
    if unknown:
        raise ValueError(f"--heldout-instances: not among the selected tasks: {unknown[:5]}")
    if args.heldout:
        parts = data.get("partitions") or {}
        if args.heldout not in parts:
            raise ValueError(f"--heldout {args.heldout}: the batches file has partitions {sorted(parts) or 'none'}")
        held += [i for i in parts[args.heldout] if i in env.tasks and i not in held]
    if args.engineer.startswith("proposer:"):  # a whole-spec proposer's candidate written as a patch
        from ha_evolve.harness_r1.engineer import ProposerEngineer
        from ha_evolve.proposers import make_proposer

        client = ProposerEngineer(make_proposer(args.engineer.split(":", 1)[1]), env)
    else:
        client = _client(args.engineer, args, "--engineer") if args.engineer != "none" else None
    out = Path(args.out)
    rows_path = out / f"eval-{args.name}.jsonl"
    rows_path.unlink(missing_ok=True)

    def on_row(r: dict[str, Any]) -> None:
        with rows_path.open("a") as fh:
            fh.write(json.dumps(r, default=str) + "\n")
        print(_row_line(r) + (f"; held-out {r['heldout']['delta']:+.3f} on {len(r['heldout']['tasks'])} tasks"
                              if r.get("heldout") else ""), flush=True)

    samples = args.samples or (PROPOSER_ROUNDS if args.engineer.startswith("proposer:") else 1)
    if client is None:  # no patch: the baseline row of a comparison (reward 0 by construction, no rollout)
        from ha_agents.llm.scripted import ScriptedClient

        client = ScriptedClient(["no patch"] * len(env.batches) * samples, name="none")
    result = evaluate(client, env, held, seed=args.engineer_seed, on_row=on_row, samples=samples)
    s = result["summary"]
    (out / f"eval-{args.name}.json").write_text(json.dumps({"engineer": args.engineer, "heldout": args.heldout,
                                                            **s}, indent=1))
    lo, hi = s["batch_delta_ci"]
    print(f"{args.name}: on the batches {s['batch_delta']:+.3f} [{lo:+.3f}, {hi:+.3f}]"
          + (f"; held-out {s['heldout_delta']:+.3f} [{s['heldout_delta_ci'][0]:+.3f}, {s['heldout_delta_ci'][1]:+.3f}] "
             f"(pass@1 {s.get('heldout_pass_base', 0):.3f} -> {s.get('heldout_pass_patched', 0):.3f}), "
             f"overfit gap {s['overfit_gap']:+.3f}" if s["heldout_delta"] is not None else "")
          + f"; valid {s['valid_rate']:.2f}, helpful {s['helpful_rate']:.2f} -> {out / f'eval-{args.name}.json'}")
    return 0


def cmd_ablate(args: argparse.Namespace) -> int:
    from ha_evolve.harness_r1.engineer import ablate

    env = _env(args)
    reply = Path(args.patch).read_text() if args.patch != "-" else sys.stdin.read()
    result = ablate(reply, env, on_row=lambda r: print(
        f"{r['variant']:<16} ops {r['ops']}: {r['delta']:+.3f} [{r['delta_ci'][0]:+.3f}, {r['delta_ci'][1]:+.3f}] "
        f"over {r['tasks']} tasks; rollouts {r['rollouts']}", flush=True))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "ablation.json").write_text(json.dumps(result, indent=1))
    return 0


def cmd_menu(args: argparse.Namespace) -> int:
    import yaml

    from ha_evolve.harness_r1.engineer import FIXTURE_MENU

    kinds = [m["kind"] for m in FIXTURE_MENU]
    unknown = sorted(set(args.without) - set(kinds))
    if unknown:
        raise ValueError(f"--without {' '.join(unknown)}: the menu's kinds are {', '.join(kinds)}")
    menu = [m for m in FIXTURE_MENU if m["kind"] not in set(args.without)]
    if not menu:
        raise ValueError("--without leaves no patch in the menu")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(yaml.safe_dump(menu, sort_keys=False))
    print(f"{len(menu)} patches ({', '.join(m['kind'] for m in menu)}) -> {args.out} "
          f"(use as --teacher menu:{args.out})")
    return 0


def _add_engineer(p: argparse.ArgumentParser, local: bool) -> None:
    g = p.add_argument_group("the engineer")
    if local:
        g.add_argument("--engineer", required=True, help="the engineer: a local model directory (config.json)")
        g.add_argument("--lr", type=float, default=1e-6, help="learning rate (the method's GRPO: 1e-6)")
        add_max_tokens(g, 512)
        g.add_argument("--context-tokens", type=int, default=32768)
        add_size_args(p)
    g.add_argument("--engineer-temperature", type=float, default=None,
                   help="the engineer's sampling temperature (train: default 1.0)")
    g.add_argument("--engineer-seed", type=int, default=0, help="seeds the engineer's samples")


def register(sub: argparse._SubParsersAction) -> None:
    eng = sub.add_parser("engineer", help="Harness-R1: failure batches, the engineer's prompt, a patch scored "
                                          "by re-running the target").add_subparsers(dest="engineer_command", required=True)
    p = eng.add_parser("batches", help="seeded batches of the target's failed, unmasked tasks (one benchmark each)")
    _add_source(p)
    p.add_argument("--run", required=True, help="the target's `ha eval` output directory")
    p.add_argument("--n", type=positive_int, default=4, help="tasks per batch")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--partition", choices=["sft", "rl", "val", "test"], default=None,
                   help="only tasks of this partition (the split is made over the selected tasks)")
    p.add_argument("--fractions", type=float, nargs=4, default=[0.4, 0.3, 0.1, 0.2], metavar=("SFT", "RL", "VAL", "TEST"))
    p.add_argument("--partition-seed", type=int, default=0)
    p.add_argument("--out", default="runs/engineer/batches.json")
    p.set_defaults(func=cmd_batches)
    for name, func, help_ in (("prompt", cmd_prompt, "print what the engineer reads for one batch"),
                              ("score", cmd_score, "score a patch: fresh base and patched runs of the target")):
        p = eng.add_parser(name, help=help_)
        _add_source(p)
        p.add_argument("--batches", required=True, help="a file from `ha engineer batches`")
        p.add_argument("--batch", type=int, default=0)
        p.add_argument("--harness", default="h0", help="the target's base harness")
        p.add_argument("--budget-chars", type=int, default=24000)
        if name == "score":
            p.add_argument("--patch", required=True, help="a file with the engineer's reply (or - for stdin)")
            p.add_argument("--model", required=True, help="the frozen target (a model spec as for `ha eval`)")
            p.add_argument("--runs", type=positive_int, default=2, help="episodes per task on each side")
            p.add_argument("--seed", type=int, default=0)
            p.add_argument("--model-revision", default=None, metavar="REV", help="the target's weights revision")
            p.add_argument("--sandbox", choices=["local", "docker"], default="local")
            p.add_argument("--workers", type=positive_int, default=2)
            p.add_argument("--out", default="runs/engineer/score", help="scores.jsonl, the cache and the runs")
            p.add_argument("--json", action="store_true")
            add_sampling_args(p)
            add_preflight_arg(p)
        p.set_defaults(func=func)
    p = eng.add_parser("menu", help="write the fixture menu of patches for the `hasty` target (the CPU demonstration)")
    p.add_argument("--out", default="runs/engineer/menu.yaml")
    p.add_argument("--without", nargs="+", default=[], metavar="KIND",
                   help="leave these kinds out (helpful, wrong_point, malformed, no_op): `--without helpful` is a "
                        "teacher that does not hold the answer")
    p.set_defaults(func=cmd_menu)
    p = eng.add_parser("base", help="every batch's base outcomes (fresh runs of the target, cached)")
    _add_source(p)
    p.add_argument("--batches", required=True)
    _add_target(p, "runs/engineer")
    p.set_defaults(func=cmd_base)
    _register_learning(eng)


def _register_learning(eng: Any) -> None:
    """The engineer's learning commands: SFT data, the cold start, GRPO, evaluation, ablation."""
    p = eng.add_parser("sft-data", help="a teacher's patches scored; the verified ones (or all) as sft.jsonl")
    _add_source(p)
    p.add_argument("--batches", required=True)
    p.add_argument("--teacher", required=True, help="any model spec (openai:..., hf:DIR, menu:REPLIES.yaml)")
    p.add_argument("--samples", type=positive_int, default=4, help="teacher patches per batch")
    p.add_argument("--eps", type=float, default=0.05, help="a kept patch's CI lower bound must exceed -eps")
    p.add_argument("--keep", choices=["verified", "all"], default="verified",
                   help="verified: at most one per batch, the best with reward > 0; all: every scored patch")
    _add_target(p, "runs/engineer")
    _add_engineer(p, local=False)
    p.set_defaults(func=cmd_sft_data)
    p = eng.add_parser("sft", help="the engineer's cold start on an sft.jsonl")
    p.add_argument("--data", required=True, help="an sft.jsonl from `ha engineer sft-data`")
    p.add_argument("--epochs", type=positive_int, default=3)
    p.add_argument("--init-model", choices=["qwen", "llama"], default=None,
                   help="build a tiny engineer of this family at --engineer when none is there (tokenizer trained "
                        "on the suite and the SFT texts)")
    p.add_argument("--init-hidden", type=int, default=64)
    p.add_argument("--init-layers", type=int, default=2)
    p.add_argument("--out", default="runs/engineer/sft")
    _add_engineer(p, local=True)
    p.set_defaults(func=cmd_sft)
    p = eng.add_parser("train", help="GRPO of the engineer: K patches per batch, rewarded by re-running the target")
    _add_source(p)
    p.add_argument("--batches", required=True, help="a batches file (its RL partition's batches)")
    p.add_argument("--updates", type=non_negative_int, default=10)
    p.add_argument("--batches-per-update", type=positive_int, default=4)
    p.add_argument("--k", type=positive_int, default=8, help="patches per batch (the GRPO group)")
    p.add_argument("--normalize-std", action=argparse.BooleanOptionalAction, default=True,
                   help="divide advantages by the group's std (Harness-R1's GRPO, the default; --no-normalize-std: "
                        "the group mean only, as HarnessAdapt-RL's policy training)")
    p.add_argument("--resume", action="store_true")
    v = p.add_argument_group("--backend verl (GPUs: a one-turn agent loop, vLLM/SGLang rollouts)")
    v.add_argument("--backend", choices=["local", "verl"], default="local")
    v.add_argument("--dry-run", action="store_true", help="write verl's files and print its command, run nothing")
    v.add_argument("--rollout-engine", choices=["vllm", "sglang"], default="vllm")
    v.add_argument("--gpus-per-node", type=int, default=8)
    v.add_argument("--nnodes", type=int, default=1)
    v.add_argument("--override", action="append", default=[], metavar="KEY=VALUE", help="one more Hydra override")
    _add_target(p, "runs/engineer")
    _add_engineer(p, local=True)
    p.set_defaults(func=cmd_train)
    p = eng.add_parser("eval", help="an engineer's patches on each batch and on held-out tasks, with paired CIs")
    _add_source(p)
    p.add_argument("--batches", required=True)
    p.add_argument("--engineer", required=True,
                   help="a model spec (hf:DIR, openai:..., menu:FILE), `proposer:rule` (the rule mutator's "
                        "candidate for the batch, written as a patch) or `none` (no patch: the baseline)")
    p.add_argument("--heldout", choices=["sft", "rl", "val", "test"], default=None,
                   help="also score each patch on this partition's tasks (less the batch's)")
    p.add_argument("--heldout-instances", nargs="+", default=None, metavar="ID",
                   help="also score each patch on these tasks (less the batch's)")
    p.add_argument("--name", default="engineer", help="names the output files (eval-NAME.json, .jsonl)")
    p.add_argument("--samples", type=positive_int, default=None,
                   help="patches per batch (each its own seed; default 1); a proposer: its rounds per batch, each "
                        "proposing a candidate not tried before (default 5, the schedule's rounds per epoch)")
    _add_target(p, "runs/engineer")
    _add_engineer(p, local=False)
    p.set_defaults(func=cmd_eval)
    p = eng.add_parser("ablate", help="a patch's lifecycle ablation: each point's operations (and tools) dropped")
    _add_source(p)
    p.add_argument("--batches", required=True)
    p.add_argument("--patch", required=True, help="a file with the patch (or - for stdin)")
    _add_target(p, "runs/engineer")
    p.set_defaults(func=cmd_ablate)
