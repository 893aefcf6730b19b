"""One group-baseline rule on both backends: masked and truncated rollouts leave the baseline.
Rewards [1, 1, 0, 1 (truncated)] give [1/3, 1/3, -2/3] locally (the truncated one is dropped) and
[1/3, 1/3, -2/3, 0] through verl's own ``compute_advantage`` with our registered estimator; the
estimator reaches verl's Ray workers through the setup hook ``ha train --backend verl`` writes;
`--evolve` under verl is refused; validation is a held-out pool."""

from __future__ import annotations

from pathlib import Path

import pytest

from ha_agents.train.base import BatchPolicy, prepare_batch

ROOT = Path(__file__).resolve().parents[3]
REWARDS = [1.0, 1.0, 0.0, 1.0]
TERMINATIONS = ["submitted", "submitted", "submitted", "max_turns"]


def test_local_backend_leaves_the_truncated_rollout_out_of_the_baseline():
    recs = [{"instance_id": "t", "run": k + 1, "reward": r, "termination": term, "token_ids": [1, 2],
             "loss_mask": [0, 1]} for k, (r, term) in enumerate(zip(REWARDS, TERMINATIONS))]
    batch = prepare_batch(recs, BatchPolicy(truncated="drop"))
    assert [round(s.advantage, 6) for s in batch.samples] == [round(1 / 3, 6), round(1 / 3, 6), round(-2 / 3, 6)]
    assert batch.dropped == {"truncated": 1}


def _verl_batch():
    import numpy as np
    import torch
    from verl.protocol import DataProto

    rewards = torch.zeros(4, 3)
    rewards[:, -1] = torch.tensor(REWARDS)
    mask = torch.ones(4, 3)
    mask[3] = 0  # what the agent loop gives a truncated episode under truncated: drop
    return DataProto.from_single_dict({"token_level_rewards": rewards, "response_mask": mask,
                                       "uid": np.array(["g"] * 4, dtype=object)})


def test_verl_advantage_excludes_masked_and_truncated_rollouts_from_the_group_baseline():
    pytest.importorskip("verl")
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo.ray_trainer import compute_advantage

    from ha_agents.train.verl_advantage import NAME, register

    register()
    register()  # idempotent: every worker of a job runs the hook
    cfg = AlgoConfig(adv_estimator=NAME, norm_adv_by_std_in_grpo=False)
    ours = compute_advantage(_verl_batch(), adv_estimator=NAME, config=cfg).batch["advantages"][:, 0]
    assert [round(float(a), 6) for a in ours] == [round(1 / 3, 6), round(1 / 3, 6), round(-2 / 3, 6), 0.0]
    theirs = compute_advantage(_verl_batch(), adv_estimator="grpo", norm_adv_by_std_in_grpo=False,
                               config=AlgoConfig(adv_estimator="grpo")).batch["advantages"][:, 0]
    assert [round(float(a), 6) for a in theirs] == [0.25, 0.25, -0.75, 0.0]  # verl's own rule, for contrast
    normed = compute_advantage(_verl_batch(), adv_estimator=NAME,
                               config=AlgoConfig(adv_estimator=NAME, norm_adv_by_std_in_grpo=True))
    a = normed.batch["advantages"][:, 0]
    assert float(a[0]) == pytest.approx((1 - 2 / 3) / (1 / 3) ** 0.5, rel=1e-4) and float(a[3]) == 0.0


def test_the_setup_hook_registers_the_estimator_in_rays_workers():
    pytest.importorskip("verl")
    import ray

    from ha_agents.train.verl_advantage import NAME, SETUP_HOOK

    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True,
             runtime_env={"worker_process_setup_hook": SETUP_HOOK, "env_vars": {"PYTHONPATH": str(ROOT)}})
    try:
        @ray.remote
        def registered() -> bool:
            from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY

            return NAME in ADV_ESTIMATOR_REGISTRY

        assert ray.get(registered.remote())
    finally:
        ray.shutdown()


def test_verl_checks_evolve_settings_first_and_validates_on_a_held_out_pool(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    from ha_cli.main import main

    base = ["train", "--backend", "verl", "--dry-run", "--model", str(tmp_path / "m"), "--suite", "mini", "--limit", "4"]
    assert main(base + ["--evolve", "--evolve-every", "0", "--out", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err
    assert "the epoch length (--evolve-every) must be at least 1 update" in err
    assert not (tmp_path / "e").exists()
    out = tmp_path / "v"
    assert main(base + ["--val-tasks", "1", "--tasks-per-update", "3", "--out", str(out)]) == 0
    assert "validation:" in capsys.readouterr().out
    import pyarrow.parquet as pq

    ids = lambda f: {r["instance_id"] for r in pq.read_table(out / "verl" / f).column("extra_info").to_pylist()}  # noqa: E731
    train, val = ids("train.parquet"), ids("val.parquet")
    assert len(train) == 3 and len(val) == 1 and not train & val
    ov = (out / "verl" / "overrides.txt").read_text().split()
    assert f"data.val_files={out / 'verl' / 'val.parquet'}" in ov
    assert "algorithm.adv_estimator=harnessadapt_grpo" in ov
    assert main(base + ["--out", str(tmp_path / "n")]) == 0  # no pool: validation off, not run on the training file
    ov = (tmp_path / "n" / "verl" / "overrides.txt").read_text().split()
    assert "trainer.val_before_train=false" in ov and "trainer.test_freq=-1" in ov
