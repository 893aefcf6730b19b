"""The LLM client protocol: messages + tools in, one assistant message out (with token ids and
logprobs when the backend gives them).

Two ways to call a model:
- ``complete(messages, tools)``: the backend renders the conversation (OpenAI chat API, hosted
  models). Tool calls come back natively or as text.
- ``complete(messages, tools, prompt_ids=...)``: the caller (the AgentLoop) already holds the exact
  prompt token ids and the backend continues them (vLLM/SGLang ``/v1/completions`` with a token-id
  prompt, or a local model). This is what training needs: the ids the model saw and produced are
  kept as they were, never re-tokenised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class LLMError(RuntimeError):
    """The model call failed for good (bad request, auth, retries exhausted); the episode is masked."""


class TransientLLMError(LLMError):
    """A failure worth retrying: 429, 5xx, a timeout, a dropped connection, a cut response.
    ``retry_after``: the seconds the server asked to wait (``Retry-After``), when it said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class Completion:
    message: dict[str, Any]
    """``{"role": "assistant", "content": str, "tool_calls"?: [...]}``, plus ``finish_reason``."""
    token_ids: list[int] | None = None
    """The generated token ids, as the model produced them (None when the backend does not say)."""
    logprobs: list[float] | None = None
    prompt_token_ids: list[int] | None = None
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    attempts: int = 1
    """HTTP attempts it took (retries are counted here, never as extra turns)."""
    latency_s: float = 0.0

    @property
    def text(self) -> str:
        return self.message.get("content") or ""


@runtime_checkable
class LLMClient(Protocol):
    name: str

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 prompt_ids: list[int] | None = None) -> Completion:
        """One assistant turn. A client may also accept the keyword options ``max_tokens`` (a cap
        for this call; the loop sends the context left) and ``seed`` (sampling seed of this call);
        the loop sends only those its ``complete`` declares (``call_options``)."""


def call_options(client: Any) -> frozenset[str]:
    """Which optional per-call keywords (``max_tokens``, ``seed``) ``client.complete`` accepts."""
    import inspect

    try:
        params = inspect.signature(client.complete).parameters
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return frozenset({"max_tokens", "seed"})
    return frozenset(k for k in ("max_tokens", "seed") if k in params)


def api_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as an OpenAI-compatible server expects them (our provenance fields dropped)."""
    out = []
    for m in messages:
        msg: dict[str, Any] = {"role": m["role"], "content": m.get("content") or ""}
        if m["role"] == "assistant" and m.get("tool_calls"):
            msg["tool_calls"] = m["tool_calls"]
        if m["role"] == "tool":
            msg["tool_call_id"] = m.get("tool_call_id", "")
        out.append(msg)
    return out
