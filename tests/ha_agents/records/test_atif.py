"""ATIF out and in (issue 42 item 3): `ha export --format atif` writes one ATIF trajectory per episode
record of real runs (chat mode with hook firings, token mode against an OpenAI-compatible server, an
episode with a skill), Harbor's own pydantic models accept every file, and reading a file back
(`read_atif`, `ha import --format atif`) gives the same record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ha_agents.episode import run_episode
from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.records.atif import AtifError, from_atif, read_atif, to_atif
from ha_agents.records.episode_record import read_episodes
from ha_envs.actions import ToolCall
from ha_envs.loaders import load_suite

from tests.conftest import IN_CI
from tests.ha_agents.conftest import h2_plan_responder

ROOT = Path(__file__).resolve().parents[3]
SKILL = "Run the visible tests before you submit."


def ha(*args, cwd=None):
    """`ha` from this checkout, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "ha_cli.main", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture(scope="module")
def harbor_python() -> str:
    """The Python 3.12 venv with `harbor` that .ci/run makes (``HA_HARBOR_PYTHON`` to name another)."""
    exe = os.environ.get("HA_HARBOR_PYTHON") or str(ROOT / ".venv-harbor" / "bin" / "python")
    ok = Path(exe).exists() and subprocess.run([exe, "-c", "import harbor"], capture_output=True).returncode == 0
    if not ok:
        if IN_CI:
            pytest.fail(f"no Python with harbor at {exe} but CI is set: .ci/run must create .venv-harbor")
        pytest.skip(f"no Python with harbor at {exe} (HA_HARBOR_PYTHON)")
    return exe


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tokenizer):
    """Three real runs: h2 chat mode with the null model (its submit gate fires), h2 token mode against
    a fake OpenAI server (ids, logprobs, an appended stop token, review hook), an oracle episode with a skill."""
    root = tmp_path_factory.mktemp("atif-runs")
    done = ha("eval", "--suite", "mini", "--instances", "mini__ttl_cache", "--model", "null", "--harness", "h2",
              "--no-progress", "--out", root / "hooks")
    assert done.returncode == 0, done.stderr
    tokenizer.save(str(root / "tokenizer.json"))
    task, plan, respond = h2_plan_responder(tokenizer, [ToolCall("bash", {"command": "ls"}), ToolCall("run_tests", {})])

    with FakeOpenAIServer(respond, tokenizer=tokenizer) as srv:
        done = ha("eval", "--suite", "mini", "--instances", task.instance_id, "--model", f"openai:fake@{srv.url}",
                  "--harness", "h2", "--tokenizer", root / "tokenizer.json", "--template", "chatml", "--no-progress",
                  "--out", root / "tokens")
    assert done.returncode == 0, done.stderr
    rec = run_episode(next(t for t in load_suite("mini") if t.instance_id == "mini__semver_ranges"), "oracle", "h0",
                      skill=SKILL)
    (root / "skill").mkdir()
    (root / "skill" / "trajectories.jsonl").write_text(json.dumps(rec.to_json()) + "\n")
    return root



@pytest.fixture(scope="module")
def atif(runs, tmp_path_factory):
    """`ha export --format atif` of each run: {name: (its records, its files)}."""
    out = tmp_path_factory.mktemp("atif-out")
    result = {}
    for name in ("hooks", "tokens", "skill"):
        done = ha("export", "--format", "atif", runs / name, "--out", out / name)
        assert done.returncode == 0, done.stderr
        files = sorted((out / name).rglob("*.trajectory.json"))
        assert f"wrote {len(files)} ATIF trajectory file(s)" in done.stdout
        result[name] = (read_episodes(runs / name / "trajectories.jsonl"), files, out / name)
    return result


@pytest.mark.parametrize("name", ["hooks", "tokens", "skill"])
def test_export_then_read_gives_the_same_record(atif, name):
    records, files, out = atif[name]
    assert [f.relative_to(out).as_posix() for f in files] == \
        sorted(f"run{r.run}/{r.instance_id}.trajectory.json" for r in records)
    for rec, path in zip(sorted(records, key=lambda r: r.instance_id), files):
        back = read_atif(path)
        assert back == rec and back.to_json() == rec.to_json()
        traj = json.loads(path.read_text())
        assert traj["schema_version"] == "ATIF-v1.7" and traj["agent"]["model_name"] == rec.model
        ours = traj["extra"]["harnessadapt"]["record"]
        assert (ours["reward"], ours["resolved"], ours["termination"]) == (rec.reward, rec.resolved, rec.termination.value)
        assert "tokens" not in traj["extra"]["harnessadapt"]  # token ids travel per step, not as a flat copy


