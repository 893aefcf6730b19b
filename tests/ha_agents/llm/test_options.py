"""Model options reach the request and the record: `ha eval --temperature --top-p --max-tokens
--seed --model-kwargs --api-key-env`, a warning for repeated greedy runs, and Retry-After honoured."""

from __future__ import annotations

import json

import pytest

from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.llm.openai_http import OpenAIClient, OpenAIConfig, _retry_after
from ha_cli.main import main

SUBMIT = {"tool_calls": [{"id": "s", "function": {"name": "submit", "arguments": "{}"}}]}


def test_cli_model_options_reach_every_request_and_summary(tmp_path, capsys, monkeypatch):
    kwargs = tmp_path / "kw.yaml"
    kwargs.write_text("top_k: 20\nrepetition_penalty: 1.05\n")
    monkeypatch.setenv("MY_KEY", "sk-test-123")
    seen_auth = []
    with FakeOpenAIServer(lambda body: SUBMIT) as srv:
        import http.server

        orig = http.server.BaseHTTPRequestHandler.parse_request

        def spy(self):
            ok = orig(self)
            seen_auth.append(self.headers.get("Authorization"))
            return ok

        monkeypatch.setattr(http.server.BaseHTTPRequestHandler, "parse_request", spy)
        out = tmp_path / "run"
        rc = main(["eval", "--suite", "mini", "--instances", "mini__semver_ranges", "mini__ttl_cache",
                   "--model", f"openai:fake@{srv.url}", "--harness", "h0", "--runs", "2", "--temperature", "0.7",
                   "--top-p", "0.9", "--max-tokens", "321", "--seed", "4", "--model-kwargs", str(kwargs),
                   "--api-key-env", "MY_KEY", "--out", str(out)])
        preflight, *reqs = srv.requests  # the preflight asks once, with the run's sampling and fields
    assert rc == 0 and len(reqs) == 4
    assert (preflight["temperature"], preflight["top_p"], preflight["top_k"]) == (0.7, 0.9, 20)
    for r in reqs:
        assert (r["temperature"], r["top_p"], r["max_tokens"], r["top_k"], r["repetition_penalty"]) == (
            0.7, 0.9, 321, 20, 1.05)
    assert all(a == "Bearer sk-test-123" for a in seen_auth)
    assert len({r["seed"] for r in reqs}) == 4  # per task and run, reproducible from --seed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model_options"] == {"temperature": 0.7, "top_p": 0.9, "max_tokens": 321,
                                        "extra": {"top_k": 20, "repetition_penalty": 1.05}, "api_key_env": "MY_KEY"}
    assert summary["seed"] == 4 and "sk-test" not in (out / "summary.json").read_text()
    assert "near copies" not in capsys.readouterr().err
    # the same seed gives the same per-request seeds
    with FakeOpenAIServer(lambda body: SUBMIT) as srv2:
        main(["eval", "--suite", "mini", "--instances", "mini__semver_ranges", "mini__ttl_cache", "--model",
              f"openai:fake@{srv2.url}", "--harness", "h0", "--runs", "2", "--temperature", "0.7", "--seed", "4",
              "--out", str(tmp_path / "again")])
        assert sorted(r["seed"] for r in srv2.requests[1:]) == sorted(r["seed"] for r in reqs)


def test_repeated_greedy_runs_warn(tmp_path, capsys):
    with FakeOpenAIServer(lambda body: SUBMIT) as srv:
        assert main(["eval", "--suite", "mini", "--instances", "mini__semver_ranges", "--model",
                     f"openai:fake@{srv.url}", "--harness", "h0", "--runs", "3", "--out", str(tmp_path / "g")]) == 0
    assert "the runs will be near copies" in capsys.readouterr().err


def test_bad_model_kwargs_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "kw.json"
    bad.write_text("{oops")
    assert main(["eval", "--suite", "mini", "--instances", "mini__semver_ranges", "--model", "openai:x@http://127.0.0.1:9/v1",
                 "--model-kwargs", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_retry_after_is_honoured():
    with FakeOpenAIServer(lambda body: "hello") as srv:
        client = OpenAIClient(OpenAIConfig(model="fake", base_url=srv.url, backoff_max_s=0.01))
        waits = []
        client.sleep = waits.append
        srv.inject("429:7", "500")
        out = client.complete([{"role": "user", "content": "hi"}], [])
    assert out.text == "hello" and out.attempts == 3
    assert waits[0] >= 7.0 and waits[1] < 1.0  # Retry-After on the 429; plain backoff on the 500


@pytest.mark.parametrize("value,expect", [("3", 3.0), ("0", 0.0), ("junk", None), (None, None)])
def test_retry_after_values(value, expect):
    assert _retry_after(value) == expect
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: no wait
