"""Data-only harness components: script tools and rule hooks, the parts a proposer may invent.

A catalogue tool or hook is host code, registered by name. A proposer (an LLM teacher, a coding
CLI, a mutator) must not add host code, so the two kinds it can add are data, carried in full by the
HarnessSpec and covered by its hash and diff:

- a **script tool**: name, description, JSON-schema parameters and a bash or Python script. It runs
  only inside the sandbox, in a subshell at the repository root, with the arguments as JSON in
  ``HA_ARGS`` and one ``ARG_<NAME>`` variable per scalar argument, under the tool's timeout (capped
  by the harness's ``command_timeout_s``) and output cap;
- a **rule hook**: a lifecycle point, a trigger over the episode state (every condition must hold),
  a message template, a firing cap and one optional action: at ``pre_action`` a ``veto`` (the call
  does not run) or a ``rewrite`` (a regex substitution on one string argument of the call:
  ``{argument, pattern, replace}``; the model is told), at ``post_feedback`` a ``force`` (the harness
  runs a bash command the model did not send, in the sandbox at the repository root, e.g. the tests
  after an edit: ``{command, timeout_s}``; its output is shown as the hook's message, never trained on);
- a **code hook**: a rule hook whose ``code`` is a small Python function ``hook(ctx)``, checked by
  its syntax tree on the host and run only inside the sandbox under CPU, memory and wall-clock
  limits (see "code hooks" below).

Validation (:func:`check_script_tool`, :func:`check_rule_hook`) rejects bad schemas, unknown trigger
fields, triggers that cannot be evaluated at the chosen point, scripts that fail a syntax check
(``bash -n``, or Python's parser: nothing the proposer wrote is executed on the host) and names that
clash with the catalogue, each with the reason.
"""

from __future__ import annotations

import ast
import base64
import json
import re
import subprocess
from typing import Any

from ..actions import ToolCall
from ..sandbox.shell import ansi_c_quote
from .hooks import Hook, HookContext, Rewrite, Veto
from .tools import Tool, ToolContext, ToolOutput

LANGUAGES = {"bash": ("bash", ".sh"), "python": ("python3", ".py")}
SCHEMA_TYPES = {"string", "integer", "number", "boolean"}
POINTS = ("episode_start", "pre_decision", "pre_action", "post_feedback")
_NAME = re.compile(r"^[a-z][a-z0-9_]{1,39}$")
MESSAGE_FIELDS = {"turn": 7, "max_turns": 60, "turns_left": 53, "tool": "bash", "test_runs": 1, "edits": 2,
                  "command": "pytest -q"}

# trigger field -> (type, points where it can be evaluated, what it means)
TRIGGERS: dict[str, tuple[type, tuple[str, ...], str]] = {
    "tool": (str, ("pre_action", "post_feedback"), "the call's tool name is this"),
    "command_regex": (str, ("pre_action", "post_feedback"),
                      "the call's command (bash, run_check) or its JSON arguments match"),
    "output_regex": (str, ("post_feedback",), "the tools' answer matches"),
    "min_turn": (int, POINTS, "at least this many turns were taken"),
    "turns_since_test_run": (int, ("pre_decision", "pre_action", "post_feedback"),
                             "at least this many turns since the last test run (or the start)"),
    "consecutive_errors": (int, ("pre_decision", "post_feedback"), "the last N steps all failed"),
    "repeated_action": (int, ("pre_decision", "post_feedback"), "the same action N times in a row"),
    "edited_since_test": (bool, ("pre_decision", "pre_action", "post_feedback"),
                          "files changed after the last test run"),
    "submit_without_test": (bool, ("pre_action",), "the call is submit and no test ran after the last edit"),
}


class CustomComponentError(ValueError):
    """A script tool or rule hook is invalid; the message names it and the reason."""


def _require(ok: bool, what: str, why: str) -> None:
    if not ok:
        raise CustomComponentError(f"{what}: {why}")


def check_name(kind: str, name: Any, catalogue: dict[str, Any]) -> str:
    what = f"{kind} {name!r}"
    _require(isinstance(name, str) and bool(_NAME.match(name)), what,
             "the name must be 2-40 characters of lowercase letters, digits and '_', starting with a letter")
    _require(name not in catalogue, what, f"the name clashes with the catalogue {kind} of that name")
    return name


