"""A broken model is an error, not a run of masked episodes: `ha eval` checks its model before any
sandbox starts (a closed port, a server that is not OpenAI-compatible, an unknown model name, a
refused key, a replay file missing tasks), and a model that dies mid-run stops the run after
--max-model-errors episodes in a row, keeping what finished, so the same command resumes it."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_cli import model_check
from ha_cli.main import main
from tests.conftest import task_row

SUBMIT = {"tool_calls": [{"id": "s", "function": {"name": "submit", "arguments": "{}"}}]}
MINI = ["--suite", "mini", "--instances", "mini__js_template", "--harness", "h0", "--no-progress"]


def _eval(tmp_path: Path, model: str, *extra: str) -> int:
    return main(["eval", *MINI, "--model", model, "--out", str(tmp_path / "o"), *extra])


def _no_run(tmp_path: Path) -> None:
    """Nothing was started: the output folder holds no episode."""
    log = tmp_path / "o" / "trajectories.jsonl"
    assert not log.exists() or not log.read_text().strip()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class _WebPage(BaseHTTPRequestHandler):
    """A plain web server: every GET or POST gets the same HTML page."""

    def log_message(self, *args):
        pass

    def _page(self):
        raw = b"<html><body>It works!</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = _page


def test_no_server_at_the_url_is_named(tmp_path, capsys):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    assert _eval(tmp_path, f"openai:m@{url}") == 2
    err = capsys.readouterr().err
    assert f"--model openai:m@{url}: no server answers at {url}/models" in err and "refused" in err
    _no_run(tmp_path)


def test_a_server_that_is_not_openai_compatible_is_named(tmp_path, capsys):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _WebPage)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        assert _eval(tmp_path, f"openai:m@{url}") == 2
    finally:
        httpd.shutdown()
        httpd.server_close()
    err = capsys.readouterr().err
    assert "is not an OpenAI chat completion" in err and "It works!" in err
    _no_run(tmp_path)


def test_an_unknown_model_name_lists_what_the_server_serves(tmp_path, capsys):
    with FakeOpenAIServer(lambda body: SUBMIT, models=["Qwen/Qwen3-8B", "other"]) as srv:
        assert _eval(tmp_path, f"openai:qwen3@{srv.url}") == 2
        assert srv.requests == []  # the model list answered it: no completion was asked for
    err = capsys.readouterr().err
    assert "does not know model 'qwen3'; it serves Qwen/Qwen3-8B, other" in err
    _no_run(tmp_path)


def test_a_url_that_is_not_http_is_refused_before_any_request(tmp_path, capsys):
    assert _eval(tmp_path, "openai:m@not-a-url") == 2
    assert "must start with http://" in capsys.readouterr().err


def test_a_refused_key_names_its_variable_and_an_unset_one_is_warned_about(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-wrong")
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    with FakeOpenAIServer(lambda body: SUBMIT, api_key="sk-right") as srv:
        assert _eval(tmp_path, f"openai:m@{srv.url}", "--api-key-env", "MY_KEY") == 2
        assert "HTTP 401 from " in (err := capsys.readouterr().err) and "the key in $MY_KEY was refused" in err
        assert _eval(tmp_path, f"openai:m@{srv.url}", "--api-key-env", "NO_SUCH_KEY") == 2
        err = capsys.readouterr().err
        assert "the server wants an API key and $NO_SUCH_KEY is unset" in err
        assert "warning" not in err  # a local server often needs no key: no warning before the answer
    _no_run(tmp_path)
    # a remote URL with the variable unset: a warning before anything is sent (--no-preflight: nothing is)
    assert model_check.positive_int("3") == 3
    from ha_agents.llm.options import ModelOptions
    from ha_agents.llm.preflight import missing_key_warning

    note = missing_key_warning("openai:m@https://api.example.com/v1", ModelOptions(api_key_env="NO_SUCH_KEY"))
    assert note and "$NO_SUCH_KEY is unset" in note
    assert missing_key_warning("openai:m@http://localhost:8000/v1", ModelOptions(api_key_env="NO_SUCH_KEY")) is None


def test_the_unset_key_warning_reaches_the_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    url = f"http://example.invalid:{_closed_port()}/v1"
    assert _eval(tmp_path, f"openai:m@{url}", "--api-key-env", "NO_SUCH_KEY") == 2
    err = capsys.readouterr().err
    assert f"warning: --model openai:m@{url}: $NO_SUCH_KEY is unset" in err and "no server answers" in err


def test_a_working_server_passes_with_one_preflight_request_sending_the_runs_options(tiny_task, tmp_path):
    kwargs = tmp_path / "kw.json"
    kwargs.write_text('{"top_k": 20}')
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps(task_row(tiny_task)) + "\n")
    command = ["eval", "--jsonl", str(tasks), "--harness", "h0", "--no-progress", "--temperature", "0.5",
               "--model-kwargs", str(kwargs)]
    with FakeOpenAIServer(lambda body: SUBMIT, models=["m"]) as srv:
        assert main([*command, "--model", f"openai:m@{srv.url}", "--out", str(tmp_path / "o")]) == 0
        first, *episode = srv.requests
    assert first["messages"] == [{"role": "user", "content": "Reply with the word OK."}]
    assert (first["temperature"], first["top_k"], first["max_tokens"]) == (0.5, 20, 8) and len(episode) == 1
    with FakeOpenAIServer(lambda body: SUBMIT, models=["m"]) as srv:
        assert main([*command, "--model", f"openai:m@{srv.url}", "--out", str(tmp_path / "p"), "--no-preflight"]) == 0
        assert len(srv.requests) == 1  # the episode's alone


def test_a_replay_file_missing_tasks_is_named_before_the_run(tmp_path, capsys):
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"instance_id": "mini__js_template", "run": 1, "messages": [
        {"role": "assistant", "content": "", "tool_calls": SUBMIT["tool_calls"]}]}) + "\n")
    assert main(["eval", "--suite", "mini", "--instances", "mini__js_template", "mini__ttl_cache", "mini__go_ledger",
                 "--model", f"replay:{replay}", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert (f"replay:{replay} records no trajectory of 2 of the 3 selected task(s): mini__ttl_cache, mini__go_ledger"
            in err) and "Traceback" not in err
    _no_run(tmp_path)
    assert main(["eval", *MINI, "--model", f"replay:{tmp_path / 'none.jsonl'}", "--out", str(tmp_path / "o")]) == 2
    assert "none.jsonl: no such file" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--runs", "--workers", "--max-turns"])
@pytest.mark.parametrize("value", ["0", "-1"])
def test_eval_refuses_non_positive_counts(tmp_path, capsys, flag, value):
    with pytest.raises(SystemExit) as exc:
        main(["eval", *MINI, "--model", "null", flag, value, "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    assert f"argument {flag}: {value}: must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_model_dying_mid_run_stops_after_n_errors_in_a_row_and_the_same_command_resumes(tiny_task, tmp_path,
                                                                                          capsys):
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps(task_row(tiny_task)) + "\n")
    calls = []

    def dies_after_the_first_episode(body):
        calls.append(body)
        if len(calls) == 2:  # the preflight, then run 1's one request: from here on the server fails
            srv.inject(*["500"] * 100)
        return SUBMIT

    command = ["eval", "--jsonl", str(tasks), "--harness", "h0", "--runs", "4", "--no-progress", "--seed", "1",
               "--max-model-errors", "2", "--max-attempts", "2", "--backoff-max", "0.01", "--out", str(tmp_path / "o")]
    with FakeOpenAIServer(dies_after_the_first_episode) as srv:
        assert main([*command, "--model", f"openai:m@{srv.url}"]) == 3
        assert len(srv.requests) == 2 + 2 * 2  # the preflight, run 1, then two runs of two attempts; run 4 never
        err = capsys.readouterr().err
        assert "stopped: the model failed 2 episodes in a row" in err and "HTTP 500" in err
        assert "1 episode(s) finished and are kept" in err and "2 that ended in a model error and 1 never started" in err
        assert "run the same command to resume" in err
        kept = [json.loads(line) for line in (tmp_path / "o" / "trajectories.jsonl").read_text().splitlines()]
        assert [(r["run"], r["termination"]) for r in kept] == [(1, "submitted")]
        srv.faults.clear()  # the server is back (at the same URL: the run's identity): the same command runs 2 to 4
        before = len(srv.requests)
        assert main([*command, "--model", f"openai:m@{srv.url}"]) == 0
        assert len(srv.requests) - before == 1 + 3
    kept = [json.loads(line) for line in (tmp_path / "o" / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(r["run"] for r in kept) == [1, 2, 3, 4] and not any(r["mask_sample"] for r in kept)


def test_without_a_limit_model_errors_are_masked_records_as_before(tiny_task, tmp_path, capsys):
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps(task_row(tiny_task)) + "\n")
    with FakeOpenAIServer(lambda body: SUBMIT) as srv:
        srv.inject(*["500"] * 4)  # runs 1 and 2 fail (two attempts each), run 3 gets an answer
        assert main(["eval", "--jsonl", str(tasks), "--harness", "h0", "--runs", "3", "--no-progress",
                     "--max-model-errors", "0", "--max-attempts", "2", "--backoff-max", "0.01", "--no-preflight",
                     "--workers", "1", "--out", str(tmp_path / "o"), "--model", f"openai:m@{srv.url}"]) == 0
    recs = [json.loads(line) for line in (tmp_path / "o" / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(r["termination"] for r in recs) == ["model_error", "model_error", "submitted"]
    assert "2 episodes masked" in capsys.readouterr().out


def test_the_cli_default_matches_the_librarys():
    from ha_agents.runs.model_faults import MAX_MODEL_ERRORS

    assert model_check.MAX_MODEL_ERRORS == MAX_MODEL_ERRORS


def test_without_the_preflight_a_replay_file_missing_a_task_ends_that_episode_with_a_message(tiny_task, tmp_path,
                                                                                            capsys):
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps(task_row(tiny_task)) + "\n")
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"instance_id": "other", "run": 1, "messages": []}) + "\n")
    assert main(["eval", "--jsonl", str(tasks), "--harness", "h0", "--no-progress", "--no-preflight",
                 "--model", f"replay:{replay}", "--out", str(tmp_path / "o")]) == 0
    (rec,) = [json.loads(line) for line in (tmp_path / "o" / "trajectories.jsonl").read_text().splitlines()]
    assert rec["termination"] == "model_error" and rec["mask_sample"]
    assert rec["error"] == f"{replay}: no trajectory of tiny__clamp (run 1) to replay"
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("command", [
    ["evolve", "run", *MINI[:-1], "--model", "{model}", "--out", "{out}"],
    ["evolve", "run", *MINI[:-1], "--model", "oracle", "--proposer", "llm", "--teacher", "{model}", "--out", "{out}"],
    ["engineer", "score", "--suite", "mini", "--batches", "{batches}", "--patch", "{batches}", "--model", "{model}",
     "--out", "{out}"],
    ["engineer", "sft-data", "--suite", "mini", "--batches", "{batches}", "--teacher", "{model}", "--model", "oracle",
     "--out", "{out}"],
    ["train", *MINI, "--model", "{out}/m", "--skill-teacher", "{model}", "--out", "{out}"],
], ids=["evolve-model", "evolve-teacher", "engineer-score", "engineer-sft-data", "train-skill-teacher"])
def test_every_model_taking_command_checks_its_models_first(command, tmp_path, capsys):
    batches = tmp_path / "b.json"
    batches.write_text(json.dumps({"run": str(tmp_path), "batches": [["mini__js_template"]]}))
    model = f"openai:m@http://127.0.0.1:{_closed_port()}/v1"
    flag = command[command.index("{model}") - 1]
    argv = [a.format(model=model, out=tmp_path / "o", batches=batches) for a in command]
    assert main(argv) == 2
    assert f"ha: error: {flag} {model}: no server answers at" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_streak_shorter_than_the_limit_is_written_masked_and_never_stops_the_run(tmp_path):
    from ha_agents.runs.model_faults import ModelErrorStreak

    err = {"termination": "model_error", "error": "HTTP 500"}
    ok = {"termination": "submitted"}
    streak = ModelErrorStreak(3, total=8, log_path=tmp_path / "t.jsonl")
    assert streak.take(err) == [] and streak.take(err) == []  # held back: they may be the start of a streak
    assert streak.take(ok) == [err, err, ok]  # a good answer after them: isolated failures, written masked
    assert streak.take(err) == [] and streak.flush() == [err] and not streak.stopped
    assert [streak.take(err) for _ in range(3)] == [[], [], []] and streak.stopped
    assert "4 episode(s) finished" in str(streak.error()) and "3 that ended in a model error and 1 never" in str(
        streak.error())
