"""Scripted policies: deterministic, model-free, used by ``ha eval`` and the tests.

A policy sees what a model would (the observation deltas and info) and returns one assistant
message in the harness's own format (``info["parser"]``, ``info["tools"]``). ``oracle`` reaches the
gold patch through the harness's own tools: ``edit_file`` / ``create_file`` (or the OpenHands-style
``str_replace_editor``) where the harness has them, a bash here-document and ``git apply`` where it
has only bash; it runs ``run_tests`` when the harness offers it, then submits (again, if a hook
refused the first submission). ``null`` submits at once. The fixtures ``tool_user`` (solves
only where the harness offers ``run_tests``) and ``coin`` (a fair coin per episode, whatever the
harness), ``coin_prompt`` and ``tool_coin`` (the evolution gate's end-to-end null and planted effect)
are in ``fixture_policies``.
"""

from __future__ import annotations

import secrets
from typing import Any, Callable, Protocol

from ha_envs.actions import ToolCall
from ha_envs.harness.tool_calls import render_call
from ha_envs.sandbox.provision.workcopy import prepare_snapshot
from ha_envs.task import Task

from .patch_edits import PatchEditError, patch_to_edits
from .fixture_policies import (CoinPolicy, HastyPolicy, PlantedCoinPolicy, PromptCoinPolicy, PromptHastyPolicy,
                               ToolUserPolicy)


class Policy(Protocol):
    name: str

    def start(self, task: Task, info: dict[str, Any]) -> None:
        """Called after reset with the episode's task."""

    def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        """One assistant message for the next step."""


def bash(command: str) -> str:
    return f"```bash\n{command}\n```"


def _tool_names(info: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in info.get("tools") or []}


class ScriptedPolicy:
    """Sends a fixed list of tool calls in the harness's format, then keeps submitting."""

    name = "scripted"

    def __init__(self, calls: list[ToolCall] | None = None) -> None:
        self.calls = list(calls or [])
        self._plan: list[ToolCall] = []
        self._fmt = "fenced_bash"
        self._n = 0

    def start(self, task: Task, info: dict[str, Any]) -> None:
        self._fmt = info.get("parser", "fenced_bash")
        self._plan = self.plan(task, info)
        self._n = 0

    def plan(self, task: Task, info: dict[str, Any]) -> list[ToolCall]:
        return list(self.calls)

    def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        call = self._plan.pop(0) if self._plan else ToolCall("submit", {})
        self._n += 1
        if call.name == "bash" and "command" in call.arguments and self._fmt == "fenced_bash":
            return bash(call.arguments["command"])
        return render_call(call, self._fmt, call_id=f"call_{self._n}")


class NullPolicy(ScriptedPolicy):
    name = "null"


class OraclePolicy(ScriptedPolicy):
    """Applies the gold patch through the harness's tools, tests when it can, and submits."""

    name = "oracle"

    def __init__(self, read_base: Callable[[Task, str], str] | None = None) -> None:
        super().__init__()
        self.read_base = read_base or _read_from_snapshot

    def plan(self, task: Task, info: dict[str, Any]) -> list[ToolCall]:
        if not task.gold_patch.strip():
            raise ValueError(f"task {task.instance_id} has no gold patch")
        steps = (task.metadata.get("harbor") or {}).get("oracle_steps")
        if steps:
            return _steps_plan(steps)
        names = _tool_names(info) or {"bash", "submit"}
        editor = "edit_file" if "edit_file" in names else (
            "str_replace_editor" if "str_replace_editor" in names else None)
        calls: list[ToolCall] = []
        edits = None
        if editor is not None:
            try:
                edits = patch_to_edits(task.gold_patch, lambda path: self.read_base(task, path))
            except PatchEditError:
                edits = None  # binary or exotic hunks: fall back to git apply through bash
            if editor == "edit_file" and edits and "create_file" not in names and any(e.kind == "create" for e in edits):
                edits = None  # a new file and no create_file: the whole patch through bash
        if edits is not None:
            for e in edits:
                if e.kind == "delete":
                    if "bash" not in names:
                        raise ValueError(f"the gold patch of {task.instance_id} deletes {e.path} and the harness has no bash")
                    calls.append(ToolCall("bash", {"command": f"rm -f -- '{e.path}'"}))
                elif editor == "edit_file":
                    calls.append(ToolCall("create_file", {"path": e.path, "content": e.new, "overwrite": True})
                                 if e.kind == "create" else ToolCall("edit_file", {"path": e.path, "old_str": e.old, "new_str": e.new}))
                else:
                    calls.append(ToolCall("str_replace_editor", {"command": "create", "path": e.path, "file_text": e.new})
                                 if e.kind == "create" else
                                 ToolCall("str_replace_editor", {"command": "str_replace", "path": e.path,
                                                                 "old_str": e.old, "new_str": e.new}))
        else:
            if "bash" not in names:
                raise ValueError(f"the harness has neither edit tools nor bash to apply {task.instance_id}'s gold patch")
            patch = task.gold_patch if task.gold_patch.endswith("\n") else task.gold_patch + "\n"
            tag = f"HA_PATCH_{secrets.token_hex(6)}"
            calls += [ToolCall("bash", {"command": f"cat > /tmp/gold.patch <<'{tag}'\n{patch}{tag}"}),
                      ToolCall("bash", {"command": "git apply --whitespace=nowarn /tmp/gold.patch && git status --short"})]
        if "run_tests" in names:
            calls.append(ToolCall("run_tests", {}))
        calls.append(ToolCall("submit", {}))
        return calls


