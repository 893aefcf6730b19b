"""Tiny policies built on this machine (no hub): a byte-level BPE tokenizer trained on the bundled
suite's texts, a chat template of a real family (Qwen- or Llama-style, ``ha_agents.templates``) and a
small randomly initialised ``transformers`` model of that family, saved as a model directory that
``ha train --model``, ``ha eval --model hf:DIR`` and ``--tokenizer DIR`` all accept."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable


def suite_corpus(suite: str = "mini") -> list[str]:
    """Texts a policy on the suite will see and write: tasks, gold patches, tool schemas, prompts."""
    from ha_envs.harness import TOOLS, load_spec
    from ha_envs.loaders import load_suite

    tasks = load_suite(suite)
    texts = [t.problem_statement for t in tasks] + [t.gold_patch for t in tasks]
    texts += [str([t.openai_schema() for t in TOOLS.values()])]
    texts += [load_spec(name).system_prompt for name in ("h0", "h1", "h2")]
    return texts


def init_model(out: str | Path, family: str = "qwen", hidden: int = 64, layers: int = 2, heads: int = 4,
               vocab_size: int = 4000, corpus: Iterable[str] | None = None, seed: int = 0,
               max_positions: int = 32768) -> Path:
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    from ..chat.families import FAMILIES, hf_tokenizer
    from ..chat.toy_tokenizer import toy_tokenizer

    if family not in FAMILIES:
        raise ValueError(f"unknown model family {family!r}; use {', '.join(FAMILIES)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    texts = list(corpus if corpus is not None else suite_corpus())
    texts += [FAMILIES[family]["template"]] * 2
    raw = toy_tokenizer(texts, vocab_size=vocab_size, special=FAMILIES[family]["special"])
    tok = hf_tokenizer(raw, family)
    tok.save_pretrained(out)
    cls = Qwen2Config if family == "qwen" else LlamaConfig
    cfg = cls(vocab_size=raw.get_vocab_size(), hidden_size=hidden, intermediate_size=hidden * 4,
              num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
              max_position_embeddings=max_positions, tie_word_embeddings=True, attention_dropout=0.0,
              eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id or tok.eos_token_id,
              pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg)
    model.save_pretrained(out)
    return out
