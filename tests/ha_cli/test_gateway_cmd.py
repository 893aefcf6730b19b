"""`ha gateway serve` as a process (a session opened, one call, ended: one record on disk) and the
bad inputs of `ha gateway eval` (refused with a message before anything runs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"},
                                 method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def test_serve_records_each_ended_session(tmp_path):
    ready, out = tmp_path / "url", tmp_path / "out"
    with FakeOpenAIServer(lambda body: "hello there") as srv:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen([sys.executable, "-m", "ha_cli.main", "gateway", "serve", "--model",
                                 f"openai:served@{srv.url}", "--port", "0", "--ready-file", str(ready), "--out", str(out),
                                 "--harness-name", "my-agent"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            for _ in range(300):
                if ready.is_file() or proc.poll() is not None:
                    break
                time.sleep(0.05)
            url = ready.read_text().strip()
            s = post(f"{url}/sessions", {"name": "run-7"})
            reply = post(f"{s['base_url']}/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
            assert reply["choices"][0]["message"]["content"] == "hello there"
            post(f"{url}/s/run-7/end", {})
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)
    rec = json.loads((out / "trajectories.jsonl").read_text())
    assert rec["instance_id"] == "run-7" and rec["harness"] == "my-agent" and rec["turns"] == 1
    assert rec["model"] == f"openai:served@{srv.url}" and "no token ids" in rec["token_error"]
    assert [m["role"] for m in rec["messages"]] == ["user", "assistant"]


@pytest.mark.parametrize("argv,needle", [
    (["--agent", "openhands"], "only mini-swe-agent"),
    (["--msa-venv", "/nonexistent/venv"], "no mini-swe-agent venv at /nonexistent/venv"),
    (["--model", "nosuch:thing"], "unknown model"),
])
def test_eval_bad_inputs_are_refused_with_a_message(argv, needle, tmp_path, capsys):
    args = ["gateway", "eval", "--suite", "mini", "--instances", "mini__ttl_cache", "--model", "oracle",
            "--out", str(tmp_path / "o")] + argv
    assert main(args) == 2
    assert needle in capsys.readouterr().err
    assert not (tmp_path / "o" / "trajectories.jsonl").exists()
