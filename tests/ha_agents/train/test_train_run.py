"""Training through the real env, sandbox, grader and agent loop with a tiny local model:
learning direction over a fixed seed, `ha train` end to end (outputs on disk, the checkpoint
evaluates with `ha eval --model hf:DIR`), a run killed mid-update resumes to the same updates, and
the README's custom-algorithm example runs."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ha_envs.loaders import load_suite
from ha_agents.episode import EpisodeConfig

if not os.environ.get("CI"):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[3]
TASK = "mini__ini_interpolation"


@pytest.fixture(scope="module")
def warm_model(tmp_path_factory):
    """A tiny Qwen-style model fine-tuned on two demonstrations of one task, the oracle's fix and a
    give-up (submit at once): at temperature 1 it picks either about half the time (mixed groups)."""
    from ha_agents.train.local import LocalConfig, LocalTrainer
    from ha_agents.train.models import init_model
    from ha_agents.train.recipes import warm_start

    root = tmp_path_factory.mktemp("warm")
    init_model(root / "init", "qwen", hidden=64, layers=2, heads=4, seed=0)
    tr = LocalTrainer(root / "init", LocalConfig(max_tokens=700, context_tokens=8192, seed=0))
    ws = warm_start(tr, [t for t in load_suite("mini") if t.instance_id == TASK], root, epochs=250, lr=6e-3)
    assert ws["demonstrations"] == 2 and ws["resolved"] == 1 and ws["sft_loss_last"] < 0.01
    tr.save(root / "ckpt")
    return root / "ckpt" / "model"


def _cli(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ha_cli.main", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, **kw)


TRAIN = ["train", "--suite", "mini", "--instances", TASK, "--harness", "train-edit", "--tasks-per-update", "1",
         "--group-size", "3", "--lr", "3e-4", "--max-tokens", "700", "--context-tokens", "8192", "--no-progress",
         "--updates", "3", "--seed", "5"]


def _metrics(out: Path) -> list[dict]:
    return [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()]


def test_reward_rises_over_updates(warm_model, tmp_path):
    """Direction only, on fixed seeds: the mean reward of 16 held-out samples (the same seeds before
    and after) is higher after three GRPO updates than before the first (here 0.5625 -> 0.875; with
    the GRPO advantages negated, 0.5625 -> 0.125). The long runs: ``benchmarks/bench_learning.py``."""
    from ha_agents.runs.rollouts import collect
    from ha_agents.train import TrainConfig, train
    from ha_agents.train.local import LocalConfig, LocalTrainer
    from ha_agents.train.recipes import TRAIN_HARNESS

    tasks = [t for t in load_suite("mini") if t.instance_id == TASK]
    tr = LocalTrainer(warm_model, LocalConfig(lr=1e-3, max_tokens=700, context_tokens=8192, seed=0))
    tr.load(warm_model.parent)  # the warm start's optimizer state too: GRPO continues that run (as --warm-start does)

    def held_out(tag):
        recs = collect(tasks, 16, tr.client(), EpisodeConfig.create(TRAIN_HARNESS, token_mode=tr.token_mode, seed=999),
                       out=tmp_path / tag, progress_bar=False)
        return sum(r["reward"] for r in recs) / len(recs)

    before = held_out("before")
    hist = train(tr, tasks, TrainConfig(updates=3, tasks_per_update=1, group_size=8, seed=11,
                                        episodes=EpisodeConfig.create(TRAIN_HARNESS),
                                        progress=False), tmp_path / "run")
    curve = [(h["reward_mean"], h["trainable_rate"]) for h in hist]
    assert all(h["masked"] == 0 for h in hist) and any(h["trainable_rate"] > 0 for h in hist), curve
    assert all(h.get("logprob_mismatch_max", 0) < 1e-3 for h in hist)  # in-process sampler == trainer
    after = held_out("after")
    assert after > before, (before, after, curve)


def test_ha_train_end_to_end_and_the_checkpoint_evaluates(warm_model, tmp_path):
    out = tmp_path / "a"
    p = _cli(*TRAIN, "--model", str(warm_model), "--out", str(out))
    log, _ = p.communicate(timeout=900)
    assert p.returncode == 0, log
    rows = _metrics(out)
    assert [r["update"] for r in rows] == [1, 2, 3]
    for k in ("pass_rate", "trainable_rate", "mixed_groups", "all_success_groups", "all_failure_groups", "reward_mean",
              "rollout_s", "grading_s", "update_s", "ledger"):
        assert k in rows[0]
    assert rows[-1]["ledger"]["training"] == 9
    assert re.search(r"update 3/3: reward [\d.]+ +pass", log)
    assert (out / "training.png").stat().st_size > 5000
    assert (out / "checkpoint" / "model" / "model.safetensors").is_file()
    assert len((out / "rollouts" / "update-0002" / "trajectories.jsonl").read_text().splitlines()) == 3
    # the trained checkpoint is a model directory `ha eval` runs in token mode
    ev = _cli("eval", "--suite", "mini", "--instances", TASK, "--model", f"hf:{out / 'checkpoint' / 'model'}",
              "--tokenizer", str(out / "checkpoint" / "model"), "--harness", "train-edit", "--out", str(tmp_path / "ev"))
    elog, _ = ev.communicate(timeout=600)
    assert ev.returncode == 0, elog
    [rec] = [json.loads(l) for l in (tmp_path / "ev" / "trajectories.jsonl").read_text().splitlines()]
    assert sum(rec["loss_mask"]) > 0 and not rec["token_error"]
    # the same --out again without --resume is refused, and says why
    again = _cli(*TRAIN, "--model", str(warm_model), "--out", str(out))
    alog, _ = again.communicate(timeout=300)
    assert again.returncode == 2 and "pass --resume" in alog

    # killed in the middle of update 2 (after update 1's checkpoint), then resumed
    b = tmp_path / "b"
    p = _cli(*TRAIN, "--model", str(warm_model), "--out", str(b))
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if (b / "metrics.jsonl").exists() and (b / "checkpoint" / "driver.json").exists() and (
                b / "rollouts" / "update-0002" / "trajectories.jsonl").exists():
            break
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert len(_metrics(b)) == 1
    r = _cli(*TRAIN, "--model", str(warm_model), "--out", str(b), "--resume")
    rlog, _ = r.communicate(timeout=900)
    assert r.returncode == 0, rlog
    got, want = _metrics(b), rows
    assert [g["update"] for g in got] == [1, 2, 3]
    for g, w in zip(got[1:], want[1:]):
        for k in ("reward_mean", "batch_samples", "loss", "grad_norm", "tokens", "clip_frac"):
            if k in w:
                assert g[k] == w[k], (k, g[k], w[k])
    from safetensors.torch import load_file

    wa = load_file(str(out / "checkpoint" / "model" / "model.safetensors"))
    wb = load_file(str(b / "checkpoint" / "model" / "model.safetensors"))
    assert all((wa[k] == wb[k]).all() for k in wa)


def test_ha_train_with_the_envs_in_ray_actors(warm_model, tmp_path):
    """`ha train --env-placement ray`: the policy generates in this process, each episode's env and
    sandbox run in a Ray actor (a private local Ray: no RAY_ADDRESS); the rollouts say which node
    ran them, are graded and train as in-process ones do."""
    args = list(TRAIN)
    args[args.index("--updates") + 1] = "1"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    p = _cli(*args, "--model", str(warm_model), "--env-placement", "ray", "--out", str(tmp_path / "r"), env=env)
    log, _ = p.communicate(timeout=900)
    assert p.returncode == 0, log
    [row] = _metrics(tmp_path / "r")
    assert row["ledger"]["training"] == 3
    recs = [json.loads(x) for x in (tmp_path / "r" / "rollouts" / "update-0001" / "trajectories.jsonl").read_text()
            .splitlines()]
    assert len(recs) == 3 and all(r["node"] and len(r["node"]) == 56 for r in recs)  # a Ray node id
    assert not any(r["mask_sample"] for r in recs) and all(sum(r["loss_mask"]) > 0 for r in recs)


def test_cli_errors_are_specific(tmp_path):
    from ha_cli.main import main

    assert main(["train", "--model", str(tmp_path / "none"), "--out", str(tmp_path / "o")]) == 2
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "config.json").write_text("{not json")
    assert main(["train", "--model", str(tmp_path / "junk"), "--out", str(tmp_path / "o2")]) == 2


def test_context_budget_that_cannot_fit_the_first_prompt(tmp_path, capsys):
    from ha_cli.main import main

    rc = main(["train", "--model", str(tmp_path / "m"), "--init-model", "llama", "--suite", "mini", "--instances", TASK,
               "--context-tokens", "200", "--out", str(tmp_path / "o"), "--updates", "1"])
    assert rc == 2 and "first prompt of mini__ini_interpolation is" in capsys.readouterr().err


def test_an_update_without_samples_says_why(tmp_path, capsys):
    """One turn and 8 tokens: every episode of a random model runs out of turns, GRPO drops
    truncated episodes (the paper's batch policy), and the update line says so instead of a bare
    `loss nan grad nan`."""
    from ha_cli.main import main

    rc = main(["train", "--model", str(tmp_path / "m"), "--init-model", "qwen", "--suite", "mini", "--instances", TASK,
               "--harness", "train-edit", "--updates", "1", "--tasks-per-update", "1", "--group-size", "2",
               "--max-tokens", "8", "--max-turns", "1", "--context-tokens", "8192", "--no-progress",
               "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "samples 0" in err
    assert ("no update: no group had both a success and a failure after the batch policy (0 mixed, 0 all-success, "
            "0 all-failure groups; dropped: 2 truncated)") in err


def test_docs_custom_algorithm_example_runs(tmp_path):
    text = (ROOT / "docs" / "training.md").read_text()
    block = re.search(r"<!-- example: custom-trainer -->\n```python\n(.*?)```", text, re.S)
    assert block, "docs/training.md lost its custom-trainer example"
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 30
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, p.stderr[-3000:]
    rows = [json.loads(l) for l in (tmp_path / "runs" / "reinforce" / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["rollouts"] == 2
    assert "custom update ran: loss" in p.stdout


SKILL = ("When a value is built from parts that may refer to one another, resolve the references in a fixed "
         "order and stop when nothing changes, so that a part seen twice is reported rather than expanded forever.")


def test_ha_train_evolve_between_epochs(tmp_path):
    """`ha train --evolve --skill-teacher`: at each epoch's start, preparation rollouts and the skill
    teacher (over HTTP; its first skill per task leaks a path and is screened out, the retry is kept),
    then the harness evolves against the policy being trained with those skills shown to both
    sides (the dual-rate gate decides), the comparison rollouts land in the ledger, the next epoch
    trains on the frozen harness with the skills, and the logs sit under OUT/evolve and OUT/skills."""
    from ha_agents.llm.fake_server import FakeOpenAIServer

    def respond(body):
        prompt = body["messages"][0]["content"]
        leak = "Change the code in src/ini_interp/parser.py first."
        return {"content": f"## Contrast\nx\n## Tool use\ny\n## Skill\n{SKILL if 'REJECTED' in prompt else leak}\n"}

    out = tmp_path / "evo"
    with FakeOpenAIServer(respond) as srv:
        p = _cli("train", "--suite", "mini", "--instances", TASK, "--model", str(tmp_path / "m"), "--init-model", "qwen",
                 "--harness", "train-edit", "--updates", "2", "--tasks-per-update", "1", "--group-size", "2",
                 "--max-tokens", "48", "--context-tokens", "8192", "--evolve", "--evolve-every", "1",
                 "--evolve-rounds", "1", "--evolve-group-size", "2", "--skill-teacher", f"openai:teacher@{srv.url}",
                 "--no-progress", "--out", str(out))
        log, _ = p.communicate(timeout=900)
    assert p.returncode == 0, log
    rows = _metrics(out)
    evo = [json.loads(l) for l in (out / "evolve" / "evolution.jsonl").read_text().splitlines()]
    # the harness evolves at the start of each epoch (here: one update each), before its rollouts; the
    # skill teacher's and the proposer's batches are preparation, the gate's fresh sides comparison
    prep = sum(e["preparation_run"] for e in evo if e.get("kind") == "round")
    assert 2 <= rows[0]["ledger"]["comparison"] < rows[1]["ledger"]["comparison"]
    assert rows[1]["ledger"]["preparation"] == 4 + prep and [r["skills"] for r in rows] == [1, 1]
    assert [e["epoch"] for e in evo if e.get("kind") == "proposal"] == [1, 2]
    frozen = {e["epoch"]: e["current_after"] for e in evo if e.get("kind") == "round"}
    assert [r["harness_hash"] for r in rows] == [frozen[1], frozen[2]]
    assert all("gate" in e or not e["validation"]["ok"] for e in evo if e.get("kind") == "proposal")
    assert "epoch 1: harness train-edit" in log and "1 of 1 tasks got a skill" in log
    for epoch in (1, 2):
        [rep] = [json.loads(l) for l in (out / "skills" / f"epoch-{epoch}" / "skills.jsonl").read_text().splitlines()]
        assert rep["skill"] == SKILL and rep["attempts"] == 2 and rep["rejected"]
    def skill_messages(root):
        return [m for f in root.rglob("trajectories.jsonl") for line in f.read_text().splitlines()
                for m in json.loads(line)["messages"] if m.get("source") == "skill"]
    assert skill_messages(out / "rollouts") and all(SKILL in m["content"] for m in skill_messages(out / "rollouts"))
    assert skill_messages(out / "evolve")  # the gate's rollouts see the same skills
    assert not skill_messages(out / "skills")  # preparation rollouts come before the teacher
    state = json.loads((out / "checkpoint" / "driver.json").read_text())
    assert state["skills"] == {TASK: SKILL}
    from ha_envs.harness import load_spec

    assert load_spec(out / "checkpoint" / "harness.yaml").hash == frozen[2]  # the model-harness pair


def test_ha_train_evolve_places_every_kind_of_episode_as_asked(tmp_path, monkeypatch):
    """`ha train --evolve --skill-teacher --pool-k 1 --env-placement ray`: every kind of episode the
    run has, the pool's, the skill preparation's, evolution's comparisons and the GRPO groups, gets
    its env from the `ray` placement. The placement's factory is the real local env, tagged with the
    node a Ray actor would report (a Ray actor per episode is `test_remote_env.py`'s subject), so a
    record written without it names no node."""
    import ha_agents.cluster.remote_env  # noqa: F401 - registers the real `ray` placement, replaced below
    from ha_agents.episode import ENV_PLACEMENTS
    from ha_agents.llm.fake_server import FakeOpenAIServer
    from ha_cli.main import main

    built = []

    def tagged_local(task, harness, sandbox, env_options):
        env = ENV_PLACEMENTS["local"](task, harness, sandbox, env_options)
        env.node = "ray-placement"
        built.append(task.instance_id)
        return env

    monkeypatch.setitem(ENV_PLACEMENTS, "ray", tagged_local)
    out = tmp_path / "placed"
    with FakeOpenAIServer(lambda body: {"content": f"## Skill\n{SKILL}\n"}) as srv:
        rc = main(["train", "--suite", "mini", "--instances", TASK, "--model", str(tmp_path / "m"), "--init-model", "qwen",
                   "--harness", "train-edit", "--updates", "1", "--tasks-per-update", "1", "--group-size", "2",
                   "--max-tokens", "16", "--context-tokens", "8192", "--pool-k", "1", "--evolve", "--evolve-every", "1",
                   "--evolve-rounds", "1", "--evolve-group-size", "2", "--skill-teacher", f"openai:teacher@{srv.url}",
                   "--env-placement", "ray", "--no-progress", "--out", str(out)])
    assert rc == 0
    kinds = {"pool": out / "pool", "skills": out / "skills", "evolution": out / "evolve", "training": out / "rollouts"}
    total = 0
    for kind, root in kinds.items():
        recs = [json.loads(line) for f in root.rglob("trajectories.jsonl") for line in f.read_text().splitlines()]
        assert recs, f"no {kind} episodes under {root}"
        local = [r["instance_id"] for r in recs if r.get("node") != "ray-placement"]
        assert not local, f"{len(local)} of {len(recs)} {kind} episodes did not get their env from --env-placement ray"
        total += len(recs)
    assert len(built) == total


def test_warm_start_with_habits_then_a_frozen_policy(tmp_path):
    """`--warm-start-harness train-edit` on a train-h0 run: the demonstrations include the habit (the
    oracle's edit_file calls, unknown tools under train-h0); `--updates 0` keeps the warm-started
    model as a checkpoint; `--freeze-policy` measures an update's rollouts without changing a weight."""
    import hashlib

    warm = tmp_path / "warm"
    p = _cli("train", "--suite", "mini", "--instances", TASK, "--model", str(tmp_path / "m"), "--init-model", "qwen",
             "--harness", "train-h0", "--warm-start-harness", "train-edit", "--warm-start", "1", "--updates", "0",
             "--max-tokens", "48", "--context-tokens", "8192", "--no-progress", "--out", str(warm))
    log, _ = p.communicate(timeout=600)
    assert p.returncode == 0, log
    assert re.search(r"warm start: 1/4 demonstrations resolved \(1 calls to tools the harness lacks\)", log), log
    # progress with an ETA while it runs: each demonstration set, then the SFT epochs
    assert re.search(r"^warm start demonstrations 1/4: \d+ records \| elapsed \d+:\d\d \| ETA \d+:\d\d$", log, re.M), log
    assert re.search(r"^warm start demonstrations 4/4: 4 records \| elapsed \d+:\d\d \| ETA 0:00$", log, re.M), log
    assert re.search(r"^warm start sft 1/1: SFT loss \d+\.\d{4} \| elapsed \d+:\d\d \| ETA 0:00$", log, re.M), log
    model = warm / "checkpoint" / "model"
    digest = lambda d: hashlib.sha256((d / "model.safetensors").read_bytes()).hexdigest()  # noqa: E731
    before = digest(model)
    frozen = tmp_path / "frozen"
    p = _cli("train", "--suite", "mini", "--instances", TASK, "--model", str(model), "--harness", "train-h0",
             "--updates", "1", "--tasks-per-update", "1", "--group-size", "2", "--freeze-policy", "--temperature", "1",
             "--max-tokens", "48", "--context-tokens", "8192", "--no-progress", "--out", str(frozen))
    log, _ = p.communicate(timeout=600)
    assert p.returncode == 0, log
    [row] = _metrics(frozen)
    assert row["rollouts"] == 2 and row["skipped"] == 1.0 and "loss" not in row
    assert digest(frozen / "checkpoint" / "model") == before


def test_optimizer_from_continues_a_checkpoints_moments(tmp_path, warm_model):
    """`--optimizer-from CKPT`: a new run from CKPT's weights starts with CKPT's AdamW moments (a
    fresh state's first steps move every weight by about lr whatever its gradient); without it the
    run says its optimizer is fresh and where the checkpoint's state lies."""
    import torch

    ckpt = warm_model.parent
    saved = torch.load(ckpt / "trainer.pt", weights_only=False)["optimizer"]
    assert saved["state"]  # the warm start stepped

    def run(out: Path, *extra: str) -> str:
        p = _cli("train", "--suite", "mini", "--instances", TASK, "--model", str(warm_model), "--harness", "train-edit",
                 "--updates", "0", "--lr", "1e-4", "--max-tokens", "48", "--context-tokens", "8192",
                 "--no-progress", "--out", str(out), *extra)
        log, _ = p.communicate(timeout=600)
        assert p.returncode == 0, log
        return log

    log = run(tmp_path / "cont", "--optimizer-from", str(ckpt))
    steps = max(float(s["step"]) for s in saved["state"].values())
    assert f"optimizer: continued from {ckpt} (AdamW moments of {steps:.0f} optimizer steps); learning rate 0.0001" in log
    cont = torch.load(tmp_path / "cont" / "checkpoint" / "trainer.pt", weights_only=False)["optimizer"]
    assert cont["state"].keys() == saved["state"].keys()
    for i, s in saved["state"].items():
        assert torch.equal(cont["state"][i]["exp_avg_sq"], s["exp_avg_sq"]) and float(cont["state"][i]["step"]) == float(s["step"])
    assert all(g["lr"] == 1e-4 for g in cont["param_groups"])  # the learning rate is this run's

    log = run(tmp_path / "fresh")
    assert f"optimizer: fresh (the checkpoint's own state, {ckpt / 'trainer.pt'}, is not read" in log
    assert not torch.load(tmp_path / "fresh" / "checkpoint" / "trainer.pt", weights_only=False)["optimizer"]["state"]


def test_optimizer_from_refuses_what_does_not_fit(tmp_path, warm_model, capsys):
    from ha_agents.train.local import LocalConfig, LocalTrainer
    from ha_agents.train.models import init_model
    from ha_cli.main import main

    other = init_model(tmp_path / "other", "qwen", hidden=32, layers=2, heads=4, seed=1)
    tr = LocalTrainer(other, LocalConfig(context_tokens=2048))
    tr.sft([tr_sample(tr)], epochs=1, lr=1e-3)
    tr.save(tmp_path / "other-ckpt")
    base = ["train", "--suite", "mini", "--instances", TASK, "--model", str(warm_model), "--updates", "0",
            "--context-tokens", "8192", "--no-progress"]
    assert main([*base, "--optimizer-from", str(tmp_path / "other-ckpt"), "--out", str(tmp_path / "a")]) == 2
    assert "a checkpoint of another model?" in capsys.readouterr().err
    assert main([*base, "--optimizer-from", str(tmp_path / "nowhere"), "--out", str(tmp_path / "b")]) == 2
    assert "no trainer.pt" in capsys.readouterr().err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "trainer.pt").write_bytes((warm_model.parent / "trainer.pt").read_bytes()[:300])  # truncated
    assert main([*base, "--optimizer-from", str(broken), "--out", str(tmp_path / "c")]) == 2
    assert "not a readable optimizer checkpoint" in capsys.readouterr().err
    assert main([*base, "--backend", "verl", "--dry-run", "--optimizer-from", str(warm_model.parent),
                 "--out", str(tmp_path / "d")]) == 2
    assert "verl restores its own optimizer state" in capsys.readouterr().err


def tr_sample(trainer):
    """One supervised sample of a few tokens (enough for an optimizer step)."""
    from ha_agents.train.base import Sample

    ids = trainer.tokenizer("def f():\n    return 1\n")["input_ids"]
    return Sample(token_ids=list(ids), loss_mask=[0] + [1] * (len(ids) - 1), logprobs=[None] + [0.0] * (len(ids) - 1),
                  reward=1.0, advantage=1.0, group="g")


def test_evolution_with_the_policy_frozen_does_not_rerun_a_draw(tmp_path):
    """`ha train --evolve --freeze-policy`: the weights never change, so epoch 2's proposer batch (the
    harness epoch 1 left, same seeds) is epoch 1's read back: logged as reused, not counted; the
    comparison's current side is never reused (it is drawn with epoch 2's own seeds)."""
    out = tmp_path / "frozen-evo"
    p = _cli("train", "--suite", "mini", "--instances", TASK, "--model", str(tmp_path / "m"), "--init-model", "qwen",
             "--harness", "train-edit", "--updates", "2", "--tasks-per-update", "1", "--group-size", "2",
             "--max-tokens", "48", "--context-tokens", "8192", "--evolve", "--evolve-every", "1",
             "--evolve-rounds", "1", "--evolve-group-size", "2", "--freeze-policy", "--no-progress", "--out", str(out))
    log, _ = p.communicate(timeout=900)
    assert p.returncode == 0, log
    evo = [json.loads(l) for l in (out / "evolve" / "evolution.jsonl").read_text().splitlines()]
    rounds = {e["epoch"]: e for e in evo if e.get("kind") == "round"}
    assert not rounds[1]["accepted"]  # a random tiny model: epoch 2 starts where epoch 1 did
    first = [e for e in evo if e.get("kind") == "proposal" and e["epoch"] == 2][0]
    assert first["reused"]["preparation"].endswith(f"{rounds[1]['current_after']}/e1r1-prep")
    assert first["reused"]["current"] is None and rounds[2]["preparation_run"] == 0
    assert "reused from e1r1-prep: the same weights, harness and seeds" in log
    rows = _metrics(out)
    assert rows[1]["ledger"]["comparison"] - rows[0]["ledger"]["comparison"] == rounds[2]["rollouts_run"]
    epoch2 = [e for e in evo if e.get("kind") == "proposal" and e["epoch"] == 2]
    assert rounds[2]["rollouts_run"] == sum(e["rollouts"]["smoke"] + e["rollouts"]["candidate"] for e in epoch2) + max(
        (e["rollouts"]["current"] for e in epoch2), default=0)  # the fresh current side runs once a round
    # a candidate epoch 1 judged with these weights is not offered again (the verdict stands)
    judged = {e["candidate_hash"] for e in evo if e.get("kind") == "proposal" and e["epoch"] == 1 and e["validation"]["ok"]}
    assert judged and not judged & {e["candidate_hash"] for e in epoch2}
