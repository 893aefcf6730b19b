"""The co-evolution loop as a library object (``ha_evolve.coevolution``), called in Python as a
benchmark or a notebook would: evolution at an epoch's start, against the policy being trained,
and the epoch's GRPO rollouts under the harness the gate accepted."""

from __future__ import annotations

import json

import pytest

from ha_agents.chat.toy_tokenizer import toy_tokenizer
from ha_agents.episode import EpisodeConfig, TokenMode
from ha_agents.llm.policies import POLICIES
from ha_agents.train import TrainConfig
from ha_agents.train.recipes import HabitPolicy
from ha_envs.harness import load_spec
from ha_envs.loaders import load_suite
from ha_evolve.coevolution import CoEvolution, CoEvolveConfig
from ha_evolve.schedule import EvolveConfig

from .harness_r1.test_engineer import _Recorder

IDS = ["mini__ini_interpolation", "mini__invoice_rounding", "mini__url_router", "mini__semver_ranges"]


class _Frozen(_Recorder):
    """The trainer seam, recording what it is given; its policy is the scripted ``habit_edit`` (it
    calls edit tools train-h0 lacks), never changed."""

    def client(self):
        return "habit_edit"


@pytest.fixture
def habit_policy():
    POLICIES["habit_edit"] = lambda: HabitPolicy("train-edit")
    yield
    POLICIES.pop("habit_edit", None)


def test_coevolution_accepts_at_the_epoch_start_and_trains_the_epoch_under_the_accepted_harness(tmp_path, habit_policy):
    tasks = [t for t in load_suite("mini") if t.instance_id in IDS]
    tok = tmp_path / "tokenizer.json"  # training is token-faithful (a scripted policy's turns train on nothing)
    toy_tokenizer([t.problem_statement for t in tasks], vocab_size=400).save(str(tok))
    episodes = EpisodeConfig(load_spec("train-h0"), sandbox="local", token_mode=TokenMode("chatml", str(tok))).validate()
    seen = []
    coevo = CoEvolution(tasks, tmp_path / "run", episodes,
                        CoEvolveConfig(every=2, evolve=EvolveConfig(rounds=1, group_size=2, workers=2, seed=0, alpha=0.25)),
                        progress=seen.append)
    trainer = _Frozen()
    rows = coevo.train(trainer, TrainConfig(updates=2, tasks_per_update=1, group_size=2, episodes=episodes, workers=2,
                                            progress=False))
    start = load_spec("train-h0").hash
    assert [r["update"] for r in rows] == [1, 2]
    # the gate accepted at epoch 1's start; both updates of the epoch ran under the new harness and solved
    assert rows[0]["harness_hash"] == rows[1]["harness_hash"] != start
    assert all(r["pass_rate"] == 1.0 for r in rows)
    log = [json.loads(line) for line in (tmp_path / "run" / "evolve" / "evolution.jsonl").read_text().splitlines()]
    ran = sum(r.get("rollouts_run", 0) for r in log if r.get("kind") == "round")
    prep = sum(r.get("preparation_run", 0) for r in log if r.get("kind") == "round")
    assert prep == 2 * len(tasks) and ran - prep >= 2 * 2 * len(tasks)  # the proposer's batch; both fresh sides
    assert rows[-1]["ledger"]["comparison"] == ran - prep and rows[-1]["ledger"]["training"] == 4
    assert rows[-1]["ledger"]["preparation"] == prep
    assert [r["accepted"] for r in log if r.get("kind") == "proposal"] == [True]
    assert any(f"({start}) ->" in line for line in seen)
    saved = load_spec(str(tmp_path / "run" / "checkpoint" / "harness.yaml"))
    assert saved.hash == rows[-1]["harness_hash"] and "edit_file" in saved.tool_names


def test_coevolution_settings_are_checked_before_anything_runs(tmp_path):
    episodes = EpisodeConfig(load_spec("train-h0")).validate()
    with pytest.raises(ValueError, match="at least 1 update"):
        CoEvolution([], tmp_path, episodes, CoEvolveConfig(every=0))
    with pytest.raises(ValueError, match="a proposer, a skill teacher"):
        CoEvolution([], tmp_path, episodes, CoEvolveConfig(proposer=None))
    with pytest.raises(ValueError, match="group_size must be at least 2"):
        CoEvolution([], tmp_path, episodes, CoEvolveConfig(evolve=EvolveConfig(group_size=1)))
    coevo = CoEvolution([], tmp_path, episodes, CoEvolveConfig())
    other = EpisodeConfig(load_spec("h0")).validate()
    with pytest.raises(ValueError, match="same EpisodeConfig"):
        coevo.train(_Frozen(), TrainConfig(updates=1, episodes=other))
