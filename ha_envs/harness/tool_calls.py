"""Tool-call parsers: one assistant message -> structured calls, or one typed error.

Formats: ``openai`` (``tool_calls`` dicts), ``hermes`` (``<tool_call>{"name", "arguments"}</tool_call>``),
``qwen3_xml`` (``<function=NAME><parameter=K>V</parameter></function>``, as Qwen3-Coder emits),
``fenced_bash`` (one ```` ```bash ```` block; ``submit`` alone submits) and ``auto`` (the first of
those the message uses, in that order).

The policy for bad calls is fixed and deterministic; every failure is a :class:`FormatError`
subclass whose text (from its template) is what the model sees:

- no call -> :class:`NoToolCall`; a call without a name or an unclosed tag -> :class:`MalformedCall`;
- several calls -> depends on ``multi_call``: ``reject`` (:class:`MultipleToolCalls`, the default),
  ``first`` (run the first, tell the model the rest were ignored) or ``all`` (run them in order);
- unknown tool -> :class:`UnknownTool`; arguments that are not JSON -> :class:`InvalidJSON`;
- a missing, unknown or wrongly typed argument -> :class:`InvalidArguments`. A string that reads
  exactly as the declared type (``"12"`` for an integer, ``"true"``, a JSON array) is converted,
  since XML-style formats carry only strings;
- any failure in a message the server cut at the token limit (``finish_reason == "length"``) ->
  :class:`TruncatedCall`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from ..actions import FormatError, ToolCall

PARSERS = ("auto", "openai", "hermes", "qwen3_xml", "fenced_bash")
MULTI_CALL = ("reject", "first", "all")


class NoToolCall(FormatError):
    kind = "no_call"
    template = "Your message contains no tool call. {hint}"


class MalformedCall(FormatError):
    kind = "bad_call"
    template = "A tool call in your message is malformed: {detail}. {hint}"


class MultipleToolCalls(FormatError):
    kind = "several_calls"
    template = "Your message has {count} tool calls; this harness runs exactly one per turn. Send one."


class UnknownTool(FormatError):
    kind = "unknown_tool"
    template = "There is no tool `{name}`. Available tools: {available}."


class InvalidJSON(FormatError):
    kind = "bad_json"
    template = "The arguments of `{name}` are not valid JSON ({detail}). Send a JSON object."


class InvalidArguments(FormatError):
    kind = "bad_arguments"
    template = "Bad arguments for `{name}`: {detail}."


class TruncatedCall(FormatError):
    kind = "truncated"
    template = ("Your reply was cut at the output-token limit before its tool call was complete. "
                "Be brief: send a shorter reply with one complete call.")


def make_error(cls: type[FormatError], **fields: Any) -> FormatError:
    return cls(cls.kind, cls.template.format(**fields))


@dataclass(frozen=True)
class Parsed:
    calls: list[ToolCall]
    note: str = ""
    """Said to the model alongside the results (e.g. that extra calls were ignored)."""


class ToolCallParser:
    def __init__(self, fmt: str = "auto", multi_call: str = "reject") -> None:
        if fmt not in PARSERS:
            raise ValueError(f"unknown parser {fmt!r}; available: {', '.join(PARSERS)}")
        if multi_call not in MULTI_CALL:
            raise ValueError(f"unknown multi_call policy {multi_call!r}; choose from {', '.join(MULTI_CALL)}")
        self.fmt = fmt
        self.multi_call = multi_call

    def parse(self, action: Any, tools: Mapping[str, Mapping[str, Any]]) -> Parsed:
        """``tools`` maps tool names to their JSON schema (``parameters``). Raises FormatError only."""
        cut = isinstance(action, dict) and (action.get("finish_reason") == "length" or action.get("truncated") is True)
        try:
            return self._parse(action, tools)
        except FormatError:
            if cut:
                raise make_error(TruncatedCall) from None
            raise

    def _parse(self, action: Any, tools: Mapping[str, Mapping[str, Any]]) -> Parsed:
        hint = self.hint(tools)
        raw_calls = None
        text = action
        if isinstance(action, dict):
            raw_calls = action.get("tool_calls")
            text = action.get("content")
            if text is not None and not isinstance(text, str):
                raise make_error(MalformedCall, detail="the message content is not text", hint=hint)
        elif not isinstance(action, str):
            raise make_error(NoToolCall, hint=hint)
        text = text or ""
        fmt = self.fmt
        if fmt == "auto":
            if raw_calls:
                fmt = "openai"
            elif _FUNCTION.search(text) or ("<function=" in text and not _has_fence(text)):
                fmt = "qwen3_xml"  # a complete tag; a bare "<function=" in prose beside a bash block is prose
            elif "<tool_call>" in text:
                fmt = "hermes"
            else:
                fmt = "fenced_bash"
        if fmt == "openai":
            found = _openai(raw_calls, hint)
        elif fmt == "hermes":
            found = _hermes(text, hint)
        elif fmt == "qwen3_xml":
            found = _qwen_xml(text, hint)
        else:
            found = _fenced(text, hint)
        if not found:
            raise make_error(NoToolCall, hint=hint)
        note = ""
        if len(found) > 1:
            if self.multi_call == "reject":
                raise make_error(MultipleToolCalls, count=len(found))
            if self.multi_call == "first":
                note = f"Your message had {len(found)} tool calls; only the first was run."
                found = found[:1]
        calls = [ToolCall(name, _check(name, args, tools), call_id) for name, args, call_id in found]
        return Parsed(calls, note)

    def hint(self, tools: Mapping[str, Any]) -> str:
        names = ", ".join(tools)
        if self.fmt == "fenced_bash":
            return "Reply with exactly one ```bash``` block (the command `submit` alone finishes)."
        if self.fmt == "hermes":
            return f'Call a tool as <tool_call>{{"name": ..., "arguments": {{...}}}}</tool_call>; tools: {names}.'
        if self.fmt == "qwen3_xml":
            return f"Call a tool as <function=NAME><parameter=ARG>value</parameter></function>; tools: {names}."
        return f"Call exactly one tool ({names})."


def _json(raw: str, name: str) -> Any:
    try:
        return json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise make_error(InvalidJSON, name=name, detail=f"{exc.msg} at position {exc.pos}") from None
    except RecursionError:
        raise make_error(InvalidJSON, name=name, detail="nested too deeply") from None


def _openai(raw_calls: Any, hint: str) -> list[tuple[str, Any, str | None]]:
    if not raw_calls:
        return []
    if not isinstance(raw_calls, (list, tuple)):
        raise make_error(MalformedCall, detail="`tool_calls` is not a list", hint=hint)
    out = []
    for call in raw_calls:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise make_error(MalformedCall, detail="a tool call lacks a function name", hint=hint)
        args = fn.get("arguments")
        if args is None:
            args = {}
        if isinstance(args, str):
            args = _json(args, fn["name"])
        call_id = call.get("id")
        out.append((fn["name"], args, call_id if isinstance(call_id, str) else None))
    return out


_HERMES = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def _hermes(text: str, hint: str) -> list[tuple[str, Any, str | None]]:
    bodies = _HERMES.findall(text)
    if text.count("<tool_call>") > len(bodies):
        raise make_error(MalformedCall, detail="a <tool_call> tag is not closed", hint=hint)
    out = []
    for body in bodies:
        obj = _json(body, "tool_call")
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
            raise make_error(MalformedCall, detail='the <tool_call> body needs "name" and "arguments"', hint=hint)
        args = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(args, str):
            args = _json(args, obj["name"])
        out.append((obj["name"], args, None))
    return out


_FUNCTION = re.compile(r"<function=([^>\n]*)>(.*?)</function>", re.S)
_PARAM = re.compile(r"<parameter=([^>\n]*)>(.*?)</parameter>", re.S)


def _qwen_xml(text: str, hint: str) -> list[tuple[str, Any, str | None]]:
    found = _FUNCTION.findall(text)
    if text.count("<function=") > len(found):
        raise make_error(MalformedCall, detail="a <function=...> tag is not closed", hint=hint)
    out = []
    for name, body in found:
        name = name.strip()
        if not name:
            raise make_error(MalformedCall, detail="<function=> has no name", hint=hint)
        params = _PARAM.findall(body)
        if body.count("<parameter=") > len(params):
            raise make_error(MalformedCall, detail=f"a <parameter=...> tag of `{name}` is not closed", hint=hint)
        args: dict[str, Any] = {}
        for key, value in params:
            # One newline after the opening and before the closing tag belongs to the format.
            if value.startswith("\n"):
                value = value[1:]
            if value.endswith("\n"):
                value = value[:-1]
            args[key.strip()] = value
        out.append((name, args, None))
    return out


def _has_fence(text: str) -> bool:
    from ..actions import fenced_blocks

    return bool(fenced_blocks(text))


def _fenced(text: str, hint: str) -> list[tuple[str, Any, str | None]]:
    from ..actions import fenced_blocks

    out: list[tuple[str, Any, str | None]] = []
    for block in fenced_blocks(text):
        command = block.strip()
        out.append(("submit", {}, None) if command == "submit" else ("bash", {"command": command}, None))
    return out


_TYPES = {"string": str, "integer": int, "boolean": bool, "number": (int, float), "array": list, "object": dict}


def _check(name: str, args: Any, tools: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Validate (and where exact, convert) the arguments against the tool's JSON schema."""
    if name not in tools:
        raise make_error(UnknownTool, name=name[:80], available=", ".join(tools))
    if not isinstance(args, dict):
        raise make_error(InvalidArguments, name=name, detail="the arguments must be a JSON object")
    schema = tools[name] or {}
    props: dict[str, Any] = schema.get("properties") or {}
    for req in schema.get("required") or []:
        if req not in args:
            raise make_error(InvalidArguments, name=name, detail=f"missing required argument `{req}`")
    out: dict[str, Any] = {}
    for key, value in args.items():
        if not isinstance(key, str) or key not in props:
            takes = ", ".join(props) or "no arguments"
            raise make_error(InvalidArguments, name=name, detail=f"unknown argument `{str(key)[:80]}` (it takes: {takes})")
        out[key] = _coerce(name, key, value, props[key])
    if name == "bash" and not str(out.get("command", "")).strip():
        raise make_error(InvalidArguments, name=name, detail="`command` is empty")
    return out


