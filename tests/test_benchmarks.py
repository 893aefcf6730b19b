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
