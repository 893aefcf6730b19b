"""Candidate validation before any comparison rollout: format, schema, smoke episode.

- format: the proposer's output parsed into a spec (a proposer without a candidate fails here);
- schema: ``HarnessSpec.validate``: the spec file's schema (``ha_envs/harness/schema.py``, printed by
  ``ha harness schema``: catalogue names, typed and ranged parameters and limits), then script
  tools' schemas and syntax, rule hooks' triggers, duplicates and required tools;
- smoke: the harness is built over a real sandbox on one task, and a scripted episode calls every
  tool the candidate adds once (arguments made from its schema) and submits. The episode must end
  ``submitted`` with an answer from each new tool; an infrastructure fault or a crash rejects.

An invalid candidate is rejected with its reason and costs no comparison rollout.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ha_envs import make
from ha_envs.harness import HarnessSpec, HarnessSpecError
from ha_envs.harness.spec import tool_of
from ha_envs.task import Task


@dataclass(frozen=True)
class ValidationResult:
    ok: bool
    stage: str
    """``format``, ``schema``, ``smoke`` (where it failed), or ``passed``."""
    reason: str
    smoke_tools: tuple[str, ...] = ()
    """The new tools the smoke episode called."""


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Plausible arguments from a tool's JSON schema: its default or first enum value, else a
    harmless value of the type (``README.md`` for strings that look like paths)."""
    out: dict[str, Any] = {}
    props = schema.get("properties", {})
    for name in schema.get("required", list(props)):
        p = props.get(name, {})
        if "default" in p:
            out[name] = p["default"]
        elif p.get("enum"):
            out[name] = p["enum"][0]
        else:
            out[name] = {"integer": 1, "number": 1.0, "boolean": False}.get(
                p.get("type"), "README.md" if "path" in name or "file" in name else "x")
    return out


def validate_candidate(candidate: HarnessSpec | None, parent: HarnessSpec, smoke_task: Task | None,
                       sandbox: str = "local", error: str = "") -> ValidationResult:
    if candidate is None:
        return ValidationResult(False, "format", error or "the proposer gave no candidate")
    try:
        candidate.validate()
    except HarnessSpecError as exc:
        return ValidationResult(False, "schema", str(exc))
    if smoke_task is None:
        return ValidationResult(True, "passed", "format and schema (no smoke task given)")
    new = [c for c in candidate.tools if c.name not in parent.tool_names and c.name != "submit"]
    calls = []
    for c in new:
        tool, _ = tool_of(c)
        calls.append({"id": f"smoke_{c.name}", "type": "function",
                      "function": {"name": c.name, "arguments": json.dumps(sample_arguments(tool.parameters))}})
    submit = {"id": "smoke_submit", "type": "function", "function": {"name": "submit", "arguments": "{}"}}
    try:
        env = make(task=smoke_task, harness=candidate, sandbox=sandbox)
    except Exception as exc:  # noqa: BLE001 - the harness does not even build
        return ValidationResult(False, "smoke", f"the harness does not build: {type(exc).__name__}: {exc}")
    answered: list[str] = []
    try:
        env.reset()
        for call in calls:
            obs, _, term, trunc, info = env.step({"content": "", "tool_calls": [call]})
            if info.get("mask_sample"):
                return ValidationResult(False, "smoke", f"tool {call['function']['name']} broke the sandbox: "
                                                        f"{info.get('error', '')}")
            if any(m.get("source") == "tool" for m in obs):
                answered.append(call["function"]["name"])
            if term or trunc:
                break
        info = {}
        for _ in range(3):  # a gate hook may refuse the first submissions
            obs, _, term, trunc, info = env.step({"content": "", "tool_calls": [submit]})
            if term or trunc:
                break
        if info.get("termination") not in ("submitted", None) and info.get("mask_sample"):
            return ValidationResult(False, "smoke", f"the smoke episode ended {info.get('termination')}: "
                                                    f"{info.get('error', '')}")
    except Exception as exc:  # noqa: BLE001 - any crash of the harness is a rejection with its reason
        return ValidationResult(False, "smoke", f"the smoke episode crashed: {type(exc).__name__}: {exc}")
    finally:
        env.close()
    missing = [c.name for c in new if c.name not in answered]
    if missing:
        return ValidationResult(False, "smoke", f"new tool(s) gave no answer: {', '.join(missing)}")
    return ValidationResult(True, "passed", f"smoke episode on {smoke_task.instance_id}; new tools called: "
                                            f"{', '.join(answered) or 'none'}", tuple(answered))
