"""A local Hugging Face ``transformers`` model (CPU or GPU), for small models, tests and the local
trainer.

``TransformersClient("path/to/model")`` loads the model and its tokenizer from a local directory
(nothing is fetched from the hub); ``TransformersClient.from_model(model, tokenizer)`` wraps a model
already in memory (the local trainer's policy: rollouts use the weights being trained, no copy).
In token mode (``prompt_ids`` given, as the AgentLoop does when it holds a template and tokenizer)
it continues exactly those ids and returns the generated ids and their logprobs. In chat mode it
renders the conversation with the tokenizer's own chat template. Tool calls are read from the text
by the harness parser (Hermes / Qwen3-Coder / fenced formats).

Sampling seeds: a call with ``seed`` (the AgentLoop sends one derived from the episode seed and the
turn) is reproducible; a call without one draws a fresh seed from a counter, so two completions of
one prompt at temperature > 0 differ (a GRPO group needs different members). Generation holds a lock:
the seed and the sampling are one step even when episodes run in threads.

Loading: a model directory is loaded once per process and device and shared by every client of it
(``ha eval --workers N`` builds one client per episode); the load itself is serialised, since
``transformers`` sets process-wide state while it builds a model (two threads loading at once met
"Cannot copy out of meta tensor"). Clients of one shared model share its generation lock (the
seed is the process-wide torch RNG).

Needs the ``hf`` extra (torch, transformers).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from .base import Completion, LLMError

_LOAD_LOCK = threading.Lock()
_LOADED: dict[tuple[Any, ...], tuple[Any, Any, threading.Lock]] = {}
"""(path, device, the files' mtimes) -> (model, tokenizer, its generation lock): one copy per process."""


def _load(path: str, device: str) -> tuple[Any, Any, threading.Lock]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import os

    stamp = tuple((f, os.stat(os.path.join(path, f)).st_mtime_ns) for f in sorted(os.listdir(path))
                  if f.endswith((".safetensors", ".bin", ".json"))) if os.path.isdir(path) else ()
    with _LOAD_LOCK:
        key = (str(path), device, stamp)  # a directory rewritten since (a new checkpoint) loads again
        if key not in _LOADED:
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).to(device).eval()
            _LOADED[key] = (model, tokenizer, threading.Lock())
        return _LOADED[key]


class TransformersClient:
    def __init__(self, path: str | None, max_tokens: int = 512, temperature: float = 0.0, device: str | None = None,
                 seed: int = 0, model: Any = None, tokenizer: Any = None, eos_token: str | None = None,
                 top_p: float | None = None) -> None:
        try:
            import torch
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise LLMError("hf: models need the `hf` extra: pip install -e '.[hf]'") from exc
        self.torch = torch
        self.name = path or getattr(getattr(model, "config", None), "name_or_path", "") or "local-model"
        self.max_tokens = max_tokens
        """Cap per call (a call's own ``max_tokens`` may lower it)."""
        self.temperature = temperature
        self.top_p = top_p
        """Nucleus sampling (None or 1: off); used only when sampling (temperature > 0)."""
        self.seed = seed
        self._draws = itertools.count()
        self._lock = threading.Lock()
        if model is None:
            try:
                __import__("transformers")
            except ImportError as exc:  # pragma: no cover
                raise LLMError("hf: models need the `hf` extra: pip install -e '.[hf]'") from exc
            self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
            try:
                model, tokenizer, self._lock = _load(str(path), self.device)
            except (OSError, ValueError) as exc:
                raise LLMError(f"hf: cannot load a model from {path!r}: {exc}") from exc
        else:
            self.device = device or str(next(model.parameters()).device)
        self.model = model
        self.tokenizer = tokenizer
        self.eos_id = tokenizer.convert_tokens_to_ids(eos_token) if eos_token else tokenizer.eos_token_id
        if self.eos_id is None:
            raise LLMError(f"hf: {self.name} has no end-of-turn token (set eos_token)")

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, **kw: Any) -> "TransformersClient":
        return cls(None, model=model, tokenizer=tokenizer, **kw)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 prompt_ids: list[int] | None = None, max_tokens: int | None = None,
                 seed: int | None = None) -> Completion:
        torch = self.torch
        if prompt_ids is None:
            if not getattr(self.tokenizer, "chat_template", None):
                raise LLMError(f"hf: {self.name} has no chat template; run it in token mode (--template)")
            prompt_ids = self.tokenizer.apply_chat_template(
                [{"role": m["role"], "content": m.get("content") or ""} for m in messages], tools=tools or None,
                add_generation_prompt=True, tokenize=True, return_dict=False)
        budget = min(self.max_tokens, max_tokens) if max_tokens else self.max_tokens
        if budget <= 0:
            raise LLMError(f"hf: no tokens left to generate (max_tokens={max_tokens})")
        ids = torch.tensor([list(prompt_ids)], device=self.device)
        sample = self.temperature > 0
        with self._lock:
            torch.manual_seed(seed if seed is not None else (self.seed * 7919 + next(self._draws)) % (2 ** 31))
            was_training = self.model.training
            self.model.eval()
            try:
                with torch.no_grad():
                    out = self.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=budget,
                                              do_sample=sample, temperature=self.temperature if sample else None,
                                              top_p=self.top_p if sample and self.top_p not in (None, 1.0) else None, top_k=None,
                                              eos_token_id=self.eos_id,
                                              pad_token_id=self.eos_id, output_scores=True,
                                              return_dict_in_generate=True)
            finally:
                self.model.train(was_training)
        new = out.sequences[0, ids.shape[1]:].tolist()
        # the logprob of each sampled token under the sampling distribution (temperature applied;
        # the scores generate() returns are after its logits processors)
        logprobs = [float(torch.log_softmax(score[0].float(), dim=-1)[tok]) for score, tok in zip(out.scores, new)]
        finish = "stop" if new and new[-1] == self.eos_id else "length"
        text = self.tokenizer.decode([t for t in new if t != self.eos_id], skip_special_tokens=False)
        return Completion(message={"role": "assistant", "content": text, "finish_reason": finish}, token_ids=new,
                          logprobs=logprobs, prompt_token_ids=list(prompt_ids), finish_reason=finish,
                          usage={"prompt_tokens": len(prompt_ids), "completion_tokens": len(new)})
