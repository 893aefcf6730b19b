"""RepairEnv: one repair task as a Gymnasium environment (harness H0: bash + submit).

- ``reset(seed=None, options={"task": Task | instance_id})`` -> (observation, info)
- ``step(assistant_message)`` -> (observation, reward, terminated, truncated, info)

The observation is the list of new messages (see ``messages.py``). The reward is the grader's
verdict at termination (1.0 resolved, else 0.0) and 0 before. ``info["termination"]`` says why an
episode ended; ``info["mask_sample"]`` is True when the infrastructure (not the agent) failed, so a
trainer drops the sample instead of learning from a silent 0. A submission whose grading found the
verdict forged (hidden canaries, exit status: ``grading/canaries.py``) ends ``verdict_tampered``:
the agent's doing, reward 0, not masked.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypedDict

import gymnasium as gym

from .actions import H0_TOOLS, FormatError, ToolCall, parse_h0_action
from .grading.grader import Grader
from .grading.report import GradeReport, GradingError, ungradable
from .grading.harbor import graded_reward
from .grading.hidden import hidden_names_in
from .harbor.steps import STEP_PROMPT, StepRun, is_multi_step, stage
from .loaders import load_suite
from .messages import AssistantMessageSpace, MessageListSpace, message
from .sandbox import Sandbox, SandboxError, make_sandbox
from .sandbox.base import COMMAND_TIMEOUT_S, PatchError
from .task import Task, TaskError
from .termination import MASKED, TRUNCATED, Termination

TERMINATIONS = tuple(t.value for t in (
    Termination.SUBMITTED, Termination.MAX_TURNS, Termination.CONTEXT_LIMIT, Termination.FORMAT_ERRORS,
    Termination.AGENT_TIMEOUT, Termination.SANDBOX_ERROR, Termination.GRADING_ERROR, Termination.MODEL_ERROR,
    Termination.VERDICT_TAMPERED))
"""The endings the env itself gives (``termination.py`` has them all, with what each means)."""
MAX_TURNS = 60
"""The default turn cap of an episode (a harness's ``limits.max_turns``)."""
MAX_FORMAT_ERRORS = 3
"""The default count of unusable messages in a row that ends an episode (``format_errors``)."""

SYSTEM_PROMPT = """You are an expert software engineer fixing an issue in the repository at {workdir}.
You act through a bash shell that keeps its state (cwd, exported variables) between commands.
Each reply must contain exactly one ```bash``` block with the command to run (or one `bash` tool call).
Explore the code, reproduce the issue, edit the source files to fix it, and check your fix.
When you are done, reply with a ```bash``` block containing only `submit` (or call the `submit` tool):
your changes to the repository, as they stand, are then graded by tests you cannot see."""

TASK_PROMPT = """<issue>
{problem}
</issue>

The repository is checked out at {workdir}. Fix the issue by changing non-test source files."""

SKILL_PROMPT = """<skill>
Guidance that worked on problems of this kind (how the repair works, not where):
{skill}
</skill>"""

SandboxMaker = Callable[[Task], Sandbox]


class StepInfo(TypedDict, total=False):
    """The ``info`` of ``reset`` and ``step``, harness layers included: what each key holds and who
    writes it. Every step carries the first six; the rest appear where said."""

    instance_id: str
    termination: Termination | None
    """Why the episode ended (``termination.py``); None while it runs."""
    mask_sample: bool
    """``termination.masked``: an infrastructure fault, no verdict."""
    turn: int
    tool_counts: dict[str, int]
    """Calls per tool so far (``format_error`` counts unusable messages)."""
    hooks: dict[str, Any]
    """Hook firings so far (the hooks layer; ``{}`` without hooks)."""
    timings: dict[str, float]
    """At the end only: reset, sandbox, grading and episode seconds (equal seeds, equal infos before)."""
    patch: str
    """At the end, once graded: the diff the grader took."""
    grade: dict[str, Any]
    """At the end, once graded: ``GradeReport.to_dict()`` (status, tests, flags)."""
    resolved: bool
    error: str
    """At a masked end: what failed."""
    harness: str
    """reset, harness stack: the spec's name (H0's base env: ``h0``)."""
    harness_hash: str
    parser: str
    """reset, harness stack: the tool-call format."""
    tools: list[dict[str, Any]]
    """reset: the tool schemas the agent may call."""
    workdir: str
    edits: int
    """The tools layer: edits so far, and the test runs, tool errors, delivery below."""
    test_runs: int
    tool_errors: int
    delivery: dict[str, Any]
    harbor_step: str
    """A multi-step Harbor task: the step being worked on (reset; ``ha_envs/harbor/steps.py``)."""
    harbor_steps: list[dict[str, Any]]
    """A multi-step Harbor task, at the end: each graded step's name, reward (1 or 0, as a
    single-step grade), the reward its verifier wrote, status, how it ended, min_reward."""
    env_node: str
    """A remote env (``ha_agents.cluster.remote_env``): the Ray node that holds it."""


class EpisodeOverError(RuntimeError):
    """step() was called after the episode ended; call reset() first."""


@dataclass
class HarnessTurn:
    """An action the harness wrappers already handled (tools run, or a call vetoed by a hook).

    The base env still owns the episode's accounting: it counts the turn and the calls, appends
    ``messages`` to the observation, and ends the episode (grading it) when ``submit`` is set or a
    limit is reached."""

    messages: list[dict[str, Any]]
    calls: list[ToolCall] = field(default_factory=list)
    submit: bool = False
    sandbox_s: float = 0.0
    """Seconds the harness's tools spent in the sandbox this turn (added to ``timings``)."""


class RepairEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(
        self,
        task: Task | str | None = None,
        tasks: Sequence[Task] | None = None,
        suite: str = "mini",
        sandbox: str | SandboxMaker = "local",
        sandbox_options: dict[str, Any] | None = None,
        grader: Grader | None = None,
        max_turns: int = MAX_TURNS,
        max_format_errors: int = MAX_FORMAT_ERRORS,
        command_timeout_s: float = COMMAND_TIMEOUT_S,
        output_head_bytes: int | None = None,
        output_tail_bytes: int | None = None,
        episode_timeout_s: float | None = None,
        grade_on_truncation: bool = True,
    ) -> None:
        """
        Args:
            task: the task (or its instance id in ``suite``) every reset uses unless options say otherwise.
            tasks: a pool to draw from (seeded) when no task is given to reset.
            sandbox: ``"local"`` or a callable ``task -> Sandbox``.
            max_turns: steps before the episode is truncated (``max_turns``).
            max_format_errors: consecutive unusable messages before it ends (``format_errors``).
            command_timeout_s: the cap on one command (``sandbox_options`` may set it instead).
            output_head_bytes, output_tail_bytes: how much of a long command output the agent sees
                (None: the sandbox's default); the grader's sandboxes keep their own.
            episode_timeout_s: wall-clock cap for the episode (``agent_timeout``).
            grade_on_truncation: grade the work copy as it stands when the episode is truncated,
                as SWE-agent's autosubmission does (reward is reported, the sample stays usable).
        """
        super().__init__()
        self.observation_space = MessageListSpace()
        self.action_space = AssistantMessageSpace()
        self._pool: list[Task] = list(tasks) if tasks else []
        self._suite = suite
        self._default = self._resolve(task) if task is not None else None
        if self._default is None and not self._pool:
            self._pool = load_suite(suite)
        self._sandbox_kind = sandbox
        self._sandbox_options = dict(sandbox_options or {})
        self._sandbox_options.setdefault("command_timeout_s", command_timeout_s)
        if grader is None and sandbox == "docker":
            from .grading.sandboxes import docker_sandbox_factory
            from .sandbox.docker import DockerSandboxConfig

            opts = {k: v for k, v in self._sandbox_options.items() if k in DockerSandboxConfig.__dataclass_fields__}
            grader = Grader(docker_sandbox_factory(DockerSandboxConfig(**opts)))
        self.grader = grader or Grader()
        # what the agent sees of a long output: its sandbox's, never the grader's (set above)
        self._sandbox_options.update({k: v for k, v in (("output_head_bytes", output_head_bytes),
                                                        ("output_tail_bytes", output_tail_bytes)) if v is not None})
        self.max_turns = max_turns
        self.max_format_errors = max_format_errors
        self.episode_timeout_s = episode_timeout_s
        self.grade_on_truncation = grade_on_truncation
        self.task: Task | None = None
        self.sandbox: Sandbox | None = None
        self._done = True
        self._reset_state()

    # -- helpers -------------------------------------------------------------------------------
    def _resolve(self, task: Task | str) -> Task:
        if isinstance(task, Task):
            return task
        for t in self._pool or load_suite(self._suite):
            if t.instance_id == task:
                return t
        raise TaskError(f"unknown task {task!r} in suite {self._suite!r}")

    def _reset_state(self) -> None:
        self.turn = 0
        self.format_errors = 0
        self.tool_counts: Counter[str] = Counter()
        self.timings: dict[str, float] = {"sandbox_s": 0.0, "grade_s": 0.0, "reset_s": 0.0}
        self._actions: list[str] = []  # what the agent wrote (for the hidden-test-names flag)
        self._actions_chars = 0
        self._steps: StepRun | None = None  # a multi-step Harbor task's progress (harbor/steps.py)
        self._step_turn0 = 0
        self._step_t0 = time.monotonic()
        # wall-clock seconds: reset, commands and tools in the sandbox, grading
        self._t0 = time.monotonic()

    def _make_sandbox(self, task: Task) -> Sandbox:
        if callable(self._sandbox_kind):
            return self._sandbox_kind(task)
        return make_sandbox(self._sandbox_kind, task, **self._sandbox_options)

    @property
    def command_timeout_s(self) -> float:
        """The cap on one command in the sandbox (the harness's ``limits.command_timeout_s``)."""
        return float(self._sandbox_options.get("command_timeout_s", COMMAND_TIMEOUT_S))

    @property
    def turns_before_step(self) -> int:
        """Turns taken before the current step of a multi-step Harbor task (0 otherwise): the turn
        cap counts from there (``_after_action``)."""
        return self._step_turn0

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI-form schemas of the tools this env understands."""
        return list(H0_TOOLS.values())

    # -- gym API -------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """``options``: ``task`` (a Task or an instance id), ``skill`` (a training-time skill text,
        shown after the task as a non-trainable ``source="skill"`` message)."""
        super().reset(seed=seed)
        options = options or {}
        if options.get("task") is not None:
            task = self._resolve(options["task"])
        elif self._default is not None:
            task = self._default
        else:
            task = self._pool[int(self.np_random.integers(len(self._pool)))]
        self._reset_state()
        t0 = time.monotonic()
        try:
            if self.sandbox is not None and self.task is not None and task.instance_id == self.task.instance_id:
                self.sandbox.reset()
            else:
                if self.sandbox is not None:
                    self.sandbox.close()
                self.sandbox = self._make_sandbox(task)
                self.sandbox.start()
        except (SandboxError, OSError) as exc:
            raise SandboxError(f"cannot start the sandbox for {task.instance_id}: {exc}") from exc
        self.timings["reset_s"] = time.monotonic() - t0
        self.task = task
        self._done = False
        self._steps = StepRun(task) if is_multi_step(task) else None
        if self._steps is not None:  # step 1's workdir/ and setup.sh: nothing of the agent's ran yet
            failed = stage(self.sandbox, task, self._steps.current)
            if failed:
                raise SandboxError(f"cannot prepare {task.instance_id}: {failed}")
        self._step_t0 = time.monotonic()
        workdir = self.sandbox.workdir
        obs = [
            message("system", SYSTEM_PROMPT.format(workdir=workdir), "system"),
            message("user", TASK_PROMPT.format(problem=task.problem_statement.strip(), workdir=workdir), "task"),
        ]
        if options.get("skill"):  # training-time guidance from the skill teacher; never at evaluation
            obs.append(message("user", SKILL_PROMPT.format(skill=str(options["skill"]).strip()), "skill"))
        info = {"instance_id": task.instance_id, "harness": "h0", "tools": self.tools, "workdir": workdir,
                "termination": None, "mask_sample": False}
        if self._steps is not None:
            info["harbor_step"] = self._steps.current["name"]
        return obs, info

    def step(self, action: Any):
        if self._done or self.sandbox is None or self.task is None:
            raise EpisodeOverError("the episode is over (or never started): call reset() first")
        self.turn += 1
        self._remember(action)
        if isinstance(action, HarnessTurn):
            self.format_errors = 0
            self.tool_counts.update(c.name for c in action.calls)
            self.timings["sandbox_s"] += action.sandbox_s
            if action.submit:
                return self._end_step("submitted", action.messages)
            return self._after_action(action.messages)
        if isinstance(action, FormatError):
            return self._format_error(action)
        try:
            call = action if isinstance(action, ToolCall) else parse_h0_action(action)
        except FormatError as err:
            return self._format_error(err)
        self.format_errors = 0
        self.tool_counts[call.name] += 1
        if call.name == "submit":
            return self._end_step("submitted", None)
        try:
            t0 = time.monotonic()
            result = self.sandbox.run(call.arguments["command"])
            self.timings["sandbox_s"] += time.monotonic() - t0
        except SandboxError as exc:
            return self._infra_failure("sandbox_error", str(exc))
        obs = [tool_message(call, result.render())]
        return self._after_action(obs)

    def _remember(self, action: Any) -> None:
        """Keep the agent's own text (arguments of its calls, or its raw message), capped."""
        if self._actions_chars > 4 << 20:
            return
        if isinstance(action, HarnessTurn):
            text = " ".join(str(c.arguments) for c in action.calls)
        elif isinstance(action, ToolCall):
            text = str(action.arguments)
        elif isinstance(action, dict):
            text = str(action.get("content") or "") + str(action.get("tool_calls") or "")
        else:
            text = str(action)
        self._actions.append(text)
        self._actions_chars += len(text)

    def _after_action(self, obs: list[dict[str, Any]]):
        """The caps on turns and time hold per step of a multi-step task (one step: the episode)."""
        if self.episode_timeout_s is not None and time.monotonic() - self._step_t0 > self.episode_timeout_s:
            return self._end_step("agent_timeout", obs)
        if self.turn - self._step_turn0 >= self.max_turns:
            return self._end_step("max_turns", obs)
        return obs, 0.0, False, False, self._info(None)

    def _end_step(self, reason: str, obs: list[dict[str, Any]] | None):
        """The agent is done with the task, or with a step of a multi-step Harbor task (it submitted,
        or the step's turn or time cap came, after which Harbor verifies and goes on too): the step
        is graded and the next one's instruction shown, unless it was the last or ``min_reward``
        stopped the episode (``ha_envs/harbor/steps.py``)."""
        steps, terminated = self._steps, reason == "submitted"
        if steps is None or steps.index + 1 >= len(steps.steps) or (not terminated and not self.grade_on_truncation):
            return self._finish(reason, terminated=terminated, obs=obs)
        graded = self._grade(steps.grading_task(), obs)
        if isinstance(graded, tuple) and len(graded) == 5:
            return graded  # an infrastructure fault: masked
        patch, report = graded
        steps.record(graded_reward(report) if report.status in ("resolved", "unresolved") else None,
                     report.reward, report.status, reason)
        if not steps.more():
            self._done = True
            return self._conclude(reason, terminated, obs, patch, report)
        nxt = steps.advance()
        failed = stage(self.sandbox, self.task, nxt)
        if failed:  # Harbor ends the trial there; the step counts 0 (the agent's work may have broken it)
            steps.setup_failed(failed)
            self._done = True
            return self._conclude(reason, terminated, obs, patch, report)
        self._step_turn0, self._step_t0 = self.turn, time.monotonic()
        prompt = STEP_PROMPT.format(name=nxt["name"], instruction=nxt["instruction"].strip(), number=steps.index + 1,
                                    total=len(steps.steps), workdir=self.sandbox.workdir)
        return [*(obs or []), message("user", prompt, "task")], 0.0, False, False, self._info(None)

    def _format_error(self, err: FormatError):
        self.format_errors += 1
        self.tool_counts["format_error"] += 1
        obs = [message("user", f"Format error ({err.kind}): {err}", "system", error_kind=err.kind)]
        if self.format_errors >= self.max_format_errors:
            return self._finish("format_errors", terminated=True, obs=obs)
        return self._after_action(obs)

    def _finish(self, reason: str, terminated: bool, obs: list[dict[str, Any]] | None = None):
        """End the episode: grade the work copy (unless the agent never could) and report."""
        self._done = True
        assert self.sandbox is not None and self.task is not None
        if reason == "format_errors" or (not terminated and not self.grade_on_truncation):
            info = self._info(reason)
            if self._steps is not None:
                info["harbor_steps"] = list(self._steps.results)
            return obs or [], 0.0, terminated, not terminated, info
        graded = self._grade(self._steps.grading_task() if self._steps else self.task, obs)
        if isinstance(graded, tuple) and len(graded) == 5:
            return graded  # an infrastructure fault: masked
        patch, report = graded
        if self._steps is not None:
            self._steps.record(graded_reward(report) if report.status in ("resolved", "unresolved") else None,
                               report.reward, report.status, reason)
        return self._conclude(reason, terminated, obs, patch, report)

    def _grade(self, task: Task, obs: list[dict[str, Any]] | None):
        """(patch, report) of the work copy as it stands, graded for ``task``; or, on an
        infrastructure fault, the episode's masked ending (a step's 5-tuple)."""
        assert self.sandbox is not None
        t0 = time.monotonic()
        try:
            patch = self.sandbox.diff()
        except PatchError as exc:  # the agent's doing (a huge or undiffable tree): graded 0, not masked
            patch, report = "", ungradable(task, exc.kind, str(exc))
        except SandboxError as exc:
            return self._infra_failure("sandbox_error", str(exc), obs)
        else:
            try:
                report = self.grader.grade(task, patch, snapshot=getattr(self.sandbox, "snapshot", None))
            except GradingError as exc:  # an environment fault carries its grade (faults.py)
                return self._infra_failure("grading_error", str(exc), obs, patch=patch,
                                           grade=getattr(exc, "report", None))
        self.timings["grade_s"] += time.monotonic() - t0
        return patch, report

    def _conclude(self, reason: str, terminated: bool, obs: list[dict[str, Any]] | None, patch: str,
                  report: GradeReport):
        """The episode's end once graded: flags, the reward (a multi-step task's by its strategy)."""
        assert self.task is not None
        info = self._info(reason)
        info["patch"] = patch
        leaked = hidden_names_in(self.task, "\n".join(self._actions))
        if leaked:
            report.flag("hidden_test_names_in_actions", "the agent wrote the names of hidden tests it cannot "
                        "have seen: " + ", ".join(leaked[:10]))
        if report.status == "verdict_tampered" and reason == "submitted":
            # the agent's doing (canaries, exit status: grading/canaries.py): graded 0, not masked
            info["termination"] = Termination.VERDICT_TAMPERED
        info["grade"], reward = report.to_dict(), report.reward
        if self._steps is not None:
            reward = self._steps_outcome(info, report)
        info["resolved"] = info["grade"]["resolved"]
        info["timings"] = dict(self.timings, episode_s=time.monotonic() - self._t0)
        return obs or [], reward, terminated, not terminated, info

    def _steps_outcome(self, info: StepInfo, report: GradeReport) -> float:
        """A multi-step task's reward (Harbor's mean or final of the graded steps; 0 when any step's
        verdict was forged) and its grade: the last graded step's, resolved only at reward 1."""
        assert self._steps is not None
        results = self._steps.results
        reward = 0.0 if any(r["status"] == "verdict_tampered" for r in results) else self._steps.reward()
        grade = info["grade"]
        grade["resolved"] = reward >= 1.0
        if grade["status"] in ("resolved", "unresolved"):
            grade["status"] = "resolved" if grade["resolved"] else "unresolved"
        strategy = self._steps.task.metadata["harbor"].get("reward_strategy") or "mean"
        grade["verdict_rules"] = (f"harbor steps ({strategy} of " + ", ".join(f"{r['name']}: {r['reward']:g}"
                                  for r in results) + (f"; {self._steps.stopped}" if self._steps.stopped else "") + ")")
        info["harbor_steps"] = list(results)
        return reward

    def end(self, reason: str = "context_limit"):
        """End the episode from outside (the agent loop ran out of context): truncated, graded as
        it stands when ``grade_on_truncation``."""
        if self._done:
            raise EpisodeOverError("the episode is over (or never started): call reset() first")
        if reason not in TERMINATIONS:
            raise ValueError(f"unknown termination {reason!r}; known: {', '.join(TERMINATIONS)}")
        return self._finish(reason, terminated=False)

    def abort(self, error: str, reason: str = "sandbox_error"):
        """End the episode for an infrastructure fault found by a harness layer (a tool's or a
        hook's sandbox call failed): no turn is counted, the sample is masked."""
        if self._done:
            raise EpisodeOverError("the episode is over (or never started): call reset() first")
        return self._infra_failure(reason, error)

    def _infra_failure(self, reason: str, error: str, obs: list[dict[str, Any]] | None = None, patch: str | None = None,
                       grade: GradeReport | None = None):
        self._done = True
        info = self._info(reason)
        info["error"] = error
        if patch is not None:
            info["patch"] = patch
        if grade is not None:
            info["grade"] = grade.to_dict()
        return obs or [], 0.0, True, False, info

    def _info(self, termination: str | None) -> StepInfo:
        """Per-step info. Wall-clock timings appear only at the end (and in ``env.timings``) so
        that equal seeds and actions give equal infos, as Gymnasium's checker demands."""
        assert self.task is not None
        ending = None if termination is None else Termination(termination)
        info: StepInfo = {
            "instance_id": self.task.instance_id,
            "termination": ending,
            "mask_sample": ending is not None and ending.masked,
            "turn": self.turn,
            "tool_counts": dict(self.tool_counts),
            "hooks": {},
        }
        if self._steps is not None and termination is None:
            info["harbor_step"] = self._steps.current["name"]
        if termination is not None:
            info["timings"] = dict(self.timings, episode_s=time.monotonic() - self._t0)
        return info

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None
        self._done = True
        super().close()


def tool_message(call: ToolCall, text: str, ok: bool = True) -> dict[str, Any]:
    """A tool's answer: ``role="tool"`` echoing the call id when the call had one, else a user turn."""
    extra = {} if ok else {"error": True}
    if call.call_id is not None:
        return message("tool", text, "tool", tool_call_id=call.call_id, name=call.name, **extra)
    return message("user", text, "tool", name=call.name, **extra)


__all__ = ["EpisodeOverError", "HarnessTurn", "MASKED", "RepairEnv", "StepInfo", "TERMINATIONS", "TRUNCATED",
           "Termination"]
