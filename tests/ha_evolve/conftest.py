"""Test fixtures for evolution: harness-sensitive scripted policies and a fixed proposer.

The policies are deliberately artificial: their success depends only on which tools the harness
offers and on the sample's index within its group, so each test knows exactly what the rates of
each side must be."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from ha_agents.llm.policies import POLICIES, OraclePolicy, ScriptedPolicy
from ha_envs.actions import ToolCall
from ha_envs.harness import HarnessSpec
from ha_evolve.proposers import Proposal

TASKS = ("mini__invoice_rounding", "mini__semver_ranges")


class ToolSensitive(ScriptedPolicy):
    """Solves sample k of task t's group iff k is in ``wins[(t, has_tool)]`` (k counts 1.. per
    task and tool set, so a side of G samples sees each k once)."""

    name = "tool_sensitive"
    tool = "run_tests"
    wins: dict[tuple[str, bool], set[int]] = {}
    group = 2
    _counts: dict[tuple, int] = {}
    _lock = threading.Lock()

    def plan(self, task, info):
        names = {t["function"]["name"] for t in info.get("tools") or []}
        key = (task.instance_id, tuple(sorted(names)))
        with self._lock:
            k = self._counts[key] = self._counts.get(key, 0) + 1
        k = (k - 1) % self.group + 1
        if k in self.wins.get((task.instance_id, self.tool in names), set()):
            return OraclePolicy().plan(task, info)
        return [ToolCall("submit", {})]


@pytest.fixture
def sensitive():
    """Register the policy under its name (``collect`` takes model specs by name) with a clean count."""
    ToolSensitive._counts = {}
    POLICIES["tool_sensitive"] = ToolSensitive
    yield ToolSensitive
    POLICIES.pop("tool_sensitive", None)


@dataclass
class FixedProposer:
    """Proposes one given candidate (or nothing), as a teacher would."""

    candidate: HarnessSpec | None
    name: str = "fixed"
    error: str = ""

    def propose(self, current, records, tried):
        from ha_evolve.schedule import spec_hash

        if self.candidate is None or spec_hash(self.candidate) in tried:
            return Proposal(self.name, None, "", self.error or "nothing to propose", exhausted=not self.error)
        return Proposal(self.name, self.candidate, f"test: {len(records)} preparation trajectories read")
