"""Runtime hooks at the four lifecycle points of Harness-R1.

- ``episode_start(ctx)``: set up initial context (messages added after the task);
- ``pre_decision(ctx)``: add context before the model's next decision;
- ``pre_action(ctx, call)``: normalise, rewrite or veto one tool call (:class:`Rewrite`, :class:`Veto`);
- ``post_feedback(ctx, calls, messages)``: inspect (and condense) what the tools answered, and
  trigger recovery when the trajectory stalls.

A hook returns the texts it wants the model to see; the harness sends them as ``role="user"``
messages with ``source="hook:<name>"`` (never trained on) and counts each firing, with its
reason, in ``info["hooks"]``. Parameters (thresholds, texts) are declared in ``defaults`` so a
HarnessSpec can set them and the spec validator can check them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..actions import ToolCall
from ..sandbox.base import Sandbox
from .state import EpisodeState, digest
from .toolbox import ToolboxClient, ToolboxError


@dataclass
class HookContext:
    state: EpisodeState
    sandbox: Sandbox
    toolbox: ToolboxClient
    tools: tuple[str, ...]
    max_turns: int
    """The turn cap (of each step, for a multi-step Harbor task)."""
    turn: int
    chars_seen: int = 0
    """Characters of every message so far (prompt, actions, observations): the token estimate's base."""
    fired: dict[str, dict[str, Any]] = field(default_factory=dict)
    turn0: int = 0
    """Turns taken before the current step of a multi-step Harbor task (0 otherwise)."""

    @property
    def turns_left(self) -> int:
        """Turns left before the cap (of the current step, for a multi-step Harbor task)."""
        return max(0, self.max_turns - (self.turn - self.turn0))

    def fire(self, hook: str, reason: str) -> None:
        entry = self.fired.setdefault(hook, {"count": 0, "reasons": []})
        entry["count"] += 1
        entry["reasons"].append(reason)


@dataclass(frozen=True)
class Veto:
    reason: str
    """Shown to the model; the call does not run (the turn still counts)."""


@dataclass(frozen=True)
class Rewrite:
    call: ToolCall
    reason: str


class Hook:
    name: ClassVar[str] = ""
    points: ClassVar[tuple[str, ...]] = ()
    defaults: ClassVar[dict[str, Any]] = {}
    requires_any_tool: ClassVar[tuple[str, ...]] = ()
    """The spec is invalid unless at least one of these tools is in it (empty: no requirement)."""
    tracks_edits: ClassVar[bool] = False

    def __init__(self, **params: Any) -> None:
        unknown = set(params) - set(self.defaults)
        if unknown:
            raise ValueError(f"hook {self.name!r} has no parameter(s) {', '.join(sorted(unknown))}; "
                             f"it takes: {', '.join(self.defaults) or 'none'}")
        for key, value in params.items():
            want = type(self.defaults[key])
            if not (isinstance(value, want) or (want is float and isinstance(value, int))) or isinstance(value, bool) != (want is bool):
                raise ValueError(f"hook {self.name!r}: parameter {key!r} must be {want.__name__}, got {value!r}")
        self.params = {**self.defaults, **params}

    def reset(self) -> None:
        """Forget per-episode memory."""

    def episode_start(self, ctx: HookContext) -> list[str]:
        return []

    def pre_decision(self, ctx: HookContext) -> list[str]:
        return []

    def pre_action(self, ctx: HookContext, call: ToolCall) -> Veto | Rewrite | None:
        return None

    def post_feedback(self, ctx: HookContext, calls: list[ToolCall], messages: list[dict[str, Any]]) -> list[str]:
        return []


HOOKS: dict[str, type[Hook]] = {}


def register_hook(cls: type[Hook], replace: bool = False) -> type[Hook]:
    if not cls.name or not cls.points:
        raise ValueError("a hook class needs a name and its lifecycle points")
    if cls.name in HOOKS and not replace:
        raise ValueError(f"a hook named {cls.name!r} is already registered")
    HOOKS[cls.name] = cls
    return cls


