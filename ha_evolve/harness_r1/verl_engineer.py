"""Harness-R1's engineer on verl 0.9.1: a one-turn agent loop over ``HarnessEditEnv``
(``ha engineer train --backend verl``; extra ``verl``).

``EngineerAgentLoop`` is registered through an agent-loop YAML (``engineer_loop_yaml``)::

    - name: harnessadapt-engineer
      _target_: ha_evolve.harness_r1.verl_engineer.EngineerAgentLoop
      target: {model: openai:Qwen3-8B@http://gpu:8000/v1, harness: h0, sandbox: docker, runs: 4, ...}
      tasks: {suite: mini} | {jsonl: PATH} | {benchmark: verified, data: PATH}
      batches: runs/b.json          # from `ha engineer batches` (it names the target's run)
      out: runs/engineer            # the outcome cache, shared by every worker (file locks)

Each dataset row (``write_batch_dataset``) names a failure batch in ``extra_info.batch``. Per
episode: the env renders the engineer's prompt for the batch; ``ct_build_initial_tokens`` tokenises
it with the engineer's own chat template; one ``server_manager.generate`` with the whole response
budget; the reply (end-of-turn token dropped) goes to ``env.step``, whose reward is the patch's
paired gain Δ of the frozen target, re-run on both sides with common seeds and cached by the applied
spec's hash (``harness_edit.py``: invalid and no-op patches 0 and no rollout). The rules are the
repair loop's (``ha_agents.train.verl_loop``): a reply that fills the budget without an end-of-turn
token is truncated (no patch is read from it; dropped from the gradient under ``truncated: drop``);
a failed server call or a masked comparison (too many of the target's runs lost to faults) gets an
all-zero response mask; ``reward_extra_info`` has fixed keys. Only the engineer's weights are in
verl's actor; the target is whatever ``target.model`` names (a separately served model, or a
fixture policy), never trained here.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import uuid
from pathlib import Path
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput

from ha_agents.chat.template import template_view
from ha_agents.train.verl_loop import _end_of_turn_ids, load_tasks

from .engineer import outcome_kind
from .harness_edit import HarnessEditEnv, Target

log = logging.getLogger(__name__)

AGENT_NAME = "harnessadapt-engineer"
EXTRA_KEYS = ("delta", "kind", "stage", "termination", "mask_sample", "truncated", "rollouts", "cache_hits")
"""The keys of every episode's ``reward_extra_info`` (verl batches them, so all episodes share them)."""


@functools.lru_cache(maxsize=4)
def _batches_and_records(path: str) -> tuple[list[list[str]], list[dict[str, Any]]]:
    """The batches of a ``ha engineer batches`` file and the target run's records it names (read once
    per process: verl builds a loop per episode)."""
    from ha_envs.grading.faults import records_under

    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or not isinstance(data.get("batches"), list) or not data.get("run"):
        raise ValueError(f"{path}: not a batches file of `ha engineer batches`")
    return [list(b) for b in data["batches"]], records_under(data["run"])


def _plain(value: Any) -> Any:
    if hasattr(value, "items") and not isinstance(value, dict):  # an OmegaConf node
        from omegaconf import OmegaConf

        return OmegaConf.to_container(value, resolve=True)
    return value