def _coerce(name: str, key: str, value: Any, prop: Mapping[str, Any]) -> Any:
    want = prop.get("type")
    if want not in _TYPES:
        return value
    ok = isinstance(value, _TYPES[want]) and not (want in ("integer", "number") and isinstance(value, bool))
    if not ok and isinstance(value, str):
        value, ok = _from_string(value.strip(), want)
    if not ok:
        got = type(value).__name__ if value is not None else "null"
        raise make_error(InvalidArguments, name=name, detail=f"`{key}` must be of type {want}, got {got}")
    if "enum" in prop and value not in prop["enum"]:
        raise make_error(InvalidArguments, name=name,
                         detail=f"`{key}` must be one of {', '.join(map(str, prop['enum']))}, got {str(value)[:80]!r}")
    if want == "array" and isinstance(prop.get("items"), dict):
        value = [_coerce(name, f"{key}[{i}]", v, prop["items"]) for i, v in enumerate(value)]
    return value


def _from_string(text: str, want: str) -> tuple[Any, bool]:
    if want == "integer" and re.fullmatch(r"-?\d{1,18}", text):
        return int(text), True
    if want == "number" and re.fullmatch(r"-?\d{1,18}(\.\d+)?", text):
        return float(text), True
    if want == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true", True
    if want in ("array", "object") and text[:1] in "[{":
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return text, False
        return value, isinstance(value, _TYPES[want])
    return text, False


