"""Harness-R1's environment on SWE repair with a fixture target (``tool_user``: it solves a task
only where the harness offers run_tests): a helpful patch earns +1 from fresh base and patched runs
with common seeds, a repeat or an equivalent patch costs no rollout (cache by applied hash),
invalid and no-op patches earn 0 and run nothing, failure batches and partitions are seeded and
disjoint, and the env passes Gymnasium's check_env."""

from __future__ import annotations

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import ha_evolve
from ha_agents.runs.rollouts import collect
from ha_envs.loaders import load_suite
from ha_evolve.harness_r1.harness_edit import Target, failure_batches, partition

assert "ha_evolve/HarnessEdit-v0" in gymnasium.registry, ha_evolve.__doc__  # importing ha_evolve registers it
SUITE = {t.instance_id: t for t in load_suite("mini")}
IDS = ["mini__invoice_rounding", "mini__semver_ranges"]
ADD = "<think>It never tests.</think><patch>ops: [{op: add_tool, tool: run_tests}]</patch>"


@pytest.fixture(scope="module")
def selection(tmp_path_factory):
    out = tmp_path_factory.mktemp("sel")
    return collect([SUITE[i] for i in IDS], 1, "tool_user", "h0", out=out / "sel", progress_bar=False)


def test_a_helpful_patch_is_rewarded_from_fresh_runs_and_cached_by_applied_hash(tmp_path, selection):
    batches = failure_batches(selection, SUITE, n=2, seed=0)
    assert batches and sorted(batches[0]) == sorted(IDS)
    env = gymnasium.make("ha_evolve/HarnessEdit-v0", target={"model": "tool_user", "harness": "h0", "runs": 2},
                         tasks=[SUITE[i] for i in IDS], batches=batches, records=selection, out=tmp_path / "edit")
    obs, info = env.reset(seed=0)
    prompt = obs[0]["content"]
    assert "## Current harness" in prompt and "add_tool" in prompt and all(i in prompt for i in IDS)
    _, reward, terminated, truncated, info = env.step(ADD)
    assert terminated and not truncated and reward == 1.0
    assert info["base"] == {i: 0.0 for i in IDS} and info["patched"] == {i: 1.0 for i in IDS}
    assert info["rollouts"] == 2 * 2 * 2 and info["cache_hits"] == 0 and info["delta_ci"] == [1.0, 1.0]
    assert info["points"] == ["tools"] and info["thinking"] == "It never tests."
    env.reset()
    same = '```json\n{"format": "harnessadapt-patch-v1", "ops": [{"op": "add_tool", "tool": "run_tests", "before": "submit"}]}\n```'
    _, reward2, *_, info2 = env.step(same)  # other text, the same applied harness: no new rollout
    assert reward2 == 1.0 and info2["rollouts"] == 0 and info2["cache_hits"] == 2


@pytest.mark.parametrize("reply,stage", [
    ("I would add a test runner.", "parse"),
    ("<patch>ops: [{op: remove_hook, name: none_such}]</patch>", "apply"),
    ("<patch>ops: [{op: set_params, tool: bash, params: {}}]</patch>", "no_op"),
])
def test_invalid_and_no_op_patches_earn_nothing_and_run_nothing(tmp_path, selection, reply, stage):
    env = gymnasium.make("ha_evolve/HarnessEdit-v0", target=Target("tool_user", "h0"), tasks=[SUITE[i] for i in IDS],
                         batches=[IDS], records=selection, out=tmp_path / "edit")
    env.reset()
    _, reward, terminated, _, info = env.step(reply)
    assert (reward, terminated, info["rollouts"], info["stage"]) == (0.0, True, 0, stage)
    assert info["reason"]
    assert not (tmp_path / "edit" / "runs").exists()


def test_check_env_and_partitions(tmp_path, selection):
    env = gymnasium.make("ha_evolve/HarnessEdit-v0", target=Target("tool_user", "h0"), tasks=[SUITE[i] for i in IDS],
                         batches=[IDS], records=selection, out=tmp_path / "edit")
    check_env(env.unwrapped, skip_render_check=True)
    ids = [f"t{i}" for i in range(20)]
    parts = partition(ids, seed=3)
    assert sorted(sum(parts.values(), [])) == sorted(ids) and parts == partition(ids, seed=3)
    assert [len(parts[k]) for k in ("sft", "rl", "val", "test")] == [8, 6, 2, 4]
    assert failure_batches(selection, SUITE, n=2, only={IDS[0]}) == []  # a partition restricts the batches
    with pytest.raises(ValueError, match="no batch"):
        gymnasium.make("ha_evolve/HarnessEdit-v0", target=Target("tool_user"), tasks=[], batches=[], records=[],
                       out=tmp_path / "x")


def test_ha_engineer_cli_end_to_end(tmp_path, capsys):
    """The path a user takes: `ha eval` of the target, `ha engineer batches`, `prompt`, then `score`
    of a patch file: the flags reach the env, the outputs land on disk, a bad patch is refused."""
    from ha_cli.main import main

    src = ["--suite", "mini", "--instances", *IDS]
    assert main(["eval", *src, "--model", "tool_user", "--harness", "h0", "--no-progress", "--out", str(tmp_path / "t")]) == 0
    capsys.readouterr()
    batches = tmp_path / "b.json"
    assert main(["engineer", "batches", *src, "--run", str(tmp_path / "t"), "--n", "2", "--out", str(batches)]) == 0
    assert "1 batches of 2 failed tasks" in capsys.readouterr().out
    assert main(["engineer", "prompt", *src, "--batches", str(batches)]) == 0
    assert "## Failures" in capsys.readouterr().out
    patch = tmp_path / "patch.txt"
    patch.write_text(ADD)
    score = ["engineer", "score", *src, "--batches", str(batches), "--model", "tool_user", "--runs", "1",
             "--out", str(tmp_path / "s")]
    assert main(score + ["--patch", str(patch)]) == 0
    text = capsys.readouterr().out
    assert "reward (patched - base, mean over 2 tasks): +1.000" in text and "rollouts 4" in text
    patch.write_text("<patch>ops: [{op: add_tool, tool: teleport}]</patch>")
    assert main(score + ["--patch", str(patch), "--json"]) == 0
    bad = __import__("json").loads(capsys.readouterr().out)
    assert bad["reward"] == 0.0 and bad["stage"] == "apply" and "teleport" in bad["reason"] and bad["rollouts"] == 0
    assert len((tmp_path / "s" / "scores.jsonl").read_text().splitlines()) == 2
    assert main(score + ["--patch", str(patch), "--batch", "5"]) == 2
    assert "batches 0..0" in capsys.readouterr().err