def test_what_the_model_did_not_write_is_marked(atif):
    for name, source in (("hooks", "hook:submit_gate"), ("tokens", "hook:review_on_submit"), ("skill", "skill")):
        (rec,), (path,), _ = atif[name]
        steps = json.loads(path.read_text())["steps"]
        injected = [s for s in steps if (s.get("extra") or {}).get("source") == source]
        assert injected and all(s["source"] == "user" and s["extra"]["trainable"] is False for s in injected)
        agent = [s for s in steps if s["source"] == "agent"]
        assert len(agent) == len(rec.model_calls) == rec.turns
        assert all(s["llm_call_count"] == 1 and s["extra"] == {"role": "assistant", "source": "policy", "trainable": True,
                                                                   **({"finish_reason": "stop"} if name == "tokens" else {})}
                   for s in agent)
        assert {s["source"] for s in steps if s["source"] != "agent"} <= {"system", "user"}


def test_token_mode_steps_carry_prompt_and_completion_ids_and_logprobs(atif, tokenizer):
    (rec,), (path,), _ = atif["tokens"]
    traj = json.loads(path.read_text())
    agent = [s for s in traj["steps"] if s["source"] == "agent"]
    eos = tokenizer.token_to_id("<|im_end|>")
    trained = []
    for s in agent:
        m = s["metrics"]
        p, gen = m["prompt_tokens"], m["completion_token_ids"]
        assert m["prompt_token_ids"] == rec.token_ids[:p] and rec.token_ids[p:p + len(gen)] == gen
        assert m["logprobs"] == [-0.5] * len(gen) == rec.logprobs[p:p + len(gen)]  # the server's, per token
        assert m["extra"]["appended_token_ids"] == [eos]  # the server stopped before it; the loop added it
        assert m["completion_tokens"] == len(gen) and "<tool_call>" in s["message"]
        trained += gen + [eos]
    assert trained == [t for t, k in zip(rec.token_ids, rec.loss_mask) if k == 1]
    fm = traj["final_metrics"]
    assert fm["total_completion_tokens"] == sum(len(s["metrics"]["completion_token_ids"]) for s in agent)
    assert fm["total_steps"] == len(traj["steps"])


def test_records_without_call_positions_keep_their_flat_tokens(runs, tmp_path):
    """A record written before calls carried ``prompt_tokens``: its arrays travel whole, round trip exact."""
    (rec,) = read_episodes(runs / "tokens" / "trajectories.jsonl")
    old = rec.with_fields(model_calls=[{k: v for k, v in c.items() if k != "prompt_tokens"} for c in rec.model_calls])
    traj = to_atif(old)
    assert traj["extra"]["harnessadapt"]["tokens"]["token_ids"] == rec.token_ids
    assert all("prompt_token_ids" not in s.get("metrics", {}) for s in traj["steps"])
    assert from_atif(json.loads(json.dumps(traj))) == old


