"""Bad input gets a clear, specific error and a non-zero exit: a patch that does not apply says why
(git apply's own words) in `ha grade`; counts below 1 are argparse errors on every command that
takes them; `ha engineer batches` that finds no batch says why instead of writing an empty file."""

from __future__ import annotations

import json

import pytest

from ha_cli.main import build_parser, main
from ha_evolve.harness_r1.harness_edit import partition
from ha_envs.loaders import load_suite
from tests.conftest import task_row


def test_grade_gives_the_reason_a_garbage_or_binary_patch_does_not_apply(tiny_task, tmp_path, capsys):
    tasks = tmp_path / "t.jsonl"
    other = dict(task_row(tiny_task), instance_id="tiny__binary")
    tasks.write_text(json.dumps(task_row(tiny_task)) + "\n" + json.dumps(other) + "\n")
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"instance_id": "tiny__clamp", "model_name_or_path": "x",
                                 "model_patch": "this is not a patch\n"}) + "\n"
                     + json.dumps({"instance_id": "tiny__binary", "model_name_or_path": "x",
                                   "model_patch": "diff --git a/calc.py b/calc.py\n\x00\x01\xff\x7f garbage\n"}) + "\n")
    assert main(["grade", "--jsonl", str(tasks), "--predictions", str(preds), "--out", str(tmp_path / "g")]) == 0
    err = capsys.readouterr().err
    for iid in ("tiny__clamp", "tiny__binary"):
        body = json.loads((tmp_path / "g" / "logs" / iid / "report.json").read_text())[iid]
        assert body["status"] == "patch_failed" and body["error"].strip(), body
        assert body["error"] in (tmp_path / "g" / "logs" / iid / "test_output.txt").read_text()
        assert f"{iid}: patch_failed: " in err
    assert "No valid patches in input" in err  # git apply's own message for text that holds no patch


COUNTS = [
    ("eval", "--runs"), ("eval", "--workers"), ("eval", "--max-turns"), ("grade", "--workers"),
    ("evolve run", "--workers"), ("evolve run", "--rounds"), ("evolve run", "--group-size"),
    ("evolve run", "--candidates"), ("train", "--workers"), ("train", "--group-size"),
    ("train", "--tasks-per-update"), ("engineer batches", "--n"), ("engineer score", "--runs"),
    ("engineer score", "--workers"), ("engineer base", "--runs"), ("engineer base", "--workers"),
    ("engineer sft-data", "--samples"), ("engineer train", "--k"), ("engineer train", "--batches-per-update"),
    ("engineer eval", "--samples"), ("tasks validate", "--workers"),
]


@pytest.mark.parametrize("command,flag", COUNTS)
def test_counts_below_one_are_refused_by_every_command(command, flag, capsys):
    for value in ("0", "-1"):
        with pytest.raises(SystemExit) as exc:
            build_parser().parse_args([*command.split(), flag, value])
        assert exc.value.code == 2
        assert f"argument {flag}: {value}: must be at least 1" in capsys.readouterr().err


def test_updates_may_be_zero_but_not_negative(capsys):
    assert build_parser().parse_args(["train", "--model", "m", "--updates", "0"]).updates == 0
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--model", "m", "--updates", "-1"])
    assert "argument --updates: -1: must be 0 or more" in capsys.readouterr().err


def test_engineer_batches_that_finds_no_batch_says_why_and_writes_nothing(tmp_path, capsys):
    ids = [t.instance_id for t in load_suite("mini")]
    run = tmp_path / "target"
    run.mkdir()
    # a target that failed every task once, unmasked (the fields `ha eval` writes that batches read)
    run.joinpath("trajectories.jsonl").write_text("".join(
        json.dumps({"instance_id": i, "run": 1, "resolved": False, "reward": 0.0, "mask_sample": False,
                    "termination": "submitted"}) + "\n" for i in ids))
    rl = partition(ids)["rl"]
    out = tmp_path / "b.json"
    assert main(["engineer", "batches", "--suite", "mini", "--run", str(run), "--n", str(len(rl) + 1),
                 "--partition", "rl", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (f"no batch of {len(rl) + 1} failed tasks: {run} holds {len(rl)} failed, unmasked task(s) of the "
            f"{len(rl)} tasks of partition rl") in err and "pass a smaller --n" in err
    assert not out.exists()
    assert main(["engineer", "batches", "--suite", "mini", "--run", str(run), "--n", "2", "--partition", "rl",
                 "--out", str(out)]) == 0  # the documented example (docs/cli.md)
    assert len(json.loads(out.read_text())["batches"]) == len(rl) // 2