def check_script_tool(name: str, d: Any, catalogue: dict[str, Any]) -> dict[str, Any]:
    """The script tool's definition with defaults filled in, or CustomComponentError."""
    what = f"script tool {name!r}"
    check_name("tool", name, catalogue)
    _require(isinstance(d, dict), what, "the definition must be a mapping")
    unknown = set(d) - {"description", "parameters", "script", "language", "timeout_s", "output_bytes"}
    _require(not unknown, what, f"unknown field(s) {', '.join(sorted(unknown))}")
    desc = d.get("description")
    _require(isinstance(desc, str) and 0 < len(desc.strip()) <= 1000, what, "a description of 1-1000 characters is needed")
    params = d.get("parameters", {"type": "object", "properties": {}})
    _require(isinstance(params, dict) and params.get("type") == "object", what,
             "parameters must be a JSON schema of type 'object'")
    props = params.get("properties", {})
    _require(isinstance(props, dict), what, "parameters.properties must be a mapping")
    for pname, schema in props.items():
        _require(isinstance(pname, str) and re.match(r"^[a-z][a-z0-9_]{0,39}$", pname) is not None, what,
                 f"parameter name {pname!r} must be a lowercase identifier")
        _require(isinstance(schema, dict) and schema.get("type") in SCHEMA_TYPES, what,
                 f"parameter {pname!r} needs a type among {', '.join(sorted(SCHEMA_TYPES))}")
        extra = set(schema) - {"type", "description", "enum", "default"}
        _require(not extra, what, f"parameter {pname!r} has unsupported schema keys {', '.join(sorted(extra))}")
    required = params.get("required", [])
    _require(isinstance(required, list) and set(required) <= set(props), what,
             "parameters.required must list declared parameters")
    extra = set(params) - {"type", "properties", "required", "additionalProperties"}
    _require(not extra, what, f"parameters has unsupported keys {', '.join(sorted(extra))}")
    language = d.get("language", "bash")
    _require(language in LANGUAGES, what, f"language must be one of {', '.join(LANGUAGES)}")
    script = d.get("script")
    _require(isinstance(script, str) and script.strip() != "" and len(script) <= 65536, what,
             "a script of at most 64 KiB is needed")
    _syntax(what, language, script)
    timeout = d.get("timeout_s", 60.0)
    _require(isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and 0 < timeout <= 600, what,
             "timeout_s must be a number in (0, 600]")
    cap = d.get("output_bytes", 16000)
    _require(isinstance(cap, int) and not isinstance(cap, bool) and 256 <= cap <= 1 << 20, what,
             "output_bytes must be an integer in [256, 1048576]")
    return {"description": desc.strip(), "parameters": {"type": "object", "properties": props,
                                                        "required": list(required), "additionalProperties": False},
            "script": script, "language": language, "timeout_s": float(timeout), "output_bytes": cap}


def _syntax(what: str, language: str, script: str) -> None:
    """A syntax check that runs nothing the script says: ``bash -n`` or Python's parser."""
    if language == "python":
        try:
            ast.parse(script)
        except SyntaxError as exc:
            raise CustomComponentError(f"{what}: the Python script does not parse: {exc.msg} (line {exc.lineno})") from None
        return
    proc = subprocess.run(["bash", "-n"], input=script.encode(), capture_output=True, timeout=30)
    _require(proc.returncode == 0, what,
             f"the bash script does not parse: {proc.stderr.decode(errors='replace').strip()[:300]}")


