"""The harness: tool-call parsers, tools that run inside the sandbox, lifecycle hooks, and the
HarnessSpec that describes a stack of them (see wrappers.py for the stack and spec.py for the spec)."""

from .hooks import HOOKS, Hook, HookContext, Rewrite, Veto, register_hook
from .tool_calls import (PARSERS, FormatError, InvalidArguments, InvalidJSON, MalformedCall, MultipleToolCalls,
                      NoToolCall, ToolCallParser, TruncatedCall, UnknownTool, render_call)
from .spec import HarnessSpec, HarnessSpecError, diff, load_spec, preset_names
from .tools import TOOLS, Tool, ToolOutput, register_tool
from .runtime import HarnessRuntime
from .wrappers import EpisodeGuard, HarnessLayer, HooksWrapper, ParserWrapper, ToolsWrapper, build

__all__ = ["EpisodeGuard", "FormatError", "HOOKS", "HarnessLayer", "HarnessRuntime", "HarnessSpec",
           "HarnessSpecError", "Hook", "HookContext", "HooksWrapper", "InvalidArguments", "InvalidJSON",
           "MalformedCall", "MultipleToolCalls", "NoToolCall", "PARSERS", "ParserWrapper", "Rewrite", "TOOLS",
           "Tool", "ToolCallParser", "ToolOutput", "ToolsWrapper", "TruncatedCall", "UnknownTool", "Veto", "build",
           "diff", "load_spec", "preset_names", "register_hook", "register_tool", "render_call"]
