"""OpenAI-compatible HTTP client (vLLM, SGLang, hosted APIs), over plain HTTP.

- Chat mode (``/chat/completions``): tools are sent natively (``tool_mode="native"``) or described
  in the system prompt and read back from the text (``tool_mode="text"``; the harness parser reads
  Hermes / Qwen3-Coder / fenced formats).
- Token mode (``/completions`` with a token-id prompt): used when the AgentLoop holds the prompt ids.
- Token ids and logprobs are captured when the server returns them (vLLM: ``return_token_ids`` and
  ``logprobs``).
- Retries (tenacity, exponential backoff with jitter) on 429, 5xx, timeouts, dropped connections
  and unparsable bodies; a 429 or 503 with ``Retry-After`` (seconds or an HTTP date) waits at least
  that long (capped at ``retry_after_max_s``). A retry re-sends the same request; nothing is
  recorded until one attempt succeeds, so a retry can never duplicate a turn.
"""

from __future__ import annotations

import json
import socket
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from .base import Completion, LLMError, TransientLLMError, api_messages


@dataclass
class OpenAIConfig:
    model: str
    base_url: str
    """e.g. ``http://127.0.0.1:8000/v1``."""
    api_key: str = ""
    tool_mode: str = "native"
    """``native``: OpenAI ``tools`` / ``tool_calls``; ``text``: no ``tools`` field, calls in the text."""
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 4096
    timeout_s: float = 600.0
    max_attempts: int = 6
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 300.0
    logprobs: bool = False
    return_token_ids: bool = False
    """Ask vLLM for the generated token ids (needed for training from chat mode)."""
    extra_body: dict[str, Any] = field(default_factory=dict)


class OpenAIClient:
    def __init__(self, config: OpenAIConfig) -> None:
        if config.tool_mode not in ("native", "text"):
            raise ValueError(f"tool_mode must be 'native' or 'text', got {config.tool_mode!r}")
        self.config = config
        self.name = config.model
        self.requests = 0
        self.sleep = time.sleep
        """How retries wait (a test swaps in a recorder)."""

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 prompt_ids: list[int] | None = None, max_tokens: int | None = None,
                 seed: int | None = None) -> Completion:
        c = self.config
        body: dict[str, Any] = {"model": c.model, "temperature": c.temperature, "top_p": c.top_p,
                                "max_tokens": min(c.max_tokens, max_tokens) if max_tokens else c.max_tokens,
                                **c.extra_body}
        if seed is not None:
            body["seed"] = seed
        if c.return_token_ids or prompt_ids is not None:
            body["return_token_ids"] = True
        if prompt_ids is not None:
            # token mode: the ids and logprobs of what the model generated are the training data,
            # so they are always asked for (vLLM: return_token_ids, logprobs=1 gives the sampled one)
            path = "/completions"
            body["prompt"] = prompt_ids
            body["logprobs"] = 1
        else:
            path = "/chat/completions"
            body["messages"] = api_messages(messages)
            if tools and c.tool_mode == "native":
                body["tools"] = tools
            if c.logprobs:
                body["logprobs"] = True
        t0 = time.monotonic()
        attempts = 0

        def once() -> dict[str, Any]:
            nonlocal attempts
            attempts += 1
            return self._post(path, body)

        backoff = wait_random_exponential(multiplier=0.5, max=c.backoff_max_s)

        def wait(state: Any) -> float:
            exc = state.outcome.exception() if state.outcome is not None else None
            told = exc.retry_after if isinstance(exc, TransientLLMError) else None
            base = backoff(state)
            return max(base, min(told, c.retry_after_max_s)) if told is not None else base

        try:
            data = Retrying(stop=stop_after_attempt(c.max_attempts), reraise=True, wait=wait, sleep=self.sleep,
                            retry=retry_if_exception_type(TransientLLMError))(once)
        except TransientLLMError as exc:
            raise LLMError(f"{c.model}: gave up after {attempts} attempts: {exc}") from exc
        out = _chat_completion(data) if prompt_ids is None else _text_completion(data)
        out.attempts = attempts
        out.latency_s = time.monotonic() - t0
        if prompt_ids is not None:
            out.prompt_token_ids = list(prompt_ids)
        return out

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.requests += 1
        url = self.config.base_url.rstrip("/") + path
        headers = {"Content-Type": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.config.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            if exc.code == 429 or exc.code >= 500:
                raise TransientLLMError(f"HTTP {exc.code} from {url}: {detail}",
                                        retry_after=_retry_after(exc.headers.get("Retry-After"))) from None
            raise LLMError(f"HTTP {exc.code} from {url}: {detail}") from None
        except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError) as exc:
            raise TransientLLMError(f"{url}: {getattr(exc, 'reason', exc)}") from None
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            raise TransientLLMError(f"{url}: the response is not complete JSON ({len(raw)} bytes)") from None
        if not isinstance(data, dict) or not data.get("choices"):
            raise TransientLLMError(f"{url}: the response has no choices: {str(data)[:200]}")
        return data


def _retry_after(value: str | None) -> float | None:
    """``Retry-After``: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(timezone.utc)).total_seconds())
    except (TypeError, ValueError):
        return None


def _usage(data: dict[str, Any]) -> dict[str, int]:
    u = data.get("usage") or {}
    return {k: int(v) for k, v in u.items() if isinstance(v, int)}


def _chat_completion(data: dict[str, Any]) -> Completion:
    choice = data["choices"][0]
    msg = choice.get("message") or {}
    message: dict[str, Any] = {"role": "assistant", "content": msg.get("content") or ""}
    if msg.get("tool_calls"):
        message["tool_calls"] = msg["tool_calls"]
    finish = choice.get("finish_reason")
    message["finish_reason"] = finish
    logprobs = None
    lp = choice.get("logprobs")
    if isinstance(lp, dict) and isinstance(lp.get("content"), list):
        logprobs = [float(t.get("logprob", 0.0)) for t in lp["content"]]
    return Completion(message=message, token_ids=choice.get("token_ids"), logprobs=logprobs,
                      prompt_token_ids=data.get("prompt_token_ids"), finish_reason=finish, usage=_usage(data))


def _text_completion(data: dict[str, Any]) -> Completion:
    choice = data["choices"][0]
    finish = choice.get("finish_reason")
    lp = choice.get("logprobs")
    logprobs = [float(x) for x in lp["token_logprobs"]] if isinstance(lp, dict) and lp.get("token_logprobs") else None
    message = {"role": "assistant", "content": choice.get("text") or "", "finish_reason": finish}
    return Completion(message=message, token_ids=choice.get("token_ids"), logprobs=logprobs,
                      finish_reason=finish, usage=_usage(data))


def parse_model_spec(spec: str) -> OpenAIConfig:
    """``openai:NAME@URL`` -> config (``URL`` like ``http://host:8000/v1``)."""
    body = spec[len("openai:"):] if spec.startswith("openai:") else spec
    if "@" not in body:
        raise ValueError(f"expected openai:NAME@URL, got {spec!r}")
    name, url = body.rsplit("@", 1)
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"the URL of {spec!r} must start with http:// or https://")
    return OpenAIConfig(model=name, base_url=url)
