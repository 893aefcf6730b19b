"""What the preparation trajectories say about the harness: statistics that recur across tasks, and
a text digest of each trajectory that fits a teacher's token budget.

Both read trajectory records (the lines of ``trajectories.jsonl``), never the sandbox.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from statistics import mean
from typing import Any, Iterable

from ha_agents.records.episode_record import classify

LONG_OUTPUT_CHARS = 4000
_UNKNOWN_TOOL = re.compile(r"There is no tool `([^`]{1,80})`")  # the UnknownTool format error's text


@dataclass(frozen=True)
class TrajectoryStats:
    """Rates over the trajectories of one harness (each a share of trajectories unless named
    ``per_traj``)."""

    n: int
    pass_rate: float
    truncated: float
    format_errors_per_traj: float
    tool_errors_per_traj: float
    test_runs_per_traj: float
    untested_submits: float
    """Submitted without any test run after the last edit."""
    long_outputs_per_traj: float
    """Tool answers longer than LONG_OUTPUT_CHARS."""
    repeated_actions_per_traj: float
    """The same action sent twice in a row."""
    never_edited: float
    masked: float
    hook_firings: dict[str, int]
    tool_use: dict[str, int]
    unknown_tools: dict[str, int] = field(default_factory=dict)
    """Calls to a tool the harness does not offer, by the name the policy wrote (format errors of
    kind ``unknown_tool``): a policy that expects a tool the harness lacks."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _actions(rec: dict[str, Any]) -> list[str]:
    return [str(m.get("content", "")) + str(m.get("tool_calls", "")) for m in rec.get("messages", [])
            if m.get("role") == "assistant"]


def trajectory_stats(records: Iterable[dict[str, Any]]) -> TrajectoryStats:
    recs = list(records)
    n = len(recs)
    if n == 0:
        return TrajectoryStats(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, {}, {}, {})
    hooks: dict[str, int] = {}
    tools: dict[str, int] = {}
    unknown: dict[str, int] = {}
    for r in recs:
        for name, fired in (r.get("hooks") or {}).items():
            hooks[name] = hooks.get(name, 0) + int(fired.get("count", 0))
        for name, count in (r.get("tool_counts") or {}).items():
            tools[name] = tools.get(name, 0) + int(count)
        for m in r.get("messages", []):
            if m.get("error_kind") == "unknown_tool":
                hit = _UNKNOWN_TOOL.search(str(m.get("content", "")))
                if hit:
                    unknown[hit.group(1)] = unknown.get(hit.group(1), 0) + 1

    def untested(r: dict[str, Any]) -> bool:
        if r.get("termination") not in ("submitted", "verdict_tampered"):
            return False
        delivery = r.get("delivery") or {}
        if "tested_after_last_edit" in delivery:
            return not delivery["tested_after_last_edit"]
        return int(r.get("test_runs", 0)) == 0

    def repeats(r: dict[str, Any]) -> int:
        acts = _actions(r)
        return sum(1 for a, b in zip(acts, acts[1:]) if a == b)

    def long_outputs(r: dict[str, Any]) -> int:
        return sum(1 for m in r.get("messages", []) if m.get("source") == "tool"
                   and len(str(m.get("content", ""))) > LONG_OUTPUT_CHARS)

    def tool_errors(r: dict[str, Any]) -> int:
        return sum(1 for m in r.get("messages", []) if m.get("source") == "tool" and m.get("error"))

    return TrajectoryStats(
        n=n,
        pass_rate=mean(float(bool(r.get("resolved"))) for r in recs),
        truncated=mean(float(classify(r).truncated) for r in recs),
        format_errors_per_traj=mean(float((r.get("tool_counts") or {}).get("format_error", 0)) for r in recs),
        tool_errors_per_traj=mean(float(tool_errors(r)) for r in recs),
        test_runs_per_traj=mean(float(r.get("test_runs", 0)) for r in recs),
        untested_submits=mean(float(untested(r)) for r in recs),
        long_outputs_per_traj=mean(float(long_outputs(r)) for r in recs),
        repeated_actions_per_traj=mean(float(repeats(r)) for r in recs),
        never_edited=mean(float(int(r.get("edits", 0)) == 0 and not (r.get("patch") or "").strip()) for r in recs),
        masked=mean(float(classify(r).masked) for r in recs),
        hook_firings=hooks, tool_use=tools, unknown_tools=unknown,
    )


def digest(rec: dict[str, Any], max_chars: int = 1500) -> str:
    """One trajectory in a few lines: outcome, how it ended, what it used, its last actions."""
    outcome = "resolved" if rec.get("resolved") else ("masked" if classify(rec).masked else "failed")
    head = (f"- {rec.get('instance_id')} #{rec.get('run', 1)}: {outcome}, ended {rec.get('termination')}, "
            f"{rec.get('turns', 0)} turns, {rec.get('test_runs', 0)} test runs, {rec.get('edits', 0)} edits; "
            f"tools {dict(sorted((rec.get('tool_counts') or {}).items()))}")
    fired = {k: v.get("count", 0) for k, v in (rec.get("hooks") or {}).items()}
    if fired:
        head += f"; hooks fired {fired}"
    lines = [head]
    for act in _actions(rec)[-4:]:
        lines.append("    action: " + " ".join(act.split())[:200])
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[:max_chars - 3] + "..."


def digest_all(records: Iterable[dict[str, Any]], budget_chars: int = 24000) -> str:
    """Digests of every trajectory, shortened evenly to fit ``budget_chars`` (about 4 characters a
    token), failures first (they say most about what to fix)."""
    recs = sorted(records, key=lambda r: (bool(r.get("resolved")), str(r.get("instance_id")), r.get("run", 0)))
    if not recs:
        return "(no trajectories)"
    per = max(200, budget_chars // len(recs))
    out: list[str] = []
    used = 0
    for r in recs:
        d = digest(r, per)
        if used + len(d) > budget_chars:
            out.append(f"... {len(recs) - len(out)} more trajectories left out (budget)")
            break
        out.append(d)
        used += len(d) + 1
    return "\n".join(out)