def call_key(call: ToolCall) -> str:
    return call.name + ":" + repr(sorted(call.arguments.items()))


# -- episode start ---------------------------------------------------------------------------

@register_hook
class RepoOverview(Hook):
    name = "repo_overview"
    points = ("episode_start",)
    defaults = {"max_entries": 60, "text": "Repository layout (top two levels):\n{listing}"}

    def episode_start(self, ctx: HookContext) -> list[str]:
        n = int(self.params["max_entries"])
        res = ctx.sandbox.run(
            "find . -mindepth 1 -maxdepth 2 \\( -name .git -o -name node_modules -o -name target -o -name "
            f"__pycache__ \\) -prune -o -print 2>/dev/null | LC_ALL=C sort | head -n {n + 1}", timeout=30)
        lines = [l[2:] if l.startswith("./") else l for l in res.output.splitlines() if l.strip()]
        if not lines:
            return []
        listing = "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")
        ctx.fire(self.name, f"{min(len(lines), n)} entries")
        return [self.params["text"].format(listing=listing)]


# -- pre-decision ----------------------------------------------------------------------------

@register_hook
class BudgetReminder(Hook):
    name = "budget_reminder"
    points = ("pre_decision",)
    defaults = {"turns_left": [10, 3], "token_budget": 65536, "token_warn_fraction": 0.8, "chars_per_token": 4.0,
                "text": "Budget: {left} of {total} turns left.{extra} Make sure your fix is in place and submit before they run out.",
                "token_text": "Context: about {tokens} of {budget} tokens used. Keep outputs short (use line ranges and narrow searches)."}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        if not all(isinstance(x, int) and x > 0 for x in self.params["turns_left"]):
            raise ValueError("hook 'budget_reminder': turns_left must be a list of positive integers")
        self.reset()

    def reset(self) -> None:
        self._done: set[int] = set()
        self._token_warned = False
        self._step0 = 0

    def pre_decision(self, ctx: HookContext) -> list[str]:
        out = []
        if ctx.turn0 != self._step0:  # a new step of a multi-step Harbor task: its own budget
            self._done, self._step0 = set(), ctx.turn0
        left = ctx.turns_left
        due = [t for t in self.params["turns_left"] if left <= t and t not in self._done]
        if due:
            self._done.update(t for t in self.params["turns_left"] if t >= left)
            extra = "" if left > 1 else " This is your last turn."
            out.append(self.params["text"].format(left=left, total=ctx.max_turns, extra=extra))
            ctx.fire(self.name, f"{left} turns left")
        tokens = int(ctx.chars_seen / float(self.params["chars_per_token"]))
        budget = int(self.params["token_budget"])
        if budget and not self._token_warned and tokens >= self.params["token_warn_fraction"] * budget:
            self._token_warned = True
            out.append(self.params["token_text"].format(tokens=tokens, budget=budget))
            ctx.fire(self.name, f"~{tokens} tokens used")
        return out


@register_hook
class VerificationReminder(Hook):
    name = "verification_reminder"
    points = ("pre_decision",)
    tracks_edits = True
    requires_any_tool = ("bash", "run_tests", "run_check")
    defaults = {"after_turns": 2, "max_reminders": 3,
                "text": "You changed the code {ago} but have not run any test since. Run {how} to check your "
                        "change before you submit."}

    def reset(self) -> None:
        self._reminded_edit: int | None = None
        self._count = 0

    def pre_decision(self, ctx: HookContext) -> list[str]:
        st = ctx.state
        if st.last_edit_turn is None or st.tested_since_edit or self._count >= self.params["max_reminders"]:
            return []
        waited = ctx.turn - st.last_edit_turn
        if waited < self.params["after_turns"] or self._reminded_edit == st.edits:
            return []
        self._reminded_edit = st.edits
        self._count += 1
        how = "run_tests" if "run_tests" in ctx.tools else ("run_check" if "run_check" in ctx.tools else "the tests with bash")
        ctx.fire(self.name, f"edited at turn {st.last_edit_turn}, no test run in {waited} turns")
        return [self.params["text"].format(ago=f"{waited} turns ago", how=how)]


