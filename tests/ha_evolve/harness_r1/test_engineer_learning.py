"""Harness-R1 end to end on CPU, shortened (the full run is ``benchmarks/bench_engineer.py``): a tiny
engineer warm-started on the fixture menu's mixture (helpful veto, wrong-point reminder, malformed,
no-op) and trained with GRPO through the training driver against the frozen ``hasty`` target.
What it asserts: the driver trains the engineer (updates with a gradient happen), no invalid or
no-op patch ran a rollout, and the scoring cache holds the rollout bound. Not the direction: it
asserted once that the helpful rate and the reward rise over these 6 updates of 8 samples, and that
held on one CPU and not on another (one with AMX bf16/fp32 kernels: the same seeded run's helpful
rate went 0.5 -> 0, and seeds 2 and 3 broke the invalid-rate check): at this size the sampled rates
are noise, so the learning claim is the benchmark's (``benchmarks/bench_engineer.py``, several
seeds, more updates)."""

from __future__ import annotations

import pytest

from ha_agents.llm.registry import make_model
from ha_agents.train.driver import TrainConfig, train
from ha_envs.loaders import load_suite
from ha_evolve.harness_r1.engineer import FIXTURE_MENU, EngineerSource, batch_items, sft_data, sft_samples
from ha_evolve.harness_r1.harness_edit import HarnessEditEnv, Target

pytest.importorskip("torch")
pytest.importorskip("transformers")

SUITE = {t.instance_id: t for t in load_suite("mini")}
IDS = ["mini__invoice_rounding", "mini__semver_ranges"]


def test_grpo_trains_the_engineer_through_the_driver(tmp_path):
    import yaml

    from ha_agents.train.local import LocalConfig, LocalTrainer
    from ha_agents.train.models import init_model, suite_corpus

    target = Target.create("hasty", "h0", runs=2, seed=1)
    env = HarnessEditEnv(target, [SUITE[i] for i in IDS], [IDS], [], tmp_path / "e")
    menu = tmp_path / "menu.yaml"
    menu.write_text(yaml.safe_dump(FIXTURE_MENU))
    rows = sft_data(make_model(f"menu:{menu}"), env, samples=8, seed=1, keep="all")
    assert {r["kind"] for r in rows} == {"helpful", "neutral", "invalid", "no_op"}
    assert all(r["info"]["rollouts"] == 0 for r in rows if r["kind"] in ("invalid", "no_op"))
    corpus = suite_corpus() + [rows[0]["messages"][0]["content"]] + [m["reply"] for m in FIXTURE_MENU] * 8
    init_model(tmp_path / "eng", "qwen", seed=1, corpus=corpus)
    warm = LocalTrainer(tmp_path / "eng", LocalConfig(lr=3e-3, temperature=0.5, max_tokens=120))
    warm.sft(sft_samples(rows, warm.token_mode), epochs=150)
    warm.save(tmp_path / "warm")
    trainer = LocalTrainer(tmp_path / "warm" / "model", LocalConfig(lr=3e-4, temperature=0.5, max_tokens=120))
    history = train(trainer, batch_items([IDS]), TrainConfig(updates=6, tasks_per_update=1, group_size=8, seed=1,
                                                             progress=False),
                    tmp_path / "run", source=EngineerSource(env, trainer.token_mode))
    trained = [r for r in history if r.get("optimizer_steps")]
    assert trained and all(r["grad_norm"] > 0 for r in trained), history
    assert {r["helpful_rate"] for r in history} - {0.0} and sum(r["patches"] for r in history) == 6 * 8
    assert all(r["invalid_with_rollouts"] == 0 for r in history)
    # the bound: base once (n x m) and each distinct patched harness once (n x m), the rest cache hits
    assert sum(r["comparison_rollouts"] for r in history) <= sum(r["patches"] for r in history) * len(IDS) * 2
