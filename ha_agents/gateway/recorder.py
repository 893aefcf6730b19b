"""One gateway session's model calls, recorded token-faithfully the way the agent loop records them.

A harness behind the gateway sends the whole conversation with every request. The recorder keeps
what it has already seen and what it answered, so each request is one more turn of one episode:

- **Token mode** (a chat template and a tokenizer, as ``ha eval --tokenizer``): the first request's
  conversation is rendered with the template and tokenised once (loss mask 0); each later request
  must extend the conversation the recorder holds (the earlier messages unchanged, the assistant
  reply as answered), and only its new messages are rendered as the template's delta (mask 0). The
  model continues exactly those prompt ids; its generated ids and logprobs are appended as they
  came (mask 1). Tool calls are read from the generated text by the harness parser and returned to
  the harness as OpenAI ``tool_calls``.
- **Chat mode** (no template): the backend renders the conversation (``openai:`` servers). The ids
  and logprobs the server returns (vLLM: ``return_token_ids``, ``logprobs``) are kept per call in
  ``model_calls``; the flat token stream is built only where the server also returned the prompt
  ids and they extend the stream so far. A call without ids is a text-only turn: ``token_error``
  says so, and no id is ever made up.

A harness that rewrites earlier turns (a history summariser) breaks the one-stream property: the
recorder says so in ``token_error`` (trainers drop such records) and goes on with full renders.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from ha_envs.actions import FormatError
from ha_envs.harness.tool_calls import ToolCallParser

from ..chat.tokens import as_codec
from ..llm.base import Completion, LLMClient, LLMError, call_options


class RequestError(ValueError):
    """The harness's request is malformed (HTTP 400 with this message)."""


class ContextLimit(LLMError):
    """Token mode: the conversation fills the context budget; the episode ends ``context_limit``
    (truncated, graded as it stands), as the agent loop ends it."""


def _text(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):  # OpenAI content parts: text only
        parts = []
        for p in content:
            if not isinstance(p, dict) or p.get("type") != "text" or not isinstance(p.get("text"), str):
                raise RequestError(f"{where}: only text content parts are supported, got {str(p)[:80]}")
            parts.append(p["text"])
        return "".join(parts)
    raise RequestError(f"{where}: content must be a string or a list of text parts")