def check_rule_hook(name: str, d: Any, catalogue: dict[str, Any]) -> dict[str, Any]:
    """The rule hook's definition with defaults filled in, or CustomComponentError."""
    what = f"rule hook {name!r}"
    check_name("hook", name, catalogue)
    _require(isinstance(d, dict), what, "the definition must be a mapping")
    if "code" in d:
        return check_code_hook(name, d)
    unknown = set(d) - {"point", "trigger", "message", "max_fires", "veto", "rewrite", "force"}
    _require(not unknown, what, f"unknown field(s) {', '.join(sorted(unknown))}")
    point = d.get("point")
    _require(point in POINTS, what, f"point must be one of {', '.join(POINTS)}")
    trigger = d.get("trigger", {})
    _require(isinstance(trigger, dict) and bool(trigger), what, "a non-empty trigger mapping is needed")
    for key, value in trigger.items():
        _require(key in TRIGGERS, what, f"unknown trigger field {key!r}; known: {', '.join(TRIGGERS)}")
        want, points, _ = TRIGGERS[key]
        _require(isinstance(value, want) and (want is bool or not isinstance(value, bool)), what,
                 f"trigger field {key!r} must be {want.__name__}")
        _require(point in points, what, f"trigger field {key!r} cannot be evaluated at {point} "
                                         f"(only at {', '.join(points)})")
        if key.endswith("_regex"):
            try:
                re.compile(value)
            except re.error as exc:
                raise CustomComponentError(f"{what}: trigger field {key!r} is not a valid regex: {exc}") from None
        if want is int:
            _require(0 <= value <= 10000, what, f"trigger field {key!r} must be in [0, 10000]")
    message = d.get("message")
    _require(isinstance(message, str) and 0 < len(message.strip()) <= 2000, what, "a message of 1-2000 characters is needed")
    try:
        message.format(**MESSAGE_FIELDS)
    except (KeyError, IndexError, ValueError) as exc:
        raise CustomComponentError(f"{what}: the message may only use the fields "
                                   f"{', '.join('{' + f + '}' for f in MESSAGE_FIELDS)} ({exc!r})") from None
    max_fires = d.get("max_fires", 1)
    _require(isinstance(max_fires, int) and not isinstance(max_fires, bool) and 1 <= max_fires <= 100, what,
             "max_fires must be an integer in [1, 100]")
    veto = d.get("veto", False)
    _require(isinstance(veto, bool), what, "veto must be true or false")
    _require(not veto or point == "pre_action", what, "only a pre_action hook can veto a call")
    out: dict[str, Any] = {"point": point, "trigger": dict(trigger), "message": message, "max_fires": max_fires,
                           "veto": veto}
    if d.get("rewrite") is not None:
        out["rewrite"] = _check_rewrite(what, d["rewrite"], point, veto)
    if d.get("force") is not None:
        out["force"] = _check_force(what, d["force"], point)
    return out


def _check_rewrite(what: str, rw: Any, point: str, veto: bool) -> dict[str, Any]:
    _require(point == "pre_action", what, "only a pre_action hook can rewrite a call")
    _require(not veto, what, "a hook either vetoes or rewrites a call, not both")
    _require(isinstance(rw, dict) and set(rw) <= {"argument", "pattern", "replace"} and {"argument", "pattern"} <= set(rw),
             what, "rewrite is {argument: NAME, pattern: REGEX, replace: TEXT}")
    _require(isinstance(rw["argument"], str) and bool(rw["argument"]), what, "rewrite.argument must name an argument")
    _require(isinstance(rw["pattern"], str) and 0 < len(rw["pattern"]) <= 500, what, "rewrite.pattern: 1-500 characters")
    try:
        re.compile(rw["pattern"])
    except re.error as exc:
        raise CustomComponentError(f"{what}: rewrite.pattern is not a valid regex: {exc}") from None
    replace = rw.get("replace", "")
    _require(isinstance(replace, str) and len(replace) <= 2000, what, "rewrite.replace: text of at most 2000 characters")
    try:
        re.compile(rw["pattern"]).sub(replace, "")
    except (re.error, IndexError) as exc:
        raise CustomComponentError(f"{what}: rewrite.replace refers to a group the pattern lacks: {exc}") from None
    return {"argument": rw["argument"], "pattern": rw["pattern"], "replace": replace}


