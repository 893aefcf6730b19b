"""`ha evolve run` samples: --temperature and --top-p reach every request of an `openai:` model,
each group member sends its own seed and both sides of a comparison the same ones; `replay:`
draws a recorded run per member; `hf:` models sample with top-p."""

from __future__ import annotations

import json

import pytest

from ha_agents.llm.registry import make_model
from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.llm.options import ModelOptions
from ha_cli.main import main

SUBMIT = {"content": "", "tool_calls": [{"id": "c1", "type": "function",
                                          "function": {"name": "submit", "arguments": "{}"}}]}


def test_evolve_run_passes_sampling_and_a_seed_per_member(tmp_path, capsys):
    with FakeOpenAIServer(lambda body: SUBMIT) as srv:
        assert main(["evolve", "run", "--suite", "mini", "--instances", "mini__js_template", "--model",
                     f"openai:m@{srv.url}", "--proposer", "rule", "--rounds", "1", "--group-size", "3",
                     "--temperature", "0.7", "--top-p", "0.9", "--seed", "5", "--out", str(tmp_path / "evo")]) == 0
        preflight, *bodies = srv.requests  # the model checked once before any episode, with the run's sampling
    assert "seed" not in preflight and (preflight["temperature"], preflight["top_p"]) == (0.7, 0.9)
    assert bodies and all(b["temperature"] == 0.7 and b["top_p"] == 0.9 for b in bodies)
    seeds = [b["seed"] for b in bodies]
    # the proposer's batch (three members), then the comparison drawn fresh: three members, each its
    # own seed, on both sides alike, none of them the proposer's batch's
    prep, compared = seeds[:3], seeds[3:]
    assert len(seeds) == 9 and len(set(prep)) == 3 and len(set(compared)) == 3 and not set(prep) & set(compared)
    assert sorted(compared[:3]) == sorted(compared[3:])
    recs = [json.loads(line) for line in (tmp_path / "evo" / "evolution.jsonl").read_text().splitlines()]
    (p,) = [r for r in recs if r["kind"] == "proposal"]
    assert p["decided_by"] == "paired" and p["decision_reason"].startswith("not enough evidence")
    assert "greedy" not in capsys.readouterr().err


def test_a_greedy_group_is_warned_about(tmp_path, capsys):
    with FakeOpenAIServer(lambda body: SUBMIT) as srv:
        assert main(["evolve", "run", "--suite", "mini", "--instances", "mini__js_template", "--model",
                     f"openai:m@{srv.url}", "--proposer", "rule", "--rounds", "1", "--group-size", "2",
                     "--out", str(tmp_path / "evo")]) == 0
    assert "(greedy)" in capsys.readouterr().err
    assert main(["evolve", "run", "--suite", "mini", "--model", "oracle", "--top-p", "1.5",
                 "--out", str(tmp_path / "bad")]) == 2


def test_replay_draws_a_recorded_run_per_member(tmp_path):
    path = tmp_path / "trajectories.jsonl"
    path.write_text("".join(json.dumps({"instance_id": "t", "run": k, "messages": [
        {"role": "assistant", "content": f"run {k}"}]}) + "\n" for k in (1, 2, 3)))
    agent = make_model(f"replay:{path}")

    def first(seed):
        agent.start_instance("t")
        return agent.complete([], [], seed=seed).message["content"]

    drawn = {first(s) for s in range(12)}
    assert drawn == {"run 1", "run 2", "run 3"}
    assert first(7) == first(7) and first(None) == "run 1"  # reproducible; unseeded: run 1, as before


def test_hf_models_sample_with_top_p(tmp_path):
    pytest.importorskip("transformers")
    from ha_agents.train.models import init_model

    model = init_model(tmp_path / "m", "qwen", hidden=32, layers=1, heads=2, vocab_size=500)
    msgs = [{"role": "user", "content": "fix the bug"}]
    greedy = make_model(f"hf:{model}", ModelOptions(max_tokens=12)).complete(msgs, [], seed=1)
    nucleus = make_model(f"hf:{model}", ModelOptions(temperature=1.0, top_p=1e-9, max_tokens=12))
    assert nucleus.top_p == 1e-9
    # a nucleus this small keeps only the most likely token: sampling at temperature 1 is greedy
    assert [nucleus.complete(msgs, [], seed=s).token_ids for s in (1, 2)] == [greedy.token_ids] * 2
    wide = make_model(f"hf:{model}", ModelOptions(temperature=1.0, max_tokens=12))
    assert len({tuple(wide.complete(msgs, [], seed=s).token_ids) for s in range(4)}) > 1


