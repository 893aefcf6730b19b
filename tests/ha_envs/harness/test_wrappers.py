"""The wrapper stack end to end: gym contract, format-error policy, multi-call turns, the oracle
under every preset, the verification reminder under h2 but not h0, and the CLI."""

from __future__ import annotations

import json
import os
import signal

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import ha_envs
from ha_agents.episode import run_episode
from ha_agents.llm.policies import OraclePolicy, ScriptedPolicy
from ha_cli.main import main
from ha_envs.actions import ToolCall
from ha_envs.harness import load_spec, preset_names, render_call
from ha_envs.loaders import load_suite

from tests.ha_envs.harness.conftest import spec_with


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped version")
@pytest.mark.parametrize("preset", preset_names())
def test_check_env_on_every_preset(tiny_task, preset):
    env = ha_envs.make(task=tiny_task, harness=preset, max_turns=6)
    try:
        check_env(env.unwrapped, skip_render_check=True)
        check_env(env, skip_render_check=True)
        obs, info = env.reset()
        assert info["harness"] == preset and info["harness_hash"] == load_spec(preset).with_limits(max_turns=6).hash
        assert [t["function"]["name"] for t in info["tools"]] == load_spec(preset).tool_names
        assert env.observation_space.contains(obs)
    finally:
        env.close()


def test_gym_id_accepts_preset_and_spec_path(tiny_task, tmp_path):
    path = load_spec("h2").without("review_on_submit").save(tmp_path / "mine.yaml")
    for ref, name in (("h2", "h2"), (str(path), "h2-without-review_on_submit")):
        env = gymnasium.make("ha_envs/Repair-v0", task=tiny_task, harness=ref)
        try:
            _, info = env.reset()
            assert info["harness"] == name and "run_tests" in [t["function"]["name"] for t in info["tools"]]
        finally:
            env.close()


def test_system_prompt_describes_the_text_format(tiny_task):
    env = ha_envs.make(task=tiny_task, harness=spec_with(tools=("bash", "read_file", "submit"), parser={"format": "hermes"}))
    try:
        obs, _ = env.reset()
        assert "<tool_call>" in obs[0]["content"] and '"name": "read_file"' in obs[0]["content"]
    finally:
        env.close()


def test_format_errors_end_the_episode_after_k(drive):
    d = drive()
    kinds = []
    for bad in ("no call here", {"content": "", "tool_calls": [{"function": {"name": "nope", "arguments": "{}"}}]}):
        obs, _, term, _, info = d.env.step(bad)
        kinds.append(obs[0]["error_kind"])
        assert not term
    obs, _, term, _, _ = d.env.step(render_call(ToolCall("think", {"thought": "ok"}), "openai"))
    assert not term  # a good call resets the count
    for _ in range(2):
        assert not d.env.step("still nothing")[2]
    obs, reward, term, trunc, info = d.env.step({"content": '{"x', "finish_reason": "length"})
    assert term and info["termination"] == "format_errors" and reward == 0.0 and not info["mask_sample"]
    assert kinds == ["no_call", "unknown_tool"] and obs[0]["error_kind"] == "truncated"


def test_multi_call_all_runs_in_order_and_veto_cancels_the_turn(drive):
    d = drive(spec_with(hooks=["dangerous_command_guard"], parser={"multi_call": "all"}))
    two = {"content": "", "tool_calls": [
        {"id": "a", "function": {"name": "bash", "arguments": json.dumps({"command": "echo one > f.txt"})}},
        {"id": "b", "function": {"name": "read_file", "arguments": json.dumps({"path": "f.txt"})}}]}
    obs, *_, info = d.env.step(two)
    assert [m["tool_call_id"] for m in obs] == ["a", "b"] and "1\tone" in obs[1]["content"] and info["turn"] == 1
    vetoed = {"content": "", "tool_calls": [
        {"id": "c", "function": {"name": "bash", "arguments": json.dumps({"command": "echo two > g.txt"})}},
        {"id": "d", "function": {"name": "bash", "arguments": json.dumps({"command": "vim g.txt"})}}]}
    obs, *_, info = d.env.step(vetoed)
    assert [m["source"] for m in obs] == ["hook:dangerous_command_guard"] and "None of this turn's calls ran" in obs[0]["content"]
    assert "No such file" in d.text("bash", command="cat g.txt")


def test_sandbox_failure_inside_a_tool_is_masked(drive):
    d = drive()
    os.killpg(d.env.unwrapped.sandbox.shell.pid, signal.SIGKILL)
    d("read_file", path="calc.py")
    assert d.done and d.info["termination"] == "sandbox_error" and d.info["mask_sample"] is True


@pytest.mark.parametrize("preset", preset_names())
def test_oracle_resolves_through_each_harness(preset):
    for task in [t for t in load_suite("mini") if t.instance_id in ("mini__ttl_cache", "mini__js_template")]:
        rec = run_episode(task, OraclePolicy(), preset)
        assert rec["resolved"] and rec["termination"] == "submitted", (preset, task.instance_id, rec["error"])
        used = set(rec["tool_counts"])
        if preset in ("h1", "h2"):
            assert "edit_file" in used and "bash" not in used  # the harness's own tools, not git apply
        if preset == "openhands":
            assert used == {"str_replace_editor", "submit"}
        if preset == "h2":
            assert rec["test_runs"] == 1 and rec["delivery"]["tested_after_last_edit"] is True
            assert rec["hooks"]["review_on_submit"]["count"] == 1


