"""Which tasks a command runs on: the source flags every task-taking ``ha`` command shares, and the
selection they make. Its own module so ``main.py`` and ``train_cmd.py`` both import it, not each other."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ha_envs.loaders import available_suites, resolve_tasks
from ha_envs.task import TaskError


def add_source(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--suite", help=f"bundled suite (default mini; available: {', '.join(available_suites())})")
    src.add_argument("--jsonl", help="local JSONL file of tasks (SWE-bench field names)")
    src.add_argument("--benchmark", choices=["verified", "multilingual", "pro", "r2e"],
                     help="a real benchmark: from --data FILE, else $HA_DATA_DIR, else the Hugging Face hub")
    p.add_argument("--data", help="with --benchmark: a local parquet / jsonl / jsonl.gz file or a HF dataset name[@rev]")
    p.add_argument("--repos", metavar="DIR",
                   help="bare mirrors of the repositories (DIR/<owner>+<name>/repo or DIR/<owner>/<name>.git; "
                        "sets $HA_REPOS_DIR); default: clone from GitHub")
    p.add_argument("--pro-scripts", metavar="DIR",
                   help="with --benchmark pro: a copy of scaleapi/SWE-bench_Pro-os (default $HA_PRO_SCRIPTS, "
                        "else a mirror under $HA_REPOS_DIR)")
    p.add_argument("--instances", nargs="+", metavar="ID", help="only these instance ids")
    p.add_argument("--limit", type=int, default=None, help="only the first N tasks")


def select_tasks(args: argparse.Namespace):
    if getattr(args, "repos", None):
        if not Path(args.repos).is_dir():
            raise TaskError(f"--repos {args.repos}: not a directory")
        os.environ["HA_REPOS_DIR"] = str(Path(args.repos).resolve())  # read by snapshots, also in workers
    if getattr(args, "benchmark", None):
        from ha_envs.benchmarks import load_benchmark

        tasks = load_benchmark(args.benchmark, source=args.data, pro_scripts=args.pro_scripts)
        if args.instances:
            by_id = {t.instance_id: t for t in tasks}
            unknown = [i for i in args.instances if i not in by_id]
            if unknown:
                raise TaskError(f"unknown instance ids in {args.benchmark}: {', '.join(unknown)}")
            tasks = [by_id[i] for i in args.instances]
    else:
        suite = args.suite if args.suite or args.jsonl else "mini"
        tasks = resolve_tasks(suite=suite, jsonl=args.jsonl, ids=args.instances)
    return tasks[: args.limit] if args.limit else tasks


__all__ = ["add_source", "select_tasks"]
