"""The gate's settings on the command line, the same in ``ha evolve run`` and ``ha train --evolve``:
the rule, the false acceptance per epoch, the minimum sample and the tasks per round, passed to
``EvolveConfig`` (see ``ha_evolve/gate_plan.py`` for the error budget, ``ha_evolve/paired_gate.py``
for the test)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_gate_args(parser: argparse.ArgumentParser, tasks_default: int | None = None) -> None:
    g = parser.add_argument_group("the gate (the same in ha evolve run and ha train --evolve)")
    g.add_argument("--gate", "--decide-by", dest="decide_by", choices=["paired", "point", "stat", "gate"],
                   default="paired",
                   help="paired (default): the exact paired sign-flip test, false acceptance per epoch at most "
                        "--alpha; point: the paper's rule on point estimates (not a test, prints a warning; 'gate' is "
                        "its old name); stat: the bootstrap rule (unadjusted). All are logged")
    g.add_argument("--alpha", type=float, default=None,
                   help="false acceptance per epoch: the chance an epoch accepts any candidate that makes no "
                        "difference, split over the two rates and the epoch's rounds x candidates (default 0.05)")
    g.add_argument("--alpha-epochs", type=int, default=1, metavar="E",
                   help="state --alpha for E epochs together (a run-wide rate): each epoch runs at alpha / E "
                        "(default 1: --alpha per epoch)")
    g.add_argument("--min-tasks", type=int, default=None, metavar="N",
                   help="tasks both sides must run before the gate decides (default: the least at which the split "
                        "alpha can be reached, 8 at 0.05 over 5 rounds); fewer: 'not enough evidence'")
    g.add_argument("--gate-tasks", type=int, default=tasks_default, metavar="N",
                   help="tasks per round, drawn from the selection per epoch and round: the proposer's batch and both "
                        "sides of the comparison run on them (" + ("default: all selected" if tasks_default is None
                                                                   else f"default {tasks_default}, the paper's") + ")")
    g.add_argument("--level", type=float, default=None, help="deprecated: --level L is --alpha 1-L")


def gate_config(args: argparse.Namespace) -> dict[str, Any]:
    """The ``EvolveConfig`` fields of the parsed arguments."""
    alpha = args.alpha
    if args.level is not None:
        if alpha is not None:
            raise ValueError("--level is the deprecated form of --alpha: pass one of them")
        alpha = 1 - args.level
        print(f"warning: --level is deprecated: --level {args.level:g} now means --alpha {alpha:g}, the false "
              "acceptance per epoch", file=sys.stderr)
    if args.gate_tasks is not None and args.gate_tasks < 1:
        raise ValueError(f"--gate-tasks must be at least 1, got {args.gate_tasks}")
    return {"decide_by": args.decide_by, "alpha": 0.05 if alpha is None else alpha, "min_tasks": args.min_tasks,
            "tasks": args.gate_tasks, "alpha_epochs": args.alpha_epochs}
