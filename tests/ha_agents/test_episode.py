"""EpisodeConfig: one validated record of how a run's episodes go, the spec read once, limits in
one place; and episodes that end from outside go through the wrapper stack."""

from __future__ import annotations

import pytest

import ha_envs
from ha_agents.episode import EpisodeConfig, TokenMode, run_episode
from ha_agents.llm.options import ModelOptions
from ha_agents.runs.evaluate import evaluate
from ha_envs.harness import HarnessSpec, load_spec
from ha_envs.harness.wrappers import HarnessLayer


def test_limits_are_overridden_in_one_place():
    cfg = EpisodeConfig.create("h1", max_turns=7, command_timeout_s=30, max_format_errors=1)
    assert cfg.harness.limits.max_turns == 7 and cfg.harness.limits.command_timeout_s == 30
    assert cfg.harness.parser.max_format_errors == 1 and cfg.harness.hash != load_spec("h1").hash
    with pytest.raises(ValueError, match="a limit; pass max_turns= to EpisodeConfig.create"):
        EpisodeConfig.create("h1", env_options={"max_turns": 3})


@pytest.mark.parametrize("kw,message", [
    ({"sandbox": "podman"}, "unknown sandbox 'podman'; available: local, docker"),
    ({"seed": -1}, "seed: expected a non-negative integer"),
    ({"token_mode": TokenMode(tokenizer="t.json", context_tokens=100), "model_options": ModelOptions(max_tokens=100)},
     "model_options: max_tokens 100 leaves no room"),
])
def test_a_bad_config_fails_with_the_field_named(kw, message):
    with pytest.raises(ValueError, match=message):
        EpisodeConfig.create("h0", **kw)


def test_episode_seeds_differ_per_sample_and_are_stable():
    cfg = EpisodeConfig.create("h0", seed=3)
    seeds = {cfg.episode_seed("t", k) for k in range(1, 9)}
    assert len(seeds) == 8 and cfg.episode_seed("t", 1) == EpisodeConfig.create("h0", seed=3).episode_seed("t", 1)
    assert EpisodeConfig.create("h0").episode_seed("t", 1) is None


def test_the_spec_is_validated_once_per_run(tiny_task, tmp_path, monkeypatch):
    calls = []
    real = HarnessSpec._validate
    monkeypatch.setattr(HarnessSpec, "_validate", lambda self: calls.append(self.hash) or real(self))
    cfg = EpisodeConfig.create("h2", max_turns=9)
    before = len(calls)
    assert before <= 2  # the preset file, then the spec with the run's limits
    evaluate([tiny_task], "oracle", cfg, runs=3, out_dir=tmp_path)
    assert len(calls) == before  # three episodes, no re-validation


def test_every_preset_is_reachable_from_python(tiny_task):
    env = ha_envs.make(task=tiny_task, harness="train-edit")
    try:
        _, info = env.reset()
        assert info["harness"] == "train-edit" and info["parser"] == "hermes"
        assert [t["function"]["name"] for t in info["tools"]] == ["bash", "edit_file", "create_file", "submit"]
    finally:
        env.close()


class Watch(HarnessLayer):
    """A layer a user adds on top: it must see an episode ended from outside."""
    ended: list[str] = []

    def end(self, reason: str = "context_limit"):
        Watch.ended.append(reason)
        return super().end(reason)


def test_end_and_abort_go_through_every_layer(tiny_task):
    env = ha_envs.make(task=tiny_task, harness="h2")
    try:
        env.reset()
        obs, reward, terminated, truncated, info = env.end("context_limit")
        assert truncated and info["termination"] == "context_limit"
        assert "hooks" in info and "edits" in info and "test_runs" in info  # the hooks and tools layers added theirs
        env.reset()
        *_, info = env.abort("daemon gone", reason="sandbox_error")
        assert info["mask_sample"] and info["error"] == "daemon gone" and "hooks" in info
    finally:
        env.close()
    Watch.ended.clear()
    watched = Watch(ha_envs.make(task=tiny_task, harness="h0"))
    try:
        watched.reset()
        *_, info = watched.end("context_limit")
        assert Watch.ended == ["context_limit"] and info["termination"] == "context_limit"
    finally:
        watched.close()


def test_the_turn_cap_is_the_envs(tiny_task):
    from ha_agents.llm.policies import ScriptedPolicy
    from ha_envs.actions import ToolCall

    rec = run_episode(tiny_task, ScriptedPolicy([ToolCall("bash", {"command": "ls"})] * 10),
                      EpisodeConfig.create("h0", max_turns=3))
    assert rec["termination"] == "max_turns" and rec["turns"] == 3
    # what travels is the typed record, its ending the enum
    from ha_agents.records.episode_record import EpisodeRecord
    from ha_envs.termination import Termination

    assert isinstance(rec, EpisodeRecord) and rec.termination is Termination.MAX_TURNS and rec.termination.truncated
