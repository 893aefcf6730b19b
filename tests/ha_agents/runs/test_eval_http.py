"""End to end through real HTTP: `ha eval --model openai:fake@URL --harness h2` on the bundled suite."""

from __future__ import annotations

import json

from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.llm.policies import OraclePolicy
from ha_cli.main import main
from ha_envs.actions import ToolCall
from ha_envs.harness import load_spec
from ha_envs.loaders import load_suite

RIGHT = ("mini__ttl_cache", "mini__js_template")
WRONG = ("mini__semver_ranges",)


def scripts():
    h2 = {"tools": [{"function": {"name": n}} for n in load_spec("h2").tool_names]}
    out = {}
    for task in load_suite("mini"):
        if task.instance_id in RIGHT:
            plan = OraclePolicy().plan(task, h2)
        elif task.instance_id in WRONG:  # a plausible but wrong fix: edits the README, never the code
            plan = [ToolCall("read_file", {"path": "README.md", "start_line": 1, "end_line": 5}),
                    ToolCall("edit_file", {"path": "README.md", "old_str": "\n", "new_str": "\n\n"}),
                    ToolCall("submit", {})]
        else:
            continue
        out[task.problem_statement.strip()[:200]] = plan
    return out


def test_ha_eval_through_http_resolves_exactly_the_right_scripts(tmp_path, capsys):
    plans = scripts()

    def respond(body):
        if len(body["messages"]) == 1:  # the preflight: one user message
            return "OK"
        task_text = body["messages"][1]["content"]
        plan = next(p for key, p in plans.items() if key in task_text)
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        call = plan[step] if step < len(plan) else ToolCall("submit", {})
        return {"tool_calls": [{"id": f"call_{step}", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]}

    with FakeOpenAIServer(respond) as srv:
        out = tmp_path / "http"
        rc = main(["eval", "--suite", "mini", "--instances", *RIGHT, *WRONG, "--model", f"openai:fake@{srv.url}",
                   "--harness", "h2", "--workers", "2", "--out", str(out)])
        assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["per_instance"] == {**{i: [True] for i in RIGHT}, **{i: [False] for i in WRONG}}
    assert summary["model"] == "fake" and summary["harness_hash"] == load_spec("h2").hash
    recs = {json.loads(l)["instance_id"]: json.loads(l) for l in (out / "trajectories.jsonl").read_text().splitlines()}
    wrong = recs[WRONG[0]]
    assert wrong["termination"] == "submitted" and wrong["grade"]["status"] == "unresolved"
    assert wrong["hooks"]["submit_gate"]["count"] == 1  # untested submission refused once, through HTTP too
    assert all(c["attempts"] == 1 for r in recs.values() for c in r["model_calls"])
    preds = [json.loads(l) for l in (out / "predictions.jsonl").read_text().splitlines()]
    assert {p["instance_id"] for p in preds} == set(RIGHT) | set(WRONG) and all(p["model_name_or_path"] == "fake" for p in preds)


def test_replay_reproduces_a_recorded_run(tmp_path):
    """Record oracle episodes, then replay their assistant messages as a model: same outcomes."""
    first = tmp_path / "rec"
    assert main(["eval", "--suite", "mini", "--instances", "mini__semver_ranges", "mini__js_template",
                 "--model", "oracle", "--harness", "h2", "--out", str(first)]) == 0
    again = tmp_path / "replay"
    assert main(["eval", "--suite", "mini", "--instances", "mini__semver_ranges", "mini__js_template",
                 "--model", f"replay:{first / 'trajectories.jsonl'}", "--harness", "h2", "--out", str(again)]) == 0
    a = {json.loads(l)["instance_id"]: json.loads(l) for l in (first / "trajectories.jsonl").read_text().splitlines()}
    b = {json.loads(l)["instance_id"]: json.loads(l) for l in (again / "trajectories.jsonl").read_text().splitlines()}
    assert set(a) == set(b)
    for iid in a:
        assert b[iid]["resolved"] and b[iid]["patch"] == a[iid]["patch"] and b[iid]["tool_counts"] == a[iid]["tool_counts"]
        assert b[iid]["model"].startswith("replay:")


def test_ha_eval_of_a_cheating_model_earns_nothing_and_is_flagged(tmp_path, capsys):
    """A model (over HTTP, h0) that plants a conftest forcing every test to pass, then submits."""
    conftest = ("import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                "    out = yield\n    out.get_result().outcome = 'passed'\n")
    actions = [f"```bash\ncat > tests/conftest.py <<'EOF'\n{conftest}EOF\n```", "```bash\nsubmit\n```"]

    def respond(body):
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return {"content": actions[min(step, len(actions) - 1)]}

    with FakeOpenAIServer(respond) as srv:
        out = tmp_path / "cheat"
        rc = main(["eval", "--suite", "mini", "--instances", "mini__ttl_cache", "--model", f"openai:fake@{srv.url}",
                   "--harness", "h0", "--out", str(out)])
        assert rc == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["per_instance"] == {"mini__ttl_cache": [False]} and summary["suspicious"] == 1
    assert "1 flagged as suspicious" in printed
    (rec,) = [json.loads(l) for l in (out / "trajectories.jsonl").read_text().splitlines()]
    assert rec["reward"] == 0.0 and not rec["mask_sample"] and "touches_test_infrastructure" in rec["flags"]
    assert "tests/conftest.py" in rec["grade"]["dropped_paths"] + rec["grade"]["restored_paths"]
