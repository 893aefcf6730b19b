"""How the base env (harness H0: bash + submit) reads one assistant message.

Two forms are understood: OpenAI-style ``tool_calls`` (``bash`` with ``{"command": ...}``, or
``submit``), and text with one fenced ```` ```bash ```` block (the command ``submit`` alone
submits). Anything else is a :class:`FormatError` whose message is shown to the model. The full
parser catalogue (Hermes, Qwen3-Coder XML, ...) lives in the harness wrappers; this is the floor.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_FENCE_MARK = re.compile(r"```([A-Za-z0-9_+-]*)")
SHELL_LANGS = ("", "bash", "sh", "shell", "console")


def fenced_blocks(text: str, langs: tuple[str, ...] = SHELL_LANGS) -> list[str]:
    """The bodies of the fenced blocks whose language is in ``langs``. Fences are paired in order
    (opener, closer, opener, ...), so the closing fence of a ```` ```python ```` block is never read
    as the opener of a shell block; an unclosed last block is ignored."""
    out: list[str] = []
    pos, opener = 0, None
    for m in _FENCE_MARK.finditer(text):
        if m.start() < pos:
            continue
        if opener is None:
            opener = m
            pos = m.end()
        else:
            lang = opener.group(1).lower()
            if lang in langs:
                out.append(text[opener.end():m.start()])
            opener = None
            pos = m.start() + 3
    return out


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    call_id: str | None = None
    """Set when the call came as an OpenAI ``tool_calls`` entry (the reply must echo it)."""


class FormatError(ValueError):
    """The message holds no usable call; ``str(err)`` is what the model is shown."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


H0_TOOLS = {
    "bash": {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run one bash command in the repository (a persistent shell: cd and export persist).",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    },
    "submit": {
        "type": "function",
        "function": {
            "name": "submit",
            "description": "Finish: your current changes to the repository are graded.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
}


def parse_h0_action(action: Any) -> ToolCall:
    """One assistant message -> exactly one bash/submit call, or FormatError."""
    if isinstance(action, dict):
        calls = action.get("tool_calls") or []
        if calls:
            if len(calls) > 1:
                raise FormatError("several_calls", f"Your message has {len(calls)} tool calls; send exactly one per turn.")
            return _from_openai(calls[0])
        action = action.get("content") or ""
    if not isinstance(action, str):
        raise FormatError("no_call", "Your message was empty. Reply with one ```bash``` block, or submit.")
    blocks = fenced_blocks(action)
    if not blocks:
        raise FormatError("no_call", "No command found. Reply with exactly one ```bash``` block "
                          "(or the command `submit` in one to finish).")
    if len(blocks) > 1:
        raise FormatError("several_calls", f"Your message has {len(blocks)} ```bash``` blocks; send exactly one per turn.")
    command = blocks[0].strip()
    if command == "submit":
        return ToolCall("submit", {})
    if not command:
        raise FormatError("bad_arguments", "The ```bash``` block is empty.")
    return ToolCall("bash", {"command": command})


def _from_openai(call: Any) -> ToolCall:
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise FormatError("bad_call", "A tool call lacks a function name.")
    name, raw = fn["name"], fn.get("arguments") or {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise FormatError("bad_json", f"The arguments of `{name}` are not valid JSON: {exc.msg} at position {exc.pos}.") from exc
    if not isinstance(raw, dict):
        raise FormatError("bad_arguments", f"The arguments of `{name}` must be a JSON object.")
    call_id = call.get("id")
    if name not in H0_TOOLS:
        raise FormatError("unknown_tool", f"Unknown tool `{name}`; available: {', '.join(H0_TOOLS)}.")
    if name == "bash":
        command = raw.get("command")
        if not isinstance(command, str) or not command.strip():
            raise FormatError("bad_arguments", "`bash` needs a non-empty string argument `command`.")
    return ToolCall(name, raw, call_id)