# -- pre-action ------------------------------------------------------------------------------

_INTERACTIVE = re.compile(r"(^|[;&|(]\s*|\bsudo\s+)(vim?|nano|emacs|pico|less|more|top|htop|man|ipython|watch)(\s|$)")
_BARE_REPL = re.compile(r"(^|[;&|]\s*)(python3?|node|irb)\s*($|[;&|])")
_DESTRUCTIVE = re.compile(r"\brm\s+(-[a-zA-Z]*[rf][a-zA-Z]*\s+)+(--no-preserve-root\s+)?(/|~|/\*|\$HOME|\.\.?/?)(\s|$)|"
                          r"\bmkfs\b|\bdd\s+[^|]*of=/dev/|:\(\)\s*\{\s*:\|:&\s*\};:|\bgit\s+(reset\s+--hard|clean\s+-[a-z]*f|checkout\s+(--\s+)?\.(\s|$))")
_NETWORK = re.compile(r"\b(curl|wget|ssh|scp|nc|telnet)\s|\b(pip3?|uv|poetry|conda)\s+(install|add)\b|"
                      r"\b(npm|yarn|pnpm)\s+(install|add|i)\b|\bgo\s+get\b|\bcargo\s+(install|add)\b|"
                      r"\bgit\s+(clone|fetch|pull|push)\b|\bapt(-get)?\s+install\b")


_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?[^\n]*\n.*?^\s*\1\s*$", re.S | re.M)
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")


def code_only(command: str) -> str:
    """The command without quoted strings and here-document bodies (data, not commands)."""
    return _QUOTED.sub("''", _HEREDOC.sub("<<EOF", command))


@register_hook
class DangerousCommandGuard(Hook):
    name = "dangerous_command_guard"
    points = ("pre_action",)
    requires_any_tool = ("bash", "run_check")
    defaults = {"block_interactive": True, "block_destructive": True, "block_network": True, "extra_patterns": [],
                "text": "Not run: {why}. {advice}"}

    def pre_action(self, ctx: HookContext, call: ToolCall) -> Veto | None:
        if call.name not in ("bash", "run_check"):
            return None
        cmd = code_only(str(call.arguments.get("command", "")))
        p = self.params
        why = advice = ""
        if p["block_interactive"] and (_INTERACTIVE.search(cmd) or _BARE_REPL.search(cmd)):
            why, advice = "it starts an interactive program, which would wait for input until it times out", \
                "Use non-interactive commands (sed -n, cat, python -c, an edit tool)."
        elif p["block_destructive"] and _DESTRUCTIVE.search(cmd):
            why, advice = "it would delete or discard far more than a fix needs", \
                "Remove or restore specific files instead (restore_file, git checkout -- FILE)."
        elif p["block_network"] and _NETWORK.search(cmd):
            why, advice = "the sandbox has no network access, so it cannot succeed", \
                "Work with what is installed; read the code instead of fetching it."
        else:
            for pat in p["extra_patterns"]:
                if pat and re.search(pat, cmd):
                    why, advice = f"it matches the blocked pattern {pat!r}", "Use another command."
                    break
        if not why:
            return None
        ctx.fire(self.name, why.split(",")[0])
        return Veto(p["text"].format(why=why, advice=advice))