def render_call(call: ToolCall, fmt: str, call_id: str = "call_0") -> Any:
    """The assistant message a model would send for ``call`` in format ``fmt`` (scripted policies,
    round-trip tests). ``auto`` renders as ``openai``."""
    if fmt in ("openai", "auto"):
        return {"role": "assistant", "content": "", "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]}
    if fmt == "hermes":
        return "<tool_call>\n" + json.dumps({"name": call.name, "arguments": call.arguments}) + "\n</tool_call>"
    if fmt == "qwen3_xml":
        params = "".join(f"<parameter={k}>\n{v if isinstance(v, str) else json.dumps(v)}\n</parameter>\n"
                         for k, v in call.arguments.items())
        return f"<tool_call>\n<function={call.name}>\n{params}</function>\n</tool_call>"
    if fmt == "fenced_bash":
        if call.name == "submit":
            return "```bash\nsubmit\n```"
        if call.name == "bash":
            return f"```bash\n{call.arguments['command']}\n```"
        raise ValueError(f"the fenced_bash format can only express bash and submit, not {call.name!r}")
    raise ValueError(f"unknown parser {fmt!r}")


def format_instructions(fmt: str, tools: list[dict[str, Any]]) -> str:
    """How to call tools, for the system prompt of text-format parsers."""
    if fmt in ("openai", "auto"):
        names = ", ".join(t["function"]["name"] for t in tools)
        extra = "" if fmt == "openai" else (" If your server has no native tool calling, write one "
                                            "<tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>.")
        return f"Call exactly one tool per reply using the tool-calling interface. Tools: {names}.{extra}"
    listing = "\n".join(json.dumps(t["function"]) for t in tools)
    if fmt == "hermes":
        return ("Call exactly one tool per reply, as\n<tool_call>\n{\"name\": \"TOOL\", \"arguments\": {...}}\n"
                f"</tool_call>\nTools (JSON schema):\n{listing}")
    if fmt == "qwen3_xml":
        return ("Call exactly one tool per reply, as\n<tool_call>\n<function=TOOL>\n<parameter=NAME>\nvalue\n"
                f"</parameter>\n</function>\n</tool_call>\nTools (JSON schema):\n{listing}")
    return "Each reply must contain exactly one ```bash``` block with the command to run; `submit` alone finishes."
