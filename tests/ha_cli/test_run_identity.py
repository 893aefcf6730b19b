"""An output folder answers for one run only (`run-identity.json`): `ha eval` into a folder of another
model, temperature or command is refused naming each difference, `--new-out` writes beside it, the
same run resumes with nothing run again, and `--retry-masked` runs exactly the masked episodes again
(masked for real: a model server whose answers for one task fail, then come back)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.llm.policies import OraclePolicy
from ha_cli.main import main
from tests.conftest import require_bwrap, task_row

HA = Path(sys.executable).with_name("ha")
ROOT = Path(__file__).resolve().parents[2]


def _source(task, path: Path, *extra_rows: dict) -> list[str]:
    path.write_text("".join(json.dumps(r) + "\n" for r in [task_row(task), *extra_rows]))
    return ["--jsonl", str(path), "--no-progress"]


def _lines(out: Path) -> list[str]:
    return (out / "trajectories.jsonl").read_text().splitlines()


def test_another_run_in_the_folder_is_refused_naming_each_difference(tiny_task, tmp_path, capsys):
    require_bwrap()
    src, out = _source(tiny_task, tmp_path / "t.jsonl"), tmp_path / "o"
    assert main(["eval", *src, "--model", "null", "--temperature", "0.2", "--out", str(out)]) == 0
    before = _lines(out)
    proc = subprocess.run([str(HA), "eval", *src, "--model", "oracle", "--temperature", "0.2", "--out", str(out)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "model: 'null' (in the folder) vs 'oracle' (this command)" in proc.stderr, proc.stderr
    assert "model_name" not in proc.stderr  # follows from the spec: not named twice
    capsys.readouterr()
    assert main(["eval", *src, "--model", "null", "--temperature", "0.7", "--seed", "4", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "temperature: 0.2 (in the folder) vs 0.7 (this command)" in err and "model:" not in err
    assert "seed: None (in the folder) vs 4 (this command)" in err
    assert _lines(out) == before
    assert json.loads((out / "summary.json").read_text())["model_options"]["temperature"] == 0.2
    # a folder from before identities: compared on what it shows, adopted when that agrees
    (out / "run-identity.json").unlink()
    assert main(["eval", *src, "--model", "oracle", "--temperature", "0.2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "before run identities were recorded" in err and "model_name: 'null' (in the folder) vs 'oracle'" in err
    assert main(["eval", *src, "--model", "null", "--out", str(out)]) == 2
    assert "temperature: 0.2 (in the folder) vs None (this command)" in capsys.readouterr().err
    assert main(["eval", *src, "--model", "null", "--temperature", "0.2", "--out", str(out)]) == 0
    assert json.loads((out / "run-identity.json").read_text())["model"] == "null" and _lines(out) == before
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "harness.yaml").write_text("the user's own")
    assert main(["eval", *src, "--model", "null", "--out", str(tmp_path / "mine")]) == 2
    assert "holds no run of ha but files a run would write over (harness.yaml)" in capsys.readouterr().err
    assert (tmp_path / "mine" / "harness.yaml").read_text() == "the user's own"


def test_the_same_run_resumes_more_runs_extend_it_and_new_out_writes_beside(tiny_task, tmp_path, capsys):
    require_bwrap()
    src, out = _source(tiny_task, tmp_path / "t.jsonl"), tmp_path / "o"
    null = ["eval", *src, "--model", "null", "--seed", "3", "--out", str(out)]
    assert main(null) == 0
    first = _lines(out)
    assert main(null) == 0 and _lines(out) == first  # nothing run again
    assert main([*null, "--runs", "2"]) == 0
    lines = _lines(out)
    assert lines[:1] == first and [json.loads(l)["run"] for l in lines] == [1, 2]
    assert json.loads((out / "run-identity.json").read_text())["runs"] == 2
    assert main(null) == 0 and _lines(out) == lines  # a subset of the runs: reported, nothing run
    capsys.readouterr()
    oracle = ["eval", *src, "--model", "oracle", "--seed", "3", "--new-out", "--out", str(out)]
    assert main(oracle) == 0
    captured = capsys.readouterr()
    assert f"{out} holds another run: writing to {tmp_path / 'o-2'}" in captured.err
    assert "| oracle | 100.0 | 100.0 |" in captured.out and str(tmp_path / "o-2") in captured.out
    assert json.loads((tmp_path / "o-2" / "run-identity.json").read_text())["model"] == "oracle"
    again = _lines(tmp_path / "o-2")
    assert main(oracle) == 0  # o-2 holds this very run: resumed there
    assert _lines(tmp_path / "o-2") == again and not (tmp_path / "o-3").exists() and _lines(out) == lines
    assert main([*oracle, "--retry-masked"]) == 2
    assert "--retry-masked continues the run in --out" in capsys.readouterr().err


def test_a_folder_of_ha_evolve_run_is_refused_and_left_as_it_was(tiny_task, tmp_path, capsys):
    require_bwrap()
    src, evo = _source(tiny_task, tmp_path / "t.jsonl"), tmp_path / "evo"
    assert main(["evolve", "run", *src[:2], "--model", "null", "--rounds", "1", "--group-size", "2",
                 "--workers", "2", "--out", str(evo)]) == 0
    files = {p: p.read_bytes() for p in evo.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["eval", *src, "--model", "null", "--harness", "h2", "--out", str(evo)]) == 2
    assert "command: 'ha evolve run' (in the folder) vs 'ha eval' (this command)" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in evo.rglob("*") if p.is_file()} == files
    assert main(["evolve", "run", *src[:2], "--model", "oracle", "--rounds", "1", "--group-size", "2",
                 "--resume", "--out", str(evo)]) == 2
    assert "model: 'null' (in the folder) vs 'oracle' (this command)" in capsys.readouterr().err


def test_retry_masked_runs_exactly_the_masked_episodes_again(tiny_task, tmp_path, capsys):
    """Task B's model calls fail (the server's script raises: HTTP 400, the episode ends model_error,
    masked) while A's succeed; the server is then mended and --retry-masked runs B alone again."""
    require_bwrap()
    marker = " (second copy)"
    b_row = task_row(tiny_task, instance_id="tiny__clamp_b", problem_statement=tiny_task.problem_statement + marker)
    src, out = _source(tiny_task, tmp_path / "t.jsonl", b_row), tmp_path / "o"
    plan = [f"```bash\n{c.arguments['command']}\n```" for c in OraclePolicy().plan(tiny_task, {}) if c.name == "bash"]
    plan.append("```bash\nsubmit\n```")
    down = {"b": True}
    seen: list[tuple[str, int | None]] = []

    def respond(body):
        text = " ".join(str(m.get("content")) for m in body["messages"])
        if tiny_task.problem_statement not in text:
            return "ok"  # not an episode's request (a connectivity check): answered
        task = "b" if marker in text else "a"
        seen.append((task, body.get("seed")))
        if task == "b" and down["b"]:
            raise RuntimeError("the model behind this server is down")
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return {"content": plan[min(step, len(plan) - 1)]}

    with FakeOpenAIServer(respond) as srv:
        cmd = ["eval", *src, "--model", f"openai:m@{srv.url}", "--harness", "h0", "--seed", "7", "--out", str(out)]
        assert main(cmd) == 0
        first = {json.loads(l)["instance_id"]: l for l in _lines(out)}
        masked = json.loads(first["tiny__clamp_b"])
        assert masked["termination"] == "model_error" and masked["mask_sample"]
        assert json.loads(first["tiny__clamp"])["resolved"]
        b_seeds = {s for t, s in seen if t == "b"}
        assert main(cmd) == 0 and "1 episodes masked" in capsys.readouterr().out  # a plain resume retries nothing
        down["b"] = False
        seen.clear()
        assert main([*cmd, "--retry-masked"]) == 0
    printed = capsys.readouterr().out
    assert {t for t, _ in seen} == {"b"} and {s for _, s in seen} & b_seeds  # B alone, with the seed it had
    assert "retry-masked: 1 masked episode(s) run again" in printed and "masked 1 -> 0; pass@1 50.0 -> 100.0" in printed
    now = {json.loads(l)["instance_id"]: l for l in _lines(out)}
    assert now["tiny__clamp"] == first["tiny__clamp"] and json.loads(now["tiny__clamp_b"])["resolved"]
    (old,) = [json.loads(l) for l in (out / "masked-history.jsonl").read_text().splitlines()]
    assert old["termination"] == "model_error" and old["instance_id"] == "tiny__clamp_b" and old["retried_at"]
    assert json.loads((out / "summary.json").read_text())["masked"] == 0


