"""Sampling options of the commands that draw groups (``ha evolve run``): temperature and top-p
for every client kind (``openai:`` request fields, ``hf:`` generation; ``replay:`` draws a
recorded run per member, the scripted policies draw from the member's seed), with the command's
``--seed`` giving each group member its own seed (``rollouts.episode_seed(seed, task, member)``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_sampling_args(parser: argparse.ArgumentParser) -> None:
    """``--temperature`` and ``--top-p`` (``--seed`` is the command's own)."""
    g = parser.add_argument_group("sampling (passed to every client kind; each group member samples with its own "
                                  "seed, derived from --seed, the task and the member)")
    g.add_argument("--temperature", type=float, default=None,
                   help="sampling temperature (default: the backend's, 0 for openai: and hf:: greedy, so a group's "
                        "members are copies and the trainable rate is 0)")
    g.add_argument("--top-p", type=float, default=None, help="nucleus sampling (default: the backend's)")


class _DeprecatedAlias(argparse.Action):
    """An old flag kept for its documented uses: stores into the new flag's destination and says so."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        print(f"{option_string} is deprecated: use {self.metavar}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_max_tokens(group: Any, default: int | None, help: str = "cap per model call") -> None:
    """``--max-tokens N``, the one cap per model call (``ModelOptions.max_tokens``; in token mode also
    never more than the context left); ``--max-new-tokens``, its old name, is a deprecated alias."""
    group.add_argument("--max-tokens", type=int, default=default, help=help)
    group.add_argument("--max-new-tokens", type=int, dest="max_tokens", action=_DeprecatedAlias, default=argparse.SUPPRESS,
                       metavar="--max-tokens", help=argparse.SUPPRESS)


def model_options(args: argparse.Namespace) -> Any:
    """The ``ModelOptions`` of the parsed sampling arguments."""
    from ha_agents.llm.options import ModelOptions

    if args.temperature is not None and args.temperature < 0:
        raise ValueError(f"--temperature {args.temperature}: must be at least 0")
    if args.top_p is not None and not 0 < args.top_p <= 1:
        raise ValueError(f"--top-p {args.top_p}: must be in (0, 1]")
    return ModelOptions(temperature=args.temperature, top_p=args.top_p)


def greedy_warning(model: Any, options: Any, group_size: int) -> str | None:
    """A note when groups of a model would be drawn greedily (identical members)."""
    if isinstance(model, str) and model.startswith(("openai:", "hf:")) and not options.temperature and group_size > 1:
        return (f"groups of {group_size} at temperature {options.temperature or 0} (greedy): the members will be near "
                "copies and the trainable rate near 0; pass --temperature (e.g. 1.0)")
    return None
