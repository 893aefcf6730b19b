"""The evolution gate's end-to-end fixtures (``benchmarks/bench_gate_e2e.py``): ``coin_prompt`` (a
coin drawn from the sampling seed and the prompt, blind to the harness otherwise) and ``tool_coin``
(the same coin with a planted effect of ``run_tests``), their specs' probabilities, and both reached
through ``ha eval --model``."""

from __future__ import annotations

import json

import pytest

from ha_agents.llm.fixture_policies import PlantedCoinPolicy, PromptCoinPolicy
from ha_agents.llm.registry import check_model_spec, make_model
from ha_cli.main import main
from ha_envs.actions import ToolCall
from ha_envs.loaders import load_suite
from tests.conftest import require_bwrap

TASK = {t.instance_id: t for t in load_suite("mini")}["mini__semver_ranges"]
SOLVED = [ToolCall("submit", {"solved": True})]
H0_TOOLS = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in ("bash", "submit")]
WITH_TESTS = H0_TOOLS + [{"type": "function", "function": {"name": "run_tests", "parameters": {}}}]


def heads(policy, seed: int, tools: list, prompt: str = "fix the bug") -> bool:
    """Whether ``policy`` solves (its first message is the solver's submit, not a look and give-up)."""
    policy.start(TASK, {"tools": tools, "parser": "hermes"})
    first = policy.act([{"role": "user", "content": prompt}], {"sampling_seed": seed})
    return '"arguments": {"solved": true}' in first


def test_coin_prompt_draws_from_seed_and_prompt_whatever_the_harness():
    p = PromptCoinPolicy(lambda task, info: list(SOLVED), 0.3)
    a = [heads(p, s, H0_TOOLS) for s in range(3000)]
    assert 0.27 < sum(a) / len(a) < 0.33
    assert a[:200] == [heads(p, s, H0_TOOLS) for s in range(200)]  # same seed, same prompt: same coin
    b = [heads(p, s, WITH_TESTS) for s in range(3000)]  # another prompt (a tool more): the same rate ...
    assert 0.27 < sum(b) / len(b) < 0.33
    both = sum(x and y for x, y in zip(a, b)) / len(a)  # ... from independent coins (0.09; the same coins: 0.3)
    assert 0.06 < both < 0.12
    c = [heads(p, s, H0_TOOLS, prompt="another task") for s in range(3000)]
    assert 0.06 < sum(x and y for x, y in zip(a, c)) / len(a) < 0.12
    assert not any(heads(PromptCoinPolicy(lambda t, i: list(SOLVED), 0.0), s, H0_TOOLS) for s in range(100))
    assert all(heads(PromptCoinPolicy(lambda t, i: list(SOLVED), 1.0), s, WITH_TESTS) for s in range(100))


def test_tool_coin_plants_the_effect_of_run_tests():
    p = PlantedCoinPolicy(lambda task, info: list(SOLVED), 0.1, 0.9)
    without = sum(heads(p, s, H0_TOOLS) for s in range(3000)) / 3000
    with_tests = sum(heads(p, s, WITH_TESTS) for s in range(3000)) / 3000
    assert 0.07 < without < 0.13 and 0.87 < with_tests < 0.93


def test_specs_carry_the_probabilities_and_bad_ones_are_refused():
    assert make_model("coin_prompt:0.25").policy.p == 0.25 and make_model("coin_prompt").policy.p == 0.5
    planted = make_model("tool_coin:0,1").policy
    assert (planted.p, planted.p_with) == (0.0, 1.0)
    for bad, says in (("coin_prompt:1.5", "not a probability in \\[0, 1\\]"), ("coin_prompt:half", "'half' is not a number"),
                      ("tool_coin:0.2", "expected tool_coin:P0,P1"), ("coin_prompt:", "expected coin_prompt:P")):
        with pytest.raises(ValueError, match=says):
            check_model_spec(bad)
    from ha_agents.llm.weights import weights_identity

    ids = [weights_identity(m) for m in ("coin_prompt:0.3", "coin_prompt:0.5", "tool_coin:0.3,0.5")]
    assert len({json.dumps(i, sort_keys=True) for i in ids}) == 3 and all(i["kind"] == "scripted" for i in ids)
    with pytest.raises(ValueError, match="not a probability"):
        weights_identity("tool_coin:0.3,7")


def test_the_cli_runs_both_fixtures(tmp_path, capsys):
    """``ha eval --model tool_coin:0,1``: nothing under h0 (no run_tests), everything under h2 (it has
    run_tests); a bad spec stops before any episode (``coin_prompt:1`` runs through the evolution in
    tests/test_benchmarks.py)."""
    require_bwrap()
    src = ["--suite", "mini", "--instances", TASK.instance_id, "--no-progress"]
    for model, harness, resolved in (("tool_coin:0,1", "h0", False), ("tool_coin:0,1", "h2", True)):
        out = tmp_path / f"{model.replace(':', '_')}-{harness}"
        assert main(["eval", *src, "--model", model, "--harness", harness, "--out", str(out)]) == 0
        (rec,) = [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]
        assert rec["resolved"] is resolved and rec["model"] == model, (model, harness)
    capsys.readouterr()
    assert main(["eval", *src, "--model", "coin_prompt:2", "--out", str(tmp_path / "bad")]) == 2
    assert "coin_prompt:2: 2 is not a probability in [0, 1]" in capsys.readouterr().err
    assert not (tmp_path / "bad" / "trajectories.jsonl").exists()
