"""Deterministic models for tests and debugging: a fixed script, a replay of a recorded
trajectory, or a scripted policy (oracle, null) seen as a model."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from ha_envs.task import Task

from .base import Completion, LLMError

SUBMIT = {"role": "assistant", "content": "", "tool_calls": [
    {"id": "submit", "type": "function", "function": {"name": "submit", "arguments": "{}"}}]}


def _as_message(resp: Any) -> dict[str, Any]:
    if isinstance(resp, str):
        return {"role": "assistant", "content": resp}
    if isinstance(resp, dict):
        return {"role": "assistant", **{k: v for k, v in resp.items() if k != "role"}}
    raise TypeError(f"a scripted response must be text or a message dict, got {type(resp).__name__}")


class ScriptedClient:
    """Answers with ``responses`` in order (each text, a message dict, or a function of the
    conversation); then submits, or raises when ``strict``."""

    def __init__(self, responses: list[Any], name: str = "scripted", strict: bool = False,
                 tokenizer: Any = None, eos: str | None = "<|im_end|>") -> None:
        self.responses = list(responses)
        self.name = name
        self.strict = strict
        self.tokenizer = tokenizer
        """With a ``tokenizers.Tokenizer``, completions carry token ids (as a local model's would),
        ending with the ``eos`` token when the tokenizer has it."""
        self.eos_id = tokenizer.token_to_id(eos) if tokenizer is not None and eos else None
        self.calls = 0

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 prompt_ids: list[int] | None = None, max_tokens: int | None = None,
                 seed: int | None = None) -> Completion:
        i = self.calls
        self.calls += 1
        if i < len(self.responses):
            resp = self.responses[i]
            msg = _as_message(resp(messages) if callable(resp) else resp)
        elif self.strict:
            raise LLMError(f"{self.name}: the script has only {len(self.responses)} responses")
        else:
            msg = dict(SUBMIT)
        ids = None
        if self.tokenizer is not None:
            ids = self.tokenizer.encode(msg.get("content") or "", add_special_tokens=False).ids
            if self.eos_id is not None and msg.get("finish_reason", "stop") != "length":
                ids.append(self.eos_id)
            if max_tokens is not None and len(ids) > max_tokens:  # as a server cuts at max_tokens
                ids = ids[:max_tokens]
                text = self.tokenizer.decode([i for i in ids if i != self.eos_id], skip_special_tokens=False)
                msg = {"role": "assistant", "content": text, "finish_reason": "length"}
        return Completion(message=msg, token_ids=ids, finish_reason=msg.get("finish_reason", "stop"))


class ReplayClient(ScriptedClient):
    """Replays the assistant messages of one recorded episode (a trajectories.jsonl line).

    ``run``: which recorded run of the task; ``None`` draws one per episode from the episode's
    sampling seed (the first call's ``seed``: a group's members draw different runs, reproducibly),
    or replays run 1 when the episode has no seed."""

    def __init__(self, path: str | Path, instance_id: str | None = None, run: int | None = 1) -> None:
        self.path = Path(path)
        self.records = [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]
        if not self.records:
            raise LLMError(f"{path}: no trajectories to replay")
        super().__init__([], name=f"replay:{self.path.name}", strict=True)
        self.run = run
        self._instance: str | None = None
        if instance_id is not None:
            self.start_instance(instance_id)

    def runs_of(self, instance_id: str) -> list[int]:
        return sorted({int(r.get("run", 1)) for r in self.records if r["instance_id"] == instance_id})

    def start_instance(self, instance_id: str, run: int | None = None) -> None:
        run = run if run is not None else (self.run if self.run is not None else 1)
        recs = [r for r in self.records if r["instance_id"] == instance_id and int(r.get("run", 1)) == run]
        if not recs:
            raise LLMError(f"{self.path}: no trajectory of {instance_id} (run {run}) to replay")
        self._instance = instance_id
        self.replaying = run
        self.responses = [{k: v for k, v in m.items() if k in ("content", "tool_calls", "finish_reason")}
                          for m in recs[0]["messages"] if m["role"] == "assistant"]
        self.calls = 0

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 prompt_ids: list[int] | None = None, max_tokens: int | None = None,
                 seed: int | None = None) -> Completion:
        if self.run is None and self.calls == 0 and seed is not None and self._instance is not None:
            runs = self.runs_of(self._instance)
            self.start_instance(self._instance, runs[seed % len(runs)])
        return super().complete(messages, tools, prompt_ids, max_tokens, seed)

    def start(self, task: Task, info: dict[str, Any]) -> None:
        self.start_instance(task.instance_id)


class PolicyClient:
    """A scripted policy (``oracle``, ``null``) behind the client protocol, so every episode runs
    through the same AgentLoop."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.name = policy.name
        self._info: dict[str, Any] = {}
        self._seen = 0

    def start(self, task: Task, info: dict[str, Any]) -> None:
        self._info = info
        self._seen = 0
        self.policy.start(task, info)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 prompt_ids: list[int] | None = None, max_tokens: int | None = None,
                 seed: int | None = None) -> Completion:
        new = [m for m in messages[self._seen:] if m["role"] != "assistant"]
        self._seen = len(messages) + 1
        if seed is not None:  # a seeded policy (``coin``) draws from the episode's sampling seed
            self._info.setdefault("sampling_seed", seed)
        action = self.policy.act(new, self._info)
        msg = _as_message(action)
        return Completion(message=msg, finish_reason="stop")


class MenuClient:
    """Each reply drawn from a fixed menu of texts (a file), weighted, from the call's ``seed``: a
    fixed editor or a teacher for tests and the CPU demonstration (``--model menu:FILE``). The file
    is YAML or JSON (a list of texts, or of ``{reply, weight}``) or JSONL (``reply`` fields, as an
    SFT file from ``ha engineer sft-data`` holds). Without a seed the draws follow one seeded stream."""

    def __init__(self, path: str | Path) -> None:
        import yaml

        self.path = Path(path)
        if not self.path.is_file():
            raise LLMError(f"menu:{path}: no such file")
        text = self.path.read_text()
        try:
            if self.path.suffix == ".jsonl":
                items: Any = [json.loads(line) for line in text.splitlines() if line.strip()]
            else:
                items = yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            raise LLMError(f"menu:{path}: not a list of replies ({str(exc).splitlines()[0]})") from None
        if not isinstance(items, list) or not items:
            raise LLMError(f"menu:{path}: the file must hold a non-empty list of replies")
        self.replies: list[str] = []
        self.weights: list[float] = []
        for i, it in enumerate(items, 1):
            reply, weight = (it, 1.0) if isinstance(it, str) else (
                (it.get("reply"), it.get("weight", 1.0)) if isinstance(it, dict) else (None, None))
            if not isinstance(reply, str) or not isinstance(weight, (int, float)) or weight < 0:
                raise LLMError(f"menu:{path}: item {i} is not a text or a {{reply, weight >= 0}} mapping")
            self.replies.append(reply)
            self.weights.append(float(weight))
        if not sum(self.weights):
            raise LLMError(f"menu:{path}: every weight is 0")
        self.name = f"menu:{self.path.name}"
        self._rng = random.Random(0)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 prompt_ids: list[int] | None = None, max_tokens: int | None = None,
                 seed: int | None = None) -> Completion:
        rng = random.Random(seed) if seed is not None else self._rng
        reply = rng.choices(self.replies, weights=self.weights)[0]
        return Completion(message={"role": "assistant", "content": reply}, finish_reason="stop")