def test_verification_reminder_under_h2_not_h0(tiny_task):
    never_tests = [ToolCall("bash", {"command": "sed -i '10s/return lo/return hi/' calc.py"}),
                   ToolCall("bash", {"command": "git status --short"}),
                   ToolCall("bash", {"command": "cat calc.py"}),
                   ToolCall("bash", {"command": "ls"})]
    h2 = run_episode(tiny_task, ScriptedPolicy(never_tests), "h2")
    h0 = run_episode(tiny_task, ScriptedPolicy(never_tests), "h0")
    assert h2["hooks"]["verification_reminder"]["count"] == 1
    reminders = [m for m in h2["messages"] if m.get("source") == "hook:verification_reminder"]
    assert len(reminders) == 1 and "have not run any test since" in reminders[0]["content"]
    assert "verification_reminder" not in h0["hooks"] and not any(
        m.get("source", "").startswith("hook:") for m in h0["messages"])
    assert h0["resolved"] and h2["resolved"]  # the fix itself is right; only the harness differs


def test_cli_harness_commands(capsys, tmp_path):
    assert main(["harness", "list"]) == 0
    out = capsys.readouterr().out
    for name in preset_names():
        assert f"{name} " in out and load_spec(name).hash in out
    assert main(["harness", "show", "h2", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["hash"] == load_spec("h2").hash
    assert {t["name"] for t in shown["tools"]} == set(load_spec("h2").tool_names)
    assert all("parameters" in t["schema"]["function"] for t in shown["tools"])
    assert next(h for h in shown["hooks"] if h["name"] == "budget_reminder")["params"]["turns_left"] == [10, 3]
    assert main(["harness", "show", "h1"]) == 0 and "hooks (4, run in this order" in capsys.readouterr().out
    assert main(["harness", "diff", "h1", "h2"]) == 0 and "+ tool run_tests" in capsys.readouterr().out
    assert main(["harness", "show", "nope"]) == 2 and "not a preset" in capsys.readouterr().err


def test_cli_eval_ablation_records_its_hash(tmp_path, capsys):
    out = tmp_path / "ablate"
    rc = main(["eval", "--suite", "mini", "--instances", "mini__semver_ranges", "--policy", "oracle", "--harness", "h2",
               "--without", "view_diff", "--without", "budget_reminder", "--out", str(out)])
    assert rc == 0
    want = load_spec("h2").without("view_diff", "budget_reminder").hash
    summary = json.loads((out / "summary.json").read_text())
    assert summary["harness_hash"] == want and summary["mean_pass_at_1"] == 1.0
    assert load_spec(out / "harness.yaml").hash == want
    [rec] = [json.loads(l) for l in (out / "trajectories.jsonl").read_text().splitlines()]
    assert rec["harness_hash"] == want and "budget_reminder" not in rec["hooks"]
    # resuming the same directory with another harness is refused
    assert main(["eval", "--suite", "mini", "--instances", "mini__semver_ranges", "--harness", "h2",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds another run" in err and f"harness_hash: {want!r} (in the folder) vs {load_spec('h2').hash!r}" in err


@pytest.mark.slow
def test_oracle_resolves_the_whole_suite_under_h2(tmp_path, capsys):
    rc = main(["eval", "--suite", "mini", "--policy", "oracle", "--harness", "h2", "--workers", "2",
               "--out", str(tmp_path / "h2")])
    assert rc == 0
    summary = json.loads((tmp_path / "h2" / "summary.json").read_text())
    assert summary["mean_pass_at_1"] == 1.0 and summary["n_tasks"] == 12, summary["per_instance"]


def test_bad_assistant_turns_stay_in_the_history(tiny_task):
    class Clumsy(ScriptedPolicy):
        def act(self, observation, info):
            self._n += 1
            if self._n <= 2:
                return ["I will now fix it.", {"content": "", "tool_calls": [{"function": {"name": "edit", "arguments": "{"}}]}][self._n - 1]
            return super().act(observation, info)

    rec = run_episode(tiny_task, Clumsy([ToolCall("bash", {"command": "sed -i '10s/return lo/return hi/' calc.py"})]), "h1")
    roles = [(m["role"], m.get("source")) for m in rec["messages"]]
    first_bad = roles.index(("assistant", "policy"))
    assert rec["messages"][first_bad]["content"] == "I will now fix it."
    assert rec["messages"][first_bad + 1]["error_kind"] == "no_call"
    assert rec["messages"][first_bad + 2]["tool_calls"][0]["function"]["name"] == "edit"
    assert rec["messages"][first_bad + 3]["error_kind"] == "bad_json"
    assert rec["resolved"] and rec["tool_counts"]["format_error"] == 2