def _check_force(what: str, f: Any, point: str) -> dict[str, Any]:
    _require(point == "post_feedback", what, "only a post_feedback hook can force a call")
    _require(isinstance(f, dict) and set(f) <= {"command", "timeout_s"} and "command" in f, what,
             "force is {command: BASH, timeout_s: SECONDS}")
    cmd = f["command"]
    _require(isinstance(cmd, str) and 0 < len(cmd.strip()) <= 2000, what, "force.command: 1-2000 characters")
    timeout = f.get("timeout_s", 60)
    _require(isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and 0 < timeout <= 600, what,
             "force.timeout_s must be in (0, 600]")
    proc = subprocess.run(["bash", "-n"], input=cmd.encode(), capture_output=True, timeout=30)  # parsed, never run here
    _require(proc.returncode == 0, what, f"force.command does not parse: {proc.stderr.decode(errors='replace').strip()[:300]}")
    return {"command": cmd, "timeout_s": float(timeout)}


# -- runtime -----------------------------------------------------------------------------------

def script_tool(name: str, d: dict[str, Any]) -> Tool:
    """The Tool a validated script-tool definition describes."""
    interpreter, ext = LANGUAGES[d["language"]]
    encoded = base64.b64encode(d["script"].encode()).decode()
    path = f"/tmp/ha-tools/{name}{ext}"

    def impl(ctx: ToolContext, args: dict[str, Any], opts: dict[str, Any]) -> ToolOutput:
        env = [f"HA_ARGS={ansi_c_quote(json.dumps(args))}"]
        env += [f"ARG_{k.upper()}={ansi_c_quote(str(v).lower() if isinstance(v, bool) else str(v))}"
                for k, v in args.items() if isinstance(v, (str, int, float, bool))]
        command = (f"( mkdir -p /tmp/ha-tools && printf %s {encoded} | base64 -d > {path} && "
                   f"cd {ansi_c_quote(ctx.sandbox.workdir)} && {' '.join(env)} {interpreter} {path} )")
        half = d["output_bytes"] // 2
        result = ctx.sandbox.run(command, timeout=min(d["timeout_s"], ctx.command_timeout_s),
                                 head_bytes=half, tail_bytes=half)
        return ToolOutput(result.render(), ok=result.exit_code == 0 and not result.timed_out,
                          data={"exit_code": result.exit_code, "timed_out": result.timed_out})

    return Tool(name, d["description"], d["parameters"], impl, {})


def _command_text(call: ToolCall) -> str:
    if "command" in call.arguments and isinstance(call.arguments["command"], str):
        return call.arguments["command"]
    return json.dumps(call.arguments, sort_keys=True)


def run_forced(ctx: HookContext, command: str, timeout_s: float) -> str:
    """A hook's ``force``: the harness's own call, run in the sandbox at the repository root; its
    output is shown with the hook's message (never trained on)."""
    res = ctx.sandbox.run(f"cd {ansi_c_quote(ctx.sandbox.workdir)} && {command}", timeout=timeout_s,
                          head_bytes=4000, tail_bytes=4000)
    return f"[the harness ran: {command}]\n{res.render()}"


