import pytest

from ha_agents.train.grpo import Rollout, group_advantages, rates


def test_advantages_are_mean_centred_without_std():
    assert group_advantages([1, 0, 0, 1]) == [0.5, -0.5, -0.5, 0.5]
    assert group_advantages([1, 1, 1, 1]) == [0, 0, 0, 0]
    norm = group_advantages([1, 0], normalize_std=True)
    # the unbiased std, as verl (torch.std): [1, 0] has std 1/sqrt(2)
    assert norm[0] == pytest.approx(0.5 ** 0.5, rel=1e-4) and norm[1] == pytest.approx(-(0.5 ** 0.5), rel=1e-4)


def test_trainable_rate_counts_mixed_groups_over_all_rollouts():
    rs = [Rollout("a", 1), Rollout("a", 0), Rollout("a", 0), Rollout("a", 1, truncated=True),  # mixed: 3 usable
          Rollout("b", 1), Rollout("b", 1), Rollout("b", 1), Rollout("b", 1),                   # all success
          Rollout("c", 0), Rollout("c", 0), Rollout("c", 1, truncated=True), Rollout("c", 0)]   # truncation kills contrast
    rep = rates(rs)
    assert rep.trainable_rate == pytest.approx(3 / 12)
    assert rep.pass_rate == pytest.approx(7 / 12)  # a truncated but resolved rollout still passed
    assert (rep.mixed_groups, rep.all_success_groups, rep.all_failure_groups) == (1, 1, 1)


def test_from_record_reads_eval_trajectories():
    r = Rollout.from_record({"instance_id": "x", "reward": 1.0, "termination": "max_turns", "mask_sample": False})
    assert r.truncated and r.group == "x"


def test_masked_rollouts_leave_the_pass_rate_but_not_the_trainable_denominator():
    rs = [Rollout("a", 1), Rollout("a", 0), Rollout("a", 0, masked=True), Rollout("a", 0, masked=True)]
    rep = rates(rs)
    assert rep.pass_rate == pytest.approx(1 / 2) and rep.masked == 2
    assert rep.trainable_rate == pytest.approx(2 / 4)  # the two graded rollouts, over all four sampled
    assert rates([Rollout("x", 0, masked=True)]).pass_rate == 0.0
