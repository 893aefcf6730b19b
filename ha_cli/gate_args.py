"""The paired gate's settings on the command line (``ha evolve run``): the confidence a rise needs
and the minimum sample, passed to ``EvolveConfig`` (see ``ha_evolve/paired_gate.py`` for the rule)."""

from __future__ import annotations

import argparse
from typing import Any


def add_gate_args(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("the paired gate (--decide-by paired, or auto at small samples)")
    g.add_argument("--level", type=float, default=0.95,
                   help="confidence a rise needs: accept only if its paired sign-flip p-value is at most 1 - LEVEL "
                        "(default 0.95)")
    g.add_argument("--min-tasks", type=int, default=None, metavar="N",
                   help="tasks both sides must run before the gate decides (default: the least at which LEVEL can be "
                        "reached, 5 at 0.95); fewer: 'not enough evidence'")


def gate_config(args: argparse.Namespace) -> dict[str, Any]:
    """The ``EvolveConfig`` fields of the parsed arguments."""
    return {"level": args.level, "min_tasks": args.min_tasks}
