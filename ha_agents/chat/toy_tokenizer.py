"""A small byte-level BPE tokenizer trained locally with the ``tokenizers`` library (no hub), with
the ChatML special tokens. For tests and benchmarks of token-faithful trajectories; real runs load
the model's own ``tokenizer.json`` with ``tokenizers.Tokenizer.from_file``."""

from __future__ import annotations

from typing import Iterable

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def toy_tokenizer(corpus: Iterable[str], vocab_size: int = 3000, special: Iterable[str] = ()):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL + [t for t in special if t not in SPECIAL], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(corpus), trainer=trainer)
    return tok
