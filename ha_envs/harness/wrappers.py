"""The harness as a stack of ``gymnasium.Wrapper``s over RepairEnv, built from a HarnessSpec::

    EpisodeGuard           refuses step/end/abort outside an episode (reset first), as OrderEnforcing
      ParserWrapper        assistant message -> tool calls, or a typed FormatError
        HooksWrapper       episode start / pre-decision / pre-action / post-feedback hooks, in spec order
          ToolsWrapper     runs each call's tool inside the sandbox
            RepairEnv      counts turns and calls, enforces limits, grades on submit

Each layer changes one thing. A layer hands the next one structured actions (``ToolCall`` lists,
``FormatError``, or an already handled :class:`~ha_envs.env.HarnessTurn`), so the base env stays
the one place that counts turns and ends episodes. ``build`` makes the whole stack from the spec at
once: the base env with the spec's limits, and one :class:`HarnessRuntime` given to the tools and
hooks layers (what both need of the episode); no layer reads another's private state or the base
through ``unwrapped``.
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym

from ..actions import FormatError, ToolCall
from ..env import SYSTEM_PROMPT, EpisodeOverError, HarnessTurn, RepairEnv, tool_message
from ..messages import message
from ..sandbox.base import COMMAND_TIMEOUT_S, PatchError, SandboxError
from .hooks import Hook, HookContext, Rewrite, Veto, call_key, observation_digest
from .tool_calls import ToolCallParser, format_instructions
from .runtime import HarnessRuntime
from .spec import HarnessSpec, hook_of, load_spec, tool_of
from .state import Step, digest
from .tools import ToolContext, ToolOutput, run_bash, run_check


class HarnessLayer(gym.Wrapper):
    """A harness wrapper. Besides ``reset``/``step`` it passes the two ways an episode ends from
    outside down the stack, so every layer sees them (and adds its part of ``info``): ``end``
    (the agent loop ran out of context: truncated, graded as it stands) and ``abort`` (an
    infrastructure fault: masked). Call them on the outermost env (``env.get_wrapper_attr("end")``
    where other wrappers may sit on top). A layer reads the env below only through public attributes
    and ``get_wrapper_attr``, never through ``unwrapped``, so any wrapper in between can intercept."""

    def end(self, reason: str = "context_limit"):
        return self._ended(self.env.get_wrapper_attr("end")(reason))

    def abort(self, error: str, reason: str = "sandbox_error"):
        return self._ended(self.env.get_wrapper_attr("abort")(error, reason=reason))

    def _ended(self, result: tuple) -> tuple:
        """This layer's additions to the final step (none by default)."""
        return result

    def _below(self, name: str) -> Any:
        return self.env.get_wrapper_attr(name)


