"""Chat templates rendered incrementally, for token-faithful trajectories.

A template renders the first prompt once (``prompt``), and after each model completion only the
text that follows it (``delta``: the end of the assistant turn when the model did not close it, the
observation messages, the next generation prompt). Per-turn work is therefore proportional to the
new messages, not to the conversation. Each template also carries the equivalent Jinja source, as a
Hugging Face ``tokenizer_config.json`` would, so tests can check that prompt + completions + deltas
equal one full render of the final conversation.

Two built-in templates: ``chatml`` (Qwen2.5-style: tools in the system turn, tool results inside a
``user`` turn as ``<tool_response>`` blocks, consecutive results grouped) and ``hermes``
(Hermes-2-Pro-style: each tool result its own ``tool`` turn).

``ModelTemplate`` renders with **the model's own chat template** (a Hugging Face tokenizer's
``apply_chat_template``), so a Qwen, Llama or GLM policy is trained on the prompts its template
produces. It is made incremental the way verl does it, rendering only the new messages against a
fixed rendered prefix, and exact where verl is not: the text the template puts after an assistant
turn's end-of-turn token (Qwen's ``"\n"``) is kept, so prompt + completions + deltas equal one full
render of the final conversation (tests check it for a Qwen-style and a Llama-style template).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import jinja2

IM_START, IM_END = "<|im_start|>", "<|im_end|>"

_TOOL_INTRO = ("\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
               "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
_TOOL_OUTRO = ("\n</tools>\n\nFor each function call, return a json object with function name and arguments "
               "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
               "\"arguments\": <args-json-object>}\n</tool_call>")


def _tools_json(tools: list[dict[str, Any]]) -> str:
    return "".join("\n" + json.dumps(t, ensure_ascii=False) for t in tools)


def _assistant_body(m: dict[str, Any]) -> str:
    body = m.get("content") or ""
    for tc in m.get("tool_calls") or []:
        fn = tc["function"]
        args = fn["arguments"] if isinstance(fn["arguments"], str) else json.dumps(fn["arguments"], ensure_ascii=False)
        body += ("\n" if body else "") + '<tool_call>\n{"name": "' + fn["name"] + '", "arguments": ' + args + "}\n</tool_call>"
    return body


@dataclass(frozen=True)
class ChatTemplate:
    name: str
    jinja: str
    tool_role: str
    """``user``: tool results grouped in a user turn (Qwen); ``tool``: one ``tool`` turn each (Hermes)."""
    eos: str = IM_END

    # -- incremental -------------------------------------------------------------------------
    def prompt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        """The first prompt: system (with tools), the messages, the generation prompt."""
        first, rest = (messages[0], messages[1:]) if messages and messages[0]["role"] == "system" else (None, messages)
        system = first["content"] if first else ""
        out = ""
        if tools:
            out = IM_START + "system\n" + (system or "You are a helpful assistant.") + _TOOL_INTRO + _tools_json(tools) + _TOOL_OUTRO + IM_END + "\n"
        elif first:
            out = IM_START + "system\n" + system + IM_END + "\n"
        return out + self._messages(rest) + IM_START + "assistant\n"

    def delta(self, messages: list[dict[str, Any]], closed: bool, tools: list[dict[str, Any]] | None = None) -> str:
        """What follows a completion: its end (when the model did not emit ``eos``), the new
        messages, the next generation prompt."""
        return ("" if closed else self.eos) + "\n" + self._messages(messages) + IM_START + "assistant\n"

    def _messages(self, messages: list[dict[str, Any]]) -> str:
        out = []
        for i, m in enumerate(messages):
            role = m["role"]
            if role == "assistant":
                out.append(IM_START + "assistant\n" + _assistant_body(m) + IM_END + "\n")
            elif role == "tool" and self.tool_role == "user":
                prev_tool = i > 0 and messages[i - 1]["role"] == "tool"
                next_tool = i + 1 < len(messages) and messages[i + 1]["role"] == "tool"
                out.append(("" if prev_tool else IM_START + "user") + "\n<tool_response>\n" + m["content"]
                           + "\n</tool_response>" + ("" if next_tool else IM_END + "\n"))
            elif role == "tool":
                out.append(IM_START + "tool\n<tool_response>\n" + m["content"] + "\n</tool_response>" + IM_END + "\n")
            else:
                out.append(IM_START + role + "\n" + m["content"] + IM_END + "\n")
        return "".join(out)

    # -- reference -----------------------------------------------------------------------------
    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], add_generation_prompt: bool = True) -> str:
        """One full render with the Jinja source (what a server would do)."""
        env = jinja2.Environment(trim_blocks=False, lstrip_blocks=False, keep_trailing_newline=True)
        env.filters["tojson"] = lambda v: json.dumps(v, ensure_ascii=False)
        env.globals.update(assistant_body=_assistant_body, tool_intro=_TOOL_INTRO, tool_outro=_TOOL_OUTRO)
        return env.from_string(self.jinja).render(messages=messages, tools=tools, add_generation_prompt=add_generation_prompt)


_HEADER = (
    "{%- if tools -%}"
    "{{- '<|im_start|>system\\n' -}}"
    "{%- if messages[0].role == 'system' -%}{{- messages[0].content -}}{%- else -%}{{- 'You are a helpful assistant.' -}}{%- endif -%}"
    "{{- tool_intro -}}{%- for t in tools -%}{{- '\\n' + (t | tojson) -}}{%- endfor -%}{{- tool_outro + '<|im_end|>\\n' -}}"
    "{%- elif messages[0].role == 'system' -%}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
)
_ASSISTANT = "{%- elif m.role == 'assistant' -%}{{- '<|im_start|>assistant\\n' + assistant_body(m) + '<|im_end|>\\n' -}}"
_OTHER = "{%- else -%}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' -}}"
_GEN = "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"

CHATML = ChatTemplate("chatml", _HEADER + (
    "{%- for m in messages -%}"
    "{%- if loop.first and m.role == 'system' -%}" + _ASSISTANT +
    "{%- elif m.role == 'tool' -%}"
    "{%- if loop.first or loop.previtem.role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}"
    "{{- '\\n<tool_response>\\n' + m.content + '\\n</tool_response>' -}}"
    "{%- if loop.last or loop.nextitem.role != 'tool' -%}{{- '<|im_end|>\\n' -}}{%- endif -%}"
    + _OTHER + "{%- endif -%}{%- endfor -%}" + _GEN
), tool_role="user")

HERMES = ChatTemplate("hermes", _HEADER + (
    "{%- for m in messages -%}"
    "{%- if loop.first and m.role == 'system' -%}" + _ASSISTANT +
    "{%- elif m.role == 'tool' -%}{{- '<|im_start|>tool\\n<tool_response>\\n' + m.content + '\\n</tool_response><|im_end|>\\n' -}}"
    + _OTHER + "{%- endif -%}{%- endfor -%}" + _GEN
), tool_role="tool")

TEMPLATES = {"chatml": CHATML, "hermes": HERMES}


def template_view(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as a chat template sees them: role, content, tool calls (arguments as objects, as
    Hugging Face templates expect) and the tool-call id / name of tool results; our provenance
    fields dropped."""
    out = []
    for m in messages:
        v: dict[str, Any] = {"role": m["role"], "content": m.get("content") or ""}
        if m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                fn = dict(tc.get("function") or {})
                if isinstance(fn.get("arguments"), str):
                    try:
                        fn["arguments"] = json.loads(fn["arguments"])
                    except json.JSONDecodeError:
                        pass
                calls.append({"type": "function", "id": tc.get("id", ""), "function": fn})
            v["tool_calls"] = calls
        for k in ("tool_call_id", "name"):
            if m.get(k):
                v[k] = m[k]
        out.append(v)
    return out


