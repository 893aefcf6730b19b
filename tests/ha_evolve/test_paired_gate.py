"""The default gate resists noise: the paired rule with its confidence requirement and minimum
sample, on records drawn by a coin that ignores the harness (no acceptance over 12 rounds, where
the paper's point rule accepts), through the schedule with the ``coin`` policy over 10 rounds
(common seeds: "not enough evidence" every round), and with the harness-sensitive ``tool_user``
policy (the rule mutator's test runner is accepted); an invalid proposal is logged and the round
asks again."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from ha_agents.train.grpo import Rollout, rates
from ha_envs.harness import load_spec
from ha_envs.harness.spec import Component
from ha_envs.loaders import load_suite
from ha_evolve.gate import dual_rate_gate
from ha_evolve.paired_gate import PairedGateConfig, paired_gate, sign_flip_p
from ha_evolve.proposers import Proposal, RuleMutator
from ha_evolve.schedule import EvolveConfig, Evolution

SUITE = {t.instance_id: t for t in load_suite("mini")}


def coin_side(rng: random.Random, tasks: int, group: int) -> list[dict]:
    return [{"instance_id": f"t{i}", "run": k, "reward": float(rng.random() < 0.5), "termination": "submitted"}
            for i in range(tasks) for k in range(1, group + 1)]


@pytest.mark.parametrize("tasks", [2, 8])
def test_a_coin_that_ignores_the_harness_is_never_accepted(tasks):
    rng = random.Random(11)
    point = paired = 0
    reasons = []
    for _ in range(12):  # both sides drawn independently: pure noise between them
        cur, cand = coin_side(rng, tasks, 4), coin_side(rng, tasks, 4)
        point += dual_rate_gate(rates(map(Rollout.from_record, cur)), rates(map(Rollout.from_record, cand))).accept
        d = paired_gate(cur, cand)
        paired += d.accept
        reasons.append(d.reason)
    assert paired == 0 and point >= 2  # the paper's point rule takes noise for progress
    if tasks < PairedGateConfig().needed_tasks():
        assert all(r.startswith("not enough evidence: 2 task(s) ran on both sides") for r in reasons)
    assert any(r.startswith("not enough evidence") for r in reasons)


def test_the_rule_and_its_minimum_sample_are_explicit():
    assert PairedGateConfig().needed_tasks() == 5 and PairedGateConfig(level=0.99).needed_tasks() == 7
    assert sign_flip_p([1.0] * 5) == 1 / 32 and sign_flip_p([1.0] * 4) == 1 / 16 and sign_flip_p([0.0, 0.0]) == 1.0

    def recs(wins_per_task):
        return [{"instance_id": f"t{i}", "reward": float(w), "termination": "submitted"}
                for i, ws in enumerate(wins_per_task) for w in ws]

    up = paired_gate(recs([(0, 0)] * 5), recs([(1, 0)] * 5))
    assert up.accept and up.p_pass == 1 / 32 and up.d_trainable == 1.0 and up.evidence
    few = paired_gate(recs([(0, 0)] * 4), recs([(1, 0)] * 4))
    assert not few.accept and not few.evidence and few.min_tasks == 5
    weak = paired_gate(recs([(0, 0)] * 6), recs([(1, 0)] * 3 + [(0, 0)] * 3))
    assert not weak.accept and weak.reason.startswith("not enough evidence: pass rate rose by +0.250 but p = 0.125")
    fell = paired_gate(recs([(1, 0)] * 6), recs([(1, 1)] * 6))  # every pass up, every group's contrast gone
    assert not fell.accept and fell.reason == "trainable rate fell"
    assert paired_gate(recs([(1, 0)] * 6), recs([(1, 0)] * 6)).reason == "neither rate rose"
    with pytest.raises(ValueError, match="level"):
        PairedGateConfig(level=1.0).validate()


class Retuner:
    """A new harness the policy cannot tell from h0 each round (only its turn limit moves)."""

    name = "retuner"

    def propose(self, current, records, tried):
        spec = current.with_limits(max_turns=current.limits.max_turns - 1 - len(tried))
        return Proposal(self.name, replace(spec, name=f"h0-turns{spec.limits.max_turns}"), "retune the turn limit")


def test_the_coin_policy_changes_no_harness_over_three_rounds(tmp_path):
    task = SUITE["mini__js_template"]
    evo = Evolution(tmp_path / "evo", [task], "coin", "h0", Retuner(),
                    EvolveConfig(rounds=3, group_size=2, workers=2, bootstrap_samples=100))
    final = evo.run()
    props = [r for r in evo.log.records if r.get("kind") == "proposal"]
    assert len(props) == 3 and not any(p["accepted"] for p in props) and final.hash == load_spec("h0").hash
    assert all(p["decided_by"] == "paired" and p["decision_reason"].startswith("not enough evidence") for p in props)
    # common seeds: the coin falls the same way on both sides, so no round shows a difference
    assert all(p["current_rates"]["pass_rate"] == p["candidate_rates"]["pass_rate"] for p in props)
    assert len({p["current_rates"]["pass_rate"] for p in props}) > 1  # yet the coin does vary across rounds


TOOL_TASKS = ("mini__invoice_rounding", "mini__semver_ranges", "mini__table_render", "mini__ttl_cache",
              "mini__url_router")


def test_a_harness_sensitive_policy_gets_its_tool_accepted(tmp_path):
    # 5 tasks: the least p-value is 1/32, so the one comparison's two tests need 0.05 each (alpha 0.1)
    evo = Evolution(tmp_path / "evo", [SUITE[t] for t in TOOL_TASKS], "tool_user", "h0", RuleMutator(),
                    EvolveConfig(rounds=1, group_size=2, workers=2, bootstrap_samples=100, alpha=0.1))
    final = evo.run()
    (p,) = [r for r in evo.log.records if r.get("kind") == "proposal"]
    assert p["current_rates"]["pass_rate"] == 0.0 and p["candidate_rates"]["pass_rate"] == 1.0
    assert p["decided_by"] == "paired" and p["accepted"] and p["paired"]["p_pass"] == 1 / 32
    assert "run_tests" in final.tool_names and final.hash == p["candidate_hash"]


class BadThenGood:
    name = "bad-then-good"

    def __init__(self, good):
        self.good, self.calls = good, 0

    def propose(self, current, records, tried):
        self.calls += 1
        if self.calls == 1:
            return Proposal(self.name, None, "", "the proposed harness is invalid: a typo")
        return Proposal(self.name, self.good, "second try")


def test_an_invalid_proposal_is_logged_and_the_round_asks_again(tmp_path):
    h0 = load_spec("h0")
    good = replace(h0, name="h0+think", tools=h0.tools[:-1] + (Component("think"),) + h0.tools[-1:]).validate()
    evo = Evolution(tmp_path / "evo", [SUITE["mini__js_template"]], "null", "h0", BadThenGood(good),
                    EvolveConfig(rounds=1, group_size=2, workers=2, bootstrap_samples=100))
    evo.run()
    first, second = [r for r in evo.log.records if r.get("kind") == "proposal"]
    assert first["validation"]["ok"] is False and "a typo" in first["validation"]["reason"]
    assert second["k"] == 2 and second["validation"]["ok"] and second["rollouts"]["candidate"] == 2
    (rnd,) = [r for r in evo.log.records if r.get("kind") == "round"]
    assert rnd["invalid"] == 1 and rnd["valid"] == 1 and rnd["stop"] is False
