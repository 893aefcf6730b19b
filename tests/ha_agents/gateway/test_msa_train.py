"""Training a user's harness through the gateway: `ha train --agent mini-swe-agent` runs GRPO whose
every episode is mini-swe-agent 2.4.x (from PyPI, its own venv, unmodified) behind a gateway in
front of the policy being trained (token mode, the policy's own tokenizer and chat template),
graded by this library's grader, through the same driver, batch policy and local trainer as
`ha train` with the wrapper stack."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest

from ha_cli.main import main
from ha_envs.loaders import load_suite

if not os.environ.get("CI"):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[3]
VENV = Path(os.environ.get("HA_MSA_VENV") or ROOT / ".venv-msa")
TASK = "mini__ini_interpolation"


def require_msa() -> None:
    """Skip without mini-swe-agent's venv, except under CI, where .ci/run creates it: fail there."""
    if not (VENV / "bin" / "mini").is_file():
        why = f"no mini-swe-agent venv at {VENV} (`make msa-venv` creates it)"
        if os.environ.get("CI"):
            pytest.fail(why + "; CI is set, so .ci/run should have made it")
        pytest.skip(why)


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def test_the_gateway_samples_the_weights_being_trained(tmp_path):
    """The training gateway calls the trainer's own client: a session opened after an update samples
    from the updated weights (its rollout logprobs are the trainer's current ones, not the initial
    weights'), with the episode's seed, through real HTTP."""
    from ha_agents.train.base import Sample
    from ha_agents.train.gateway import policy_gateway
    from ha_agents.train.local import LocalConfig, LocalTrainer
    from ha_agents.train.models import init_model

    init_model(tmp_path / "m", "qwen", hidden=32, layers=1, seed=0)
    trainer = LocalTrainer(tmp_path / "m", LocalConfig(lr=5e-2, max_tokens=12, context_tokens=4096, seed=0))
    initial = LocalTrainer(tmp_path / "m", LocalConfig(max_tokens=12, context_tokens=4096, seed=0))
    ask = {"messages": [{"role": "user", "content": "Fix the failing test in ttlcache."}]}

    def episode(gw, name: str) -> dict:
        s = gw.open(name, seed=11)
        _post(gw.base_url(s.id) + "/chat/completions", ask)
        return _post(f"{gw.url}/s/{s.id}/end", {})

    def sample(rec: dict, advantage: float = 1.0) -> Sample:
        return Sample(token_ids=rec["token_ids"], loss_mask=rec["loss_mask"], logprobs=rec["logprobs"], reward=1.0,
                      advantage=advantage, group="g")

    def recomputed(tr, rec: dict) -> list[float]:
        import torch

        with torch.no_grad():
            lp = tr._micro(tr.model, [sample(rec)])[0][0]
        return [float(x) for x, m in zip(lp, rec["loss_mask"][1:]) if m]

    def rollout_lps(rec: dict) -> list[float]:
        return [lp for lp, m in zip(rec["logprobs"], rec["loss_mask"]) if m and lp is not None]

    with policy_gateway(trainer.client(), trainer.token_mode, max_tokens=12) as gw:
        first = episode(gw, "before")
        again = episode(gw, "before-again")
        assert first["token_ids"] == again["token_ids"]  # the session's seed decides the sampling
        metrics = trainer.update([sample(first)])
        assert metrics["grad_norm"] > 0
        after = episode(gw, "after")
    assert first["token_error"] == after["token_error"] == "" and 1 in after["loss_mask"]
    lps = rollout_lps(after)
    now, then = recomputed(trainer, after), recomputed(initial, after)
    assert len(lps) == len(now) == len(then) > 0
    assert max(abs(a - b) for a, b in zip(lps, now)) < 1e-4  # sampled by the updated weights
    assert max(abs(a - b) for a, b in zip(lps, then)) > 1e-2  # not by the initial ones


def test_ha_train_agent_refuses_what_the_users_harness_cannot_do(tmp_path, capsys):
    base = ["train", "--suite", "mini", "--instances", TASK, "--model", str(tmp_path / "m"), "--out", str(tmp_path / "o")]
    cases = {("--agent", "mini-swe-agent", "--backend", "verl"): "--agent with --backend verl",
             ("--agent", "mini-swe-agent", "--evolve"): "--evolve evolves this library's wrapper stack",
             ("--agent", "mini-swe-agent", "--skill-teacher", "null"): "--skill-teacher's skills",
             ("--agent", "mini-swe-agent", "--harness", "h1"): "--harness names this library's wrapper stack",
             ("--agent", "mini-swe-agent", "--max-turns", "3"): "use --step-limit",
             ("--agent", "mini-swe-agent", "--env-placement", "ray"): "--agent with --env-placement ray",
             ("--agent", "openhands"): "--agent openhands: only mini-swe-agent is supported",
             ("--agent", "mini-swe-agent", "--msa-venv", str(tmp_path / "none")): "no mini-swe-agent venv at"}
    for extra, said in cases.items():
        assert main(base + list(extra)) == 2, extra
        assert said in capsys.readouterr().err, extra
    assert not (tmp_path / "m").exists() and not (tmp_path / "o").exists()  # refused before anything was built


