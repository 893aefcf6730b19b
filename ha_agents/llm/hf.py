"""A local Hugging Face ``transformers`` model (CPU or GPU), for small models and tests.

``TransformersClient("path/to/model")`` loads the model and its tokenizer from a local directory
(nothing is fetched from the hub). In token mode (``prompt_ids`` given, as the AgentLoop does when
it holds a template and tokenizer) it continues exactly those ids and returns the generated ids and
their logprobs. In chat mode it renders the conversation with the tokenizer's own chat template.
Tool calls are read from the text by the harness parser (Hermes / Qwen3-Coder / fenced formats).
Needs the ``hf`` extra (torch, transformers).
"""

from __future__ import annotations

from typing import Any

from .base import Completion, LLMError


class TransformersClient:
    def __init__(self, path: str, max_new_tokens: int = 512, temperature: float = 0.0, device: str | None = None,
                 seed: int = 0) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise LLMError("hf: models need the `hf` extra: pip install -e '.[hf]'") from exc
        self.torch = torch
        self.name = path
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.seed = seed
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).to(self.device).eval()
        except OSError as exc:
            raise LLMError(f"hf: cannot load a model from {path!r}: {exc}") from exc
        self.eos_id = self.tokenizer.eos_token_id

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 prompt_ids: list[int] | None = None) -> Completion:
        torch = self.torch
        if prompt_ids is None:
            if not getattr(self.tokenizer, "chat_template", None):
                raise LLMError(f"hf: {self.name} has no chat template; run it in token mode (--template)")
            prompt_ids = self.tokenizer.apply_chat_template(
                [{"role": m["role"], "content": m.get("content") or ""} for m in messages], tools=tools or None,
                add_generation_prompt=True, tokenize=True)
        torch.manual_seed(self.seed)
        ids = torch.tensor([list(prompt_ids)], device=self.device)
        sample = self.temperature > 0
        with torch.no_grad():
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=self.max_new_tokens,
                                      do_sample=sample, temperature=self.temperature if sample else None,
                                      top_p=None, top_k=None, eos_token_id=self.eos_id, pad_token_id=self.eos_id,
                                      output_scores=True, return_dict_in_generate=True)
        new = out.sequences[0, ids.shape[1]:].tolist()
        logprobs = [float(torch.log_softmax(score[0].float(), dim=-1)[tok]) for score, tok in zip(out.scores, new)]
        finish = "stop" if new and new[-1] == self.eos_id else "length"
        text = self.tokenizer.decode([t for t in new if t != self.eos_id], skip_special_tokens=False)
        return Completion(message={"role": "assistant", "content": text, "finish_reason": finish}, token_ids=new,
                          logprobs=logprobs, prompt_token_ids=list(prompt_ids), finish_reason=finish,
                          usage={"prompt_tokens": len(prompt_ids), "completion_tokens": len(new)})