class RuleHook(Hook):
    """A hook defined by data (see the module docstring)."""

    def __init__(self, name: str, d: dict[str, Any]) -> None:
        super().__init__()
        self.name = name  # type: ignore[misc]
        self.points = (d["point"],)  # type: ignore[misc]
        self.d = d
        self.fires = 0

    def reset(self) -> None:
        self.fires = 0

    def _holds(self, ctx: HookContext, call: ToolCall | None, output: str) -> bool:
        st, t = ctx.state, self.d["trigger"]
        if "tool" in t and (call is None or call.name != t["tool"]):
            return False
        if "command_regex" in t and (call is None or not re.search(t["command_regex"], _command_text(call))):
            return False
        if "output_regex" in t and not re.search(t["output_regex"], output):
            return False
        if ctx.turn < t.get("min_turn", 0):
            return False
        since = ctx.turn - (st.last_test_turn if st.last_test_turn is not None else 0)
        if "turns_since_test_run" in t and since < t["turns_since_test_run"]:
            return False
        n = t.get("consecutive_errors")
        if n is not None and (len(st.steps) < n or not all(s.error for s in st.steps[-n:]) or n == 0):
            return False
        n = t.get("repeated_action")
        if n is not None and (len(st.steps) < n or len({s.key for s in st.steps[-n:]}) != 1 or n == 0):
            return False
        if "edited_since_test" in t and t["edited_since_test"] != (st.edits > 0 and not st.tested_since_edit):
            return False
        if "submit_without_test" in t and t["submit_without_test"] != (
                call is not None and call.name == "submit" and not st.tested_since_edit):
            return False
        return True

    def _fire(self, ctx: HookContext, call: ToolCall | None, output: str = "") -> str | None:
        if self.fires >= self.d["max_fires"] or not self._holds(ctx, call, output):
            return None
        self.fires += 1
        ctx.fire(self.name, f"rule matched at turn {ctx.turn}")
        return self.d["message"].format(turn=ctx.turn, max_turns=ctx.max_turns,
                                        turns_left=ctx.turns_left,
                                        tool=call.name if call else "", test_runs=ctx.state.test_runs,
                                        edits=ctx.state.edits, command=_command_text(call) if call else "")

    def episode_start(self, ctx: HookContext) -> list[str]:
        text = self._fire(ctx, None) if self.d["point"] == "episode_start" else None
        return [text] if text else []

    def pre_decision(self, ctx: HookContext) -> list[str]:
        text = self._fire(ctx, None) if self.d["point"] == "pre_decision" else None
        return [text] if text else []

    def pre_action(self, ctx: HookContext, call: ToolCall) -> Veto | None:
        if self.d["point"] != "pre_action":
            return None
        rw = self.d.get("rewrite")
        if rw is not None:
            value = call.arguments.get(rw["argument"])
            if not isinstance(value, str):
                return None
            new = re.sub(rw["pattern"], rw["replace"], value)
            if new == value or self.fires >= self.d["max_fires"] or not self._holds(ctx, call, ""):
                return None
            text = self._fire(ctx, call)
            return Rewrite(ToolCall(call.name, {**call.arguments, rw["argument"]: new}, call.call_id), text or self.name)
        text = self._fire(ctx, call)
        if text is None:
            return None
        if self.d["veto"]:
            return Veto(text)
        ctx.state.flags.setdefault(self.name, []).append(text)  # shown with the call's result
        return None

    def post_feedback(self, ctx: HookContext, calls: list[ToolCall], messages: list[dict[str, Any]]) -> list[str]:
        pending = ctx.state.flags.pop(self.name, []) if self.d["point"] == "pre_action" else []
        if self.d["point"] != "post_feedback":
            return pending
        output = "\n".join(m["content"] for m in messages if m.get("source") == "tool")
        for call in calls or [None]:  # type: ignore[list-item]
            text = self._fire(ctx, call, output)
            if text:
                force = self.d.get("force")
                if force is not None:
                    text += "\n" + run_forced(ctx, force["command"], force["timeout_s"])
                return pending + [text]
        return pending


# -- code hooks ----------------------------------------------------------------------------------
#
# A rule hook may be a small Python function instead of a trigger and a message (Harness-R1's code
# hooks): ``{point, code, max_fires, timeout_s, memory_mb, cpu_s}`` where ``code`` defines
# ``def hook(ctx)``. It is checked on the host by its syntax tree only (never run there) and runs
# inside the episode's sandbox, each time its point is reached, in a fresh ``python3 -I -S`` with a
# CPU-time limit, an address-space limit and a wall-clock kill, and only these builtins. A hook that
# fails, is killed, or returns what its point cannot use has no effect (the failure is counted in
# ``info["hooks"]`` under ``NAME:failed``); it never stops the episode.

CODE_MAX_CHARS = 8000
CODE_MAX_NODES = 1200
CODE_BUILTINS = ("abs", "all", "any", "bool", "dict", "enumerate", "filter", "float", "int", "isinstance", "len",
                 "list", "map", "max", "min", "range", "reversed", "round", "set", "sorted", "str", "sum", "tuple",
                 "zip")
