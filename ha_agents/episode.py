"""One episode: a model on a harness-wrapped repair env, through the AgentLoop, as an episode
record (``records/episode_record.py``: the line format of ``trajectories.jsonl``).

``EpisodeConfig`` is how every episode of a run is set up (harness, sandbox, sampling, token mode,
seed). It is built once at the edge (the CLI, or a user's script) and passed down unchanged to
``evaluate``, ``collect``, the trainers and evolution: the harness spec is loaded, its limits
overridden and validated there, once; each episode reuses the validated spec.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from ha_envs import make
from ha_envs.grading import GRADER_VERSION
from ha_envs.harness import HarnessSpec, load_spec
from ha_envs.sandbox import EnvLostError, SandboxError, live
from ha_envs.task import Task
from ha_envs.termination import Termination

from .chat.template import TEMPLATES, ModelTemplate
from .chat.tokens import load_tokenizer
from .llm.base import LLMClient
from .llm.options import ModelOptions
from .llm.registry import make_model
from .llm.scripted import PolicyClient
from .loop import CONTEXT_TOKENS, AgentLoop, LoopConfig, Trajectory
from .records.episode_record import EpisodeRecord

SANDBOXES = ("local", "docker")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenMode:
    """Run the AgentLoop token-faithfully: a chat template and a tokenizer (a model directory, or a
    ``tokenizer.json``). ``template``: ``auto`` (the model's own chat template when the directory has
    one, else ``chatml``), ``model`` (the model's own, required), or a built-in (``chatml``,
    ``hermes``). Plain data, so it travels to Ray workers."""

    template: str = "auto"
    tokenizer: str = ""
    context_tokens: int = CONTEXT_TOKENS

    @classmethod
    def of_model(cls, tokenizer: str, context_tokens: int | None = None, template: str = "auto") -> "TokenMode":
        """The token mode of a model directory (or ``tokenizer.json``): ``context_tokens`` checked
        against the model's positions (None: its reach, at most 65536); a bad tokenizer or template
        fails here, before any episode (``ha eval --tokenizer``)."""
        from .chat.positions import resolve_context

        mode = cls(template, tokenizer, resolve_context(tokenizer, context_tokens))
        mode.resolve()
        return mode

    def resolve(self) -> tuple[Any, Any]:
        """(template, tokenizer), loaded once per process."""
        return _resolve(self.template, str(Path(self.tokenizer).resolve()))

    def loop(self, client: LLMClient, max_tokens: int | None = None) -> AgentLoop:
        """An AgentLoop in this token mode; ``max_tokens``: the run's cap per model call."""
        template, tok = self.resolve()
        return AgentLoop(client, template, tok, LoopConfig(context_tokens=self.context_tokens, max_tokens=max_tokens))


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


def _make_here(task: Task, harness: HarnessSpec, sandbox: Any, env_options: dict[str, Any]) -> Any:
    return make(task=task, harness=harness, sandbox=sandbox, **env_options)


ENV_PLACEMENTS: dict[str, Any] = {"local": _make_here}
"""Where an episode's env runs (``EpisodeConfig.env_placement``): a name -> ``(task, harness,
sandbox, env_options) -> env``. ``local`` is this process; ``ha_agents.cluster.remote_env`` adds
``ray`` (an actor on a node with sandbox slots)."""


