"""What the pre-registered co-evolution benchmark promises before it runs
(``benchmarks/bench_coevolution_natural.py``): held-out tasks in no training, warm start or gate
step; independent seeds; fresh evaluation seeds; and a power calculation that means something. And
what both co-evolution benchmarks do: call the library in process (no ``ha`` subprocess), each step
the same run as the ``ha`` line it prints."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_coevolution as co  # noqa: E402
import bench_coevolution_natural as nat  # noqa: E402


def test_the_held_out_tasks_reach_no_training_phase(tmp_path):
    train, heldout = nat.split()
    assert len(train) == len(heldout) == 6 and not set(train) & set(heldout)
    for seed in (1, 2):
        for _, what, _ in nat.steps(tmp_path, seed, "tiny"):
            named = set(what.tasks) & set(train + heldout)
            assert named == (set(heldout) if isinstance(what, nat.Evaluation) else set(train)), what.argv()
            if isinstance(what, nat.Training):
                assert what.seed == seed
                if what.warm_epochs:  # warm start under the start harness only, its own model per seed
                    assert what.harness == "train-h0" and f"seed-{seed}" in what.model and what.warm_harness is None
            else:
                assert what.seed == nat.EVAL_SEED_BASE + seed  # used by no training step


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


def _bench_args(**over):
    import argparse

    base = dict(seeds=[1], train=co.TRAIN[:2], heldout=co.HELDOUT[:1], warm_epochs=3, updates=2, evolve_every=1,
                evolve_rounds=1, group_size=2, evolve_group_size=2, lr=1e-4, optimizer_from_warm=True, level=0.9,
                eval_runs=2, workers=2, eval_train=True)
    return argparse.Namespace(**{**base, **over})


@pytest.mark.parametrize("bench", ["coevolution", "natural"])
def test_each_step_builds_what_its_printed_ha_command_builds(tmp_path, bench):
    """The steps call the library in process; the ``ha`` line each prints must reproduce it: the
    CLI's parse of that line gives the same ``LocalRun`` and ``CoEvolveConfig`` (training) or the
    same model options, tasks, seed and runs (evaluation)."""
    from ha_cli.main import build_parser
    from ha_cli.sampling import model_options
    from ha_cli.train_cmd import _evolve_config, coevolve_config, local_run, resolve_harness

    todo = co.steps(_bench_args(), tmp_path) if bench == "coevolution" else nat.steps(tmp_path, 3, "tiny")
    kinds = set()
    for _, what, _ in todo:
        args = build_parser().parse_args(what.argv())
        kinds.add(args.command)
        if isinstance(what, co.Training):
            assert local_run(args, resolve_harness(args.harness), Path(args.out)) == what.run(), what.argv()
            assert (coevolve_config(args, _evolve_config(args)) if args.evolve else None) == (
                what.gate.config(what.workers, what.seed, what.model) if what.gate else None), what.argv()
            assert args.freeze_policy == what.freeze_policy
        else:
            assert (args.instances, args.seed, args.runs, args.harness, args.out) == (
                what.tasks, what.seed, what.runs, what.harness, str(what.out))
            assert model_options(args) == what.options() and args.model == f"hf:{what.model}"
    assert kinds == {"train", "eval"}


def test_the_benchmarks_run_their_steps_in_this_process(tmp_path, monkeypatch):
    """A training step (a tiny model built, no update) runs in this process: no ``ha`` subprocess,
    its checkpoint, identity and log on disk, and a rerun skips it."""
    import subprocess

    spawned = []
    real = subprocess.Popen.__init__

    def spy(self, args, *a, **k):
        spawned.append(args)
        return real(self, args, *a, **k)

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    step = co.Training(str(tmp_path / "init-model"), tmp_path / "warm", co.TRAIN[:1], init_model="qwen", updates=0,
                       context_tokens=2048, max_tokens=64)
    done, log = tmp_path / "warm" / "checkpoint" / "model" / "config.json", tmp_path / "warm.log"
    co.run_step(done, step, log)
    assert done.is_file() and (tmp_path / "warm" / "run-identity.json").is_file()
    assert "ha_cli" not in repr(spawned) and "memory" in log.read_text()
    log.write_text("kept")
    co.run_step(done, step, log)  # done: skipped
    assert log.read_text() == "kept"
    for name in ("bench_coevolution.py", "bench_coevolution_natural.py"):
        assert "subprocess" not in (Path(co.__file__).parent / name).read_text(), name
