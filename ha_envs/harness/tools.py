"""The tool catalogue. A tool is a frozen, typed definition (name, description, JSON schema of its
arguments, options the HarnessSpec may set) plus an implementation that runs **inside the
sandbox**: a shell command in the episode's shell (``bash``, ``run_check``, ``run_tests``) or a call
to the in-sandbox toolbox process (file and search tools). Nothing here touches the host's files.

``TOOLS`` maps names to definitions; :func:`register_tool` adds one (the evolution module's
proposers do). Schemas render to OpenAI (``openai_schema``) and MCP (``mcp_schema``) form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..sandbox.base import COMMAND_TIMEOUT_S, Sandbox
from .state import EpisodeState, looks_like_test_run
from .toolbox import ToolboxClient, ToolboxError


@dataclass
class ToolOutput:
    text: str
    ok: bool = True
    edited: bool = False
    tested: bool = False
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolContext:
    """What a tool implementation may use during one episode."""

    sandbox: Sandbox
    toolbox: ToolboxClient
    state: EpisodeState
    command_timeout_s: float = COMMAND_TIMEOUT_S


Impl = Callable[[ToolContext, dict[str, Any], dict[str, Any]], ToolOutput]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    impl: Impl | None
    """``None`` for ``submit``, which the harness handles itself."""
    options: dict[str, Any] = field(default_factory=dict)
    """Defaults of the options a HarnessSpec may set (e.g. ``run_check.timeout_s``)."""

    def openai_schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}

    def mcp_schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": self.parameters}


def _schema(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required), "additionalProperties": False}


S = {"type": "string"}
I = {"type": "integer"}
B = {"type": "boolean"}


def _desc(d: dict[str, Any], text: str) -> dict[str, Any]:
    return dict(d, description=text)


# -- implementations ---------------------------------------------------------------------------

def _shell(ctx: ToolContext, command: str, timeout: float) -> ToolOutput:
    # The fingerprint after the previous shell command is still valid unless a file tool edited
    # since (ToolsWrapper clears it then): one git status per command instead of two.
    before = (ctx.state.fingerprint or _fingerprint(ctx)) if ctx.state.track_edits else None
    result = ctx.sandbox.run(command, timeout=timeout)
    out = ToolOutput(result.render(), ok=result.exit_code == 0 and not result.timed_out,
                     tested=looks_like_test_run(command), data={"exit_code": result.exit_code, "timed_out": result.timed_out})
    if before is not None:
        after = _fingerprint(ctx)
        out.edited = after is not None and after != before
    return out


def _fingerprint(ctx: ToolContext) -> str | None:
    """The work copy's fingerprint; None when the toolbox is unavailable (then edits by bash go unseen)."""
    try:
        res = ctx.toolbox.call("fingerprint")
    except ToolboxError:
        return None
    fp = res.data.get("fingerprint") if res.ok else None
    ctx.state.fingerprint = fp
    return fp


def run_bash(ctx: ToolContext, args: dict[str, Any], opts: dict[str, Any]) -> ToolOutput:
    # timeout_s 0 (the default): the harness's command_timeout_s (make(..., command_timeout_s=...)
    # or the spec's limits), so one setting governs every command the agent runs.
    return _shell(ctx, args["command"], opts.get("timeout_s") or ctx.command_timeout_s)


def run_check(ctx: ToolContext, args: dict[str, Any], opts: dict[str, Any]) -> ToolOutput:
    cap = min(float(opts["timeout_s"]), ctx.command_timeout_s)  # the harness limit is a ceiling
    out = _shell(ctx, args["command"], cap)
    if out.data.get("timed_out"):
        out.text += f"\n<note>run_check stops commands after {cap:g} s; run a narrower check.</note>"
    return out


