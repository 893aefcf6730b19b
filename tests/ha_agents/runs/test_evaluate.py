"""ha eval: pass@1 table, SWE-bench predictions, streamed trajectories, resume."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from ha_agents.records.log import JsonlLog
from ha_agents.runs.evaluate import evaluate
from ha_cli.main import main


def test_oracle_and_null_through_the_env(tiny_task, tmp_path):
    s = evaluate([tiny_task], "oracle", runs=2, out_dir=tmp_path / "o")
    assert s.pass_at_1 == [1.0, 1.0] and s.mean_pass_at_1 == 1.0
    recs = [json.loads(l) for l in (tmp_path / "o" / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(r["run"] for r in recs) == [1, 2]
    assert all(r["termination"] == "submitted" and r["resolved"] for r in recs)
    assert recs[0]["messages"][0]["source"] == "system" and recs[0]["messages"][2]["source"] == "policy"
    (pred,) = [json.loads(l) for l in (tmp_path / "o" / "predictions.jsonl").read_text().splitlines()]
    assert set(pred) == {"instance_id", "model_name_or_path", "model_patch"}
    assert "+        return hi" in pred["model_patch"]
    assert (tmp_path / "o" / "predictions-run2.jsonl").exists()
    n = evaluate([tiny_task], "null", out_dir=tmp_path / "n")
    assert n.pass_at_1 == [0.0]
    assert json.loads((tmp_path / "n" / "predictions.jsonl").read_text())["model_patch"] == ""


def test_rerun_skips_finished_episodes_and_mends_a_cut_line(tiny_task, tmp_path):
    out = tmp_path / "r"
    evaluate([tiny_task], "oracle", runs=1, out_dir=out)
    traj = out / "trajectories.jsonl"
    first = traj.read_text()
    traj.write_text(first + '{"instance_id": "tiny__clamp", "run": 2, "rew')  # killed mid-write
    s = evaluate([tiny_task], "oracle", runs=2, out_dir=out)
    lines = traj.read_text().splitlines()
    assert lines[0] == first.strip() and len(lines) == 2 and json.loads(lines[1])["run"] == 2
    assert s.pass_at_1 == [1.0, 1.0]
    assert len(JsonlLog(traj).records) == 2


def test_cli_eval_on_the_bundled_suite(tmp_path, capsys):
    rc = main(["eval", "--suite", "mini", "--instances", "mini__invoice_rounding", "mini__js_template",
               "--policy", "oracle", "--harness", "h0", "--out", str(tmp_path / "cli")])
    out = capsys.readouterr().out
    assert rc == 0 and re.search(r"\| h0 \([0-9a-f]{16}\) \| oracle \| 100.0 \| 100.0 \|", out), out
    ids = [json.loads(l)["instance_id"] for l in (tmp_path / "cli" / "predictions.jsonl").read_text().splitlines()]
    assert ids == ["mini__invoice_rounding", "mini__js_template"]


def test_cli_tasks_list_and_errors(capsys):
    assert main(["tasks", "list", "--suite", "mini"]) == 0
    out = capsys.readouterr().out
    assert "mini__go_ledger" in out and "go" in out
    assert main(["tasks", "list", "--suite", "nope"]) == 2
    assert "unknown suite" in capsys.readouterr().err
    assert main(["eval", "--policy", "magic", "--instances", "mini__url_router", "--out", "/tmp/x"]) == 2


def test_cli_validate_names_a_broken_task(tiny_task, tmp_path, capsys):
    row = {"instance_id": "broken1", "problem_statement": "p", "test_patch": tiny_task.tests.test_patch,
           "patch": "", "FAIL_TO_PASS": ["tests/test_hidden.py::test_clamp_low"],
           "PASS_TO_PASS": ["tests/test_visible.py::test_add"], "test_command": tiny_task.tests.test_command,
           "log_parser": "pytest", "source_dir": str(tiny_task.source_dir)}
    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps(row) + "\n")
    rc = main(["tasks", "validate", "--jsonl", str(f), "--json"])
    captured = capsys.readouterr()
    (res,) = json.loads(captured.out)
    assert rc == 1 and not res["ok"] and "broken1" in captured.err
    assert any("gold patch" in p for p in res["problems"])
    assert any("already pass at base" in p for p in res["problems"])


def test_console_script_is_installed():
    proc = subprocess.run([sys.executable, "-m", "ha_cli.main", "tasks", "list", "--json"], capture_output=True, text=True)
    assert proc.returncode == 0 and len(json.loads(proc.stdout)) >= 12