_CODE_FORBIDDEN_NODES = {
    "Import": "imports", "ImportFrom": "imports", "While": "while loops", "ClassDef": "classes",
    "AsyncFunctionDef": "async code", "Await": "async code", "AsyncFor": "async code", "AsyncWith": "async code",
    "Global": "global", "Nonlocal": "nonlocal", "With": "with blocks (IO)", "Yield": "generators",
    "YieldFrom": "generators", "Try": "try blocks", "Raise": "raise", "Delete": "del", "Starred": "star-arguments",
}
_CODE_FORBIDDEN_NAMES = {"eval", "exec", "compile", "open", "input", "print", "globals", "locals", "vars", "getattr",
                         "setattr", "delattr", "hasattr", "breakpoint", "exit", "quit", "help", "dir", "type", "object",
                         "super", "memoryview", "bytearray", "bytes", "id", "hash", "iter", "next", "format",
                         "classmethod", "staticmethod", "property", "callable", "issubclass", "__import__"}
CODE_RESULT_KEYS = {"message", "veto", "rewrite", "force"}


def check_code_hook(name: str, d: dict[str, Any]) -> dict[str, Any]:
    """A code hook's definition with defaults filled in, or CustomComponentError (see above)."""
    what = f"code hook {name!r}"
    unknown = set(d) - {"point", "code", "max_fires", "timeout_s", "memory_mb", "cpu_s", "force_timeout_s"}
    _require(not unknown, what, f"unknown field(s) {', '.join(sorted(unknown))}")
    point = d.get("point")
    _require(point in POINTS, what, f"point must be one of {', '.join(POINTS)}")
    code = d.get("code")
    _require(isinstance(code, str) and code.strip() != "", what, "code: the Python source of `def hook(ctx)` is needed")
    _require(len(code) <= CODE_MAX_CHARS, what, f"code: at most {CODE_MAX_CHARS} characters (it has {len(code)})")
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise CustomComponentError(f"{what}: code does not parse: line {exc.lineno}: {exc.msg}") from None
    nodes = list(ast.walk(tree))
    _require(len(nodes) <= CODE_MAX_NODES, what, f"code: at most {CODE_MAX_NODES} syntax nodes (it has {len(nodes)})")
    for node in nodes:
        kind = type(node).__name__
        where = f" (line {getattr(node, 'lineno', '?')})"
        _require(kind not in _CODE_FORBIDDEN_NODES, what, f"code may not use {_CODE_FORBIDDEN_NODES.get(kind)}{where}")
        if isinstance(node, ast.Name):
            _require(node.id not in _CODE_FORBIDDEN_NAMES and not node.id.startswith("_"), what,
                     f"code may not use the name {node.id!r}{where}")
        if isinstance(node, ast.Attribute):
            _require(not node.attr.startswith("_"), what, f"code may not use the attribute {node.attr!r}{where}")
        if isinstance(node, ast.arg):
            _require(not node.arg.startswith("_"), what, f"code may not name an argument {node.arg!r}{where}")
    for stmt in tree.body:
        ok = isinstance(stmt, ast.FunctionDef) or (isinstance(stmt, ast.Assign) and all(
            isinstance(t, ast.Name) for t in stmt.targets)) or (isinstance(stmt, ast.Expr) and isinstance(
                stmt.value, ast.Constant) and isinstance(stmt.value.value, str))
        _require(ok, what, f"code: only functions, constants and a docstring at the top level (line {stmt.lineno})")
    hooks = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "hook"]
    _require(len(hooks) == 1, what, "code must define exactly one `def hook(ctx)`")
    args = hooks[0].args
    _require(len(args.args) == 1 and not args.vararg and not args.kwarg and not args.kwonlyargs and not args.defaults,
             what, "`hook` takes exactly one argument (ctx)")

    def number(key: str, default: float, lo: float, hi: float) -> float:
        v = d.get(key, default)
        _require(isinstance(v, (int, float)) and not isinstance(v, bool) and lo <= v <= hi, what,
                 f"{key} must be in [{lo:g}, {hi:g}]")
        return float(v)

    max_fires = d.get("max_fires", 1)
    _require(isinstance(max_fires, int) and not isinstance(max_fires, bool) and 1 <= max_fires <= 100, what,
             "max_fires must be an integer in [1, 100]")
    return {"point": point, "code": code, "max_fires": max_fires, "timeout_s": number("timeout_s", 5, 0.5, 30),
            "cpu_s": int(number("cpu_s", 2, 1, 20)), "memory_mb": int(number("memory_mb", 256, 64, 2048)),
            "force_timeout_s": number("force_timeout_s", 60, 1, 600)}


