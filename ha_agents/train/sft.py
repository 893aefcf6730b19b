"""Demonstrations for a supervised warm start: a scripted policy (the ``oracle``) run through the
real env, sandbox and grader in token mode, its text encoded with the policy's tokenizer.

The ids of a demonstration are the tokenizer's encoding of the oracle's text (there is no model to
take them from), so the records are marked ``demonstration`` and are for SFT only; GRPO records
always carry the policy's own ids. Tool calls the oracle makes natively are written as Hermes
``<tool_call>`` text, which the harness parsers read in every text format but ``fenced_bash``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from ha_envs.actions import ToolCall
from ha_envs.harness.tool_calls import render_call
from ha_envs.task import Task

from ..episode import EpisodeConfig, TokenMode
from ..llm.base import Completion
from ..llm.scripted import PolicyClient
from ..llm.policies import make_policy
from ..records.episode_record import EpisodeRecord
from ..runs.rollouts import collect
from ..chat.tokens import as_codec
from .base import Sample


class TokenizingClient:
    """Wraps a text-only client: its replies come back with token ids (the encoding of the text plus
    the end-of-turn token), as a local model's would."""

    def __init__(self, inner: Any, tokenizer: Any, eos: str) -> None:
        self.inner = inner
        self.codec = as_codec(tokenizer)
        self.eos_id = self.codec.token_to_id(eos)
        self.name = f"{inner.name}+tokenized"

    def start(self, task: Task, info: dict[str, Any]) -> None:
        if hasattr(self.inner, "start"):
            self.inner.start(task, info)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 prompt_ids: list[int] | None = None, max_tokens: int | None = None, seed: int | None = None) -> Completion:
        msg = dict(self.inner.complete(messages, tools).message)
        text = msg.get("content") or ""
        for tc in msg.pop("tool_calls", None) or []:
            fn = tc["function"]
            args = json.loads(fn["arguments"]) if isinstance(fn["arguments"], str) else fn["arguments"]
            text += ("\n" if text else "") + render_call(ToolCall(fn["name"], args), "hermes")
        ids = self.codec.encode(text) + [self.eos_id]
        return Completion(message={"role": "assistant", "content": text, "finish_reason": "stop"}, token_ids=ids,
                          finish_reason="stop")


def demonstrations(tasks: list[Task], token_mode: TokenMode, out: str | Path, harness: Any = "h0",
                   policy: Any = "oracle", **kw: Any) -> list[EpisodeRecord]:
    """One episode of ``policy`` (a name, or a policy object) per task, one at a time (a scripted
    policy keeps per-episode state, so its client cannot be shared by concurrent episodes)."""
    template, tok = token_mode.resolve()
    client = TokenizingClient(PolicyClient(make_policy(policy) if isinstance(policy, str) else policy), tok, template.eos)
    config = replace(EpisodeConfig.of(harness), token_mode=token_mode, **kw)
    records = collect(tasks, 1, client, config, out=out, workers=1, progress_bar=False)
    return [r.with_fields(demonstration=True) for r in records]


def sft_samples(records: list[dict[str, Any]], resolved_only: bool = True) -> list[Sample]:
    return [Sample(token_ids=list(r["token_ids"]), loss_mask=list(r["loss_mask"]),
                   logprobs=[None] * len(r["token_ids"]), reward=float(r["reward"]), advantage=1.0,
                   group=r["instance_id"], termination=r.get("termination"), instance_id=r["instance_id"])
            for r in records if any(r.get("loss_mask") or ()) and (r["resolved"] or not resolved_only)]