def _box(op: str, edits: bool = False, build: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> Impl:
    def impl(ctx: ToolContext, args: dict[str, Any], opts: dict[str, Any]) -> ToolOutput:
        try:
            res = ctx.toolbox.call(op, build(args) if build else args)
        except ToolboxError as exc:
            return ToolOutput(str(exc), ok=False)
        return ToolOutput(res.output, ok=res.ok, edited=edits and res.ok, data=res.data)
    return impl


def run_tests(ctx: ToolContext, args: dict[str, Any], opts: dict[str, Any]) -> ToolOutput:
    try:
        sel = ctx.toolbox.call("select_tests", {"paths": args.get("paths") or [], "max_files": opts["max_files"]})
    except ToolboxError as exc:
        return ToolOutput(str(exc), ok=False)
    if not sel.ok:
        return ToolOutput(sel.output, ok=False)
    command = sel.data["command"]
    chosen = "\n".join(f"  {s['path']} (score {s['score']}: {'; '.join(s['why'])})" for s in sel.data["selected"])
    result = ctx.sandbox.run(command, timeout=min(float(opts["timeout_s"]), ctx.command_timeout_s), head_bytes=2048,
                             tail_bytes=int(opts["output_tail_bytes"]))
    head = f"Runner: {sel.data['framework']}\nSelected tests:\n{chosen or '  (the packages you changed)'}\n$ {command}\n"
    return ToolOutput(head + result.render(), ok=result.exit_code == 0 and not result.timed_out, tested=True,
                      data={"command": command, "exit_code": result.exit_code, "selected": sel.data["selected"]})


def run_think(ctx: ToolContext, args: dict[str, Any], opts: dict[str, Any]) -> ToolOutput:
    return ToolOutput("Your thought has been noted.")


_EDITOR_OPS = {"view": "read_file", "create": "create_file", "str_replace": "edit_file",
               "insert": "insert_lines", "undo_edit": "undo_edit"}


def run_editor(ctx: ToolContext, args: dict[str, Any], opts: dict[str, Any]) -> ToolOutput:
    """OpenHands-style single editor tool, dispatched to the same toolbox operations."""
    cmd = args["command"]
    a: dict[str, Any] = {"path": args["path"]}
    if cmd == "view":
        rng = args.get("view_range") or []
        if rng:
            if len(rng) != 2:
                return ToolOutput("view_range must be [start_line, end_line].", ok=False)
            a.update(start_line=rng[0], end_line=rng[1])
    elif cmd == "create":
        a.update(content=args.get("file_text") or "", overwrite=True)
    elif cmd == "str_replace":
        if "old_str" not in args:
            return ToolOutput("str_replace needs `old_str` (and `new_str`).", ok=False)
        a.update(old_str=args["old_str"], new_str=args.get("new_str", ""))
    elif cmd == "insert":
        if "insert_line" not in args or "new_str" not in args:
            return ToolOutput("insert needs `insert_line` and `new_str`.", ok=False)
        a.update(line=args["insert_line"], text=args["new_str"])
    return _box(_EDITOR_OPS[cmd], edits=cmd != "view")(ctx, a, opts)


# -- the catalogue ---------------------------------------------------------------------------

TOOLS: dict[str, Tool] = {}


def register_tool(tool: Tool, replace: bool = False) -> Tool:
    if tool.name in TOOLS and not replace:
        raise ValueError(f"a tool named {tool.name!r} is already registered")
    TOOLS[tool.name] = tool
    return tool


for _t in [
    Tool("bash", "Run one bash command in the repository. The shell persists between calls (cd, exported "
         "variables). Output is cut in the middle when long.",
         _schema({"command": _desc(S, "The command to run.")}, ("command",)), run_bash, {"timeout_s": 0.0}),
    Tool("read_file", "Show a text file with line numbers. Long files are shown in windows of 400 lines: pass "
         "start_line and end_line for the part you need.",
         _schema({"path": _desc(S, "File path, relative to the repository root or absolute."),
                  "start_line": _desc(I, "First line to show (1-based)."),
                  "end_line": _desc(I, "Last line to show (inclusive; -1 for the end).")}, ("path",)),
         _box("read_file")),
    Tool("edit_file", "Replace one exact occurrence of old_str by new_str in a file. old_str must match "
         "exactly once, whitespace included; the error says why when it does not.",
         _schema({"path": S, "old_str": _desc(S, "Exact text to replace (include enough lines to be unique)."),
                  "new_str": _desc(S, "Replacement text.")}, ("path", "old_str", "new_str")),
         _box("edit_file", edits=True)),
    Tool("create_file", "Create a new file with the given content (parent directories are created).",
         _schema({"path": S, "content": S, "overwrite": _desc(B, "Replace the file if it exists.")}, ("path", "content")),
         _box("create_file", edits=True)),
    Tool("insert_lines", "Insert text after a given line of a file (line 0 inserts at the top).",
         _schema({"path": S, "line": _desc(I, "Insert after this line (0 = top)."), "text": S}, ("path", "line", "text")),
         _box("insert_lines", edits=True)),
    Tool("undo_edit", "Revert the last edit_file, create_file, insert_lines or restore_file on a file.",
         _schema({"path": S}, ("path",)), _box("undo_edit", edits=True)),
    Tool("search", "Search file contents under a path (grep -rn). Literal text unless regex=true; matches are capped.",
         _schema({"pattern": S, "path": _desc(S, "Directory or file (default: repository root)."),
                  "regex": _desc(B, "Treat pattern as an extended regular expression."),
                  "include": _desc(S, "Only files whose name matches this glob, e.g. *.py.")}, ("pattern",)),
         _box("search")),
    Tool("find_files", "List files whose name (or repository-relative path) matches a glob, e.g. *router*.py.",
         _schema({"pattern": S, "path": _desc(S, "Directory to search (default: repository root).")}, ("pattern",)),
         _box("find_files")),
    Tool("view_diff", "Show your changes against the base commit (new files included).",
         _schema({"path": _desc(S, "Only this file."), "stat": _desc(B, "Only a summary of changed files.")}),
         _box("view_diff")),
    Tool("restore_file", "Restore a file to its base-commit content (a file you created is removed). undo_edit reverts this.",
         _schema({"path": S}, ("path",)), _box("restore_file", edits=True)),
    Tool("run_check", "Run a quick check command (a reproduction script, one test). It is stopped after the time cap.",
         _schema({"command": S}, ("command",)), run_check, {"timeout_s": 45.0}),
    Tool("run_tests", "Run the tests relevant to your change: the project's test files are scored against the "
         "files and symbols you changed and the best are run with the project's runner (pytest, unittest, "
         "Django runtests.py, bin/test, node --test / npm test, go test, cargo test). Pass paths to choose tests yourself.",
         _schema({"paths": _desc({"type": "array", "items": S}, "Test files to run instead of the automatic choice.")}),
         run_tests, {"timeout_s": 300.0, "max_files": 5, "output_tail_bytes": 12000}),
    Tool("think", "Write down your reasoning or plan. It changes nothing.", _schema({"thought": S}, ("thought",)), run_think),
    Tool("submit", "Finish: your current changes to the repository are graded by hidden tests.",
         _schema({}), None, {"evidence": True}),
    Tool("str_replace_editor", "View, create and edit files (OpenHands-style). Commands: view (with optional "
         "view_range), create (file_text), str_replace (old_str must match exactly once, new_str), insert "
         "(insert_line, new_str), undo_edit.",
         _schema({"command": {"type": "string", "enum": list(_EDITOR_OPS)}, "path": S, "file_text": S,
                  "old_str": S, "new_str": S, "insert_line": I,
                  "view_range": {"type": "array", "items": I}}, ("command", "path")),
         run_editor),
]:
    register_tool(_t)

EDIT_TOOLS = frozenset({"edit_file", "create_file", "insert_lines", "undo_edit", "restore_file", "str_replace_editor"})
