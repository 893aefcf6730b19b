"""The ``ha`` command line: one module per command family, each with its ``register(sub)``."""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys

from ha_cli import (engineer_cmd, eval_cmd, evolve_cmd, export_cmd, gateway_cmd, harness_cmd, images_cmd, model_cmd,
                    tasks_cmd, train_cmd)
from ha_envs.signals import Interrupted, signals_interrupt
from ha_envs.task import TaskError


COMMANDS = (tasks_cmd, images_cmd, train_cmd, eval_cmd, export_cmd, evolve_cmd, engineer_cmd, harness_cmd, model_cmd,
            gateway_cmd)
"""The command families, in ``ha --help``'s order; each module's ``register(sub)`` adds its parsers
and sets ``func`` on each (it parses and prints; what it runs is a library call)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ha", description="harnessadapt: repair environments, harnesses, evaluation")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return parser


def resume_command(argv: list[str]) -> str:
    """The command that resumes a stopped run: the same one (``ha evolve run`` with ``--resume``)."""
    argv = list(argv)
    if argv[:2] == ["evolve", "run"] and "--resume" not in argv:
        argv.append("--resume")
    return "ha " + shlex.join(argv)


def stopped(exc: Interrupted, args: argparse.Namespace, argv: list[str]) -> int:
    """After SIGINT / SIGTERM: close what is left, say how to resume, exit 128 + the signal. Worker
    threads still in a model call after the grace period are not waited for (their sandboxes are
    gone; ``os._exit`` skips joining them)."""
    from ha_agents.runs.interrupt import wait_for_threads
    from ha_envs.sandbox import live

    live.stop_all()
    unwound = wait_for_threads()
    live.remove_leftovers()
    out = getattr(args, "out", None)
    kept = f"; what finished is kept in {out}" if out else ""
    print(f"\nha: stopped by {exc.name}{kept}; to resume, run the same command: {resume_command(argv)}",
          file=sys.stderr, flush=True)
    if not unwound:
        sys.stdout.flush()
        os._exit(exc.exit_code)
    return exc.exit_code


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        with signals_interrupt():
            return args.func(args)
    except Interrupted as exc:
        return stopped(exc, args, sys.argv[1:] if argv is None else argv)
    except BrokenPipeError:  # `ha ... | head`: the reader left; end quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as exc:
        if _model_failed(exc):
            print(f"ha: error: {exc}", file=sys.stderr)  # the model failed for good (runs.model_faults.ModelStopped)
            return 3
        if not _user_error(exc):
            raise
        print(f"ha: error: {exc}", file=sys.stderr)
        return 2


def _model_failed(exc: Exception) -> bool:
    if not isinstance(exc, RuntimeError):
        return False
    from ha_agents.llm.base import LLMError  # here, not at the top: `ha --help` stays light

    return isinstance(exc, LLMError)


def _user_error(exc: Exception) -> bool:
    """An error with a message for the user (SandboxError: no Docker daemon, ...), not a bug."""
    from ha_envs.sandbox.base import SandboxError  # here: the sandbox package is no start-up cost

    return isinstance(exc, (TaskError, SandboxError, ValueError, OSError))


if __name__ == "__main__":
    sys.exit(main())