@dataclass(frozen=True)
class EpisodeConfig:
    """How every episode of a run is set up. Plain data, so it travels to Ray workers."""

    harness: HarnessSpec
    """The validated harness spec, limits included (the turn cap is enforced by the env alone)."""
    sandbox: str = "local"
    """``local`` (bubblewrap) or ``docker``."""
    env_options: Mapping[str, Any] = field(default_factory=dict)
    """Further ``RepairEnv`` arguments (``sandbox_options``, ``episode_timeout_s``, ``grader``, ...)."""
    token_mode: TokenMode | None = None
    """Token-faithful episodes (a chat template and tokenizer); None: chat mode."""
    model_options: ModelOptions | None = None
    """Sampling and request options for models built from a spec string."""
    seed: int | None = None
    """The run's seed: each episode samples with ``episode_seed(seed, instance_id, sample)``
    (reproducible, and different across a group's members); None leaves sampling to the client."""
    env_placement: str = "local"
    """Where each episode's env and sandbox run: ``local`` (this process) or ``ray`` (a Ray actor
    on a node with sandbox slots, ``ha_agents.cluster.remote_env``; the policy stays here)."""

    @classmethod
    def create(cls, harness: "str | Path | HarnessSpec" = "h0", *, sandbox: str = "local",
               env_options: Mapping[str, Any] | None = None, token_mode: TokenMode | None = None,
               model_options: ModelOptions | None = None, seed: int | None = None, max_turns: int | None = None,
               command_timeout_s: float | None = None, max_format_errors: int | None = None,
               env_placement: str = "local") -> "EpisodeConfig":
        """The one place a run's limits override its harness spec's (the hash changes with them)."""
        opts = dict(env_options or {})
        for key in ("max_turns", "command_timeout_s", "max_format_errors"):  # limits belong to the spec
            if key in opts:
                raise ValueError(f"env_options[{key!r}]: a limit; pass {key}= to EpisodeConfig.create")
        spec = load_spec(harness).with_limits(max_turns, command_timeout_s, max_format_errors)
        return cls(harness=spec, sandbox=sandbox, env_options=opts, token_mode=token_mode,
                   model_options=model_options, seed=seed, env_placement=env_placement).validate()

    @classmethod
    def of(cls, value: "EpisodeConfig | str | Path | HarnessSpec") -> "EpisodeConfig":
        """A config as given, or the default config of a harness (a preset name, a file, a spec)."""
        return value if isinstance(value, EpisodeConfig) else cls.create(value)

    def validate(self) -> "EpisodeConfig":
        self.harness.validate()
        if not callable(self.sandbox) and self.sandbox not in SANDBOXES:
            raise ValueError(f"sandbox: unknown sandbox {self.sandbox!r}; available: {', '.join(SANDBOXES)}")
        if self.env_placement not in ENV_PLACEMENTS:
            raise ValueError(f"env_placement: {self.env_placement!r}; use {' or '.join(ENV_PLACEMENTS)}")
        if self.env_placement != "local" and callable(self.sandbox):
            raise ValueError(f"env_placement {self.env_placement}: the sandbox must be a name (local or docker), "
                             "not a callable")
        if self.seed is not None and (not isinstance(self.seed, int) or self.seed < 0):
            raise ValueError(f"seed: expected a non-negative integer, got {self.seed!r}")
        if self.token_mode is not None and self.max_tokens is not None and \
                self.max_tokens >= self.token_mode.context_tokens:
            raise ValueError(f"model_options: max_tokens {self.max_tokens} leaves no room for a prompt "
                             f"in token_mode's context_tokens {self.token_mode.context_tokens}")
        return self

    @property
    def max_tokens(self) -> int | None:
        """The run's one cap per model call (``model_options.max_tokens``): the loop never asks for more,
        and a client built from a model spec is configured with it."""
        return None if self.model_options is None else self.model_options.max_tokens

    def draw_key(self) -> dict[str, Any]:
        """What of this set-up makes two batches of episodes the same draw (with the same model, tasks
        and group size): the harness, seed, sampling, tokenisation, sandbox, env options and grader.
        Where the envs run (``env_placement``) is not part of it."""
        return {"harness": self.harness.hash, "seed": self.seed, "sampling": repr(self.model_options),
                "tokens": repr(self.token_mode), "sandbox": self.sandbox,
                "env": json.dumps(dict(self.env_options), sort_keys=True, default=str), "grader": GRADER_VERSION}

    def with_harness(self, harness: "str | Path | HarnessSpec") -> "EpisodeConfig":
        """The same run on another harness (evolution's candidate), validated once."""
        return replace(self, harness=load_spec(harness)).validate()

    def episode_seed(self, instance_id: str, sample: int) -> int | None:
        return None if self.seed is None else episode_seed(self.seed, instance_id, sample)

    def record(self) -> dict[str, Any]:
        """What a run's summary records of its set-up."""
        return {"harness": self.harness.name, "harness_hash": self.harness.hash, "sandbox": self.sandbox,
                "seed": self.seed, "token_mode": None if self.token_mode is None else vars(self.token_mode),
                "model_options": None if self.model_options is None else self.model_options.record()}


