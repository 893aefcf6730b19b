"""`examples/demo_summary.py`, the last step of `make demo`: it names the GRPO updates that trained
(samples, loss, gradient) and the evolution round's decision, and fails, saying why, when the demo
showed neither (every update without a sample, or a gate short of evidence)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "demo_summary.py"


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _update(u: int, samples: int, mixed: int, **kw) -> dict:
    return {"update": u, "batch_samples": samples, "mixed_groups": mixed, "pass_rate": 0.125 * mixed,
            "dropped": {"zero_advantage": 8 - samples}, **kw}


def _proposal(accepted: bool, reason: str) -> dict:
    return {"kind": "proposal", "round": 1, "candidate_name": "h0+abc", "diff": ["+ tool run_tests"],
            "current_rates": {"pass_rate": 0.0}, "candidate_rates": {"pass_rate": 1.0 if accepted else 0.0},
            "accepted": accepted, "decided_by": "paired", "decision_reason": reason}


def run(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(out)], capture_output=True, text=True, timeout=60)


def test_it_names_the_updates_that_trained_and_the_decision(tmp_path):
    _write(tmp_path / "train" / "metrics.jsonl", [_update(1, 0, 0), _update(2, 8, 2, loss=0.031, grad_norm=0.41)])
    _write(tmp_path / "evolve" / "evolution.jsonl",
           [_proposal(True, "pass rate rose (+1.000, p = 0.0312), none fell"), {"kind": "round", "round": 1}])
    proc = run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "GRPO: 1 of 2 updates changed the policy (update 2 trained on 8 samples from 2 mixed group(s), " \
           "loss 0.0310, gradient norm 0.410)" in proc.stdout
    assert "round 1 ACCEPTED h0+abc (+ tool run_tests): pass rate 0.00 -> 1.00, by the paired rule" in proc.stdout


def test_no_sample_and_no_evidence_fail_with_the_reason(tmp_path):
    _write(tmp_path / "train" / "metrics.jsonl", [_update(1, 0, 0), _update(2, 0, 0)])
    _write(tmp_path / "evolve" / "evolution.jsonl", [_proposal(False, "not enough evidence: 2 tasks, the gate needs 5")])
    proc = run(tmp_path)
    assert proc.returncode == 1
    assert "none of 2 updates had a sample" in proc.stdout and "{'zero_advantage': 8}" in proc.stdout
    assert "no round could decide (not enough evidence: 2 tasks, the gate needs 5)" in proc.stdout


def test_a_missing_step_is_named(tmp_path):
    proc = run(tmp_path)
    assert proc.returncode != 0 and "evolution.jsonl is missing" in proc.stderr
