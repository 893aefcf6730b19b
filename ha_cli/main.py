"""The ``ha`` command line: one module per command family, each with its ``register(sub)``."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from ha_cli import engineer_cmd, eval_cmd, evolve_cmd, harness_cmd, images_cmd, tasks_cmd, train_cmd
from ha_cli.selection import add_source
from ha_envs.sandbox.base import SandboxError
from ha_envs.task import TaskError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ha", description="harnessadapt: repair environments, harnesses, evaluation")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    tasks_cmd.register(sub)
    images_cmd.register(sub)
    train_cmd.add_train_parser(sub, add_source)
    eval_cmd.register(sub)
    evolve_cmd.register(sub)
    engineer_cmd.register(sub)
    harness_cmd.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except BrokenPipeError:  # `ha ... | head`: the reader left; end quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except (TaskError, SandboxError, ValueError, OSError) as exc:  # SandboxError: no Docker daemon, ...
        print(f"ha: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        from ha_agents.llm.base import LLMError  # here, not at the top: `ha --help` stays light

        if not isinstance(exc, LLMError):
            raise
        print(f"ha: error: {exc}", file=sys.stderr)  # the model failed for good (runs.model_faults.ModelStopped)
        return 3


if __name__ == "__main__":
    sys.exit(main())