def read_messages(raw: Any) -> list[dict[str, Any]]:
    """The request's ``messages`` as this library's messages (role, content, tool calls, tool ids)."""
    if not isinstance(raw, list) or not raw:
        raise RequestError("messages: expected a non-empty list of chat messages")
    out = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            raise RequestError(f"messages[{i}]: expected an object with role system, user, assistant or tool")
        msg: dict[str, Any] = {"role": m["role"], "content": _text(m.get("content"), f"messages[{i}]")}
        if m["role"] == "assistant" and m.get("tool_calls"):
            if not isinstance(m["tool_calls"], list):
                raise RequestError(f"messages[{i}].tool_calls: expected a list")
            msg["tool_calls"] = [{"id": tc.get("id", ""), "type": "function",
                                  "function": {"name": (tc.get("function") or {}).get("name", ""),
                                               "arguments": (tc.get("function") or {}).get("arguments", "{}")}}
                                 for tc in m["tool_calls"] if isinstance(tc, dict)]
        if m["role"] == "tool":
            msg["tool_call_id"] = str(m.get("tool_call_id") or "")
        out.append(msg)
    return out


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two messages are the same turn (tool-call ids and our provenance fields aside)."""
    def key(m: dict[str, Any]) -> tuple:
        calls = []
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or {}
            args = fn.get("arguments")
            try:
                args = json.loads(args) if isinstance(args, str) else args
            except json.JSONDecodeError:
                pass
            calls.append((fn.get("name"), json.dumps(args, sort_keys=True)))
        return m["role"], (m.get("content") or "").strip(), tuple(calls)
    return key(a) == key(b)


@dataclass
class TokenStream:
    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float | None] = field(default_factory=list)

    def append(self, ids: list[int], mask: int, logprobs: list[float | None] | None = None) -> None:
        self.token_ids.extend(ids)
        self.loss_mask.extend([mask] * len(ids))
        self.logprobs.extend(logprobs if logprobs is not None and len(logprobs) == len(ids) else [None] * len(ids))


class TurnRecorder:
    """Turns of one session. ``complete(messages, tools, ...)`` is one model call; the recorder is
    thread-safe (a harness that sends two calls at once gets them one after the other)."""

    def __init__(self, client: LLMClient, template: Any = None, tokenizer: Any = None,
                 max_tokens: int | None = None, context_tokens: int | None = None) -> None:
        if (template is None) != (tokenizer is None):
            raise ValueError("token mode needs both a chat template and a tokenizer")
        self.client = client
        self.template = template
        self.codec = as_codec(tokenizer) if tokenizer is not None else None
        self.max_tokens = max_tokens
        self.context_tokens = context_tokens
        """Token mode: the budget of the whole conversation (prompt + completion)."""
        self._options = call_options(client)
        self._eos_id = self.codec.token_to_id(template.eos) if self.codec is not None else None
        if self.codec is not None and self._eos_id is None:
            raise ValueError(f"the tokenizer has no token for the template's end of turn {template.eos!r}")
        self.lock = threading.Lock()
        self.seen: list[dict[str, Any]] = []
        """The conversation so far as recorded: the last request's messages and the reply to it."""
        self.stream = TokenStream()
        self.model_calls: list[dict[str, Any]] = []
        self.token_error = ""
        self.broken = False
        self._closed = True
        self.tools: list[dict[str, Any]] = []
        self.seed: int | None = None
        """The episode's sampling seed (training through the gateway): a call whose request names no
        seed samples with one derived from it and the turn, as the agent loop derives it."""

    @property
    def token_mode(self) -> bool:
        return self.template is not None

    def _note(self, error: str) -> None:
        self.token_error = self.token_error or error

    def _extends(self, messages: list[dict[str, Any]]) -> bool:
        return len(messages) > len(self.seen) and all(_same(a, b) for a, b in zip(self.seen, messages))

    def _prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: int) -> list[int]:
        """Token mode: the exact ids the model continues this turn (the stream, extended)."""
        if not self.seen:
            self.stream.append(self.codec.encode(self.template.prompt(messages, tools)), 0)
            return list(self.stream.token_ids)
        if not self.broken and self._extends(messages) and tools == self.tools:
            self.stream.append(self.codec.encode(self.template.delta(messages[len(self.seen):], self._closed, tools)), 0)
            return list(self.stream.token_ids)
        self.broken = True
        self._note(f"turn {turn}: the harness sent a conversation that does not extend the one recorded (earlier "
                   "messages or tools changed); the token stream stops there and later calls are full renders")
        return self.codec.encode(self.template.prompt(messages, tools))

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], max_tokens: int | None = None,
                 seed: int | None = None) -> Completion:
        """One model call for the harness's conversation; the assistant message to answer with is
        ``comp.message``. Raises ``LLMError`` (nothing recorded), ``ContextLimit`` (token mode: no
        room left in ``context_tokens``)."""
        with self.lock:
            turn = len(self.model_calls) + 1
            mark = (len(self.stream.token_ids), self.broken, self.token_error)
            try:
                return self._complete(messages, tools, max_tokens, seed, turn)
            except LLMError:
                del self.stream.token_ids[mark[0]:], self.stream.loss_mask[mark[0]:], self.stream.logprobs[mark[0]:]
                self.broken, self.token_error = mark[1], mark[2]  # a failed call leaves no trace in the stream
                raise

    def _complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], max_tokens: int | None,
                  seed: int | None, turn: int) -> Completion:
        kw: dict[str, Any] = {}
        prompt_ids = self._prompt_ids(messages, tools, turn) if self.token_mode else None
        left = self.context_tokens - len(prompt_ids) if prompt_ids is not None and self.context_tokens else None
        if left is not None and left <= 0:
            raise ContextLimit(f"This model's maximum context length is {self.context_tokens} tokens; the "
                               f"conversation is {len(prompt_ids)} tokens (turn {turn})")
        caps = [c for c in (self.max_tokens, max_tokens, left) if c]
        if "max_tokens" in self._options and caps:
            kw["max_tokens"] = min(caps)
        if seed is None and self.seed is not None:
            seed = (int(self.seed) * 1_000_003 + turn) % (2 ** 31)  # as AgentLoop seeds a turn
        if "seed" in self._options and seed is not None:
            kw["seed"] = seed
        in_stream = self.token_mode and not self.broken
        comp = self.client.complete(messages, tools, prompt_ids=prompt_ids, **kw)
        message = self._token_turn(comp, tools, turn, in_stream) if self.token_mode else self._chat_turn(comp, turn)
        self.model_calls.append({"finish_reason": comp.finish_reason, "completion_tokens": len(comp.token_ids or []),
                                 "attempts": comp.attempts, "latency_s": round(comp.latency_s, 4),
                                 "token_ids": None if self.token_mode else comp.token_ids,
                                 "logprobs": None if self.token_mode else comp.logprobs,
                                 "text_only": comp.token_ids is None,
                                 **({"prompt_tokens": len(prompt_ids)} if prompt_ids is not None else {})})
        self.seen = list(messages) + [message]
        self.tools = list(tools)
        comp.message = message
        return comp

    def _chat_turn(self, comp: Completion, turn: int) -> dict[str, Any]:
        if comp.token_ids is None:
            self.broken = True
            self._note(f"turn {turn}: the server returned no token ids (a text-only turn; ids are never guessed); "
                       "serve with vLLM/SGLang return_token_ids")
        elif comp.prompt_token_ids is None:
            self.broken = True
            self._note(f"turn {turn}: the server returned the completion's ids but not the prompt's; the per-call "
                       "ids and logprobs are in model_calls, the token stream is not built")
        elif not self.broken:
            prompt = list(comp.prompt_token_ids)
            if prompt[:len(self.stream.token_ids)] != self.stream.token_ids:
                self.broken = True
                self._note(f"turn {turn}: the prompt ids the server returned do not extend the previous turn's stream")
            else:
                self.stream.append(prompt[len(self.stream.token_ids):], 0)
                self.stream.append(list(comp.token_ids), 1, comp.logprobs)
        return {k: v for k, v in comp.message.items() if k in ("role", "content", "tool_calls")}

    def _token_turn(self, comp: Completion, tools: list[dict[str, Any]], turn: int, in_stream: bool) -> dict[str, Any]:
        if comp.token_ids is None:
            self._note(f"turn {turn}: the backend returned no token ids; its text was re-encoded with loss mask 0 "
                       "(ids are never guessed for training)")
            ids, mask, lps = self.codec.encode(comp.text), 0, None
        else:
            ids, mask, lps = list(comp.token_ids), 1, comp.logprobs
        closed = bool(ids) and ids[-1] == self._eos_id
        if not closed and comp.finish_reason in ("stop", "tool_calls"):
            ids.append(self._eos_id)  # the backend dropped the stop token it generated
            lps = None if lps is None else list(lps) + [None]
            closed = True
        if in_stream:
            self.stream.append(ids, mask, lps)
        self._closed = closed
        return self._with_tool_calls(comp.text, tools, turn)

    def _with_tool_calls(self, text: str, tools: list[dict[str, Any]], turn: int) -> dict[str, Any]:
        """The generated text as an OpenAI assistant message: tool calls read from the text by the
        harness parser (Hermes, Qwen3-Coder XML, fenced bash), none when it finds no valid one."""
        message: dict[str, Any] = {"role": "assistant", "content": text}
        schemas = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools
                   if isinstance(t, dict) and isinstance(t.get("function"), dict) and t["function"].get("name")}
        if not schemas:
            return message
        try:
            parsed = ToolCallParser("auto", multi_call="all").parse(text, schemas)
        except FormatError:
            return message  # the harness sees no call and says so in its own words
        message["tool_calls"] = [{"id": f"call_{turn}_{i}", "type": "function",
                                  "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                                 for i, c in enumerate(parsed.calls)]
        return message

    def messages(self) -> list[dict[str, Any]]:
        """The conversation as recorded, with this library's provenance fields."""
        out = []
        for i, m in enumerate(self.seen):
            source = "policy" if m["role"] == "assistant" else ("tool" if m["role"] == "tool" else
                                                                ("system" if m["role"] == "system" else
                                                                 ("task" if i <= 1 else "harness")))
            out.append(dict(m, source=source, trainable=m["role"] == "assistant"))
        return out