def episode_seed(seed: int, instance_id: str, sample: int) -> int:
    """The sampling seed of one episode: stable across processes and reruns (not Python's salted
    ``hash``), different for every task and sample."""
    digest = hashlib.sha256(f"{seed}/{instance_id}/{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def as_client(model: Any, options: ModelOptions | None = None) -> LLMClient:
    """A client from a model spec string, a client, or a scripted policy object."""
    if isinstance(model, str):
        return make_model(model, options)
    return model if hasattr(model, "complete") else PolicyClient(model)


def run_episode(task: Task, model: Any, config: "EpisodeConfig | str | HarnessSpec" = "h0", *,
                skill: str | None = None, seed: int | None = None) -> EpisodeRecord:
    """One episode through the AgentLoop (token-faithful when the config has a token mode); returns
    its record (never raises for a sandbox or model failure: those end masked). ``skill``:
    training-time guidance (evaluation never passes one); ``seed``: this episode's sampling seed."""
    config = EpisodeConfig.of(config)
    harness = config.harness
    client = as_client(model, config.model_options)
    if config.token_mode is not None:
        loop = config.token_mode.loop(client, config.max_tokens)
    else:
        loop = AgentLoop(client, config=LoopConfig(max_tokens=config.max_tokens))
    t0 = time.monotonic()
    env = ENV_PLACEMENTS[config.env_placement](task, harness, config.sandbox, dict(config.env_options))
    try:
        try:
            traj = loop.run(env, task, seed=seed, skill=skill)
        except SandboxError as exc:
            ending = Termination.ENV_LOST if isinstance(exc, EnvLostError) else Termination.SANDBOX_ERROR
            traj = Trajectory(instance_id=task.instance_id, model=client.name, harness=harness.name,
                              harness_hash=harness.hash, termination=ending, mask_sample=True,
                              info={"termination": ending, "mask_sample": True, "error": str(exc)})
        record = _record(task, client.name, harness, traj, t0)
        node = getattr(env, "node", None)
        return record.with_fields(node=node) if node else record  # the node whose actor ran the env
    finally:
        env.close()


def run_sample(task: Task, sample: int, model: Any, config: EpisodeConfig, skill: str | None = None) -> EpisodeRecord:
    """Sample ``sample`` (1-based) of a task in a run: its episode with the run's seed for it, as a
    record whose ``run`` is the sample; never raises (a failure nothing planned for is an
    ``internal_error`` record). An episode whose env was lost with its machine (``env_lost``) runs
    once more, with the same seed, wherever the new env lands; lost again, that is its record."""
    for attempt in (1, 2):
        t0 = time.monotonic()
        try:
            record = run_episode(task, model, config, skill=skill, seed=config.episode_seed(task.instance_id, sample))
        except Exception as exc:  # noqa: BLE001 - one broken episode must not take the run (and its queue) down
            if not live.stopping():  # stopping, its sandbox was closed under it: no record is kept anyway
                log.warning("episode %s #%d failed: %s", task.instance_id, sample, exc, exc_info=True)
            record = error_record(task, model, config.harness, exc, t0)
        if attempt == 1 and record.termination is Termination.ENV_LOST:
            log.warning("episode %s #%d: %s; running it once more", task.instance_id, sample, record.error)
            continue
        break
    return record.with_fields(run=sample, env_attempts=2) if attempt == 2 else record.with_fields(run=sample)


def error_record(task: Task, model: Any, harness: "HarnessSpec | str", exc: BaseException, t0: float) -> EpisodeRecord:
    """The record of an episode that failed in a way nothing planned for (a bug, a broken task):
    masked, with the error, so the run goes on and the failure is visible."""
    spec = load_spec(harness)
    name = model if isinstance(model, str) else getattr(model, "name", type(model).__name__)
    error = f"{type(exc).__name__}: {exc}"
    traj = Trajectory(instance_id=task.instance_id, model=name, harness=spec.name, harness_hash=spec.hash,
                      termination=Termination.INTERNAL_ERROR, mask_sample=True,
                      info={"termination": Termination.INTERNAL_ERROR, "mask_sample": True, "error": error})
    return _record(task, name, spec, traj, t0)


def record_of(task: Task, model: str, harness: Any, traj: Trajectory, t0: float) -> EpisodeRecord:
    """The record of one finished episode (``harness``: anything with the spec's ``name`` and ``hash``,
    such as a gateway episode's harness), its duration counted from ``t0``."""
    return _record(task, model, harness, traj, t0)


def _record(task: Task, model: str, harness: HarnessSpec, traj: Trajectory, t0: float) -> EpisodeRecord:
    info = traj.info
    grade = info.get("grade") or {}
    return EpisodeRecord(
        instance_id=task.instance_id, benchmark=task.benchmark, model=model, harness=harness.name,
        harness_hash=traj.harness_hash or harness.hash, reward=traj.reward,
        resolved=bool(grade.get("resolved", False)), termination=traj.termination, mask_sample=traj.mask_sample,
        error=info.get("error", ""), turns=info.get("turn", 0), tool_counts=info.get("tool_counts", {}),
        hooks=info.get("hooks", {}), edits=info.get("edits", 0), test_runs=info.get("test_runs", 0),
        delivery=info.get("delivery"), timings=traj.timings, patch=info.get("patch", ""), grade=grade,
        flags=grade.get("flags", []),  # why the result is suspicious (reward hacking), to filter on
        messages=traj.messages, model_calls=traj.model_calls, token_ids=traj.token_ids, loss_mask=traj.loss_mask,
        logprobs=traj.logprobs, token_error=traj.token_error, skill=traj.skill, seed=traj.seed,
        duration_s=round(time.monotonic() - t0, 3), grader_version=GRADER_VERSION,
        dataset=task.metadata.get("dataset", f"suite:{task.benchmark}"),
        grading_scripts=task.metadata.get("pro_scripts"),  # SWE-bench Pro: Scale's scripts, repo@commit
        task_fingerprint=task.fingerprint(), steps=list(info.get("harbor_steps") or []))
