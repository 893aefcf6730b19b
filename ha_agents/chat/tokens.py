"""One face for the two tokenizer APIs the loop meets: ``tokenizers.Tokenizer`` (a bare
``tokenizer.json``) and a Hugging Face ``PreTrainedTokenizer(Fast)`` (a model directory, with its
chat template). ``as_codec(tok)`` wraps either; ``load_tokenizer(path)`` loads the richest one a
path offers (a model directory with ``tokenizer_config.json`` loads through ``transformers`` when it
is installed, so its chat template comes along)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any


class TokenCodec:
    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.hf = not hasattr(tok, "token_to_id")
        """A Hugging Face tokenizer (``convert_tokens_to_ids``) rather than a ``tokenizers.Tokenizer``."""

    def encode(self, text: str) -> list[int]:
        if self.hf:
            return list(self.tok.encode(text, add_special_tokens=False))
        return self.tok.encode(text, add_special_tokens=False).ids

    def token_to_id(self, token: str) -> int | None:
        if not self.hf:
            return self.tok.token_to_id(token)
        i = self.tok.convert_tokens_to_ids(token)
        return None if i is None or i == getattr(self.tok, "unk_token_id", None) else int(i)


def as_codec(tok: Any) -> TokenCodec:
    return tok if isinstance(tok, TokenCodec) else TokenCodec(tok)


@functools.lru_cache(maxsize=8)
def load_tokenizer(path: str) -> Any:
    """A model directory (``tokenizer_config.json``; needs transformers) or a ``tokenizer.json``.
    One load per path and process (encoding is thread-safe)."""
    p = Path(path)
    if p.is_dir() and (p / "tokenizer_config.json").is_file():
        try:
            from transformers import AutoTokenizer
        except ImportError:
            pass
        else:
            return AutoTokenizer.from_pretrained(str(p), local_files_only=True)
    f = p / "tokenizer.json" if p.is_dir() else p
    if not f.is_file():
        raise ValueError(f"no tokenizer at {path}: expected a model directory or a tokenizer.json")
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(f))
