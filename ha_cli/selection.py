"""Which tasks a command runs on: the source flags every task-taking ``ha`` command shares, and the
selection they make. Its own module so ``main.py`` and ``train_cmd.py`` both import it, not each other.

The selection applies in a fixed order, each step to what the one before left:
source (``--suite`` / ``--jsonl`` / ``--benchmark``) -> ``--instances`` -> ``--filter`` -> ``--shuffle``
-> ``--slice`` -> ``--limit``. So ``--shuffle --slice 0:50`` is a random 50, and ``--slice`` picks
from the shuffled order; an empty result is an error naming the step that emptied it.
"""

from __future__ import annotations

import argparse
import os
import random
import re
from pathlib import Path

from ha_envs.loaders import available_suites, pick_ids, resolve_tasks
from ha_envs.task import Task, TaskError


def parse_slice(text: str) -> slice:
    """``START:STOP[:STEP]`` as in Python (``0:50``, ``:10``, ``100:``, ``::2``, ``-10:``)."""
    parts = text.split(":")
    hint = "use START:STOP[:STEP] as in Python, e.g. 0:50, :10, 100: (--limit N takes the first N)"
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError(f"{text!r} is not a slice; {hint}")
    try:
        values = [int(v) if v.strip() else None for v in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a slice (bounds must be integers); {hint}") from None
    if len(values) == 3 and values[2] == 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the step cannot be 0")
    return slice(*values)


def parse_regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid regular expression: {exc}") from None


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of tasks, at least 1")
    return n


def add_source(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--suite", help=f"bundled suite (default mini; available: {', '.join(available_suites())})")
    src.add_argument("--jsonl", help="local JSONL file of tasks (SWE-bench field names)")
    src.add_argument("--benchmark", choices=["verified", "multilingual", "pro", "r2e", "harbor"],
                     help="a real benchmark: from --data FILE, else $HA_DATA_DIR, else the Hugging Face hub; "
                          "harbor: --data DIR, a Harbor task folder or a folder of them")
    p.add_argument("--data", help="with --benchmark: a local parquet / jsonl / jsonl.gz file or a HF dataset name[@rev]; "
                                      "with --benchmark harbor: a folder")
    p.add_argument("--repos", metavar="DIR",
                   help="bare mirrors of the repositories (DIR/<owner>+<name>/repo or DIR/<owner>/<name>.git; "
                        "sets $HA_REPOS_DIR); default: clone from GitHub")
    p.add_argument("--pro-scripts", metavar="DIR",
                   help="with --benchmark pro: a copy of scaleapi/SWE-bench_Pro-os (default $HA_PRO_SCRIPTS, "
                        "else a mirror under $HA_REPOS_DIR)")
    sel = p.add_argument_group("task selection (applied in this order: --instances, --filter, --shuffle, --slice, "
                               "--limit)")
    sel.add_argument("--instances", nargs="+", metavar="ID", help="only these instance ids, in this order")
    sel.add_argument("--filter", type=parse_regex, metavar="REGEX",
                     help="only instance ids where this regular expression matches (re.search: 'django' or '^mini__t')")
    sel.add_argument("--shuffle", action="store_true",
                     help="random order (seeded by --shuffle-seed, so the same tasks come out in the same order)")
    sel.add_argument("--shuffle-seed", type=int, default=None, metavar="N",
                     help="seed of --shuffle (default 0; giving it implies --shuffle). Not --seed: that one "
                          "seeds the model's sampling or the training run")
    sel.add_argument("--slice", type=parse_slice, metavar="START:STOP",
                     help="a Python slice of the tasks: 0:50, :10, 100:, ::2 (negative bounds: --slice=-10:)")
    sel.add_argument("--limit", type=_positive, default=None, metavar="N", help="at most the first N tasks")


def narrow(tasks: list[Task], source: str, instances: list[str] | None = None,
           pattern: re.Pattern[str] | None = None, shuffle_seed: int | None = None, slice_: slice | None = None,
           limit: int | None = None) -> list[Task]:
    """Apply the selection flags in their documented order. A shuffle sorts by instance id first, so
    its order depends only on the tasks and the seed (not on the file's order or ``--instances``'s)."""
    if not tasks:
        raise TaskError(f"no task selected: {source} holds none")
    if instances:
        tasks = pick_ids(tasks, instances, source)
    if pattern is not None:
        kept = [t for t in tasks if pattern.search(t.instance_id)]
        if not kept:
            raise TaskError(f"no task selected: --filter {pattern.pattern!r} matches none of the {len(tasks)} "
                            f"instance ids{' given by --instances' if instances else ' of ' + source}")
        tasks = kept
    if shuffle_seed is not None:
        tasks = sorted(tasks, key=lambda t: t.instance_id)
        random.Random(shuffle_seed).shuffle(tasks)
    if slice_ is not None:
        kept = tasks[slice_]
        if not kept:
            bounds = ":".join("" if v is None else str(v) for v in (slice_.start, slice_.stop, slice_.step))
            raise TaskError(f"no task selected: --slice {bounds.removesuffix(':')} selects none of the {len(tasks)} "
                            f"task{'s' if len(tasks) > 1 else ''}" + (" left by --filter" if pattern else ""))
        tasks = kept
    return tasks[:limit] if limit is not None else tasks


def select_tasks(args: argparse.Namespace) -> list[Task]:
    if getattr(args, "repos", None):
        if not Path(args.repos).is_dir():
            raise TaskError(f"--repos {args.repos}: not a directory")
        os.environ["HA_REPOS_DIR"] = str(Path(args.repos).resolve())  # read by snapshots, also in workers
    if getattr(args, "benchmark", None):
        from ha_envs.swe_datasets import load_benchmark

        tasks = load_benchmark(args.benchmark, source=args.data, pro_scripts=args.pro_scripts)
        source = f"benchmark {args.benchmark}"
    else:
        suite = args.suite if args.suite or args.jsonl else "mini"
        tasks = resolve_tasks(suite=suite, jsonl=args.jsonl)
        source = f"suite {suite}" if suite else str(args.jsonl)
    shuffle_seed = args.shuffle_seed if args.shuffle_seed is not None else (0 if args.shuffle else None)
    return narrow(tasks, source, instances=args.instances, pattern=args.filter, shuffle_seed=shuffle_seed,
                  slice_=args.slice, limit=args.limit)


__all__ = ["add_source", "narrow", "parse_regex", "parse_slice", "select_tasks"]