def test_grade_retry_masked_grades_again_only_what_failed_and_refuses_another_patch(tiny_task, tmp_path):
    """The failed grading is real: `ha` runs in a venv whose pytest no sandbox can import (an
    environment fault, status error); run again from the healthy interpreter, it is graded."""
    require_bwrap()
    from tests.ha_envs.broken_envs import borrowing_venv

    broken = borrowing_venv(tmp_path / "venv") / "bin" / "python"
    src = _source(tiny_task, tmp_path / "t.jsonl")[:2]
    preds, out = tmp_path / "preds.jsonl", tmp_path / "g"
    preds.write_text(json.dumps({"instance_id": "tiny__clamp", "model_name_or_path": "m",
                                 "model_patch": tiny_task.gold_patch}) + "\n")

    def ha(python, *args):
        proc = subprocess.run([str(python), str(HA), "grade", *src, "--predictions", str(preds), "--out", str(out),
                               *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
        return proc.returncode, proc.stdout, proc.stderr

    rc, printed, err = ha(broken)
    assert rc == 0 and "| 1 | 0 (0.0%) | 0 | 0 | 1 |" in printed, printed + err
    report = out / "logs" / "tiny__clamp" / "report.json"
    failed = json.loads(report.read_text())["tiny__clamp"]
    assert failed["status"] == "error"
    rc, printed, _ = ha(sys.executable)
    assert rc == 0 and "already graded" in printed and json.loads(report.read_text())["tiny__clamp"] == failed
    rc, printed, err = ha(sys.executable, "--retry-masked")
    assert rc == 0, err
    assert "retry-masked: 1 failed grading(s) run again" in printed and "masked 1 -> 0; pass@1 0.0 -> 100.0" in printed
    assert json.loads(report.read_text())["tiny__clamp"]["resolved"]
    (old,) = [json.loads(l) for l in (out / "masked-history.jsonl").read_text().splitlines()]
    assert old["status"] == "error" and old["error"] == failed["error"]
    preds.write_text(json.dumps({"instance_id": "tiny__clamp", "model_patch": ""}) + "\n")  # another patch
    rc, _, err = ha(sys.executable)
    assert rc == 2 and "items (instance -> task and patch fingerprint): {'tiny__clamp': '" in err, err


def test_validate_retry_masked_validates_again_only_the_faults(tiny_task, tmp_path):
    """A fault for real (the venv whose pytest no sandbox imports), then the healthy interpreter."""
    require_bwrap()
    from tests.ha_envs.broken_envs import borrowing_venv

    broken = borrowing_venv(tmp_path / "venv") / "bin" / "python"
    results = tmp_path / "v.jsonl"
    src = _source(tiny_task, tmp_path / "t.jsonl")[:2]

    def ha(python, *args):
        proc = subprocess.run([str(python), str(HA), "tasks", "validate", *src, "--results", str(results), *args],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
        return proc.returncode, proc.stderr

    rc, err = ha(broken)
    (row,) = [json.loads(l) for l in results.read_text().splitlines()]
    assert rc == 1 and row["fault"] == "runner_import" and not row["ok"], err
    rc, err = ha(sys.executable)
    assert rc == 1 and "1 of 1 already in" in err
    rc, err = ha(sys.executable, "--retry-masked")
    assert rc == 0, err
    assert "retry-masked: 1 infrastructure fault(s) run again" in err and "masked 1 -> 0; valid % 0.0 -> 100.0" in err
    (now,) = [json.loads(l) for l in results.read_text().splitlines()]
    assert now["ok"] and not now["fault"]
    (old,) = [json.loads(l) for l in (tmp_path / "v.masked-history.jsonl").read_text().splitlines()]
    assert old["fault"] == "runner_import" and old["retried_at"]


def test_a_training_folder_is_not_resumed_as_another_precision_or_adapter(tmp_path):
    """`ha train`'s identity names what the weights train as: the same folder with another `--lora-rank`
    or `--dtype` is refused with the difference named (a folder from before these fields is not
    compared on them)."""
    import argparse

    import pytest

    from ha_agents.runs.identity import RunIdentityError
    from ha_cli.train_cmd import _claim
    from ha_envs.harness import load_spec
    from ha_envs.loaders import load_suite

    tasks, spec, out = load_suite("mini")[:1], load_spec("train-edit"), tmp_path / "t"
    args = argparse.Namespace(backend="local", model="m", seed=0, temperature=1.0, dtype=None, lora_rank=0)
    _claim(args, tasks, spec, out)
    (out / "metrics.jsonl").write_text('{"update": 1}\n')  # the run has results now
    _claim(args, tasks, spec, out)  # the same run: resumes
    for change, field in (({"lora_rank": 8}, "lora_rank"), ({"dtype": "bf16"}, "dtype")):
        with pytest.raises(RunIdentityError, match=field):
            _claim(argparse.Namespace(**{**vars(args), **change}), tasks, spec, out)
    ident = json.loads((out / "run-identity.json").read_text())
    del ident["lora_rank"], ident["dtype"]  # a folder written before the fields existed
    (out / "run-identity.json").write_text(json.dumps(ident))
    _claim(argparse.Namespace(**{**vars(args), "lora_rank": 8}), tasks, spec, out)


def test_a_model_saved_over_its_directory_is_another_model(tiny_task, tmp_path, capsys):
    """``hf:DIR``'s identity is its files' contents: weights rewritten in place with the very same
    sizes (a fine-tune saved over its checkpoint) make the folder another run's, refused naming the
    model's identity; the same weights resume."""
    from ha_agents.train.models import init_model

    require_bwrap()
    model = init_model(tmp_path / "m", hidden=32, layers=1, heads=2, vocab_size=600)
    src, out = _source(tiny_task, tmp_path / "t.jsonl"), tmp_path / "o"
    cmd = ["eval", *src, "--model", f"hf:{model}", "--max-turns", "1", "--max-tokens", "8", "--out", str(out)]
    assert main(cmd) == 0
    before = _lines(out)
    capsys.readouterr()
    assert main(cmd) == 0 and _lines(out) == before  # the same weights: nothing runs again
    weights = next(p for p in model.iterdir() if p.suffix in (".safetensors", ".bin"))
    size, data = weights.stat().st_size, bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # one byte of the last tensor: a different model, the same size
    weights.write_bytes(bytes(data))
    assert weights.stat().st_size == size
    capsys.readouterr()
    assert main(cmd) == 2
    err = capsys.readouterr().err
    assert "model_identity" in err and _lines(out) == before, err
