from ha_agents.train.grpo import RateReport
from ha_evolve.gate import dual_rate_gate


def r(p, t):
    return RateReport(p, t, 184, 0, 0, 0)


def test_accepts_only_when_nothing_falls_and_something_rises():
    assert dual_rate_gate(r(0.40, 0.30), r(0.45, 0.30)).accept
    assert dual_rate_gate(r(0.40, 0.30), r(0.40, 0.31)).accept
    assert not dual_rate_gate(r(0.40, 0.30), r(0.40, 0.30)).accept
    # the paper's rejected semantic-review hook: +2.7 pass, -7.0 trainable
    d = dual_rate_gate(r(0.400, 0.300), r(0.427, 0.230))
    assert not d.accept and d.reason == "trainable rate fell"
    assert dual_rate_gate(r(0.4, 0.3), r(0.3, 0.2)).reason == "pass rate and trainable rate fell"
