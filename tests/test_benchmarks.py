"""What the pre-registered co-evolution benchmark promises before it runs
(``benchmarks/bench_coevolution_natural.py``): held-out tasks in no training, warm start or gate
command; independent seeds; fresh evaluation seeds; and a power calculation that means something."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_coevolution_natural as nat  # noqa: E402


def test_the_held_out_tasks_reach_no_training_phase(tmp_path):
    train, heldout = nat.split()
    assert len(train) == len(heldout) == 6 and not set(train) & set(heldout)
    for seed in (1, 2):
        for _, cmd, _ in nat.steps(tmp_path, seed, "tiny"):
            named = set(cmd[cmd.index("--instances") + 1:]) & set(train + heldout)
            assert named == (set(heldout) if cmd[0] == "eval" else set(train)), cmd
            if cmd[0] == "train":
                assert cmd[cmd.index("--seed") + 1] == str(seed)
                if "--warm-start" in cmd:  # warm start under the start harness only, its own model per seed
                    assert cmd[cmd.index("--harness") + 1] == "train-h0" and f"seed-{seed}" in cmd[cmd.index("--model") + 1]
            else:
                assert int(cmd[cmd.index("--seed") + 1]) == nat.EVAL_SEED_BASE + seed  # used by no training step


def test_power_is_the_tests_size_without_an_effect_and_high_with_a_large_one():
    start = [0.0, 0.125, 0.25, 0.5] * 6  # 24 units
    assert nat.power(start, 0.0, runs=8, sims=400) <= 0.06
    assert nat.power(start, 0.25, runs=8, sims=400) > 0.9
    assert nat.power(start[:3], 0.25, runs=8, sims=100) == 0.0  # 3 units: p >= 1/4, it can never reject


# -- the gate end to end (benchmarks/bench_gate_e2e.py) -------------------------------------------

import bench_gate_e2e as e2e  # noqa: E402


def test_clopper_pearson_matches_the_exact_interval():
    lo, hi = e2e.clopper_pearson(0, 10)
    assert lo == 0.0 and abs(hi - 0.30850) < 1e-4  # 1 - 0.025 ** (1 / 10)
    lo, hi = e2e.clopper_pearson(5, 10)
    assert abs(lo - 0.18709) < 1e-4 and abs(hi - 0.81291) < 1e-4
    assert e2e.clopper_pearson(3, 3)[1] == 1.0
    with pytest.raises(ValueError):
        e2e.clopper_pearson(4, 3)


def test_an_epoch_counts_the_planted_acceptance_and_no_null_one(tmp_path):
    """Two real epochs of 1 round on 2 tasks x 2 (alpha 0.5: each test at 0.25, which 2 tasks can
    reach): the rule proposer adds run_tests; ``tool_coin:0,1`` goes from every episode failing to
    every one solved and is accepted; ``coin_prompt:1`` solves every episode on both sides, so
    nothing rose and nothing is accepted, though the comparison ran."""
    from tests.conftest import require_bwrap

    require_bwrap()
    settings = e2e.Settings(rounds=1, group_size=2, alpha=0.5, instances=("mini__semver_ranges", "mini__order_workflow"))
    planted = e2e.run_epoch("tool_coin:0,1", 0, settings, tmp_path / "planted")
    null = e2e.run_epoch("coin_prompt:1", 0, settings, tmp_path / "null")
    (c,) = planted["comparisons"]
    assert c["adds_run_tests"] and c["accepted"] and c["d_pass"] == 1.0 and c["pairs"] == c["pairs_differing"] == 4
    assert planted["accepted"] == planted["planted_accepted"] == 1 and planted["final_has_run_tests"]
    (n,) = null["comparisons"]
    assert n["adds_run_tests"] and not n["accepted"] and n["reason"] == "neither rate rose" and n["pairs_differing"] == 0
    assert null["accepted"] == 0 and not null["final_has_run_tests"] and null["rollouts"] == 13  # 3 batches of 4, a smoke
    s = e2e.summarise([planted, null])
    assert (s["epochs"], s["epochs_accepting"], s["planted_accepted"], s["comparisons_adding_run_tests"]) == (2, 1, 1, 2)