def test_the_paired_gate_settings_reach_the_log(tmp_path):
    out = tmp_path / "evo"
    assert main(["evolve", "run", "--suite", "mini", "--instances", "mini__js_template", "--model", "null",
                 "--proposer", "rule", "--rounds", "1", "--group-size", "2", "--min-tasks", "1", "--alpha", "0.1",
                 "--out", str(out)]) == 0
    (p,) = [json.loads(line) for line in (out / "evolution.jsonl").read_text().splitlines() if '"proposal"' in line]
    # alpha per epoch, split over the two rates of the one comparison
    assert p["paired"]["min_tasks"] == 1 and p["paired"]["level"] == 0.95
    assert p["decision_reason"] == "neither rate rose"  # one task suffices now, and null never solves it
    assert main(["evolve", "run", "--suite", "mini", "--model", "null", "--level", "1.0",
                 "--out", str(tmp_path / "bad")]) == 2


@pytest.mark.parametrize("argv", [["eval"], ["train", "--model", "m"],
                                  ["engineer", "train", "--engineer", "e", "--model", "m", "--batches", "b"]])
def test_one_token_cap_flag_and_its_deprecated_alias(argv, capsys):
    """Every command that caps a model call has one flag, --max-tokens; the old --max-new-tokens
    still parses into it and says it is deprecated."""
    from ha_cli.main import build_parser

    parser = build_parser()
    assert parser.parse_args([*argv, "--max-tokens", "77"]).max_tokens == 77
    assert "deprecated" not in capsys.readouterr().err
    assert parser.parse_args([*argv, "--max-new-tokens", "66"]).max_tokens == 66
    assert "--max-new-tokens is deprecated: use --max-tokens" in capsys.readouterr().err
    assert not hasattr(parser.parse_args(argv), "max_new_tokens")


def test_ha_engineer_gives_each_model_its_own_flags(tmp_path):
    """`ha engineer` builds every model's options through the one `model_options`: the target's
    episodes (and its check) carry --temperature and --top-p, the teacher --engineer-temperature
    and not the target's top-p."""
    ids = ["mini__invoice_rounding", "mini__semver_ranges"]
    src = ["--suite", "mini", "--instances", *ids]
    assert main(["eval", *src, "--model", "tool_user", "--harness", "h0", "--no-progress",
                 "--out", str(tmp_path / "t")]) == 0
    b = tmp_path / "b.json"
    assert main(["engineer", "batches", *src, "--run", str(tmp_path / "t"), "--n", "2", "--out", str(b)]) == 0
    patch = "<patch>ops: [{op: add_tool, tool: run_tests}]</patch>"

    def reply(body):
        return {"content": patch} if body["model"] == "teacher" else SUBMIT

    with FakeOpenAIServer(reply) as srv:
        assert main(["engineer", "sft-data", *src, "--batches", str(b), "--teacher", f"openai:teacher@{srv.url}",
                     "--samples", "1", "--keep", "all", "--model", f"openai:target@{srv.url}", "--runs", "1", "--temperature", "0.3",
                     "--top-p", "0.8", "--engineer-temperature", "0.6", "--out", str(tmp_path / "e")]) == 0
        requests = srv.requests
    target = [r for r in requests if r["model"] == "target"]
    teacher = [r for r in requests if r["model"] == "teacher"]
    assert len(target) > 2 and teacher  # the check, then episodes on both sides
    assert all((r["temperature"], r["top_p"]) == (0.3, 0.8) for r in target)
    sampled = [r for r in teacher if "seed" in r]  # the teacher's check is a short default call
    assert sampled and all(r["temperature"] == 0.6 and r.get("top_p") != 0.8 for r in sampled)