_MARK = "@@HA-HOOK-RESULT@@"
# Runs in the sandbox (any python3 from 3.6 on): limits first, then the hook with a short list of
# builtins; prints the result after a marker. What it reads and prints is the hook's only channel.
_RUNNER = """import json, resource, sys
cpu, mem = int(sys.argv[3]), int(sys.argv[4]) * 1024 * 1024
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
try:
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
except (ValueError, OSError):
    pass
with open(sys.argv[1]) as f:
    src = f.read()
with open(sys.argv[2]) as f:
    ctx = json.load(f)
b = __builtins__ if isinstance(__builtins__, dict) else __builtins__.__dict__
g = {"__builtins__": {k: b[k] for k in NAMES}, "__name__": "hook"}
exec(compile(src, "<hook>", "exec"), g)
out = g["hook"](ctx)
sys.stdout.write("\\n" + MARK + json.dumps(out) + "\\n")
""".replace("NAMES", repr(CODE_BUILTINS)).replace("MARK", repr(_MARK))


class CodeHook(Hook):
    """A code hook (see above); its effect is what ``hook(ctx)`` returns: nothing (None, ''), a
    message, or ``{message, veto | rewrite: {argument, value} | force: COMMAND}``."""

    tracks_edits = True  # ctx reports edits made through bash too

    def __init__(self, name: str, d: dict[str, Any]) -> None:
        super().__init__()
        self.name = name  # type: ignore[misc]
        self.points = (d["point"],)  # type: ignore[misc]
        self.d = d
        self.fires = 0
        self._src = base64.b64encode(d["code"].encode()).decode()
        self._runner = base64.b64encode(_RUNNER.encode()).decode()

    def reset(self) -> None:
        self.fires = 0

    def _context(self, ctx: HookContext, call: ToolCall | None, output: str) -> dict[str, Any]:
        st = ctx.state
        args = {k: (v[:2000] if isinstance(v, str) else v) for k, v in (call.arguments if call else {}).items()}
        return {"point": self.d["point"], "turn": ctx.turn, "max_turns": ctx.max_turns,
                "turns_left": ctx.turns_left, "tools": list(ctx.tools),
                "tool": call.name if call else None, "arguments": args,
                "command": _command_text(call)[:2000] if call else "", "output": output[-4000:],
                "test_runs": st.test_runs, "edits": st.edits, "tested_since_edit": st.tested_since_edit,
                "last_test_turn": st.last_test_turn, "last_edit_turn": st.last_edit_turn, "tool_errors": st.tool_errors,
                "recent": [{"turn": x.turn, "action": x.key[:200], "error": x.error} for x in st.steps[-8:]]}

    def _run(self, ctx: HookContext, call: ToolCall | None, output: str = "") -> dict[str, Any] | None:
        """The hook's result, checked for its point; None when it has no effect."""
        if self.fires >= self.d["max_fires"]:
            return None
        blob = base64.b64encode(json.dumps(self._context(ctx, call, output)).encode()).decode()
        wall = self.d["timeout_s"]
        cmd = (f"( d=$(mktemp -d /tmp/ha-hook.XXXXXX) && printf %s {self._runner} | base64 -d > $d/r.py && "
               f"printf %s {self._src} | base64 -d > $d/h.py && printf %s {blob} | base64 -d > $d/c.json && "
               f"timeout -s KILL {wall:g} python3 -I -S $d/r.py $d/h.py $d/c.json {self.d['cpu_s']} "
               f"{self.d['memory_mb']}; rc=$?; rm -rf $d; exit $rc )")  # a subshell: the session's shell stays
        try:
            res = ctx.sandbox.run(cmd, timeout=wall + 5, head_bytes=2000, tail_bytes=8000)
        except Exception as exc:  # noqa: BLE001 - a hook never takes the episode down
            return self._failed(ctx, f"could not run: {exc}")
        text = res.output or ""
        if res.timed_out or res.exit_code != 0 or _MARK not in text:
            killed = res.timed_out or res.exit_code in (124, 137, 152, -9, -24)
            why = ("killed by its wall-clock limit" if killed and (res.timed_out or res.duration_s >= wall - 0.2) else
                   "killed by its CPU or memory limit" if killed else f"exit status {res.exit_code}")
            return self._failed(ctx, f"{why}: {text.strip()[-300:]}")
        try:
            out = json.loads(text.rsplit(_MARK, 1)[1].strip().splitlines()[0])
        except (ValueError, IndexError) as exc:
            return self._failed(ctx, f"its result is not JSON: {exc}")
        if out is None or out == "":
            return None
        if isinstance(out, str):
            out = {"message": out}
        why = self._invalid(out, call)
        if why:
            return self._failed(ctx, why)
        self.fires += 1
        ctx.fire(self.name, f"code hook at turn {ctx.turn}")
        return out

    def _invalid(self, out: Any, call: ToolCall | None) -> str:
        point = self.d["point"]
        if not isinstance(out, dict) or not set(out) <= CODE_RESULT_KEYS or not out:
            return f"it returned {str(out)[:200]!r}: use None, a message, or a mapping of {sorted(CODE_RESULT_KEYS)}"
        msg = out.get("message", "")
        if not isinstance(msg, str) or len(msg) > 2000:
            return "message must be text of at most 2000 characters"
        if out.get("veto") is not None and (point != "pre_action" or not isinstance(out["veto"], bool)):
            return "only a pre_action hook can veto (veto: true)"
        if out.get("rewrite") is not None:
            rw = out["rewrite"]
            if point != "pre_action" or out.get("veto") or not isinstance(rw, dict) or set(rw) != {"argument", "value"}:
                return "rewrite is {argument, value}, at pre_action, without a veto"
            if call is None or not isinstance(call.arguments.get(rw["argument"]), str) or not isinstance(rw["value"], str):
                return f"rewrite: the call has no text argument {rw.get('argument')!r}"
        if out.get("force") is not None and (point != "post_feedback" or not isinstance(out["force"], str)
                                             or not 0 < len(out["force"].strip()) <= 2000):
            return "force is a command (1-2000 characters), at post_feedback"
        return ""

    def _failed(self, ctx: HookContext, why: str) -> None:
        ctx.fire(f"{self.name}:failed", why[:500])
        return None

    def episode_start(self, ctx: HookContext) -> list[str]:
        out = self._run(ctx, None) if self.d["point"] == "episode_start" else None
        return [out["message"]] if out and out.get("message") else []

    def pre_decision(self, ctx: HookContext) -> list[str]:
        out = self._run(ctx, None) if self.d["point"] == "pre_decision" else None
        return [out["message"]] if out and out.get("message") else []

    def pre_action(self, ctx: HookContext, call: ToolCall) -> Veto | None:
        out = self._run(ctx, call) if self.d["point"] == "pre_action" else None
        if not out:
            return None
        if out.get("veto"):
            return Veto(out.get("message") or f"the harness blocked this call ({self.name})")
        if out.get("rewrite"):
            rw = out["rewrite"]
            return Rewrite(ToolCall(call.name, {**call.arguments, rw["argument"]: rw["value"]}, call.call_id),
                           out.get("message") or self.name)
        if out.get("message"):
            ctx.state.flags.setdefault(self.name, []).append(out["message"])  # shown with the call's result
        return None

    def post_feedback(self, ctx: HookContext, calls: list[ToolCall], messages: list[dict[str, Any]]) -> list[str]:
        pending = ctx.state.flags.pop(self.name, []) if self.d["point"] == "pre_action" else []
        if self.d["point"] != "post_feedback":
            return pending
        output = "\n".join(m["content"] for m in messages if m.get("source") == "tool")
        out = self._run(ctx, calls[-1] if calls else None, output)
        if not out:
            return pending
        text = out.get("message", "")
        if out.get("force"):
            text = (text + "\n" if text else "") + run_forced(ctx, out["force"], self.d["force_timeout_s"])
        return pending + ([text] if text else [])
