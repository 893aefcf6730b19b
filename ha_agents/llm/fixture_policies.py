"""Fixture policies for the evolution tests and the CPU demonstration: deterministic, model-free,
registered beside ``oracle`` and ``null`` (``--model tool_user``, ``--model coin``; ``coin_prompt:P`` and
``tool_coin:P0,P1`` take their probabilities in the spec).

They are not models of an agent; each is built so that what evolution can change shows, or does
not show, in its outcomes:

- ``tool_user`` depends on the harness: where the harness offers ``run_tests`` it uses it: it
  applies the gold patch (through the harness's own tools, as ``oracle``), runs the tests and
  submits, and solves the task; where it does not, it looks at the work copy and gives up
  (submits unchanged). A candidate that adds the tool must raise its pass rate;
- ``coin`` ignores the harness: each episode it solves the task (as ``oracle``) or gives up on a
  fair coin. The coin is the episode's sampling seed (the first call's ``seed``), so with common
  seeds both sides of a comparison flip the same coins; without a seed it is a fresh draw;
- ``hasty`` is the fixture *target* of the harness engineer (Harness-R1): on a seeded coin
  (``p_careful`` = 0.2) it works carefully and solves the task (as ``oracle``); otherwise it looks
  at the work copy and submits at once. Two harness changes turn a hasty episode careful: a
  pre-action hook that stops its submit (a veto), or a post-feedback hook that shows it a test run
  it did not ask for (a forced run: ``[the harness ran: ...]``). Reminders (any other hook text,
  before a decision or after feedback) are ignored, so a patch at the wrong lifecycle point does
  not help;
- ``hasty_prompt`` is ``hasty`` whose coin is drawn from the sampling seed *and the prompt* (the
  first observation and the tools' schemas), as a seeded LLM's draw changes with its prompt: a
  harness change that only rewrites the prompt (a tool it never calls) leaves its success rate at
  ``p_careful`` but redraws every episode's coin. Against it a reward that reuses the run which
  selected the failures (seed for seed) pays a neutral patch;
- ``coin_prompt`` (``coin_prompt:P``, P = 0.5 by default) is the null of the evolution gate's
  end-to-end check (``benchmarks/bench_gate_e2e.py``): it solves the task (as ``oracle``) on heads
  of a coin of probability P, whatever the harness, with the coin drawn from the sampling seed
  *and the prompt* as ``hasty_prompt``'s: two harnesses that show it the same prompt flip the
  same coins on common seeds, two that show different prompts (a tool added) flip independent
  ones, so equivalent harnesses still differ by noise;
- ``tool_coin`` (``tool_coin:P0,P1``, 0.25 and 0.75 by default) is ``coin_prompt`` with a planted
  effect of known size: heads probability P0 where the harness lacks ``run_tests`` and P1 where it
  offers it (the rule proposer's first candidate on ``h0`` adds it).
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any, Callable

from ha_envs.actions import ToolCall
from ha_envs.harness.tool_calls import render_call
from ha_envs.task import Task


Solver = Callable[[Task, dict[str, Any]], list[ToolCall]]
"""The calls that solve a task under the harness ``info`` describes (``policies`` passes the oracle's plan)."""


class _Deciding:
    """A policy that picks its plan at its first step (when the sampling seed is known), then sends
    the plan's calls in the harness's format and keeps submitting."""

    name = "deciding"

    def __init__(self, solve: Solver) -> None:
        self.solve = solve
        self._task: Task | None = None
        self._info: dict[str, Any] = {}
        self._plan: list[ToolCall] | None = None
        self._n = 0

    def start(self, task: Task, info: dict[str, Any]) -> None:
        self._task, self._info, self._plan, self._n = task, info, None, 0

    def decide(self, task: Task, info: dict[str, Any], seed: int | None) -> list[ToolCall]:
        """The episode's calls (each fixture's rule); subclasses implement it."""
        raise NotImplementedError

    def rng(self, seed: int | None) -> random.Random:
        """The episode's coin source: the sampling seed (unseeded without one)."""
        return random.Random(seed) if seed is not None else random.Random()

    def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        assert self._task is not None, "start() comes first"
        if self._plan is None:
            self._plan = self.decide(self._task, self._info, info.get("sampling_seed"))
        call = self._plan.pop(0) if self._plan else ToolCall("submit", {})
        self._n += 1
        fmt = self._info.get("parser", "fenced_bash")
        if fmt == "fenced_bash" and call.name == "bash":
            return f"```bash\n{call.arguments['command']}\n```"
        return render_call(call, fmt, call_id=f"call_{self._n}")


def _names(info: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in info.get("tools") or []} or {"bash", "submit"}


def _give_up(info: dict[str, Any]) -> list[ToolCall]:
    look = [ToolCall("bash", {"command": "git status --short"})] if "bash" in _names(info) else []
    return look + [ToolCall("submit", {})]


class ToolUserPolicy(_Deciding):
    """Solves the task exactly when the harness offers ``tool`` (and uses it); else gives up."""

    name = "tool_user"
    tool = "run_tests"

    def decide(self, task: Task, info: dict[str, Any], seed: int | None) -> list[ToolCall]:
        if self.tool not in _names(info):
            return _give_up(info)
        plan = self.solve(task, info)  # the oracle's plan runs run_tests before submitting when offered
        return plan if any(c.name == self.tool for c in plan) else plan[:-1] + [ToolCall(self.tool, {}), plan[-1]]


class CoinPolicy(_Deciding):
    """Solves the task on heads of a fair coin drawn from the episode's sampling seed, whatever the
    harness; gives up on tails."""

    name = "coin"
    p_heads = 0.5

    def decide(self, task: Task, info: dict[str, Any], seed: int | None) -> list[ToolCall]:
        return self.solve(task, info) if self.rng(seed).random() < self.p_heads else _give_up(info)


FORCED_RUN = "[the harness ran: "
"""How a forced call's output starts (``ha_envs.harness.custom.RuleHook``)."""


class HastyPolicy(_Deciding):
    """Careful (solves) on a ``p_careful`` coin from the episode's sampling seed; else looks and
    submits at once, unless the harness stops the submit or shows a forced test run, after which it
    works as the careful episode does."""

    name = "hasty"
    p_careful = 0.2

    def start(self, task: Task, info: dict[str, Any]) -> None:
        super().start(task, info)
        self._careful = False
        self._submitted = False

    def decide(self, task: Task, info: dict[str, Any], seed: int | None) -> list[ToolCall]:
        self._careful = self.rng(seed).random() < self.p_careful
        return self.solve(task, info) if self._careful else _give_up(info)

    def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        if self._plan is not None and not self._careful:
            stopped = self._submitted  # called again after a submit: the harness refused it
            forced = any(str(m.get("source", "")).startswith("hook:") and FORCED_RUN in str(m.get("content", ""))
                         for m in observation)
            if stopped or forced:
                assert self._task is not None
                self._careful = True
                self._plan = self.solve(self._task, self._info)
        out = super().act(observation, info)
        self._submitted = not self._careful and not self._plan  # the hasty plan's last call is its submit
        return out


def prompt_digest(observation: list[dict[str, Any]], info: dict[str, Any]) -> str:
    """A digest of what a model sees first: the first observation's texts and the tools' schemas."""
    prompt = json.dumps([[str(m.get("content", "")) for m in observation], info.get("tools") or []],
                        sort_keys=True, default=str)
    return hashlib.sha256(prompt.encode()).hexdigest()[:16]


def probability(text: str, what: str) -> float:
    """``text`` as a probability in [0, 1], or a ValueError naming ``what``."""
    try:
        p = float(text)
    except ValueError:
        raise ValueError(f"{what}: {text!r} is not a number (a probability in [0, 1])") from None
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{what}: {p:g} is not a probability in [0, 1]")
    return p


class _PromptDrawn(_Deciding):
    """A fixture whose coin is drawn from (sampling seed, a digest of the prompt: the first
    observation's texts and the tools' schemas), so two harnesses that show it different prompts
    flip independent coins on one seed."""

    _prompt = ""

    def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        if self._plan is None:
            self._prompt = prompt_digest(observation, self._info)
        return super().act(observation, info)

    def rng(self, seed: int | None) -> random.Random:
        return random.Random(f"{seed}/{self._prompt}") if seed is not None else random.Random()


class PromptCoinPolicy(_PromptDrawn):
    """Solves the task on heads of a coin of probability ``p`` drawn from (sampling seed, a digest of
    the prompt), whatever the harness; gives up on tails."""

    name = "coin_prompt"

    def __init__(self, solve: Solver, p: float = 0.5) -> None:
        super().__init__(solve)
        self.p = probability(str(p), "coin_prompt's heads probability")

    def heads(self, info: dict[str, Any]) -> float:
        """The heads probability under the harness ``info`` describes (here: ``p`` under any)."""
        return self.p

    def decide(self, task: Task, info: dict[str, Any], seed: int | None) -> list[ToolCall]:
        return self.solve(task, info) if self.rng(seed).random() < self.heads(info) else _give_up(info)


class PlantedCoinPolicy(PromptCoinPolicy):
    """``coin_prompt`` whose heads probability is ``p_without`` where the harness lacks ``tool`` and
    ``p_with`` where it offers it: a planted effect of ``p_with - p_without``."""

    name = "tool_coin"
    tool = "run_tests"

    def __init__(self, solve: Solver, p_without: float = 0.25, p_with: float = 0.75) -> None:
        super().__init__(solve, p_without)
        self.p_with = probability(str(p_with), "tool_coin's heads probability with run_tests")

    def heads(self, info: dict[str, Any]) -> float:
        return self.p_with if self.tool in _names(info) else self.p


class PromptHastyPolicy(_PromptDrawn, HastyPolicy):
    """``hasty`` with the careful coin drawn from (sampling seed, a digest of the prompt)."""

    name = "hasty_prompt"
