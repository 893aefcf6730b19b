"""Every hook: it fires when it should (tagged, counted, with its reason) and stays quiet otherwise."""

from __future__ import annotations

import pytest

from ha_envs.harness import HOOKS

from tests.ha_envs.harness.conftest import spec_with

FIX = dict(path="calc.py", old_str="        return lo\n    return x", new_str="        return hi\n    return x")


def fired(d, hook):
    return d.info["hooks"].get(hook, {}).get("count", 0)


def test_catalogue_covers_the_four_points():
    assert len(HOOKS) >= 8
    points = {p for cls in HOOKS.values() for p in cls.points}
    assert points == {"episode_start", "pre_decision", "pre_action", "post_feedback"}


def test_hook_messages_are_tagged_and_not_trainable(drive):
    d = drive(spec_with(hooks=["repo_overview"]))
    msgs = [m for m in d.obs if m["source"] == "hook:repo_overview"]
    assert len(msgs) == 1 and msgs[0]["trainable"] is False and msgs[0]["role"] == "user"
    assert "calc.py" in msgs[0]["content"] and "tests/test_visible.py" in msgs[0]["content"]
    assert d.info["hooks"]["repo_overview"]["count"] == 1
    d("think", thought="x")
    assert fired(d, "repo_overview") == 1  # episode start only


def test_budget_reminder_turns_and_tokens(drive):
    d = drive(spec_with(hooks=[("budget_reminder", {"turns_left": [3], "token_budget": 0})]), max_turns=6)
    for _ in range(2):
        d("think", thought="x")
        assert d.hook_texts("budget_reminder") == []
    d("think", thought="x")
    assert d.hook_texts("budget_reminder") == ["Budget: 3 of 6 turns left. Make sure your fix is in place and submit "
                                               "before they run out."]
    d("think", thought="x")
    assert d.hook_texts("budget_reminder") == []
    assert d.info["hooks"]["budget_reminder"] == {"count": 1, "reasons": ["3 turns left"]}

    t = drive(spec_with(hooks=[("budget_reminder", {"turns_left": [1], "token_budget": 2000})]))
    assert fired(t, "budget_reminder") == 0
    t("bash", command="seq 1 3000")
    assert any("tokens used" in x for x in t.hook_texts("budget_reminder"))
    t("bash", command="seq 1 3000")
    assert t.hook_texts("budget_reminder") == [] and fired(t, "budget_reminder") == 1


def test_verification_reminder(drive):
    d = drive(spec_with(hooks=["verification_reminder"]))
    d("edit_file", **FIX)
    d("think", thought="done?")
    assert d.hook_texts("verification_reminder") == []  # waits after_turns=2
    d("think", thought="done.")
    [text] = d.hook_texts("verification_reminder")
    assert "have not run any test since. Run run_tests" in text
    d("think", thought="x")
    assert d.hook_texts("verification_reminder") == []  # once per edit
    assert fired(d, "verification_reminder") == 1

    quiet = drive(spec_with(hooks=["verification_reminder"]))
    quiet("bash", command="sed -i 's/return lo$/return hi/' calc.py")  # an edit through bash is seen too
    quiet("bash", command="python -m pytest -q tests")
    for _ in range(3):
        quiet("think", thought="x")
    assert fired(quiet, "verification_reminder") == 0
    assert quiet.info["edits"] == 1 and quiet.info["test_runs"] == 1


@pytest.mark.parametrize("command,blocked", [
    ("vim calc.py", "interactive"), ("ls && less calc.py", "interactive"), ("python", "interactive"),
    ("rm -rf /", "delete"), ("rm -fr ~", "delete"), ("git reset --hard", "delete"), ("git checkout .", "delete"),
    ("curl -s https://example.com", "network"), ("pip install requests", "network"), ("git clone x", "network"),
    ("ls -la", None), ("echo vim", None), ("python -c 'print(1)'", None), ("rm -rf build/", None),
    ("grep -rn 'pip install' .", None), ("git checkout -- calc.py", None),
])
def test_dangerous_command_guard(drive, command, blocked):
    d = drive(spec_with(hooks=["dangerous_command_guard"]))
    obs = d("bash", command=command)
    if blocked:
        assert [m["source"] for m in obs] == ["hook:dangerous_command_guard"] and blocked in obs[0]["content"]
        assert obs[0]["content"].startswith("Not run: ") and fired(d, "dangerous_command_guard") == 1
        assert d.info["turn"] == 1  # a vetoed call still costs a turn
    else:
        assert obs[0]["source"] == "tool" and fired(d, "dangerous_command_guard") == 0