def _steps_plan(patches: list[str]) -> list[ToolCall]:
    """A multi-step Harbor task's oracle (``ha_envs/harbor/oracle.py``): at each step the work copy
    is put back to the base and this step's diff (made from the base, the files staged for the steps
    so far included) applied, and it submits."""
    calls: list[ToolCall] = []
    for patch in patches:
        tag = f"HA_PATCH_{secrets.token_hex(6)}"
        body = patch if patch.endswith("\n") or not patch else patch + "\n"
        apply = "git apply --whitespace=nowarn /tmp/gold.patch && " if patch.strip() else ""
        calls += [ToolCall("bash", {"command": f"cat > /tmp/gold.patch <<'{tag}'\n{body}{tag}"}),
                  ToolCall("bash", {"command": f"git reset -q --hard && git clean -qfd && {apply}git status --short"}),
                  ToolCall("submit", {})]
    return calls


def _read_from_snapshot(task: Task, path: str) -> str:
    snap = prepare_snapshot(task)
    return (snap.path / path).read_bytes().decode("utf-8", "surrogateescape")


def _oracle_plan(task: Task, info: dict[str, Any]) -> list[ToolCall]:
    return OraclePolicy().plan(task, info)


POLICIES: dict[str, Callable[[], Policy]] = {
    "oracle": OraclePolicy, "null": NullPolicy,
    "tool_user": lambda: ToolUserPolicy(_oracle_plan), "coin": lambda: CoinPolicy(_oracle_plan),
    "hasty": lambda: HastyPolicy(_oracle_plan), "hasty_prompt": lambda: PromptHastyPolicy(_oracle_plan),
    "coin_prompt": lambda: PromptCoinPolicy(_oracle_plan), "tool_coin": lambda: PlantedCoinPolicy(_oracle_plan)}
"""Policy factories by name (``--model NAME``)."""


def coin_prompt(arg: str) -> Policy:
    """``--model coin_prompt:P``: the harness-blind coin with heads probability P."""
    return PromptCoinPolicy(_oracle_plan, float(_probabilities("coin_prompt", arg, 1)[0]))


def tool_coin(arg: str) -> Policy:
    """``--model tool_coin:P0,P1``: heads P0 without ``run_tests``, P1 with it."""
    p0, p1 = _probabilities("tool_coin", arg, 2)
    return PlantedCoinPolicy(_oracle_plan, p0, p1)


def _probabilities(kind: str, arg: str, n: int) -> list[float]:
    from .fixture_policies import probability

    parts = [x.strip() for x in arg.split(",")] if arg.strip() else []
    if len(parts) != n:
        shape = "P" if n == 1 else ",".join(f"P{i}" for i in range(n))
        raise ValueError(f"{kind}:{arg}: expected {kind}:{shape} ({n} probability(ies) in [0, 1], comma-separated)")
    return [probability(x, f"{kind}:{arg}") for x in parts]


PARAMETRIC: dict[str, Callable[[str], Policy]] = {"coin_prompt": coin_prompt, "tool_coin": tool_coin}
"""Fixture policies that take parameters in the spec (``--model NAME:ARGS``)."""


def make_policy(name: str) -> Policy:
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; available: {', '.join(POLICIES)}") from None
