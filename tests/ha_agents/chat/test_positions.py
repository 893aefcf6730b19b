"""The context budget checked against the model's own positions before anything starts."""

from __future__ import annotations

import json

import pytest

from ha_agents.chat.positions import DEFAULT_CONTEXT, model_positions, resolve_context

YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


def _model(tmp_path, name, **cfg):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def test_the_reach_is_the_positions_or_what_rope_scaling_makes_of_them(tmp_path):
    qwen3 = _model(tmp_path, "qwen3", max_position_embeddings=40960, rope_scaling=None)
    yarn = _model(tmp_path, "yarn", max_position_embeddings=40960, rope_scaling=YARN)
    llama31 = _model(tmp_path, "llama31", max_position_embeddings=131072, rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192})
    vlm = _model(tmp_path, "vlm", text_config={"max_position_embeddings": 4096})
    assert [model_positions(d).reach for d in (qwen3, yarn, llama31, vlm)] == [40960, 131072, 131072, 4096]
    assert model_positions(tmp_path) is None  # no config.json: a bare tokenizer, nothing to check against


def test_a_budget_past_the_reach_is_refused_naming_the_setting_and_the_rope_scaling(tmp_path):
    qwen3 = _model(tmp_path, "qwen3", max_position_embeddings=40960)
    assert resolve_context(qwen3, 32768) == 32768 and resolve_context(qwen3, 40960) == 40960
    with pytest.raises(ValueError) as err:
        resolve_context(qwen3, 65536)
    msg = str(err.value)
    assert "--context-tokens 65536 is more than the 40960 positions" in msg and "max_position_embeddings 40960" in msg
    assert '"rope_scaling": {"rope_type": "yarn", "factor": 1.75, "original_max_position_embeddings": 40960}' in msg
    yarn = _model(tmp_path, "yarn", max_position_embeddings=40960, rope_scaling=YARN)
    assert resolve_context(yarn, 131072) == 131072
    with pytest.raises(ValueError, match="original_max_position_embeddings\": 32768"):
        resolve_context(yarn, 200000)
    # nothing asked: the model's reach, up to the default
    assert resolve_context(qwen3, None) == 40960 and resolve_context(yarn, None) == DEFAULT_CONTEXT
    assert resolve_context(tmp_path, None) == DEFAULT_CONTEXT and resolve_context(tmp_path, 10**6) == 10**6
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a readable model config"):
        resolve_context(bad, None)


def test_ha_train_refuses_it_before_anything_starts_and_takes_the_models_reach_by_default(tmp_path, capsys):
    """Through the CLI: the verl backend (a dry run writes verl's files) refuses 65,536 on a
    Qwen3-8B-shaped config and writes nothing; without --context-tokens it asks verl for 40,960."""
    pytest.importorskip("pyarrow")
    from ha_cli.main import main

    model = _model(tmp_path, "qwen3", max_position_embeddings=40960)
    base = ["train", "--backend", "verl", "--dry-run", "--model", str(model), "--suite", "mini", "--limit", "2"]
    assert main(base + ["--context-tokens", "65536", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "--context-tokens 65536 is more than the 40960 positions" in err and "rope_scaling" in err
    assert not (tmp_path / "a").exists()
    assert main(base + ["--out", str(tmp_path / "b")]) == 0
    overrides = (tmp_path / "b" / "verl" / "overrides.txt").read_text().split()
    assert "actor_rollout_ref.rollout.max_model_len=40960" in overrides