def test_ha_train_agent_mini_swe_agent_end_to_end(tmp_path, capsys):
    """`ha train --agent mini-swe-agent` from a tiny random model: the warm start's two demonstrations
    are recorded through mini-swe-agent behind the gateway (the gold fix resolves, the give-up does
    not), then one GRPO update whose group is two mini-swe-agent episodes sampled by the policy being
    trained. The records reach the trainer with the policy's own prompt ids (its chat template over
    mini-swe-agent's conversation), generated ids and logprobs (the trainer recomputes the same
    logprobs); a random policy writes no valid tool call, mini-swe-agent then drops its reply from
    the conversation (a token_error), so the update has no samples and says why."""
    require_msa()
    import torch
    from transformers import AutoTokenizer

    from ha_agents.train.base import Sample
    from ha_agents.train.local import LocalConfig, LocalTrainer

    out, model = tmp_path / "run", tmp_path / "m"
    [task] = [t for t in load_suite("mini") if t.instance_id == TASK]
    rc = main(["train", "--suite", "mini", "--instances", TASK, "--agent", "mini-swe-agent", "--msa-venv", str(VENV),
               "--model", str(model), "--init-model", "qwen", "--warm-start", "1", "--updates", "1",
               "--tasks-per-update", "1", "--group-size", "2", "--step-limit", "2", "--max-tokens", "24",
               "--context-tokens", "8192", "--no-progress", "--out", str(out)])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "warm start: 1/2 demonstrations resolved" in cap.err
    demos = {r["demonstration_kind"]: r for r in map(json.loads, (out / "demonstrations" / "gateway" /
                                                                  "trajectories.jsonl").read_text().splitlines())}
    assert demos["fix"]["resolved"] and demos["fix"]["harness_exit_status"] == "Submitted"
    assert not demos["give-up"]["resolved"] and demos["give-up"]["patch"] == ""
    assert all(d["token_error"] == "" and d["harness"] == "mini-swe-agent@2.4.6" for d in demos.values())

    [row] = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert row["harness"] == "mini-swe-agent@2.4.6" and row["agent"] == "mini-swe-agent" and row["rollouts"] == 2
    recs = [json.loads(x) for x in (out / "rollouts" / "update-0001" / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(r["run"] for r in recs) == [1, 2] and {r["harness"] for r in recs} == {"mini-swe-agent@2.4.6"}
    assert row["token_errors"] == sum(1 for r in recs if r["token_error"])
    dropped = ", ".join(f"{n} {why}" for why, n in sorted(row["dropped"].items()))
    assert row["batch_samples"] == 0 and row["mixed_groups"] == 0 and row["dropped"]["no_tokens"] >= row["token_errors"]
    assert (f"no update: no group had both a success and a failure after the batch policy (0 mixed, "
            f"{row['all_success_groups']} all-success, {row['all_failure_groups']} all-failure groups; dropped: "
            f"{dropped})") in cap.err
    # the policy's own ids: its template over mini-swe-agent's conversation, its generated ids and logprobs
    trained = out / "checkpoint" / "model"  # no update ran: the weights that sampled the group
    tok = AutoTokenizer.from_pretrained(trained)
    tr = LocalTrainer(trained, LocalConfig(context_tokens=8192))
    for r in recs:
        n = r["model_calls"][0]["prompt_tokens"]
        prompt = tok.decode(r["token_ids"][:n])
        assert prompt.startswith("<|im_start|>system\nYou are a helpful assistant that can interact with a computer.")
        assert "Please solve this issue: " + task.problem_statement.strip()[:80] in prompt
        assert set(r["loss_mask"][:n]) == {0} and r["loss_mask"][n] == 1
        s = Sample(r["token_ids"], r["loss_mask"], r["logprobs"], 0.0, 0.0, r["instance_id"])
        with torch.no_grad():
            lp = tr._micro(tr.model, [s])[0][0]
        pairs = [(float(x), old) for x, m, old in zip(lp, r["loss_mask"][1:], r["logprobs"][1:]) if m]
        assert pairs and all(old is not None and abs(x - old) < 1e-3 for x, old in pairs)
    # the checkpoint is the model alone (the harness is the user's), and says how to evaluate it
    assert (trained / "config.json").is_file() and not (out / "checkpoint" / "harness.yaml").exists()
    assert json.loads((out / "gateway.json").read_text())["harness"] == "mini-swe-agent@2.4.6"
    assert f"ha gateway eval --agent mini-swe-agent --model hf:{trained}" in cap.out
