"""The GPU recipe (examples/verl-swebench-verified/recipe.sh) in its dry run, as CI can run it: the
script (one verl run with co-evolution, the merge, the evaluation) goes end to end without a GPU, every `ha` command it prints parses with the CLI's parser and
carries the settings the README promises, and the verl overrides it writes compose with verl
0.9.1's own Hydra configuration."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from ha_cli.main import build_parser

ROOT = Path(__file__).resolve().parents[3]
RECIPE = ROOT / "examples" / "verl-swebench-verified" / "recipe.sh"
DATA = ROOT.parent / "shared" / "data"


def test_the_recipe_dry_run_composes(tmp_path):
    out = tmp_path / "run"
    ha = Path(sys.executable).with_name("ha")
    env = dict(os.environ, DRY_RUN="1", OUT=str(out), HA=str(ha), HA_DATA_DIR=str(DATA), EPOCHS="2",
               TRAIN_DATA=str(DATA / "r2e_gym" / "r2e_gym_subset_sample5_nemo_gym.jsonl"), UPDATES_PER_EPOCH="20")
    proc = subprocess.run(["bash", str(RECIPE)], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [shlex.split(line[2:]) for line in proc.stdout.splitlines() if line.startswith("$ ")]
    by_tool: dict[str, list[list[str]]] = {}
    for argv in lines:
        key = " ".join(argv[1:3]) if argv[0] == str(ha) else argv[0] if argv[0] != "python" else argv[2]
        by_tool.setdefault(key, []).append(argv)
    assert "evolve run" not in by_tool and len(by_tool["train --backend"]) == 1  # one verl run, no epoch loop
    assert len(by_tool["vllm"]) == 2 and len(by_tool["verl.model_merger"]) == 1 and len(by_tool["eval --benchmark"]) == 2
    parser = build_parser()
    for argv in (a for a in lines if a[0] == str(ha)):
        parser.parse_args(argv[1:])  # a flag the CLI does not know exits here
    tr = parser.parse_args(by_tool["train --backend"][0][1:])
    assert (tr.backend, tr.exclude_benchmark, tr.sandbox, tr.dry_run, tr.updates, tr.save_every) == (
        "verl", "verified", "docker", True, 40, 20)
    assert (tr.evolve, tr.evolve_every, tr.evolve_rounds, tr.evolve_group_size, tr.gate_tasks, tr.proposer) == (
        True, 20, 5, 4, 46, "rule")
    assert by_tool["verl.model_merger"][0][-3].endswith("train/checkpoints/global_step_40/actor")
    final = [a for a in by_tool["eval --benchmark"] if a[a.index("--out") + 1].endswith("eval-final")][0]
    assert final[final.index("--harness") + 1] == str(out / "train" / "harness.yaml")
    ev = parser.parse_args(by_tool["eval --benchmark"][0][1:])
    assert (ev.benchmark, ev.runs, ev.sandbox) == ("verified", 3, "docker")
    assert "task pool: 5 of 5 (none is a verified instance" in proc.stderr

    ov = (out / "train" / "verl" / "overrides.txt").read_text().split()
    assert "trainer.use_v1=false" in ov and f"+harnessadapt.coevolution={out / 'train' / 'verl' / 'coevolution.json'}" in ov
    from hydra import compose, initialize_config_dir
    import verl

    with initialize_config_dir(config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer/config"),
                               version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=ov)
    a = cfg.actor_rollout_ref
    assert cfg.algorithm.adv_estimator == "harnessadapt_grpo" and a.rollout.n == 4 and a.rollout.name == "vllm"
    assert a.rollout.tensor_model_parallel_size == 2 and a.actor.ulysses_sequence_parallel_size == 4
    assert a.model.enable_gradient_checkpointing and a.actor.use_dynamic_bsz
    assert cfg.trainer.save_freq == 20 and cfg.trainer.total_training_steps == 40 and cfg.trainer.n_gpus_per_node == 8
    assert cfg.trainer.experiment_name == "run" and cfg.trainer.max_actor_ckpt_to_keep == 1
    assert cfg.actor_rollout_ref.rollout.agent.agent_loop_manager_class == "ha_evolve.verl_manager.CoEvolvingAgentLoopManager"
    assert cfg.data.max_prompt_length + cfg.data.max_response_length == 32768  # Qwen3-8B without rope scaling


def test_a_verl_run_refuses_an_evaluation_instance_in_its_training_set(tmp_path, capsys, monkeypatch):
    """--exclude-benchmark with verl (before this, only the local backend applied it): a Verified
    instance among the training tasks is an error before anything is written."""
    from ha_cli.main import main

    monkeypatch.setenv("HA_DATA_DIR", str(DATA))
    verified = DATA / "swebench_verified" / "test.jsonl"
    code = main(["train", "--backend", "verl", "--dry-run", "--model", "m", "--benchmark", "verified", "--data",
                 str(verified), "--limit", "2", "--exclude-benchmark", "verified", "--out", str(tmp_path / "v")])
    assert code == 2 and "are evaluation instances" in capsys.readouterr().err
    assert not (tmp_path / "v" / "verl").exists()
    assert main(["train", "--backend", "verl", "--dry-run", "--model", "m", "--suite", "mini", "--pool-k", "2",
                 "--out", str(tmp_path / "w")]) == 2
    assert "--pool-k" in capsys.readouterr().err