def test_harbors_own_models_accept_every_exported_file(harbor_python, atif, tmp_path):
    exe = harbor_python  # asked first: without it the runs are not made only to be skipped
    files = [str(f) for name in ("hooks", "tokens", "skill") for f in atif[name][1]]
    check = ("import json, sys\n"
             "from harbor.models.trajectories import Trajectory\n"
             "from harbor.utils.trajectory_validator import TrajectoryValidator\n"
             "for f in sys.argv[1:]:\n"
             "    t = Trajectory.model_validate(json.load(open(f)))\n"
             "    v = TrajectoryValidator()\n"
             "    assert v.validate(f), v.get_errors()\n"
             "    print(f, t.schema_version, len(t.steps), sum(len(s.metrics.completion_token_ids or [])"
             " for s in t.steps if s.metrics))\n")
    done = subprocess.run([exe, "-c", check, *files], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(files) == 3 and all(" ATIF-v1.7 " in line for line in lines)
    assert int(next(line for line in lines if "invoice_rounding" in line).split()[-1]) > 0  # ids were parsed
    # and Harbor refuses what is not ATIF: the check can fail
    bad = tmp_path / "bad.json"
    traj = json.loads(Path(files[0]).read_text())
    traj["steps"][0]["metrics"] = {"completion_tokens": 1}  # metrics on a system step
    bad.write_text(json.dumps(traj))
    assert subprocess.run([exe, "-c", check, str(bad)], capture_output=True, text=True).returncode != 0


def test_import_writes_the_records_back_and_show_trajectory_reads_atif(atif, tmp_path):
    records, files, exported = atif["tokens"]
    out = tmp_path / "back" / "trajectories.jsonl"
    done = ha("import", "--format", "atif", exported, "--out", out)
    assert done.returncode == 0 and "wrote 1 episode record(s)" in done.stdout, done.stderr
    assert [json.loads(line) for line in out.read_text().splitlines()] == [json.loads(json.dumps(r.to_json())) for r in records]
    again = ha("import", "--format", "atif", files[0], "--out", out)
    assert again.returncode == 2 and "exists; pass --force" in again.stderr
    shown = ha("show-trajectory", files[0])
    assert shown.returncode == 0 and "hook      review_on_submit ×1" in shown.stdout and "tokens    3" in shown.stdout


def test_another_producers_atif_reads_as_messages(tmp_path):
    traj = {"schema_version": "ATIF-v1.6", "session_id": "s-1", "agent": {"name": "other", "version": "1", "model_name": "m"},
            "steps": [{"step_id": 1, "source": "user", "message": "fix it"},
                      {"step_id": 2, "source": "agent", "message": "", "tool_calls": [
                          {"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "ls"}}],
                       "observation": {"results": [{"source_call_id": "c1", "content": "a.py"}]},
                       "metrics": {"prompt_token_ids": [1, 2], "completion_token_ids": [3], "logprobs": [-0.1]}}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(traj))
    rec = read_atif(path)
    assert rec.instance_id == "s-1" and rec.model == "m"
    assert [(m["role"], m.get("source")) for m in rec.messages] == [("user", None), ("assistant", "policy"), ("tool", "tool")]
    assert rec.messages[1]["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"command": "ls"}'}
    assert (rec.token_ids, rec.loss_mask, rec.logprobs) == ([1, 2, 3], [0, 0, 1], [None, None, -0.1])


def test_bad_inputs_say_what_is_wrong(runs, tmp_path, capsys):
    from ha_cli.main import main

    def ha_err(*args):
        rc = main([str(a) for a in args])
        return rc, capsys.readouterr().err

    assert ha_err("export", "--format", "atif", tmp_path / "nowhere", "--out", tmp_path / "o") == \
        (2, f"ha: error: {tmp_path / 'nowhere'}: no such file\n")
    (tmp_path / "empty").mkdir()
    rc, err = ha_err("export", "--format", "atif", tmp_path / "empty", "--out", tmp_path / "o")
    assert rc == 2 and "no trajectories.jsonl here" in err
    two = tmp_path / "two.jsonl"
    two.write_text((runs / "hooks" / "trajectories.jsonl").read_text() + (runs / "skill" / "trajectories.jsonl").read_text())
    rc, err = ha_err("export", "--format", "atif", two, "--out", tmp_path / "one.json")
    assert rc == 2 and "names one file but there are 2 episodes; give a directory" in err
    rc, err = ha_err("export", "--format", "atif", two, "--out", tmp_path / "one.json", "--instance", "mini__nope")
    assert rc == 2 and "no episode record matches instance mini__nope (2 record(s) in the source)" in err
    assert ha_err("export", "--format", "atif", two, "--out", tmp_path / "one.json", "--instance", "mini__ttl_cache")[0] == 0
    assert read_atif(tmp_path / "one.json").instance_id == "mini__ttl_cache"
    (tmp_path / "x.json").write_text('{"messages": []}')
    with pytest.raises(AtifError, match="not an ATIF trajectory"):
        read_atif(tmp_path / "x.json")
    (rec,) = read_episodes(runs / "tokens" / "trajectories.jsonl")
    traj = to_atif(rec)
    agent = [s for s in traj["steps"] if s["source"] == "agent"]
    agent[1]["metrics"]["prompt_token_ids"][0] += 1  # a prompt that does not extend the stream so far
    with pytest.raises(AtifError, match="do not extend the earlier steps' tokens"):
        from_atif(traj)
