"""The verl 0.9.1 agent-loop adapter: one harness-wrapped ``RepairEnv`` per episode, driven by
verl's rollout servers (``--backend verl``; extra ``verl``).

``HarnessAgentLoop`` is registered through an agent-loop YAML (``verl_launch.agent_loop_yaml``)::

    - name: harnessadapt
      _target_: ha_agents.train.verl_loop.HarnessAgentLoop
      harness: {...HarnessSpec as a mapping, or a preset name...}
      tasks: {suite: mini} | {jsonl: PATH} | {benchmark: verified, data: PATH}
      sandbox: local
      truncated: drop
      board: harnessadapt_board    # optional: read the harness and skills from the run's board

With ``board`` (``verl_board``), each episode reads the board at its start: the harness published
last (else the YAML's) and the task's skill, shown after the task as a non-trainable message (part
of the prompt, mask 0); so co-evolution hands a new harness to every worker without a restart.
Each dataset row (``verl_launch.write_dataset``) names its task in ``extra_info.instance_id``
(and may carry its own ``extra_info.harness``). Per episode:

- the first prompt is ``ct_build_initial_tokens`` of the env's first messages with the harness's
  tool schemas; one ``request_id`` for the whole episode (sticky routing, prefix cache);
- each turn ``server_manager.generate`` gets ``max_tokens`` = the response budget left; its ids are
  appended with ``ct_merge_assistant_token`` (mask 1, logprobs), the text goes to ``env.step``, and
  the observations (tool results, hook and system messages) are appended with
  ``ct_merge_context_msg`` (mask 0);
- truncation is detected here, not from the server's stop reason (a length stop comes back as
  "completed"): a turn that fills the remaining budget without an end-of-turn token, or a context
  merge that reaches it, ends the episode ``context_limit`` and the env grades the repo as it stands;
- ``reward_score`` is the env's reward; ``reward_extra_info`` has fixed keys (``resolved``,
  ``truncated``, ``termination``, ``mask_sample``, ``harness_hash``, ``turns``, ``env_node``,
  ``harness_version``, ``skill``) so verl can batch it;
- the batch policy is the local backend's (``base.BatchPolicy``): an infrastructure failure
  (sandbox, internal error) or a truncated episode under ``truncated: drop`` gets an all-zero
  response mask, so it carries no gradient; the episode is still returned (verl needs one output
  per sample).
Blocking env work (reset, tools, grading) runs in the default executor, so the event loop keeps
serving the other episodes of the worker.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import uuid
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput

import ha_envs
from ha_envs.harness import HarnessSpec, load_spec
from ha_envs.loaders import resolve_tasks
from ha_envs.task import Task

from ..chat.template import ModelTemplate, template_view
from ..records.episode_record import classify

log = logging.getLogger(__name__)

EXTRA_KEYS = ("resolved", "truncated", "termination", "mask_sample", "harness_hash", "turns", "env_node",
              "harness_version", "skill", "episode")
"""The keys of every episode's ``reward_extra_info`` (verl batches them, so all episodes share them):
``harness_version`` is the harness board's version the episode started under (0: no board),
``skill`` 1.0 when a skill was shown to it; ``episode`` the episode's detail as JSON (the env's
messages and the assistant's, tool counts, hook firings, edits, test runs, delivery, patch) for a
row whose ``extra_info.record`` asks for it (evolution's rollouts: what the proposer reads), else ""."""
DETAIL_KEYS = ("tool_counts", "hooks", "edits", "test_runs", "tool_errors", "delivery", "patch", "grade", "error")


@functools.lru_cache(maxsize=4)
def _end_of_turn_ids(tokenizer: Any) -> frozenset[int]:
    """The token the model's own chat template ends an assistant turn with, and the tokenizer's eos
    (once per tokenizer: verl builds a loop per episode)."""
    eot = tokenizer.convert_tokens_to_ids(ModelTemplate(tokenizer).eos)
    return frozenset(i for i in (eot, getattr(tokenizer, "eos_token_id", None)) if isinstance(i, int))


def _extra_info(resolved: bool, truncated: bool, termination: str, masked: bool, harness_hash: str,
                turns: int, env_node: str = "", version: int = 0, skill: bool = False,
                episode: str = "") -> dict[str, Any]:
    """``env_node``: the Ray node whose actor ran the env (``env: ray``); empty for an env in this process."""
    return dict(zip(EXTRA_KEYS, (float(resolved), float(truncated), termination, float(masked), harness_hash,
                                 float(turns), env_node or "", float(version), float(skill), episode)))


def _detail(transcript: list[dict[str, Any]], info: dict[str, Any]) -> str:
    """The episode as the proposer reads a record: its messages and the env's end-of-episode counts."""
    return json.dumps({"messages": transcript, **{k: info[k] for k in DETAIL_KEYS if k in info}}, default=str)


def load_tasks(source: dict[str, Any]) -> dict[str, Task]:
    """Tasks by instance id from ``{suite: NAME} | {jsonl: PATH} | {benchmark: NAME, data: PATH}``,
    loaded once per process."""
    return _load_tasks(tuple(sorted(source.items())))


@functools.lru_cache(maxsize=8)
def _load_tasks(items: tuple[tuple[str, Any], ...]) -> dict[str, Task]:
    source = dict(items)
    if source.get("benchmark"):
        from ha_envs.swe_datasets import load_benchmark

        tasks = load_benchmark(source["benchmark"], source=source.get("data"))
    else:
        tasks = resolve_tasks(suite=source.get("suite"), jsonl=source.get("jsonl"))
    return {t.instance_id: t for t in tasks}


def _spec(value: Any) -> HarnessSpec:
    if isinstance(value, HarnessSpec):
        return value
    if hasattr(value, "items"):  # an OmegaConf node or a dict
        try:
            from omegaconf import OmegaConf

            value = OmegaConf.to_container(value, resolve=True) if not isinstance(value, dict) else value
        except ImportError:  # pragma: no cover
            value = dict(value)
        return HarnessSpec.from_dict(value)
    if isinstance(value, str) and value.lstrip().startswith("{"):  # a spec as JSON (write_dataset's rows)
        return HarnessSpec.from_dict(json.loads(value))
    return load_spec(str(value))


class HarnessAgentLoop(AgentLoopBase):
    def __init__(self, *args: Any, harness: Any = "h0", tasks: Any = None, sandbox: str = "local",
                 truncated: str = "drop", max_turns: int | None = None, env: str = "local", board: str | None = None,
                 **kwargs: Any) -> None:
        kwargs.pop("name", None)
        super().__init__(*args, **kwargs)
        if truncated not in ("drop", "keep"):
            raise ValueError(f"truncated must be drop or keep, got {truncated!r}")
        if env not in ("local", "ray"):
            raise ValueError(f"env must be local (in this worker) or ray (an actor on a sandbox node), got {env!r}")
        self.env_placement = env
        self.harness = _spec(harness)
        self.task_source = dict(tasks or {"suite": "mini"})
        self.sandbox = sandbox
        self.truncated = truncated
        self.max_turns = max_turns
        self.board = board or None
        self.response_length = int(self.rollout_config.response_length)
        self.seed: int | None = None
        """A row's sampling seed (``extra_info.seed``, vLLM only: SGLang names it otherwise), turn t
        sampling with seed + t; None: the server's own randomness (training)."""
        self.eos_ids = _end_of_turn_ids(self.tokenizer)

    async def _call(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        extra = dict(kwargs.get("extra_info") or {})
        if extra.get("pad"):  # a row that only fills a batch up to the workers' count: no episode
            return self._failed("", self.harness)
        iid = extra.get("instance_id")
        tasks = load_tasks(self.task_source)
        if iid not in tasks:
            raise ValueError(f"dataset row names instance {iid!r}, not in the task source {self.task_source}")
        spec, version, skill = await self._current(iid)
        if extra.get("harness"):  # a row's own harness (evolution's candidates) wins over the board's
            spec = _spec(extra["harness"])
        if self.max_turns:
            spec = spec.with_limits(max_turns=self.max_turns)
        if self.env_placement == "ray":  # the env and its sandbox on a node with sandbox slots
            from ha_agents.cluster.remote_env import RemoteEnv

            try:
                env = await self._call(lambda: RemoteEnv(tasks[iid], spec, self.sandbox))
            except Exception as exc:  # noqa: BLE001 - no actor could be made: masked, reported
                return self._failed(f"remote env failed: {type(exc).__name__}: {exc}", spec, version, bool(skill))
        else:
            env = ha_envs.make(task=tasks[iid], harness=spec, sandbox=self.sandbox)
        self.board_version, self.skill, self.record = version, skill, bool(extra.get("record"))
        if extra.get("seed") is not None and self.rollout_config.name == "vllm":
            self.seed = int(extra["seed"])  # common seeds: member k of a task samples alike on both gate sides
        try:
            return await self._episode(env, spec, sampling_params)
        finally:
            await self._call(env.close)

    async def _current(self, iid: str) -> tuple[HarnessSpec, int, str | None]:
        """The harness this episode runs under, the board's version (0: no board) and its skill."""
        if self.board is None:
            return self.harness, 0, None
        from .verl_board import read_board

        state = await read_board(self.board)
        spec = _spec(state["harness"]) if state.get("harness") else self.harness
        return spec, int(state.get("version") or 0), (state.get("skills") or {}).get(iid)

    async def _episode(self, env: Any, spec: HarnessSpec, sampling_params: dict[str, Any]) -> AgentLoopOutput:
        infra_error = ""
        version, skill = self.board_version, self.skill
        try:  # a skill is shown after the task as a non-trainable message (part of the prompt, mask 0)
            obs, info = await self._call(lambda: env.reset(options={"skill": skill} if skill else None))
        except Exception as exc:  # noqa: BLE001 - a sandbox that cannot start: masked, reported
            return self._failed(f"reset failed: {type(exc).__name__}: {exc}", spec, version, bool(skill))
        # Ending from outside goes through the wrapper stack (each layer adds its part of info).
        end, abort = env.get_wrapper_attr("end"), env.get_wrapper_attr("abort")
        tools = info.get("tools") or None
        transcript = list(obs)  # the env's messages as they are (sources, error kinds) and the assistant's
        messages = template_view(obs)
        prompt_ids = await self.ct_build_initial_tokens(messages, tools=tools)
        stream = list(prompt_ids)
        mask: list[int] = []
        logprobs: list[float] | None = []
        request_id = uuid.uuid4().hex
        turns = 0
        reward, info_end = 0.0, info
        while True:
            left = self.response_length - len(mask)
            if left <= 0:
                obs, reward, _, _, info_end = await self._call(end, "context_limit")
                break
            try:
                params = {**sampling_params, "max_tokens": left}
                if self.seed is not None:
                    params["seed"] = (self.seed + turns) & 0x7FFFFFFF
                out = await self.server_manager.generate(request_id, prompt_ids=stream, sampling_params=params)
            except Exception as exc:  # noqa: BLE001 - the server failed for good: masked
                infra_error = f"generate failed: {type(exc).__name__}: {exc}"
                obs, reward, _, _, info_end = await self._call(abort, infra_error, "model_error")
                break
            ids = list(out.token_ids)
            merged, mask, logprobs = await self.ct_merge_assistant_token(
                stream, ids, mask, logprobs if out.log_probs is not None and logprobs is not None else None,
                assistant_logprobs=out.log_probs)
            stream = merged.token_ids
            turns += 1
            text = self.tokenizer.decode([i for i in ids if i not in self.eos_ids], skip_special_tokens=False)
            messages.append({"role": "assistant", "content": text})
            transcript.append({"role": "assistant", "content": text})
            if len(ids) >= left and not (ids and ids[-1] in self.eos_ids):
                # the budget ran out inside this turn (the server calls that "completed"): grade as is
                obs, reward, _, _, info_end = await self._call(end, "context_limit")
                break
            obs, reward, term, trunc, info_end = await self._call(env.step, {"content": text})
            if term or trunc:
                break
            previous = list(messages)
            transcript.extend(obs)
            messages.extend(template_view(obs))
            merged, mask, logprobs = await self.ct_merge_context_msg(previous, messages, stream, mask, logprobs,
                                                                     tools=tools)
            stream = merged.token_ids
            if len(mask) >= self.response_length:
                obs, reward, _, _, info_end = await self._call(end, "context_limit")
                break
        self.messages = messages  # the final conversation, as the chat template sees it
        self.final_info = info_end  # the env's last info, every layer's part in it
        termination = info_end.get("termination")
        outcome = classify({"instance_id": spec.hash, "termination": termination, "reward": reward,
                            "mask_sample": bool(info_end.get("mask_sample")) or bool(infra_error)})
        masked, truncated = outcome.masked, outcome.truncated
        n = min(len(mask), self.response_length)
        response_ids = stream[len(stream) - len(mask):][:n]
        prompt = stream[: len(stream) - len(mask)]
        resp_mask = list(mask[:n])
        if masked or (truncated and self.truncated == "drop"):
            resp_mask = [0] * n  # no gradient; the sample still fills its slot in the batch
        grade = info_end.get("grade") or {}
        return AgentLoopOutput(
            prompt_ids=prompt, response_ids=response_ids, response_mask=resp_mask,
            response_logprobs=list(logprobs[:n]) if logprobs is not None and len(logprobs) >= n else None,
            reward_score=float(reward), num_turns=2 * turns + 1, metrics=AgentLoopMetrics(),
            extra_fields={"reward_extra_info": _extra_info(bool(grade.get("resolved")), truncated, str(termination),
                                                           masked, spec.hash, turns, getattr(env, "node", None) or "",
                                                           version, bool(skill),
                                                           _detail(transcript, info_end) if self.record else "")})

    def _failed(self, error: str, spec: HarnessSpec, version: int = 0, skill: bool = False) -> AgentLoopOutput:
        if error:
            log.warning("episode masked: %s", error)
        eos = next(iter(self.eos_ids), 0)
        return AgentLoopOutput(prompt_ids=[eos], response_ids=[eos], response_mask=[0], response_logprobs=[0.0],
                               reward_score=0.0, num_turns=0, metrics=AgentLoopMetrics(), extra_fields={
                                   "reward_extra_info": _extra_info(False, False, "sandbox_error", True, spec.hash, 0, "",
                                                                                   version, skill)})