class TemplateError(ValueError):
    """The chat template cannot be rendered incrementally (or at all) for this conversation."""


_SENTINEL = "\u2063HA-SENTINEL\u2063"
_BASE = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


class ModelTemplate:
    """A Hugging Face tokenizer's own chat template, rendered incrementally.

    - ``prompt``: one full ``apply_chat_template`` of the first messages;
    - ``delta(new, closed)``: ``base + [assistant(S)] + new`` rendered, minus the render of
      ``base + [assistant(S)]`` (a fixed prefix, cached per tool list), preceded by what the template
      writes after an assistant turn (``close``) less the end-of-turn token the model already
      produced. A template that rewrites earlier turns when new ones come is refused
      (``TemplateError``) rather than trained on silently different prompts.
    - ``eos``: the template's end-of-turn token, read from the template itself (the first special
      token after an assistant message), unless given.
    """

    def __init__(self, tokenizer: Any, eos: str | None = None, name: str | None = None) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise TemplateError(f"{getattr(tokenizer, 'name_or_path', 'the tokenizer')} has no chat template; "
                                "pass one of the built-in templates (chatml, hermes)")
        self.tokenizer = tokenizer
        self.name = name or f"model:{getattr(tokenizer, 'name_or_path', '') or 'tokenizer'}"
        self._prefix: dict[str, tuple[str, str]] = {}
        close = self._prefix_for(None)[1]
        if eos is None:
            specials = sorted(set(getattr(tokenizer, "all_special_tokens", [])) | set(
                getattr(tokenizer, "get_added_vocab", dict)().keys()), key=len, reverse=True)
            hits = [(close.find(t), t) for t in specials if t and t in close]
            if not hits:
                raise TemplateError(f"{self.name}: no special token ends an assistant turn (after it: {close!r}); "
                                    "pass eos= explicitly")
            eos = min(hits)[1]
        self.eos = eos

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
               add_generation_prompt: bool = True) -> str:
        try:
            return self.tokenizer.apply_chat_template(template_view(messages), tools=tools or None, tokenize=False,
                                                      add_generation_prompt=add_generation_prompt)
        except Exception as exc:  # jinja errors, raise_exception() in the template
            raise TemplateError(f"{self.name}: the chat template failed: {type(exc).__name__}: {exc}") from exc

    def _prefix_for(self, tools: list[dict[str, Any]] | None) -> tuple[str, str]:
        key = json.dumps(tools, sort_keys=True) if tools else ""
        if key not in self._prefix:
            text = self.render(_BASE + [{"role": "assistant", "content": _SENTINEL}], tools, add_generation_prompt=False)
            at = text.rfind(_SENTINEL)
            if at < 0:
                raise TemplateError(f"{self.name}: the template drops assistant content")
            self._prefix[key] = (text, text[at + len(_SENTINEL):])
        return self._prefix[key]

    def prompt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        return self.render(messages, tools, add_generation_prompt=True)

    def delta(self, messages: list[dict[str, Any]], closed: bool, tools: list[dict[str, Any]] | None = None) -> str:
        prefix, close = self._prefix_for(tools)
        full = self.render(_BASE + [{"role": "assistant", "content": _SENTINEL}] + list(messages), tools)
        if not full.startswith(prefix):
            raise TemplateError(f"{self.name}: rendering new messages changes earlier turns; this template cannot "
                                "be made token-faithful incrementally")
        if closed:
            close = close[close.index(self.eos) + len(self.eos):] if self.eos in close else close
        return close + full[len(prefix):]
