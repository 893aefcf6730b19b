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


def model_options(args: argparse.Namespace, temperature: str | None = "temperature", top_p: str | None = "top_p",
                  max_tokens: str | None = "max_tokens") -> Any:
    """The ``ModelOptions`` of every model flag the command has (``--temperature``, ``--top-p``,
    ``--max-tokens``, ``--model-kwargs``, ``--api-key-env``, ``--max-attempts``, ``--backoff-max``);
    one function for every command that takes a model. ``temperature``, ``top_p``, ``max_tokens``:
    the attributes holding them for this model, None where the command's flag is another model's
    (``ha engineer``: ``--temperature`` and ``--top-p`` are the target's, ``--engineer-temperature``
    the engineer's, ``--max-tokens`` the engineer's trainer's; ``ha train``: ``--temperature`` is the
    trainer's sampling)."""
    from ha_agents.llm.options import ModelOptions, load_model_kwargs

    temp = getattr(args, temperature, None) if temperature else None
    nucleus = getattr(args, top_p, None) if top_p else None
    if temp is not None and temp < 0:
        raise ValueError(f"--{temperature.replace('_', '-')} {temp}: must be at least 0")
    if nucleus is not None and not 0 < nucleus <= 1:
        raise ValueError(f"--{top_p.replace('_', '-')} {nucleus}: must be in (0, 1]")
    kwargs = getattr(args, "model_kwargs", None)
    fields = {"max_tokens": getattr(args, max_tokens, None) if max_tokens else None,
              "extra": load_model_kwargs(kwargs) if kwargs else {},
              "api_key_env": getattr(args, "api_key_env", None), "max_attempts": getattr(args, "max_attempts", None),
              "backoff_max_s": getattr(args, "backoff_max", None)}
    return ModelOptions(temperature=temp, top_p=nucleus, **{k: v for k, v in fields.items() if v is not None})


def greedy_warning(model: Any, options: Any, group_size: int) -> str | None:
    """A note when groups of a model would be drawn greedily (identical members)."""
    if isinstance(model, str) and model.startswith(("openai:", "hf:")) and not options.temperature and group_size > 1:
        return (f"groups of {group_size} at temperature {options.temperature or 0} (greedy): the members will be near "
                "copies and the trainable rate near 0; pass --temperature (e.g. 1.0)")
    return None