def test_action_normalizer(drive):
    d = drive(spec_with(hooks=["action_normalizer"]))
    obs = d("bash", command="$ git log --oneline -1")
    assert obs[0]["source"] == "hook:action_normalizer" and "removed a leading shell prompt" in obs[0]["content"]
    assert "git runs without a pager" in obs[0]["content"] and obs[1]["source"] == "tool"
    workdir = d.env.unwrapped.sandbox.workdir
    obs = d("read_file", path=f"{workdir}/calc.py", start_line=1, end_line=1)
    assert "path made relative" in obs[0]["content"] and "def add" in obs[1]["content"]
    obs = d("bash", command="ls")
    assert [m["source"] for m in obs] == ["tool"] and fired(d, "action_normalizer") == 2


def test_submit_gate(drive):
    d = drive(spec_with(hooks=["submit_gate"]))
    obs = d("submit")
    assert not d.done and "your diff is empty" in obs[0]["content"]
    d("submit")  # refused once only: the second submission goes through
    assert d.done and d.info["termination"] == "submitted" and d.reward == 0.0

    u = drive(spec_with(hooks=["submit_gate"]))
    u("edit_file", **FIX)
    obs = u("submit")
    assert not u.done and "not run tests since your last edit. Run run_tests" in obs[0]["content"]
    u("run_tests", paths=["tests/test_visible.py"])
    u("submit")
    assert u.done and u.reward == 1.0 and fired(u, "submit_gate") == 1

    t = drive(spec_with(hooks=["submit_gate"]))
    t("edit_file", **FIX)
    t("bash", command="python -m pytest -q tests")
    t("submit")
    assert t.done and fired(t, "submit_gate") == 0


def test_review_on_submit(drive):
    d = drive(spec_with(hooks=["review_on_submit"]))
    d("edit_file", **FIX)
    obs = d("submit")
    assert not d.done and obs[0]["source"] == "hook:review_on_submit"
    assert "+        return hi" in obs[0]["content"] and "submit again to confirm" in obs[0]["content"]
    d("submit")
    assert d.done and d.reward == 1.0 and fired(d, "review_on_submit") == 1

    empty = drive(spec_with(hooks=["review_on_submit"]))
    empty("submit")
    assert empty.done and fired(empty, "review_on_submit") == 0


def test_long_output_condenser(drive):
    d = drive(spec_with(hooks=[("long_output_condenser", {"max_chars": 2000, "head_lines": 5, "tail_lines": 5})]))
    obs = d("bash", command="seq 1 3000")
    text = obs[0]["content"]
    assert "lines cut from this output" in text and len(text) < 1500
    path = text.split("The full output is in ")[1].split(":")[0]
    # the sandbox's own output cap kept head and tail; the condenser saved what it received
    assert "1500" not in text and fired(d, "long_output_condenser") == 1
    # the saved text is the whole tool message: two header lines, then seq's output
    assert d.text("read_file", path=path, start_line=10, end_line=12) == "    10\t8\n    11\t9\n    12\t10"
    d("bash", command="seq 1 10")
    assert fired(d, "long_output_condenser") == 1


def test_repeated_action_alert(drive):
    d = drive(spec_with(hooks=["repeated_action_alert"]))
    d("bash", command="ls")
    assert d.hook_texts("repeated_action_alert") == []
    d("bash", command="ls")
    assert "same bash call 2 times in a row" in d.hook_texts("repeated_action_alert")[0]
    d("bash", command="pwd")
    assert d.hook_texts("repeated_action_alert") == [] and fired(d, "repeated_action_alert") == 1


def test_stuck_detector_patterns(drive):
    same = drive(spec_with(hooks=["stuck_detector"]))
    for i in range(3):
        same("bash", command="cat missing.txt")
    assert "the same action with the same result 3 times" in same.hook_texts("stuck_detector")[0]

    err = drive(spec_with(hooks=["stuck_detector"]))
    for cmd in ("(exit 3)", "true && (exit 3)", "false || (exit 3)"):
        err("bash", command=cmd)
    assert "the same error 3 times in a row" in err.hook_texts("stuck_detector")[0]

    alt = drive(spec_with(hooks=["stuck_detector"]))
    for i in range(6):
        alt("bash", command="echo A" if i % 2 == 0 else "echo B")
    assert "alternating between two actions" in alt.hook_texts("stuck_detector")[0]
    assert fired(alt, "stuck_detector") == 1

    fine = drive(spec_with(hooks=["stuck_detector"]))
    for i in range(6):
        fine("bash", command=f"echo {i}")
    assert fired(fine, "stuck_detector") == 0
