"""Candidate validation before any comparison rollout: format, schema, smoke episode.

- format: the proposer's output parsed into a spec (a proposer without a candidate fails here);
- schema: ``HarnessSpec.validate``: the spec file's schema (``ha_envs/harness/schema.py``, printed by
  ``ha harness schema``: catalogue names, typed and ranged parameters and limits), then script
  tools' schemas and syntax, rule hooks' triggers, duplicates and required tools;
- smoke: the harness is built over a real sandbox on one task, and a scripted episode calls every
  tool the candidate adds once (arguments made from its schema) and submits. Every call is written
  in the candidate's own tool-call format (``parser.format``: native calls, Hermes ``<tool_call>``,
  Qwen3 XML, fenced bash), as a model on that harness would write it, so a text-format harness is
  smoke-tested through its parser. Each new tool must answer: a call its parser refuses (the
  format error is the reason), a script that cannot run (exit 126/127: not executable, a command
  not found) or times out, an infrastructure fault or a crash rejects. A non-zero exit otherwise is
  an answer (a test runner on an unfixed repository fails, as it should).

An invalid candidate is rejected with its reason and costs no comparison rollout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ha_envs import make
from ha_envs.actions import ToolCall
from ha_envs.harness import HarnessSpec, HarnessSpecError
from ha_envs.harness.tool_calls import render_call
from ha_envs.harness.spec import tool_of
from ha_envs.task import Task

BROKEN_EXIT = {124: "timed out", 126: "its script cannot be executed", 127: "a command it runs was not found"}
"""Exit codes of a script tool's smoke call that mean the tool itself is broken."""
_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")


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
            out[name] = {"integer": 1, "number": 1.0, "boolean": False, "array": [], "object": {}}.get(
                p.get("type"), "README.md" if "path" in name or "file" in name else "x")
    return out


def smoke_message(call: ToolCall, fmt: str, call_id: str) -> Any:
    """The assistant message that makes ``call`` in the harness's format ``fmt`` (the parser's own
    renderer, so what the smoke episode sends is what that parser reads)."""
    msg = render_call(ToolCall(call.name, call.arguments, call_id), fmt, call_id=call_id)
    return {k: v for k, v in msg.items() if k != "role"} if isinstance(msg, dict) else msg


def _answer_problem(name: str, obs: list[dict[str, Any]], script: bool) -> str | None:
    """Why the observation of ``name``'s smoke call is no answer (None: it answered)."""
    answers = [m for m in obs if m.get("source") == "tool" and m.get("name", name) == name]
    if not answers:
        refused = [m for m in obs if m.get("error_kind") or m.get("vetoed") == name]
        if refused:
            return f"the call of {name} was refused: {refused[0].get('content', '')[:300]}"
        return f"{name} gave no answer"
    code = _RETURNCODE.search(answers[0].get("content") or "")
    if script and code and int(code.group(1)) in BROKEN_EXIT:
        text = (answers[0].get("content") or "")[-300:]
        return f"{name} is broken: {BROKEN_EXIT[int(code.group(1))]} (exit {code.group(1)}): {text}"
    return None


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
    fmt = candidate.parser.format
    calls = [ToolCall(c.name, sample_arguments(tool_of(c)[0].parameters), f"smoke_{c.name}") for c in new]
    scripted = {c.name for c in new if c.define is not None}
    try:
        env = make(task=smoke_task, harness=candidate, sandbox=sandbox)
    except Exception as exc:  # noqa: BLE001 - the harness does not even build
        return ValidationResult(False, "smoke", f"the harness does not build: {type(exc).__name__}: {exc}")
    answered: list[str] = []
    ended = False
    try:
        env.reset()
        for call in calls:
            obs, _, term, trunc, info = env.step(smoke_message(call, fmt, call.call_id or "smoke"))
            if info.get("mask_sample"):
                return ValidationResult(False, "smoke", f"tool {call.name} broke the sandbox: {info.get('error', '')}")
            problem = _answer_problem(call.name, obs, call.name in scripted)
            if problem is not None:
                return ValidationResult(False, "smoke", problem, tuple(answered))
            answered.append(call.name)
            if term or trunc:
                ended = True
                break
        info = {}
        for _ in range(0 if ended else 3):  # a gate hook may refuse the first submissions
            obs, _, term, trunc, info = env.step(smoke_message(ToolCall("submit", {}), fmt, "smoke_submit"))
            if term or trunc:
                break
        if info.get("termination") not in ("submitted", None) and info.get("mask_sample"):
            return ValidationResult(False, "smoke", f"the smoke episode ended {info.get('termination')}: "
                                                    f"{info.get('error', '')}")
        if info.get("termination") == "format_errors":
            return ValidationResult(False, "smoke", f"the {fmt} parser refused the smoke episode's submit")
    except Exception as exc:  # noqa: BLE001 - any crash of the harness is a rejection with its reason
        return ValidationResult(False, "smoke", f"the smoke episode crashed: {type(exc).__name__}: {exc}")
    finally:
        env.close()
    missing = [c.name for c in new if c.name not in answered]
    if missing:
        return ValidationResult(False, "smoke", f"new tool(s) gave no answer: {', '.join(missing)}")
    return ValidationResult(True, "passed", f"smoke episode on {smoke_task.instance_id} in the {fmt} format; new "
                                            f"tools called: {', '.join(answered) or 'none'}", tuple(answered))
