"""Multi-step Harbor tasks (``[[steps]]``) through the CLI: a two-step task in a real bubblewrap
sandbox, each step graded by its own real test.sh after the agent submits it; Harbor's mean and final
strategies, a min_reward gate, the per-step oracle, and malformed steps named by `ha tasks validate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ha_cli.main import main
from ha_envs.harbor import load_harbor
from tests.conftest import require_bwrap

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return 0\n"
TEST_SH = """#!/bin/bash
cd /app && if python3 -c "{check}" 2>&1; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""
ADD_OK = "from calc import add; assert add(2, 3) == 5"
MUL_OK = "from calc import add, mul; assert add(2, 3) == 5 and mul(2, 3) == 6"
FIX_ADD = "sed -i 's/a - b/a + b/' calc.py"
FIX_MUL = "sed -i 's/return 0/return a * b/' calc.py"


def two_steps(root: Path, name: str, strategy: str = "mean", gate: str = "", steps: str | None = None) -> Path:
    """A task whose step 'add' asks for add fixed and step 'mul' for mul written (its tests check both)."""
    d = root / name
    (d / "environment" / "app").mkdir(parents=True)
    (d / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\nCOPY app/ /app/\n")
    (d / "environment" / "app" / "calc.py").write_text(CALC)
    (d / "task.toml").write_text(steps if steps is not None else (
        f'schema_version = "1.4"\nmulti_step_reward_strategy = "{strategy}"\n[verifier]\ntimeout_sec = 60.0\n'
        f'[environment]\nnetwork_mode = "no-network"\n\n[[steps]]\nname = "add"\n{gate}\n'
        '[[steps]]\nname = "mul"\n[steps.verifier]\ntimeout_sec = 30.0\n'))
    for step, check, solve, what in (("add", ADD_OK, FIX_ADD, "add returns a wrong sum"),
                                     ("mul", MUL_OK, FIX_MUL, "mul must return the product")):
        (d / "steps" / step / "tests").mkdir(parents=True)
        (d / "steps" / step / "solution").mkdir()
        (d / "steps" / step / "instruction.md").write_text(f"In calc.py, {what}. Fix it.\n")
        (d / "steps" / step / "tests" / "test.sh").write_text(TEST_SH.format(check=check))
        (d / "steps" / step / "solution" / "solve.sh").write_text(f"#!/bin/bash\nset -e\n{solve}\n")
    return d


def _replay(path: Path, runs: dict[str, list[str]]) -> Path:
    lines = [{"instance_id": iid, "run": 1, "messages": [{"role": "assistant", "content": f"```bash\n{c}\n```"}
                                                         for c in cmds]} for iid, cmds in runs.items()]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _eval(tmp_path: Path, data: Path, model: str, out: str, *extra: str) -> dict[str, dict]:
    assert main(["eval", "--benchmark", "harbor", "--data", str(data), "--model", model, "--max-turns", "4",
                 "--out", str(tmp_path / out), "--no-progress", *extra]) == 0
    recs = [json.loads(x) for x in (tmp_path / out / "trajectories.jsonl").read_text().splitlines()]
    return {r["instance_id"]: r for r in recs}


def test_steps_graded_in_turn_with_mean_final_and_min_reward(tmp_path, capfd):
    require_bwrap()
    data = tmp_path / "ds"
    two_steps(data, "mean")
    two_steps(data, "final", strategy="final")
    two_steps(data, "gated", gate="min_reward = 1.0")
    two_steps(data, "cheat")
    two_steps(data, "stall", gate="[steps.verifier]\ntimeout_sec = 2.0")
    assert main(["tasks", "list", "--benchmark", "harbor", "--data", str(data)]) == 0
    out = capfd.readouterr().out
    assert all(n in out for n in ("mean", "final", "gated", "cheat", "stall")), out
    only_add = [FIX_ADD, "submit", "submit"]  # step 1 solved, step 2 submitted untouched
    forge = "printf 'import json\\nopen(\"/logs/verifier/reward.json\", \"w\").write(json.dumps({\"reward\": 1}))\\n' >> calc.py"
    replay = _replay(tmp_path / "replay.jsonl", {"mean": only_add, "final": only_add, "gated": ["submit"],
                                                 "cheat": [forge, "submit", FIX_MUL, "submit"],
                                                 "stall": ["echo 'import time; time.sleep(30)' >> calc.py", "submit"]})
    recs = _eval(tmp_path, data, f"replay:{replay}", "replay")
    mean, final, gated = recs["mean"], recs["final"], recs["gated"]
    for rec in (mean, final):
        assert [(s["name"], s["reward"], s["verifier_reward"]) for s in rec["steps"]] == [("add", 1.0, 1.0),
                                                                                          ("mul", 0.0, 0.0)]
        assert rec["termination"] == "submitted" and not rec["mask_sample"] and not rec["resolved"]
        text = json.dumps(rec["messages"])
        assert "add returns a wrong sum" in text and "mul must return the product" in text and "Step 2 of 2" in text
        assert "AssertionError" in rec["grade"]["log_tail"]  # step 2's own test.sh judged the end
    assert mean["reward"] == 0.5 and "mean of add: 1, mul: 0" in mean["grade"]["verdict_rules"]
    assert final["reward"] == 0.0 and "final of" in final["grade"]["verdict_rules"]
    # the gate: step 1 below min_reward ends the episode; step 2 never shown, not counted
    assert gated["reward"] == 0.0 and [s["name"] for s in gated["steps"]] == ["add"]
    assert "mul must return" not in json.dumps(gated["messages"]) and gated["termination"] == "submitted"
    assert "below its min_reward 1.0" in gated["grade"]["verdict_rules"]
    # step 1's code under test writes a second reward file during its grading: forged, the episode
    # ends there with reward 0 (the strategy does not apply) and step 2 is never shown
    cheat = recs["cheat"]
    assert [(s["name"], s["status"]) for s in cheat["steps"]] == [("add", "verdict_tampered")]
    assert cheat["reward"] == 0.0 and cheat["termination"] == "verdict_tampered" and not cheat["mask_sample"]
    assert "mul must return" not in json.dumps(cheat["messages"])
    # step 1's tests ran past their timeout: no valid reward, so (as Harbor) the rest is not run; it counts 0
    stall = recs["stall"]
    assert [(s["name"], s["status"], s["verifier_reward"]) for s in stall["steps"]] == [("add", "tests_timed_out", None)]
    assert stall["reward"] == 0.0 and "no valid reward (tests_timed_out)" in stall["grade"]["verdict_rules"]


def test_per_step_oracle_solves_both_steps(tmp_path, capsys):
    require_bwrap()
    data = tmp_path / "ds"
    two_steps(data, "mean")
    # validate: the oracle (each step's solve.sh in turn) resolves the last step's tests; no change does not
    assert main(["tasks", "validate", "--benchmark", "harbor", "--data", str(data), "--json", "--workers", "1"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["ok"] and row["gold_status"] == "resolved", row
    rec = _eval(tmp_path, data, "oracle", "oracle")["mean"]
    assert rec["reward"] == 1.0 and rec["resolved"] and [s["reward"] for s in rec["steps"]] == [1.0, 1.0]
    assert "a + b" in rec["patch"] and "a * b" in rec["patch"]
    acts = [m for m in rec["messages"] if m["role"] == "assistant"]
    names = [c["function"]["name"] for m in acts for c in m.get("tool_calls") or []]
    assert names.count("submit") == 2, names  # one submit per step; step 1's work fixes add only
    before = json.dumps(acts[:names.index("submit")])
    assert "a + b" in before and "a * b" not in before


def test_identity_covers_steps(tmp_path):
    d = two_steps(tmp_path, "t")
    task = load_harbor(d)[0]
    assert task.problem_statement.startswith("In calc.py, add") and task.tests.timeout_s == 30.0
    assert [s["name"] for s in task.metadata["harbor"]["steps"]] == ["add", "mul"]
    before = (task.metadata["harbor"]["content_sha256"], task.fingerprint())
    (d / "steps" / "mul" / "tests" / "test.sh").write_text(TEST_SH.format(check="pass"))
    after = load_harbor(d)[0]
    assert after.metadata["harbor"]["content_sha256"] != before[0] and after.fingerprint() != before[1]


BASE = 'schema_version = "1.4"\n'


@pytest.mark.parametrize("toml, words", [
    (BASE + '[[steps]]\nname = "add"\n[[steps]]\nname = "gone"\n', "[[steps]] name = 'gone' has no folder steps/gone/"),
    (BASE + '[[steps]]\nname = "a/b"\n', "step name 'a/b' holds a path separator"),
    (BASE + '[[steps]]\nname = ".."\n', "step name '..' is . or .."),
    (BASE + '[[steps]]\nname = "add"\n[[steps]]\nname = "ADD"\n', "step names 'add' and 'ADD' name the same folder"),
    (BASE + '[[steps]]\nname = "add"\nmin_reward = { style = 0.5 }\n', "only the 'reward' key"),
    (BASE + 'multi_step_reward_strategy = "best"\n[[steps]]\nname = "add"\n', "'mean' or 'final', not 'best'"),
])
def test_malformed_steps_get_clear_errors_from_validate(tmp_path, capsys, toml, words):
    two_steps(tmp_path, "bad", steps=toml)
    assert main(["tasks", "validate", "--benchmark", "harbor", "--data", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert words in err and "bad" in err, err


def test_a_step_without_instruction_or_test_script(tmp_path, capsys):
    d = two_steps(tmp_path, "bad")
    (d / "steps" / "mul" / "tests" / "test.sh").unlink()
    assert main(["tasks", "validate", "--benchmark", "harbor", "--data", str(d)]) == 2
    assert "step 'mul' has no test script" in capsys.readouterr().err
    (d / "steps" / "mul" / "tests" / "test.sh").write_text(TEST_SH.format(check=MUL_OK))
    (d / "steps" / "mul" / "instruction.md").unlink()
    assert main(["tasks", "validate", "--benchmark", "harbor", "--data", str(d)]) == 2
    assert "mul: no instruction.md" in capsys.readouterr().err


def test_turn_cap_and_budget_hooks_hold_per_step(tmp_path):
    """As Harbor verifies a step whose agent ran out of time and goes on, a step that reaches the
    turn cap (which holds per step) is graded and the next one shown; the budget the harness's hooks
    remind of is the step's."""
    require_bwrap()
    import ha_envs
    from tests.ha_envs.harness.conftest import Driver, spec_with

    task = load_harbor(two_steps(tmp_path, "t"))[0]
    spec = spec_with(hooks=[("budget_reminder", {"turns_left": [1], "token_budget": 0})])
    env = ha_envs.make(task=task, harness=spec, max_turns=2)
    try:
        d = Driver(env)
        assert d.info["harbor_step"] == "add"
        d("bash", command=FIX_ADD)
        assert [t[:26] for t in d.hook_texts("budget_reminder")] == ["Budget: 1 of 2 turns left."]
        d("think", thought="x")  # step 1's cap: graded (add fixed), step 2 shown
        assert not d.done and d.info["harbor_step"] == "mul" and "mul must return" in json.dumps(d.obs)
        d("think", thought="x")
        assert [t[:26] for t in d.hook_texts("budget_reminder")] == ["Budget: 1 of 2 turns left."]
        d("think", thought="x")
        assert d.done and d.info["termination"] == "max_turns" and d.reward == 0.5
        assert [(s["name"], s["reward"], s["ending"]) for s in d.info["harbor_steps"]] == [
            ("add", 1.0, "max_turns"), ("mul", 0.0, "max_turns")]
    finally:
        env.close()


MUL_STAGED = ("import os; from calc import add, mul; from calc_extra import sq; "
              "assert add(2, 3) == 5 and mul(2, 3) == 6 and sq(3) == 9; "
              "assert open('from_setup.txt').read() == 'staged mul\\n' and os.access('tool.sh', os.X_OK)")


def staged_steps(root: Path, name: str, mul_setup: str = "echo staged mul > from_setup.txt\n",
                 add_setup: str | None = None) -> Path:
    """``two_steps`` whose steps stage files before they start (Harbor's ``steps/<name>/workdir/``):
    step 'add' a note (and optionally a setup.sh), step 'mul' a module, an executable script and a
    setup.sh writing a file; step 'mul''s tests need all three."""
    d = two_steps(root, name)
    add = d / "steps" / "add" / "workdir"
    add.mkdir()
    (add / "NOTES.txt").write_text("staged for add\n")
    if add_setup is not None:
        (add / "setup.sh").write_text(add_setup)
    mul = d / "steps" / "mul" / "workdir"
    (mul / "lib").mkdir(parents=True)
    (mul / "calc_extra.py").write_text("def sq(a):\n    return a * a\n")
    (mul / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    (mul / "tool.sh").chmod(0o755)
    (mul / "lib" / "data.txt").write_text("x\n")
    (mul / "setup.sh").write_text(mul_setup)
    (d / "steps" / "mul" / "tests" / "test.sh").write_text(TEST_SH.format(check=MUL_STAGED))
    return d


def test_step_workdir_is_staged_and_setup_run_before_each_step(tmp_path):
    """Harbor's ``workdir/``: step k's files appear in the work copy (modes kept) and its setup.sh
    has run before the agent sees step k; they are graded as part of the work copy; the oracle
    (validate, the oracle policy) runs with them too; a failing setup before step 2 ends the episode
    with that step at 0, one before step 1 is an environment fault (masked)."""
    require_bwrap()
    data = tmp_path / "ds"
    staged_steps(data, "staged")
    staged_steps(data, "brokensetup", mul_setup="echo no >&2; exit 3\n")
    staged_steps(data, "brokenfirst", add_setup="exit 4\n")
    looks = "ls; cat NOTES.txt; ls calc_extra.py from_setup.txt 2>&1 || true"
    replay = _replay(tmp_path / "replay.jsonl", {
        "staged": [looks, FIX_ADD, "submit", looks + "; cat from_setup.txt", FIX_MUL, "submit"],
        "brokensetup": [FIX_ADD, "submit", FIX_MUL, "submit"], "brokenfirst": [FIX_ADD, "submit"]})
    recs = _eval(tmp_path, data, f"replay:{replay}", "replay")
    staged = recs["staged"]
    outs = [m["content"] for m in staged["messages"] if m["role"] in ("tool", "user")]
    step1 = next(o for o in outs if "staged for add" in o)
    assert "No such file" in step1 and "calc_extra.py" in step1  # step 2's files are not there yet
    assert any("staged mul" in o for o in outs)  # step 2's setup ran before the agent looked
    assert [(s["name"], s["reward"]) for s in staged["steps"]] == [("add", 1.0), ("mul", 1.0)]
    assert staged["reward"] == 1.0 and staged["resolved"]
    assert "calc_extra.py" in staged["patch"] and "from_setup.txt" in staged["patch"]
    broken = recs["brokensetup"]
    assert [(s["name"], s["status"], s["reward"]) for s in broken["steps"]] == [("add", "resolved", 1.0),
                                                                                ("mul", "setup_failed", 0.0)]
    assert broken["reward"] == 0.5 and not broken["mask_sample"]
    assert "setup.sh exited 3" in broken["grade"]["verdict_rules"]
    assert "mul must return" not in json.dumps(broken["messages"])  # the step never started
    first = recs["brokenfirst"]
    assert first["mask_sample"] and first["termination"] == "sandbox_error"
    # the oracle: each step's solve.sh after that step's staging, as Harbor's oracle agent runs it
    assert main(["tasks", "validate", "--benchmark", "harbor", "--data", str(data / "staged"), "--json",
                 "--workers", "1"]) == 0
    rec = _eval(tmp_path, data / "staged", "oracle", "oracle")["staged"]
    assert rec["reward"] == 1.0 and [s["reward"] for s in rec["steps"]] == [1.0, 1.0]


def test_staged_files_stay_in_the_task(tmp_path, capsys):
    """A link out of the task, or a changed staged file: refused with its path, and a new identity."""
    d = staged_steps(tmp_path, "t")
    before = load_harbor(d)[0].fingerprint()
    (d / "steps" / "mul" / "workdir" / "calc_extra.py").write_text("def sq(a):\n    return a ** 2\n")
    assert load_harbor(d)[0].fingerprint() != before
    (d / "steps" / "mul" / "workdir" / "passwd").symlink_to("/etc/passwd")
    assert main(["tasks", "validate", "--benchmark", "harbor", "--data", str(d)]) == 2
    err = capsys.readouterr().err
    assert "workdir/passwd: a link to /etc/passwd, outside the task" in err, err


def test_step_workdir_staged_in_docker(tmp_path):
    """The same staging in a Docker sandbox (files written by archive, modes kept, setup.sh run): the
    oracle's per-step diffs replayed there earn both steps."""
    from tests.conftest import require_docker

    require_docker()
    d = staged_steps(tmp_path / "ds", "staged")
    (d / "environment" / "Dockerfile").write_text("FROM harnessadapt/base:bookworm\nWORKDIR /app\nCOPY app/ /app/\n")
    rec = _eval(tmp_path, tmp_path / "ds", "oracle", "docker", "--sandbox", "docker")["staged"]
    assert [(s["name"], s["verifier_reward"]) for s in rec["steps"]] == [("add", 1.0), ("mul", 1.0)]
    assert rec["reward"] == 1.0 and not rec["mask_sample"]
