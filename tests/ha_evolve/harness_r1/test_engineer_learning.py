"""Harness-R1 end to end on CPU, shortened (the full run is ``benchmarks/bench_engineer.py``): a tiny
engineer warm-started on the fixture menu's mixture (helpful veto, wrong-point reminder, malformed,
no-op) and trained with GRPO through the training driver against the frozen ``hasty`` target.
Direction only: the helpful rate and the reward rise, invalid and no-op patches fall, and no
invalid or no-op patch ran a rollout."""

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


def test_grpo_teaches_the_engineer_the_helpful_patch(tmp_path):
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
    first, last = history[0], history[-2:]
    late = lambda k: sum(r[k] for r in last) / len(last)  # noqa: E731
    assert late("helpful_rate") > first["helpful_rate"], [r["helpful_rate"] for r in history]
    assert late("reward_mean") > first["reward_mean"]
    assert late("invalid_rate") + late("no_op_rate") < first["invalid_rate"] + first["no_op_rate"]
    assert all(r["invalid_with_rollouts"] == 0 for r in history)
    # the bound: base once (n x m) and each distinct patched harness once (n x m), the rest cache hits
    assert sum(r["comparison_rollouts"] for r in history) <= sum(r["patches"] for r in history) * len(IDS) * 2