class EngineerAgentLoop(AgentLoopBase):
    def __init__(self, *args: Any, target: Any = None, tasks: Any = None, batches: str = "", out: str = "runs/engineer",
                 budget_chars: int = 24000, truncated: str = "drop", **kwargs: Any) -> None:
        kwargs.pop("name", None)
        super().__init__(*args, **kwargs)
        if truncated not in ("drop", "keep"):
            raise ValueError(f"truncated must be drop or keep, got {truncated!r}")
        if not target or not batches:
            raise ValueError("EngineerAgentLoop needs `target` (the frozen agent) and `batches` (a batches file)")
        self.target = Target.create(**_plain(target))
        self.task_source = dict(_plain(tasks) or {"suite": "mini"})
        self.batches_file, self.out, self.budget_chars = str(batches), str(out), int(budget_chars)
        self.truncated = truncated
        self.response_length = int(self.rollout_config.response_length)
        self.eos_ids = _end_of_turn_ids(self.tokenizer)

    def _env(self) -> HarnessEditEnv:
        """An env per episode (its batch state is the episode's); tasks and records are loaded once."""
        batches, records = _batches_and_records(self.batches_file)
        return HarnessEditEnv(self.target, list(load_tasks(self.task_source).values()), batches, records,
                              Path(self.out), self.budget_chars)

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args, **kwargs))

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        extra = dict(kwargs.get("extra_info") or {})
        if "batch" not in extra:
            raise ValueError("an engineer dataset row names its failure batch in extra_info.batch")
        env = self._env()
        messages, _ = await self._call(env.reset, options={"batch": int(extra["batch"])})
        prompt_ids = list(await self.ct_build_initial_tokens(template_view(messages)))
        truncated = False
        try:
            out = await self.server_manager.generate(uuid.uuid4().hex, prompt_ids=prompt_ids,
                                                     sampling_params={**sampling_params, "max_tokens": self.response_length})
        except Exception as exc:  # noqa: BLE001 - the server failed for good: masked
            _, reward, _, _, info = await self._call(env.abort, f"generate failed: {type(exc).__name__}: {exc}")
            ids, logprobs = [next(iter(self.eos_ids), 0)], [0.0]
        else:
            ids = list(out.token_ids)
            logprobs = list(out.log_probs) if out.log_probs is not None else None
            if len(ids) >= self.response_length and not (ids and ids[-1] in self.eos_ids):
                truncated = True  # the budget ran out inside the reply: no patch is read from it
                _, reward, _, _, info = await self._call(env.end, "context_limit")
            else:
                reply = self.tokenizer.decode([i for i in ids if i not in self.eos_ids], skip_special_tokens=False)
                _, reward, _, _, info = await self._call(env.step, reply)
        masked = bool(info.get("mask_sample"))
        mask = [0] * len(ids) if masked or (truncated and self.truncated == "drop") else [1] * len(ids)
        extra_info = dict(zip(EXTRA_KEYS, (float(reward), outcome_kind(info, float(reward)), str(info.get("stage", "")),
                                           str(info.get("termination", "")), float(masked), float(truncated),
                                           float(info.get("rollouts", 0)), float(info.get("cache_hits", 0)))))
        return AgentLoopOutput(prompt_ids=prompt_ids, response_ids=ids, response_mask=mask,
                               response_logprobs=logprobs if logprobs is not None and len(logprobs) == len(ids) else None,
                               reward_score=float(reward), num_turns=2, metrics=AgentLoopMetrics(),
                               extra_fields={"reward_extra_info": extra_info})


def engineer_loop_yaml(path: Path, target: Target, tasks: dict[str, Any], batches: Path, out: Path,
                       budget_chars: int = 24000, truncated: str = "drop") -> Path:
    import yaml

    entry = {"name": AGENT_NAME, "_target_": "ha_evolve.harness_r1.verl_engineer.EngineerAgentLoop",
             "target": target.to_dict(), "tasks": tasks, "batches": str(Path(batches).resolve()),
             "out": str(Path(out).resolve()), "budget_chars": budget_chars, "truncated": truncated}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump([entry], sort_keys=False))
    return path


def write_batch_dataset(batches: list[list[str]], path: Path) -> Path:
    """verl's RL dataset for the engineer: a row per failure batch (``extra_info.batch``); the prompt
    is rendered by the env at run time (it holds the target's trajectories), so the row's own is a
    placeholder naming the batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"data_source": "harnessadapt/harness-edit", "agent_name": AGENT_NAME,
             "prompt": [{"role": "user", "content": f"failure batch {k}: {', '.join(b)}"}], "ability": "harness-editing",
             "reward_model": {"style": "env", "ground_truth": ""}, "extra_info": {"index": k, "batch": k}}
            for k, b in enumerate(batches)]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path
