"""One episode: a model (or scripted policy) on a harness-wrapped repair env, through the
AgentLoop, as a trajectory record (the line format of ``trajectories.jsonl``)."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ha_envs import make
from ha_envs.grading import GRADER_VERSION
from ha_envs.harness import HarnessSpec, load_spec
from ha_envs.sandbox import SandboxError
from ha_envs.task import Task

from .llm.base import LLMClient
from .llm.options import ModelOptions
from .llm.openai_http import OpenAIClient, parse_model_spec
from .llm.scripted import PolicyClient, ReplayClient
from .chat_template import TEMPLATES, ModelTemplate
from .tokens import load_tokenizer
from .loop import AgentLoop, LoopConfig, Trajectory
from .policies import POLICIES, Policy, make_policy


AGENT_PREFIXES = ("openai:", "replay:", "hf:")


def check_agent_spec(spec: "str | Any") -> None:
    """Fail fast, before any episode, on a model spec no episode could use (ValueError)."""
    if not isinstance(spec, str) or spec in POLICIES:
        return
    if spec.startswith("openai:"):
        parse_model_spec(spec)
        return
    if not spec.startswith(AGENT_PREFIXES):
        raise ValueError(f"unknown model {spec!r}: use {', '.join(sorted(POLICIES))}, openai:NAME@URL, "
                         "replay:FILE or hf:PATH")


def make_agent(spec: str, options: ModelOptions | None = None) -> LLMClient:
    """An agent by name: ``oracle`` / ``null`` (scripted policies), ``openai:NAME@URL``,
    ``replay:TRAJECTORIES.jsonl``, ``hf:PATH`` (a local transformers model); ``options`` (sampling,
    request fields, API key variable) apply to the model backends."""
    o = options or ModelOptions()
    if spec in POLICIES:
        return PolicyClient(make_policy(spec))
    if spec.startswith("openai:"):
        cfg = parse_model_spec(spec)
        cfg = replace(cfg, api_key=o.api_key() or cfg.api_key, extra_body=dict(o.extra),
                      **{k: v for k, v in (("temperature", o.temperature), ("top_p", o.top_p),
                                           ("max_tokens", o.max_tokens)) if v is not None})
        return OpenAIClient(cfg)
    if spec.startswith("replay:"):
        return ReplayClient(spec[len("replay:"):], run=None)  # a seeded episode draws a recorded run
    if spec.startswith("hf:"):
        from .llm.hf import TransformersClient

        kw: dict[str, Any] = {}
        if o.temperature is not None:
            kw["temperature"] = o.temperature
        if o.top_p is not None:
            kw["top_p"] = o.top_p
        if o.max_tokens is not None:
            kw["max_new_tokens"] = o.max_tokens
        return TransformersClient(spec[len("hf:"):], **kw)
    raise ValueError(f"unknown model {spec!r}: use oracle, null, openai:NAME@URL, replay:FILE or hf:PATH")


@dataclass(frozen=True)
class TokenMode:
    """Run the AgentLoop token-faithfully: a chat template and a tokenizer (a model directory, or a
    ``tokenizer.json``). ``template``: ``auto`` (the model's own chat template when the directory has
    one, else ``chatml``), ``model`` (the model's own, required), or a built-in (``chatml``,
    ``hermes``). Plain data, so it travels to Ray workers."""

    template: str = "auto"
    tokenizer: str = ""
    context_tokens: int = 65536
    max_new_tokens: int | None = None

    def resolve(self) -> tuple[Any, Any]:
        """(template, tokenizer), loaded once per process."""
        return _resolve(self.template, str(Path(self.tokenizer).resolve()))

    def loop(self, client: LLMClient, max_turns: int) -> AgentLoop:
        template, tok = self.resolve()
        return AgentLoop(client, template, tok, LoopConfig(max_turns=max_turns, context_tokens=self.context_tokens,
                                                           max_new_tokens=self.max_new_tokens))


@functools.lru_cache(maxsize=8)
def _resolve(template: str, tokenizer: str) -> tuple[Any, Any]:
    if template not in TEMPLATES and template not in ("auto", "model"):
        raise ValueError(f"unknown chat template {template!r}; use auto, model, {', '.join(TEMPLATES)}")
    if not Path(tokenizer).exists():
        raise ValueError(f"no tokenizer at {tokenizer}")
    tok = load_tokenizer(tokenizer)
    own = bool(getattr(tok, "chat_template", None))
    if template == "model" and not own:
        raise ValueError(f"{tokenizer} has no chat template of its own (a model directory with tokenizer_config.json "
                         "and transformers installed); pass --template chatml or hermes")
    if template in ("model", "auto") and own:
        return ModelTemplate(tok), tok
    return TEMPLATES["chatml" if template == "auto" else template], tok


def run_episode(task: Task, agent: "LLMClient | Policy | str", harness: "str | HarnessSpec" = "h0",
                sandbox: str = "local", env_kwargs: dict[str, Any] | None = None,
                token_mode: TokenMode | None = None, skill: str | None = None, seed: int | None = None,
                model_options: ModelOptions | None = None) -> dict[str, Any]:
    """One episode through the AgentLoop (token-faithful when ``token_mode`` is given); returns its
    trajectory record (never raises for a sandbox or model failure: those end masked). ``skill``:
    training-time guidance (evaluation never passes one)."""
    harness = load_spec(harness)
    if isinstance(agent, str):
        agent = make_agent(agent, model_options)
    elif not hasattr(agent, "complete"):
        agent = PolicyClient(agent)
    if token_mode is not None:
        loop = token_mode.loop(agent, harness.limits.max_turns)
    else:
        loop = AgentLoop(agent, config=LoopConfig(max_turns=harness.limits.max_turns))
    t0 = time.monotonic()
    env = make(task=task, harness=harness, sandbox=sandbox, **(env_kwargs or {}))
    try:
        try:
            traj = loop.run(env, task, seed=seed, skill=skill)
        except SandboxError as exc:
            traj = Trajectory(instance_id=task.instance_id, model=agent.name, harness=harness.name,
                              harness_hash=harness.hash, termination="sandbox_error", mask_sample=True,
                              info={"termination": "sandbox_error", "mask_sample": True, "error": str(exc)})
        return _record(task, agent.name, harness, traj, t0)
    finally:
        env.close()


def error_record(task: Task, agent: Any, harness: "HarnessSpec | str", exc: BaseException, t0: float) -> dict[str, Any]:
    """The record of an episode that failed in a way nothing planned for (a bug, a broken task):
    masked, with the error, so the run goes on and the failure is visible."""
    spec = harness if isinstance(harness, HarnessSpec) else load_spec(harness)
    name = agent if isinstance(agent, str) else getattr(agent, "name", type(agent).__name__)
    error = f"{type(exc).__name__}: {exc}"
    traj = Trajectory(instance_id=task.instance_id, model=name, harness=spec.name, harness_hash=spec.hash,
                      termination="internal_error", mask_sample=True,
                      info={"termination": "internal_error", "mask_sample": True, "error": error})
    return _record(task, name, spec, traj, t0)


def _record(task: Task, model: str, harness: HarnessSpec, traj: Trajectory, t0: float) -> dict[str, Any]:
    info = traj.info
    grade = info.get("grade") or {}
    return {
        "instance_id": task.instance_id,
        "benchmark": task.benchmark,
        "policy": model,
        "model": model,
        "harness": harness.name,
        "harness_hash": traj.harness_hash or harness.hash,
        "reward": traj.reward,
        "resolved": bool(grade.get("resolved", False)),
        "termination": traj.termination,
        "mask_sample": traj.mask_sample,
        "error": info.get("error", ""),
        "turns": info.get("turn", 0),
        "tool_counts": info.get("tool_counts", {}),
        "hooks": info.get("hooks", {}),
        "edits": info.get("edits", 0),
        "test_runs": info.get("test_runs", 0),
        "delivery": info.get("delivery"),
        "timings": traj.timings,
        "patch": info.get("patch", ""),
        "grade": grade,
        "flags": grade.get("flags", []),  # why the result is suspicious (reward hacking), to filter on
        "messages": traj.messages,
        "model_calls": traj.model_calls,
        "token_ids": traj.token_ids,
        "loss_mask": traj.loss_mask,
        "logprobs": traj.logprobs,
        "token_error": traj.token_error,
        "skill": traj.skill,
        "seed": traj.seed,
        "duration_s": round(time.monotonic() - t0, 3),
        "grader_version": GRADER_VERSION,
        "dataset": task.metadata.get("dataset", f"suite:{task.benchmark}"),
        "grading_scripts": task.metadata.get("pro_scripts"),  # SWE-bench Pro: Scale's scripts, repo@commit
        "task_fingerprint": task.fingerprint(),
    }
