"""The gate's flags are one set in both commands and reach the gate: ``ha evolve run`` and ``ha
train --evolve`` take ``--gate``, ``--alpha``, ``--min-tasks`` and ``--gate-tasks``, print the plan
(and the point rule's warning) before any rollout, and the evolution log shows the rule that
decided, the test's level (alpha split over the two rates and the rounds) and the round's tasks.
``ha evolve plan`` prints the plan alone."""

from __future__ import annotations

import json

import pytest

from ha_cli.main import main

TASKS = ["mini__ini_interpolation", "mini__invoice_rounding"]
GATE = ["--gate", "point", "--alpha", "0.3", "--min-tasks", "1", "--gate-tasks", "1"]


def _log(out):
    recs = [json.loads(line) for line in (out / "evolution.jsonl").read_text().splitlines()]
    return [r for r in recs if r.get("kind") == "proposal"], [r for r in recs if r.get("kind") == "round"]


def _check(out, err, rounds):
    props, rnds = _log(out)
    compared = [p for p in props if p.get("decided_by")]
    assert compared and all(p["decided_by"] == "point" for p in compared)
    assert all(p["paired"]["level"] == pytest.approx(1 - 0.3 / (2 * rounds)) and p["paired"]["min_tasks"] == 1
               for p in compared)
    assert rnds and all(len(r["tasks"]) == 1 and set(r["tasks"]) <= set(TASKS) for r in rnds)
    assert "gate plan: point rule; 1 tasks x 2 rollouts a side" in err and "warning: the point rule" in err


def test_ha_evolve_run_takes_the_gate_flags(tmp_path, capsys):
    out = tmp_path / "evo"
    assert main(["evolve", "run", "--suite", "mini", "--instances", *TASKS, "--model", "null", "--proposer", "rule",
                 "--rounds", "2", "--group-size", "2", *GATE, "--out", str(out)]) == 0
    _check(out, capsys.readouterr().err, rounds=2)
    assert main(["evolve", "run", "--suite", "mini", "--model", "null", "--alpha", "0.9",
                 "--out", str(tmp_path / "bad")]) == 2
    assert "alpha (false acceptance per epoch) must be in (0, 0.5]" in capsys.readouterr().err


def test_ha_train_evolve_takes_the_gate_flags(tmp_path, capsys):
    out = tmp_path / "train"
    assert main(["train", "--suite", "mini", "--instances", *TASKS, "--model", str(tmp_path / "m"), "--init-model",
                 "qwen", "--harness", "train-edit", "--updates", "1", "--tasks-per-update", "1", "--group-size", "2",
                 "--max-tokens", "16", "--context-tokens", "8192", "--evolve", "--evolve-every", "1",
                 "--evolve-rounds", "1", "--evolve-group-size", "2", *GATE, "--no-progress", "--out", str(out)]) == 0
    _check(out / "evolve", capsys.readouterr().err, rounds=1)


def test_ha_evolve_plan_prints_the_budget_and_the_smallest_effect(capsys):
    assert main(["evolve", "plan", "--gate-tasks", "46", "--group-size", "4", "--rounds", "5", "--epochs", "2"]) == 0
    out = capsys.readouterr().out
    assert "each rate's test at 0.005" in out and "over 2 epochs <= 0.1" in out and "17.8 points" in out
    assert main(["evolve", "plan", "--gate-tasks", "46", "--base-rate", "1.5"]) == 2
