"""The gate's error control: the plan's budget (alpha per epoch split over the two rates and the
epoch's comparisons), the exact sign-flip test at any number of tasks, simulated epochs through
the schedule's own ``decide`` (no effect: at most alpha per epoch; the point rule, on the same
draws, far above it; a real effect: accepted), and the schedule drawing the comparison's current
side fresh (never the batch the proposer read) on the round's share of the pool."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from ha_envs.harness import load_spec
from ha_envs.loaders import load_suite
from ha_evolve.gate_plan import GatePlan
from ha_evolve.gate_sim import Scenario, simulate
from ha_evolve.paired_gate import sign_flip_p
from ha_evolve.schedule import EvolveConfig, Evolution

from tests.ha_evolve.conftest import FixedProposer
from tests.ha_evolve.test_evolution import with_tool


def test_the_plan_splits_alpha_and_states_what_it_can_detect():
    plan = GatePlan("paired", 0.05, 46, 4, 5).validate()
    assert plan.alpha_test == pytest.approx(0.005) and plan.needed_tasks == 8
    assert GatePlan("paired", 0.05, 46, 4, 5, candidates=2).alpha_test == pytest.approx(0.0025)
    run_wide = GatePlan("paired", 0.05, 46, 4, 5, epochs=2, split_epochs=2)  # one rate for a 2-epoch run
    assert run_wide.alpha_epoch == pytest.approx(0.025) and run_wide.alpha_test == pytest.approx(0.0025)
    assert "over 2 epochs <= 0.05" in run_wide.text() and "over 2 epochs <= 0.1" in GatePlan(
        "paired", 0.05, 46, 4, 5, epochs=2).text()
    # (z(0.995) + z(0.8)) * sqrt(2 * 0.25 / 184)
    assert plan.mde() == pytest.approx((2.5758 + 0.8416) * math.sqrt(0.5 / 184), abs=1e-3)
    assert plan.mde(tasks=92) < plan.mde() and plan.mde(base_rate=0.1) < plan.mde()
    assert plan.tasks_for(0.10) > 46 and GatePlan("paired", 0.05, 1, 4, 5).mde() is None
    assert plan.rollouts_per_epoch() == 5 * 3 * 184
    text = plan.text()
    assert "false acceptance <= 0.05 per epoch" in text and "17.8 points" in text
    assert "can never pass" in GatePlan("paired", 0.05, 5, 16, 5).text()
    assert "warning: the point rule" in GatePlan("point", 0.05, 46, 4, 5).text()
    with pytest.raises(ValueError, match="alpha"):
        GatePlan("paired", 0.7, 46, 4, 5).validate()


def test_the_sign_flip_test_is_exact_on_rates_of_groups():
    rng = random.Random(5)
    for _ in range(60):
        diffs = [rng.choice([-1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75, 1, 1 / 3]) for _ in range(rng.randint(1, 12))]
        nz = [abs(d) for d in diffs if d]
        if not nz:
            continue
        exact = sum(sum(s * d for s, d in zip(signs, nz)) >= sum(diffs) - 1e-9
                    for signs in itertools.product((1, -1), repeat=len(nz))) / 2 ** len(nz)
        assert sign_flip_p(diffs) == pytest.approx(exact, abs=1e-12)
    assert sign_flip_p([0.25] * 46) == 2.0 ** -46  # exact far beyond enumeration
    assert 0 < sign_flip_p([math.pi / 10] * 20, samples=500) < 0.01  # off the lattice: sampled


def _scenario(rule, effect=0.0, **kw):
    return Scenario(EvolveConfig(rounds=2, group_size=4, tasks=10, decide_by=rule, alpha=0.2, bootstrap_samples=0),
                    pool=10, effect=effect, epochs=1, **kw)


def test_no_effect_is_accepted_at_most_alpha_per_epoch_and_the_point_rule_is_not_controlled():
    paired = simulate(_scenario("paired"), runs=200, seed=3)
    point = simulate(_scenario("point"), runs=200, seed=3)
    assert paired.epochs == 200 and paired.comparisons == 400
    assert paired.per_epoch <= 0.2
    assert point.per_epoch > 2 * 0.2  # the same simulation catches a rule that controls nothing


def test_a_real_effect_is_accepted():
    assert simulate(_scenario("paired", effect=0.4), runs=40, seed=4).per_epoch >= 0.6


def test_the_current_side_is_drawn_fresh_on_the_rounds_tasks(tmp_path):
    """The proposer reads one batch; the comparison's current side is another (other seeds), and
    only ``tasks`` of the pool run in a round."""
    seen = []

    class Reading(FixedProposer):
        def propose(self, current, records, tried):
            seen.append(records)
            return super().propose(current, records, tried)

    suite = {t.instance_id: t for t in load_suite("mini")}
    pool = [suite["mini__js_template"], suite["mini__invoice_rounding"]]
    evo = Evolution(tmp_path / "evo", pool, "coin", "h0", Reading(with_tool(load_spec("h0"), "think")),
                    EvolveConfig(rounds=1, group_size=2, tasks=1, workers=2, bootstrap_samples=0, alpha=0.2))
    evo.run()
    (p,) = [r for r in evo.log.records if r.get("kind") == "proposal"]
    (rnd,) = [r for r in evo.log.records if r.get("kind") == "round"]
    assert len(rnd["tasks"]) == 1 and p["rollouts"] == {"preparation": 2, "current": 2, "candidate": 2, "smoke": 1}
    h0 = tmp_path / "evo" / "rollouts" / load_spec("h0").hash
    import json

    def seeds(d):
        return {json.loads(line)["seed"] for line in (h0 / d / "trajectories.jsonl").read_text().splitlines()}

    assert {r["seed"] for r in seen[0]} == seeds("e1r1-prep") and not seeds("e1r1-prep") & seeds("e1r1")
    assert {r["instance_id"] for r in seen[0]} == set(rnd["tasks"])
