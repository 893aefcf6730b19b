"""Every command family registers itself the same way, and every command it adds runs something."""

from __future__ import annotations

import argparse
from pathlib import Path

import ha_cli
from ha_cli.main import COMMANDS, build_parser


def test_every_command_module_registers_through_register_and_each_command_has_a_function():
    modules = sorted(p.stem for p in Path(ha_cli.__file__).parent.glob("*_cmd.py"))
    assert sorted(m.__name__.rpartition(".")[2] for m in COMMANDS) == modules
    assert all(callable(getattr(m, "register", None)) for m in COMMANDS)
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    without = []
    for name, p in sub.choices.items():
        nested = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        leaves = nested[0].choices.items() if nested else [(name, p)]
        without += [f"{name} {leaf}".strip() for leaf, q in leaves if not callable(q.get_default("func"))]
    assert without == []
    assert {"train", "eval", "evolve", "engineer", "tasks", "harness", "images"} <= set(sub.choices)