@register_hook
class ActionNormalizer(Hook):
    name = "action_normalizer"
    points = ("pre_action",)
    defaults = {"strip_prompt": True, "no_pager": True, "relative_paths": True}
    _PAGER = re.compile(r"(^|[;&|]\s*)git\s+(?!--no-pager)(log|diff|show|blame)\b")

    def pre_action(self, ctx: HookContext, call: ToolCall) -> Rewrite | None:
        args = dict(call.arguments)
        reasons = []
        if call.name in ("bash", "run_check") and isinstance(args.get("command"), str):
            cmd = args["command"].strip()
            if self.params["strip_prompt"] and cmd.startswith("$ "):
                cmd = cmd[2:]
                reasons.append("removed a leading shell prompt '$ '")
            if self.params["no_pager"] and self._PAGER.search(cmd):
                cmd = self._PAGER.sub(lambda m: f"{m.group(1)}git --no-pager {m.group(2)}", cmd)
                reasons.append("git runs without a pager")
            if cmd != call.arguments["command"].strip():
                args["command"] = cmd
        prefix = ctx.sandbox.workdir.rstrip("/") + "/"
        if self.params["relative_paths"] and isinstance(args.get("path"), str) and args["path"].startswith(prefix):
            args["path"] = args["path"][len(prefix):] or "."
            reasons.append("path made relative to the repository root")
        if not reasons:
            return None
        ctx.fire(self.name, "; ".join(reasons))
        return Rewrite(ToolCall(call.name, args, call.call_id), "; ".join(reasons))


def _diff(ctx: HookContext, stat: bool = False) -> str | None:
    try:
        res = ctx.toolbox.call("view_diff", {"stat": stat})
    except ToolboxError:
        return None
    if not res.ok:
        return None
    return "" if res.data.get("empty") else res.output


@register_hook
class SubmitGate(Hook):
    name = "submit_gate"
    points = ("pre_action",)
    tracks_edits = True
    defaults = {"refuse_empty": True, "refuse_untested": True,
                "empty_text": "Submission refused: your diff is empty, so there is nothing to grade. Make your fix "
                              "first. (Submit again to give up.)",
                "untested_text": "Submission refused once: you have not run tests since your last edit. Run {how} "
                                 "and check the result, then submit again."}

    def reset(self) -> None:
        self._refused: set[str] = set()

    def pre_action(self, ctx: HookContext, call: ToolCall) -> Veto | None:
        if call.name != "submit":
            return None
        if self.params["refuse_empty"] and "empty" not in self._refused:
            diff = _diff(ctx, stat=True)
            if diff == "":
                self._refused.add("empty")
                ctx.fire(self.name, "empty diff")
                return Veto(self.params["empty_text"])
        if self.params["refuse_untested"] and "untested" not in self._refused and ctx.state.edits \
                and not ctx.state.tested_since_edit:
            self._refused.add("untested")
            how = "run_tests" if "run_tests" in ctx.tools else "the relevant tests"
            ctx.fire(self.name, "no test run since the last edit")
            return Veto(self.params["untested_text"].format(how=how))
        return None


@register_hook
class ReviewOnSubmit(Hook):
    name = "review_on_submit"
    points = ("pre_action",)
    defaults = {"max_chars": 6000,
                "text": "Before you submit, review your final diff:\n{diff}\nIs every hunk needed and correct? Are "
                        "debug prints and scratch files removed? Does it handle the cases the issue describes? "
                        "Fix anything wrong, or submit again to confirm."}

    def reset(self) -> None:
        self._shown = False

    def pre_action(self, ctx: HookContext, call: ToolCall) -> Veto | None:
        if call.name != "submit" or self._shown:
            return None
        diff = _diff(ctx)
        if not diff:  # nothing to review (the submit gate speaks about empty diffs)
            return None
        self._shown = True
        cap = int(self.params["max_chars"])
        shown = diff if len(diff) <= cap else diff[:cap] + f"\n[... {len(diff) - cap} more chars; use view_diff]"
        ctx.fire(self.name, f"review of a {diff.count(chr(10))}-line diff")
        return Veto(self.params["text"].format(diff=shown))


# -- post-feedback ---------------------------------------------------------------------------