class EpisodeGuard(HarnessLayer):
    """The stack's one reset-before-step guard (Gymnasium's ``OrderEnforcing``, extended to the
    episode's end): ``step``, ``end`` and ``abort`` before the first ``reset``, after the episode
    ended or after ``close`` raise :class:`~ha_envs.env.EpisodeOverError`, so the layers below
    never run a tool or a hook outside an episode and need not ask the base whether one runs."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._has_reset = False
        self._running = False

    @property
    def has_reset(self) -> bool:
        return self._has_reset

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._running = False  # a reset that fails (the sandbox cannot start) leaves no episode
        obs, info = self.env.reset(seed=seed, options=options)
        self._has_reset = self._running = True
        return obs, info

    def _check(self, what: str) -> None:
        if not self._has_reset:
            raise EpisodeOverError(f"{what}() before reset(): call reset() first")
        if not self._running:
            raise EpisodeOverError(f"{what}() after the episode ended: call reset() to start another")

    def step(self, action: Any):
        self._check("step")
        result = self.env.step(action)
        self._running = not (result[2] or result[3])
        return result

    def end(self, reason: str = "context_limit"):
        self._check("end")
        result = super().end(reason)
        self._running = False
        return result

    def abort(self, error: str, reason: str = "sandbox_error"):
        self._check("abort")
        result = super().abort(error, reason)
        self._running = False
        return result

    def close(self) -> None:
        self._running = False
        super().close()


class ToolsWrapper(HarnessLayer):
    """Runs the harness's tools. Starts the shared runtime (episode state, in-sandbox toolbox) at
    each reset and keeps it up to date as the tools run."""

    def __init__(self, env: gym.Env, runtime: HarnessRuntime, command_timeout_s: float = COMMAND_TIMEOUT_S) -> None:
        super().__init__(env)
        self.runtime = runtime
        self.command_timeout_s = command_timeout_s

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        return self.runtime.tool_schemas

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.runtime.start(self._below("sandbox"), self.command_timeout_s)
        info["tools"] = self.tool_schemas
        return obs, info

    def step(self, action: Any):
        try:
            return self._step(action)
        except SandboxError as exc:
            return self.abort(str(exc))

    def _ended(self, result: tuple):
        obs, reward, terminated, truncated, info = result
        return obs, reward, terminated, truncated, self._info(info)

    def _step(self, action: Any):
        st = self.runtime.state
        if isinstance(action, FormatError):
            st.steps.append(Step(self._below("turn") + 1, f"format_error:{action.kind}", digest(str(action)),
                                 error=True))
            return self.env.step(action)
        if isinstance(action, HarnessTurn):
            return self.env.step(action)
        calls = [action] if isinstance(action, ToolCall) else list(action)
        st.turn = self._below("turn") + 1
        messages: list[dict[str, Any]] = []
        sandbox_s = 0.0
        for i, call in enumerate(calls):
            if call.name == "submit":
                self._deliver(call)
                return self._turn(HarnessTurn(messages, calls[: i + 1], submit=True, sandbox_s=sandbox_s))
            t0 = time.monotonic()
            out = self.run_tool(call)
            sandbox_s += time.monotonic() - t0
            messages.append(tool_message(call, out.text, out.ok))
        st.steps.append(Step(st.turn, "|".join(call_key(c) for c in calls), observation_digest(messages),
                             error=any(m.get("error") for m in messages)))
        return self._turn(HarnessTurn(messages, calls, sandbox_s=sandbox_s))

    def run_tool(self, call: ToolCall) -> ToolOutput:
        tool, opts = self.runtime.tools[call.name]
        sandbox, st, toolbox = self._below("sandbox"), self.runtime.state, self.runtime.toolbox
        assert tool.impl is not None and sandbox is not None and toolbox is not None
        out = tool.impl(ToolContext(sandbox, toolbox, st, self.command_timeout_s), call.arguments, opts)
        if out.edited:
            st.mark_edit()
        if (out.edited or out.tested) and tool.impl not in (run_bash, run_check):
            st.fingerprint = None  # stale: a file tool or a test run changed the tree
        if out.tested:
            st.mark_test()
        if not out.ok:
            st.tool_errors += 1
        return out

    def _deliver(self, call: ToolCall) -> None:
        """Delivery evidence for the submission: the diff and whether tests ran after the last edit."""
        _, opts = self.runtime.tools["submit"]
        st = self.runtime.state
        if not opts.get("evidence"):
            return
        sandbox = self._below("sandbox")
        assert sandbox is not None
        try:
            patch = sandbox.diff()
        except PatchError as exc:  # the final diff in the env reports it as the verdict
            st.delivery = {"diff": "", "files": [], "edits": st.edits, "test_runs": st.test_runs,
                           "tested_after_last_edit": st.tested_since_edit, "empty": False, "error": str(exc)}
            return
        files = sorted({line[6:] for line in patch.splitlines() if line.startswith("+++ b/")})
        st.delivery = {"diff": patch, "files": files, "edits": st.edits, "test_runs": st.test_runs,
                       "tested_after_last_edit": st.tested_since_edit, "empty": not patch.strip()}

    def _turn(self, turn: HarnessTurn):
        obs, reward, terminated, truncated, info = self.env.step(turn)
        return obs, reward, terminated, truncated, self._info(info)

    def _info(self, info: dict[str, Any]) -> dict[str, Any]:
        st = self.runtime.state
        info.update(edits=st.edits, test_runs=st.test_runs, tool_errors=st.tool_errors)
        if st.delivery is not None and info.get("termination") in ("submitted", "verdict_tampered"):
            info["delivery"] = {k: v for k, v in st.delivery.items() if k != "diff"}
        return info


class HooksWrapper(HarnessLayer):
    """Runs the hooks at the four lifecycle points, in spec order, and counts their firings. Reads
    the episode through the runtime it shares with the tools layer (started there at each reset)."""

    def __init__(self, env: gym.Env, hooks: list[Hook], runtime: HarnessRuntime, max_turns: int) -> None:
        super().__init__(env)
        self.hooks = hooks
        self.runtime = runtime
        self.max_turns = max_turns
        self._ctx: HookContext | None = None

    def _context(self) -> HookContext:
        sandbox, toolbox = self._below("sandbox"), self.runtime.toolbox
        assert sandbox is not None and toolbox is not None
        return HookContext(self.runtime.state, sandbox, toolbox, self.runtime.tool_names, self.max_turns,
                           self._below("turn"))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        for h in self.hooks:
            h.reset()
        ctx = self._ctx = self._context()
        ctx.chars_seen = sum(len(m["content"]) for m in obs)
        for h in self.hooks:
            obs += self._say(ctx, h, h.episode_start(ctx))
        obs += self._pre_decision(ctx)
        info["hooks"] = _fired(ctx)
        return obs, info

    def step(self, action: Any):
        try:
            return self._step(action)
        except SandboxError as exc:  # a hook's own sandbox call failed
            return self.abort(str(exc))

    def _ended(self, result: tuple):
        obs, reward, terminated, truncated, info = result
        info["hooks"] = _fired(self._ctx) if self._ctx else {}
        return obs, reward, terminated, truncated, info

    def _step(self, action: Any):
        ctx = self._ctx
        if ctx is None:
            return self.env.step(action)
        ctx.chars_seen += _action_chars(action)
        notes: list[dict[str, Any]] = []
        if isinstance(action, list):
            calls: list[ToolCall] = []
            for call in action:
                for h in self.hooks:
                    decision = h.pre_action(ctx, call)
                    if isinstance(decision, Veto):
                        why = decision.reason + (" (None of this turn's calls ran.)" if len(action) > 1 else "")
                        veto = message("user", why, f"hook:{h.name}", vetoed=call.name)
                        self.runtime.state.steps.append(
                            Step(ctx.turn + 1, call_key(call), observation_digest([]), error=True))
                        return self._finish_step(ctx, [call], self.env.step(HarnessTurn(notes + [veto], calls + [call])))
                    if isinstance(decision, Rewrite):
                        notes.append(message("user", f"Note: `{call.name}` was adjusted ({decision.reason}).",
                                             f"hook:{h.name}"))
                        call = decision.call
                calls.append(call)
            action = calls
        result = self.env.step(action)
        if notes:
            result = (notes + result[0],) + tuple(result[1:])
        return self._finish_step(ctx, action if isinstance(action, list) else [], result)

    def _finish_step(self, ctx: HookContext, calls: list[ToolCall], result: tuple):
        obs, reward, terminated, truncated, info = result
        ctx.turn = self._below("turn")
        # a multi-step Harbor task's turn cap holds per step: the turns left count from the step's start
        ctx.turn0 = self._below("turns_before_step")
        if not (terminated or truncated):
            for h in self.hooks:
                obs += self._say(ctx, h, h.post_feedback(ctx, calls, obs))
            ctx.chars_seen += sum(len(m["content"]) for m in obs)
            extra = self._pre_decision(ctx)
            ctx.chars_seen += sum(len(m["content"]) for m in extra)
            obs += extra
        info["hooks"] = _fired(ctx)
        return obs, reward, terminated, truncated, info

    def _pre_decision(self, ctx: HookContext) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for h in self.hooks:
            out += self._say(ctx, h, h.pre_decision(ctx))
        return out

    @staticmethod
    def _say(ctx: HookContext, hook: Hook, texts: list[str]) -> list[dict[str, Any]]:
        return [message("user", t, f"hook:{hook.name}") for t in texts]


def _fired(ctx: HookContext) -> dict[str, dict[str, Any]]:
    return {k: {"count": v["count"], "reasons": list(v["reasons"])} for k, v in ctx.fired.items()}


def _action_chars(action: Any) -> int:
    if isinstance(action, list):
        return sum(len(c.name) + len(str(c.arguments)) for c in action)
    return len(str(action))


WORKFLOW = ("Explore the code, reproduce the issue, edit the source files to fix it and check your fix. When you "
            "are done, call `submit`: your changes to the repository, as they stand, are graded by tests you cannot see.")


class ParserWrapper(HarnessLayer):
    """Turns one assistant message into tool calls for the layers below, or a typed FormatError."""

    def __init__(self, env: gym.Env, parser: ToolCallParser, spec: HarnessSpec,
                 tool_parameters: dict[str, dict[str, Any]]) -> None:
        super().__init__(env)
        self.parser = parser
        self.harness_spec = spec
        self._schemas = dict(tool_parameters)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        workdir = info.get("workdir", "/testbed")
        if self.harness_spec.system_prompt or set(self._schemas) - {"bash", "submit"} or self.parser.fmt not in ("auto", "fenced_bash"):
            intro = (self.harness_spec.system_prompt or SYSTEM_PROMPT.split("\n")[0]).format(workdir=workdir)
            obs[0] = dict(obs[0], content=intro + "\n" + format_instructions(self.parser.fmt, info["tools"]) + "\n" + WORKFLOW)
        info.update(harness=self.harness_spec.name, harness_hash=self.harness_spec.hash, parser=self.parser.fmt)
        return obs, info

    def step(self, action: Any):
        try:
            parsed = self.parser.parse(action, self._schemas)
        except FormatError as err:
            return self.env.step(err)
        obs, reward, terminated, truncated, info = self.env.step(parsed.calls)
        if parsed.note:
            obs = [message("user", parsed.note, "system")] + obs
        return obs, reward, terminated, truncated, info


def build(spec: "HarnessSpec | str", **env_options: Any) -> gym.Env:
    """A ``RepairEnv`` inside the harness ``spec`` (a spec, a preset name or a spec path), made
    whole here: the base env with the spec's limits, the layers with theirs and one shared runtime,
    the guard on top. ``env_options``: further ``RepairEnv`` arguments (``task``, ``sandbox``,
    ``sandbox_options``, ...); the limits are the spec's (``spec.with_limits`` to change them)."""
    spec = load_spec(spec)
    given = sorted(set(env_options) & {"max_turns", "max_format_errors", "command_timeout_s",
                                       "output_head_bytes", "output_tail_bytes"})
    if given:
        raise TypeError(f"build() takes the limits from the spec, not {', '.join(given)}: use spec.with_limits")
    limits = spec.limits
    sandbox_options = {**(env_options.pop("sandbox_options", None) or {}), "command_timeout_s": limits.command_timeout_s}
    env = RepairEnv(max_turns=limits.max_turns, max_format_errors=spec.parser.max_format_errors,
                    command_timeout_s=limits.command_timeout_s, output_head_bytes=limits.output_head_bytes,
                    output_tail_bytes=limits.output_tail_bytes, sandbox_options=sandbox_options, **env_options)
    hooks = [hook_of(c) for c in spec.hooks]
    runtime = HarnessRuntime.of([tool_of(c) for c in spec.tools], track_edits=any(h.tracks_edits for h in hooks))
    wrapped: gym.Env = ToolsWrapper(env, runtime, limits.command_timeout_s)
    wrapped = HooksWrapper(wrapped, hooks, runtime, limits.max_turns)
    wrapped = ParserWrapper(wrapped, ToolCallParser(spec.parser.format, spec.parser.multi_call), spec,
                            runtime.tool_parameters)
    return EpisodeGuard(wrapped)
