"""RepairEnv: the Gymnasium contract, episodes end to end, terminations and tampering."""

from __future__ import annotations

import dataclasses
import json
import os
import signal

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import ha_envs
from ha_envs import EpisodeOverError, RepairEnv


def bash(cmd: str) -> str:
    return f"```bash\n{cmd}\n```"


@pytest.fixture
def env(tiny_task):
    e = ha_envs.make(task=tiny_task, harness="h0", sandbox="local", max_turns=8)
    yield e
    e.close()


def test_check_env_passes(tiny_task):
    e = RepairEnv(task=tiny_task, max_turns=5)
    try:
        check_env(e, skip_render_check=True)
    finally:
        e.close()


def test_gymnasium_make_by_id(tiny_task):
    e = gymnasium.make("ha_envs/Repair-v0", task=tiny_task, max_turns=4)
    try:
        obs, info = e.reset(seed=0)
        assert [m["source"] for m in obs] == ["system", "task"]
        assert tiny_task.problem_statement in obs[1]["content"]
        assert {t["function"]["name"] for t in info["tools"]} == {"bash", "submit"}
    finally:
        e.close()


def test_bundled_suite_by_instance_id():
    e = ha_envs.make(task="mini__invoice_rounding")
    try:
        obs, info = e.reset()
        assert info["instance_id"] == "mini__invoice_rounding"
    finally:
        e.close()


def test_unknown_harness_is_a_clear_error(tiny_task):
    with pytest.raises(ValueError, match=r"^unknown harness 'h9' \(not a preset nor a spec file\); presets: h0, h1, h2, openhands, train-edit, train-h0$"):
        ha_envs.make(task=tiny_task, harness="h9")
    with pytest.raises(ValueError, match=r"unknown harness 'openhand'.*did you mean 'openhands'"):
        ha_envs.make(task=tiny_task, harness="openhand")


def test_fix_through_actions_is_rewarded(env, tiny_task):
    obs, info = env.reset()
    obs, r, term, trunc, info = env.step(bash("sed -i '0,/return lo/! s/return lo/return hi/' calc.py && python -c 'from calc import clamp; print(clamp(9,0,5))'"))
    assert r == 0.0 and not term and obs[0]["source"] == "tool" and obs[0]["trainable"] is False
    assert "<returncode>0</returncode>" in obs[0]["content"] and "5\n" in obs[0]["content"]
    obs, r, term, trunc, info = env.step(bash("submit"))
    assert term and not trunc and r == 1.0
    assert info["termination"] == "submitted" and info["mask_sample"] is False
    assert info["grade"]["resolved"] and "+        return hi" in info["patch"]
    assert info["tool_counts"] == {"bash": 1, "submit": 1}
    with pytest.raises(EpisodeOverError):
        env.step(bash("ls"))


def test_openai_tool_calls_are_answered_with_tool_messages(env):
    env.reset()
    call = {"content": None, "tool_calls": [{"id": "c1", "type": "function",
                                             "function": {"name": "bash", "arguments": json.dumps({"command": "echo hi"})}}]}
    obs, *_ = env.step(call)
    assert obs[0]["role"] == "tool" and obs[0]["tool_call_id"] == "c1" and "hi" in obs[0]["content"]
    obs, r, term, trunc, info = env.step({"tool_calls": [{"id": "c2", "function": {"name": "submit", "arguments": "{}"}}]})
    assert term and r == 0.0 and info["grade"]["status"] == "unresolved"


def test_three_format_errors_end_the_episode(env):
    env.reset()
    for i in range(3):
        obs, r, term, trunc, info = env.step("I think I should look at the code.")
        assert "Format error (no_call)" in obs[0]["content"] and obs[0]["source"] == "system"
    assert term and info["termination"] == "format_errors" and r == 0.0 and not info["mask_sample"]


def test_a_valid_action_resets_the_format_error_count(env):
    env.reset()
    env.step("no call")
    env.step("no call")
    env.step(bash("true"))
    _, _, term, _, _ = env.step("no call")
    assert not term


def test_max_turns_truncates_and_grades_the_work_copy(tiny_task):
    e = ha_envs.make(task=tiny_task, max_turns=2)
    try:
        e.reset()
        e.step(bash("sed -i '0,/return lo/! s/return lo/return hi/' calc.py"))
        obs, r, term, trunc, info = e.step(bash("true"))
        assert trunc and not term and info["termination"] == "max_turns" and r == 1.0
    finally:
        e.close()


def test_killed_sandbox_is_masked_not_a_silent_zero(env):
    env.reset()
    os.killpg(env.unwrapped.sandbox.shell.pid, signal.SIGKILL)
    obs, r, term, trunc, info = env.step(bash("ls"))
    assert term and info["termination"] == "sandbox_error" and info["mask_sample"] is True
    assert "killed" in info["error"] or "died" in info["error"]


def test_grader_failure_is_masked(tiny_task):
    broken = dataclasses.replace(tiny_task, tests=dataclasses.replace(tiny_task.tests, test_patch="--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"))
    e = ha_envs.make(task=broken)
    try:
        e.reset()
        obs, r, term, trunc, info = e.step(bash("submit"))
        assert term and info["termination"] == "grading_error" and info["mask_sample"] is True
        assert "hidden test patch" in info["error"]
    finally:
        e.close()


def test_episode_timeout(tiny_task):
    e = ha_envs.make(task=tiny_task, episode_timeout_s=0.5, grade_on_truncation=False)
    try:
        e.reset()
        obs, r, term, trunc, info = e.step(bash("sleep 1"))
        assert trunc and info["termination"] == "agent_timeout"
    finally:
        e.close()


def test_reset_after_changes_is_pristine(env):
    env.reset()
    env.step(bash("echo junk >> calc.py && cd /tmp"))
    obs, info = env.reset()
    o, *_ = env.step(bash("git status --porcelain; pwd"))
    assert o[0]["content"].endswith(f"<output>\n{env.unwrapped.sandbox.workdir}\n</output>")


def test_hidden_tests_and_future_history_are_out_of_reach(env, tiny_task):
    env.reset()
    o, *_ = env.step(bash("ls tests; git log --all --oneline | wc -l; git for-each-ref | wc -l; "
                          "git reflog | wc -l; git count-objects -v | grep -E '^(count|in-pack)'; git stash list | wc -l"))
    out = o[0]["content"]
    assert "test_hidden.py" not in out
    lines = out.split("<output>\n")[1].split("\n")
    assert lines[1:4] == ["1", "1", "0"]  # one commit, one ref (main), no reflog
    o, *_ = env.step(bash("grep -r clamp_high / --include=*.py -l 2>/dev/null | head; git show HEAD --stat | tail -3"))
    assert "test_hidden" not in o[0]["content"]


def test_agent_edits_to_hidden_test_paths_do_not_count(env):
    env.reset()
    env.step(bash("mkdir -p tests && printf 'def test_clamp_high():\\n    pass\\n' > tests/test_hidden.py"))
    obs, r, term, trunc, info = env.step(bash("submit"))
    assert r == 0.0 and info["grade"]["dropped_paths"] == ["tests/test_hidden.py"]