@register_hook
class LongOutputCondenser(Hook):
    name = "long_output_condenser"
    points = ("post_feedback",)
    defaults = {"max_chars": 6000, "head_lines": 40, "tail_lines": 60, "save_full": True,
                "text": "[{cut} lines cut from this output ({total} lines in all).{where}]"}

    def post_feedback(self, ctx: HookContext, calls: list[ToolCall], messages: list[dict[str, Any]]) -> list[str]:
        for m in messages:
            if m.get("source") != "tool" or len(m["content"]) <= self.params["max_chars"]:
                continue
            lines = m["content"].splitlines()
            h, t = int(self.params["head_lines"]), int(self.params["tail_lines"])
            if len(lines) <= h + t:  # few, very long lines: cut by characters
                half = int(self.params["max_chars"]) // 2
                lines = [m["content"][:half], "", m["content"][-half:]]
                h, t = 1, 1
            where = ""
            if self.params["save_full"]:
                name = f"turn-{ctx.turn}-{len(ctx.fired.get(self.name, {}).get('reasons', []))}.txt"
                try:
                    res = ctx.toolbox.call("save_output", {"name": name, "content": m["content"]})
                    if res.ok:
                        where = f" The full output is in {res.output}: read parts of it with read_file or grep."
                except ToolboxError:
                    pass
            cut = len(lines) - h - t
            note = self.params["text"].format(cut=cut, total=len(m["content"].splitlines()), where=where)
            m["content"] = "\n".join(lines[:h] + [note] + lines[-t:])
            ctx.fire(self.name, f"{len(m['content'])} chars kept of a long {m.get('name', 'tool')} output")
        return []


@register_hook
class RepeatedActionAlert(Hook):
    name = "repeated_action_alert"
    points = ("post_feedback",)
    defaults = {"repeats": 2, "text": "You have now sent the same {tool} call {n} times in a row. Repeating it will "
                                      "not give new information: change your approach."}

    def post_feedback(self, ctx: HookContext, calls: list[ToolCall], messages: list[dict[str, Any]]) -> list[str]:
        steps = ctx.state.steps
        n = int(self.params["repeats"])
        if len(steps) < n or not steps[-1].key:
            return []
        last = steps[-1].key
        run = 0
        for s in reversed(steps):
            if s.key != last:
                break
            run += 1
        if run < n or run % n:
            return []
        tool = last.split(":", 1)[0]
        ctx.fire(self.name, f"{tool} repeated {run} times")
        return [self.params["text"].format(tool=tool, n=run)]


@register_hook
class StuckDetector(Hook):
    """Named patterns (OpenHands-style): the same action and observation again and again, the same
    error again and again, or two actions alternating with the same results."""

    name = "stuck_detector"
    points = ("post_feedback",)
    defaults = {"same_step": 3, "same_error": 3, "alternation": 6,
                "text": "You seem stuck ({pattern}). Step back: re-read the issue, check view_diff for what you "
                        "have changed, restore files that went wrong, and try a different approach."}

    def reset(self) -> None:
        self._last_fire = -10**9

    def post_feedback(self, ctx: HookContext, calls: list[ToolCall], messages: list[dict[str, Any]]) -> list[str]:
        steps = ctx.state.steps
        p = self.params
        pattern = ""
        if _tail_same(steps, p["same_step"], lambda s: (s.key, s.observation)):
            pattern = f"the same action with the same result {p['same_step']} times"
        elif _tail_same(steps, p["same_error"], lambda s: s.observation if s.error else None):
            pattern = f"the same error {p['same_error']} times in a row"
        elif len(steps) >= p["alternation"] >= 4:
            tail = steps[-p["alternation"]:]
            a, b = (tail[0].key, tail[0].observation), (tail[1].key, tail[1].observation)
            if a != b and all((s.key, s.observation) == (a if i % 2 == 0 else b) for i, s in enumerate(tail)):
                pattern = "alternating between two actions with the same results"
        if not pattern or len(steps) - self._last_fire < min(p["same_step"], p["same_error"]):
            return []
        self._last_fire = len(steps)
        ctx.fire(self.name, pattern)
        return [p["text"].format(pattern=pattern)]


def _tail_same(steps: list[Any], n: int, key: Any) -> bool:
    if n < 2 or len(steps) < n:
        return False
    vals = [key(s) for s in steps[-n:]]
    return vals[0] is not None and all(v == vals[0] for v in vals)


def observation_digest(messages: list[dict[str, Any]]) -> str:
    return digest("\n".join(m["content"] for m in messages if m.get("source") == "tool"))
