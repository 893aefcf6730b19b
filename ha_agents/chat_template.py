"""Chat templates rendered incrementally, for token-faithful trajectories.

A template renders the first prompt once (``prompt``), and after each model completion only the
text that follows it (``delta``: the end of the assistant turn when the model did not close it, the
observation messages, the next generation prompt). Per-turn work is therefore proportional to the
new messages, not to the conversation. Each template also carries the equivalent Jinja source, as a
Hugging Face ``tokenizer_config.json`` would, so tests can check that prompt + completions + deltas
equal one full render of the final conversation.

Two templates: ``chatml`` (Qwen2.5-style: tools in the system turn, tool results inside a ``user``
turn as ``<tool_response>`` blocks, consecutive results grouped) and ``hermes`` (Hermes-2-Pro-style:
each tool result its own ``tool`` turn).
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

    def delta(self, messages: list[dict[str, Any]], closed: bool) -> str:
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
