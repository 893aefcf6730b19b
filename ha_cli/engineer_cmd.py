"""``ha engineer batches | prompt | score``: Harness-R1's pieces from the command line: the failure
batches of a target's run, the prompt the engineer reads for one, and a patch scored the way the
environment scores it (fresh base and patched runs of the frozen target, common seeds, cached)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ha_cli.sampling import add_sampling_args
from ha_cli.selection import add_source as _add_source
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
    from ha_evolve.harness_edit import failure_batches, partition

    tasks = {t.instance_id: t for t in _tasks(args)}
    records = _records(args.run)
    parts = partition(sorted(tasks), tuple(args.fractions), seed=args.partition_seed)
    only = set(parts[args.partition]) if args.partition else None
    batches = failure_batches(records, tasks, args.n, seed=args.seed, only=only)
    out = {"run": str(Path(args.run).resolve()), "n": args.n, "seed": args.seed, "partition": args.partition,
           "partitions": parts, "batches": batches}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    failed = sum(len(b) for b in batches)
    print(f"{len(batches)} batches of {args.n} failed tasks ({failed} tasks) -> {args.out}"
          + (f" (partition {args.partition}: {len(only or ())} tasks)" if args.partition else ""))
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    from ha_envs.harness import load_spec
    from ha_evolve.harness_edit import engineer_prompt

    data = _batches(args.batches)
    tasks = {t.instance_id: t for t in _tasks(args)}
    batch = _pick(data, args.batch)
    print(engineer_prompt(load_spec(args.harness), batch, _records(data["run"]), tasks, args.budget_chars))
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from ha_evolve.harness_edit import HarnessEditEnv, Target

    data = _batches(args.batches)
    _pick(data, args.batch)
    tasks = _tasks(args)
    patch_text = Path(args.patch).read_text() if args.patch != "-" else sys.stdin.read()
    target = Target(args.model, args.harness, args.sandbox, args.runs, args.seed, args.temperature, args.top_p,
                    args.workers)
    env = HarnessEditEnv(target, tasks, data["batches"], _records(data["run"]), args.out, args.budget_chars)
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


def register(sub: argparse._SubParsersAction) -> None:
    eng = sub.add_parser("engineer", help="Harness-R1: failure batches, the engineer's prompt, a patch scored "
                                          "by re-running the target").add_subparsers(dest="engineer_command", required=True)
    p = eng.add_parser("batches", help="seeded batches of the target's failed, unmasked tasks (one benchmark each)")
    _add_source(p)
    p.add_argument("--run", required=True, help="the target's `ha eval` output directory")
    p.add_argument("--n", type=int, default=4, help="tasks per batch")
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
            p.add_argument("--runs", type=int, default=2, help="episodes per task on each side")
            p.add_argument("--seed", type=int, default=0)
            p.add_argument("--sandbox", choices=["local", "docker"], default="local")
            p.add_argument("--workers", type=int, default=2)
            p.add_argument("--out", default="runs/engineer/score", help="scores.jsonl, the cache and the runs")
            p.add_argument("--json", action="store_true")
            add_sampling_args(p)
        p.set_defaults(func=func)
