"""Helpers for driving a harness-wrapped env with structured calls."""

from __future__ import annotations

from typing import Any

import pytest

import ha_envs
from ha_envs.actions import ToolCall
from ha_envs.harness import HarnessSpec, render_call
from ha_envs.harness.spec import Component, ParserSpec

ALL_TOOLS = ("bash", "read_file", "edit_file", "create_file", "insert_lines", "undo_edit", "search", "find_files",
             "view_diff", "restore_file", "run_check", "run_tests", "think", "str_replace_editor", "submit")


def spec_with(tools=ALL_TOOLS, hooks=(), **kw: Any) -> HarnessSpec:
    def comp(x):
        return x if isinstance(x, Component) else Component(x[0], x[1]) if isinstance(x, tuple) else Component(x)
    if isinstance(kw.get("parser"), dict):
        kw["parser"] = ParserSpec(**kw["parser"])
    return HarnessSpec(name=kw.pop("name", "test"), tools=tuple(comp(t) for t in tools),
                       hooks=tuple(comp(h) for h in hooks), **kw)


class Driver:
    """Sends one call per step (OpenAI form) and returns the observation."""

    def __init__(self, env) -> None:
        self.env = env
        self.n = 0
        self.obs, self.info = env.reset()
        self.done = False
        self.reward = 0.0

    def __call__(self, name: str, **args: Any) -> list[dict[str, Any]]:
        self.n += 1
        obs, self.reward, term, trunc, self.info = self.env.step(render_call(ToolCall(name, args), "openai", f"c{self.n}"))
        self.done = term or trunc
        self.obs = obs
        return obs

    def text(self, name: str, **args: Any) -> str:
        obs = self(name, **args)
        return "\n".join(m["content"] for m in obs if m["source"] == "tool")

    def hook_texts(self, hook: str) -> list[str]:
        return [m["content"] for m in self.obs if m["source"] == f"hook:{hook}"]


@pytest.fixture
def drive(tiny_task):
    envs = []

    def make(spec: Any = None, task=None, **kw: Any) -> Driver:
        env = ha_envs.make(task=task or tiny_task, harness=spec or spec_with(), **kw)
        envs.append(env)
        return Driver(env)

    yield make
    for e in envs:
        e.close()
