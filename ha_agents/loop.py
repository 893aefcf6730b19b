"""AgentLoop: one episode of a (harness-wrapped) repair env and a model.

Two modes:

- **Token mode** (a template, built-in ``ChatTemplate`` or the model's own ``ModelTemplate``, and a
  tokenizer, ``tokenizers.Tokenizer`` or Hugging Face): the first prompt is rendered and tokenised
  once (loss mask 0); each turn the model continues the exact prompt ids, its generated ids are
  appended as they came (mask 1, with their logprobs), and only the observation delta is rendered
  and tokenised (mask 0). Every call asks for ids and logprobs and goes to the same (token-prompt)
  endpoint for the whole episode. A completion that comes back without ids is appended re-encoded
  with **mask 0** (never trained on) and ``trajectory.token_error`` says so; the episode goes on and
  is graded, and trainers drop such records.
- Each call's ``max_tokens`` is at most the context left, so a long episode ends ``context_limit``
  (graded) instead of a server error; ``seed`` (from the episode seed and the turn) makes sampling
  reproducible per episode and turn and different across a group's members.
- **Chat mode** (no template): the backend renders the conversation (hosted APIs); the trajectory
  keeps the messages and any per-turn ids the server returned.

Limits: the turn cap is the env's (the harness spec's ``limits.max_turns``, enforced there and
nowhere else); ``context_tokens`` (token mode) is the loop's: reaching it ends the episode as
truncated with termination ``context_limit`` (graded as it stands).
A model that fails for good (retries exhausted) ends it with ``model_error``, masked.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym

from ha_envs.task import Task
from ha_envs.termination import Termination

from .chat.template import ChatTemplate, ModelTemplate
from .llm.base import Completion, LLMClient, LLMError, call_options
from .chat.tokens import as_codec


CONTEXT_TOKENS = 65536
"""The default token budget of a whole conversation in token mode."""


@dataclass
class LoopConfig:
    context_tokens: int = CONTEXT_TOKENS
    """Token budget of the whole conversation in token mode."""
    max_tokens: int | None = None
    """Cap per model call (token mode: also never more than the context left): the run's one cap,
    ``ModelOptions.max_tokens``."""


@dataclass
class Trajectory:
    instance_id: str
    model: str
    harness: str = ""
    harness_hash: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float | None] = field(default_factory=list)
    token_error: str = ""
    model_calls: list[dict[str, Any]] = field(default_factory=list)
    """Per model call: finish_reason, completion tokens, HTTP attempts, latency; in token mode also
    ``prompt_tokens``, the length of the token stream the call was given (where its completion starts)."""
    reward: float = 0.0
    termination: Termination | None = None
    mask_sample: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    skill: str | None = None
    seed: int | None = None
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class AgentLoop:
    def __init__(self, client: LLMClient, template: "ChatTemplate | ModelTemplate | None" = None, tokenizer: Any = None,
                 config: LoopConfig | None = None) -> None:
        if (template is None) != (tokenizer is None):
            raise ValueError("token mode needs both a chat template and a tokenizer")
        self.client = client
        self.template = template
        self.tokenizer = tokenizer
        self.codec = as_codec(tokenizer) if tokenizer is not None else None
        self.config = config or LoopConfig()
        self._options = call_options(client)
        self._eos_id = self.codec.token_to_id(template.eos) if self.codec is not None and template is not None else None
        if tokenizer is not None and self._eos_id is None:
            raise ValueError(f"the tokenizer has no token for the template's end of turn {template.eos!r}")

    @property
    def token_mode(self) -> bool:
        return self.template is not None

    def _encode(self, text: str) -> list[int]:
        return self.codec.encode(text)

    def _append(self, traj: Trajectory, ids: list[int], mask: int, logprobs: list[float] | None = None) -> None:
        traj.token_ids.extend(ids)
        traj.loss_mask.extend([mask] * len(ids))
        traj.logprobs.extend(logprobs if logprobs is not None and len(logprobs) == len(ids) else [None] * len(ids))

    def _record_turn(self, traj: Trajectory, comp: Completion, turn: int) -> bool:
        """The turn's generated ids, as the backend returned them (loss mask 1), or its text
        re-encoded with loss mask 0 when it returned none; whether the turn ends with the stop token."""
        if comp.token_ids is None:
            traj.token_error = traj.token_error or (
                f"turn {turn}: the backend returned no token ids; its text was re-encoded with loss mask 0 "
                "(ids are never guessed for training); serve with vLLM/SGLang return_token_ids")
            ids, mask, lps = self._encode(comp.text), 0, None
        else:
            ids, mask, lps = list(comp.token_ids), 1, comp.logprobs
        closed = bool(ids) and ids[-1] == self._eos_id
        if not closed and comp.finish_reason in ("stop", "tool_calls"):
            ids.append(self._eos_id)  # the backend dropped the stop token it generated
            if lps is not None:
                lps = list(lps) + [None]
            closed = True
        self._append(traj, ids, mask, lps)
        return closed

    def run(self, env: gym.Env, task: Task | None = None, seed: int | None = None,
            skill: str | None = None) -> Trajectory:
        """One episode; ``skill``: a training-time skill shown after the task (never trained on)."""
        t0 = time.monotonic()
        options: dict[str, Any] = {"task": task} if task is not None else {}
        if skill:
            options["skill"] = skill
        obs, info = env.reset(seed=seed, options=options or None)
        # Ending from outside goes through the wrapper stack (each layer adds its part of info).
        end, abort = env.get_wrapper_attr("end"), env.get_wrapper_attr("abort")
        traj = Trajectory(instance_id=info["instance_id"], model=self.client.name, harness=info.get("harness", ""),
                          harness_hash=info.get("harness_hash", ""), skill=skill or None, seed=seed)
        tools = info.get("tools") or []
        traj.messages.extend(obs)
        episode_task = env.get_wrapper_attr("task")
        ended = False
        if hasattr(self.client, "start") and episode_task is not None:
            try:
                self.client.start(episode_task, info)
            except LLMError as exc:  # e.g. a replay file without this task: the episode ends, its message says why
                obs, reward, term, trunc, info = abort(str(exc), reason="model_error")
                traj.messages.extend(obs)
                ended = True
        tracking = self.token_mode
        if tracking:
            self._append(traj, self._encode(self.template.prompt(traj.messages, tools)), 0)
        model_s = 0.0
        turns = 0
        while not ended:
            left = self.config.context_tokens - len(traj.token_ids)
            if tracking and left <= 0:
                obs, reward, term, trunc, info = end("context_limit")
                traj.messages.extend(obs)
                break
            kw: dict[str, Any] = {}
            caps = [c for c in (self.config.max_tokens, left if tracking else None) if c]
            if "max_tokens" in self._options and caps:
                kw["max_tokens"] = min(caps)
            if "seed" in self._options and seed is not None:
                kw["seed"] = (int(seed) * 1_000_003 + turns) % (2 ** 31)
            prompt_len = len(traj.token_ids)  # where this call's completion starts in the token stream
            t1 = time.monotonic()
            try:
                comp: Completion = self.client.complete(traj.messages, tools,
                                                        prompt_ids=list(traj.token_ids) if tracking else None, **kw)
            except LLMError as exc:
                obs, reward, term, trunc, info = abort(str(exc), reason="model_error")
                traj.messages.extend(obs)
                break
            model_s += time.monotonic() - t1
            turns += 1
            msg = dict(comp.message, role="assistant", source="policy", trainable=True)
            traj.messages.append(msg)
            traj.model_calls.append({"finish_reason": comp.finish_reason, "completion_tokens": len(comp.token_ids or []),
                               "attempts": comp.attempts, "latency_s": round(comp.latency_s, 4),
                               "token_ids": None if tracking else comp.token_ids,
                               **({"prompt_tokens": prompt_len} if tracking else {})})
            closed = self._record_turn(traj, comp, turns) if tracking else False
            action = {k: v for k, v in comp.message.items() if k in ("content", "tool_calls", "finish_reason")}
            obs, reward, term, trunc, info = env.step(action)
            traj.messages.extend(obs)
            if term or trunc:
                break
            if tracking:
                self._append(traj, self._encode(self.template.delta(obs, closed, tools)), 0)
        traj.reward = float(reward)
        traj.termination = info.get("termination")
        traj.mask_sample = bool(info.get("mask_sample", False))
        traj.info = {k: v for k, v in info.items() if k not in ("timings",)}
        traj.timings = dict(info.get("timings") or {}, model_s=round(model_s, 4), episode_s=round(time.monotonic() - t0, 4))
        return traj
