"""Gateway overhead per model call: added latency and CPU per request at 1, 64 and 512 concurrent
sessions, against calling the model server directly.

Three processes: the model server (the local fake OpenAI server, answering at once, with a
tokenizer so it returns token ids and logprobs), the gateway (``ha gateway serve``, a real CLI
process, chat mode), and this one, whose threads play the harnesses: each thread sends growing
conversations (system + task ~2 KB, then per turn the reply and a ~600-byte tool output, as a
harness does; a new conversation, and through the gateway a new session, every 16 calls) until it
made ``--requests / sessions`` calls (at least 2); the session's opening is not timed. The same load goes to the server directly (one conversation per
thread) and through the gateway (one session per thread). The gateway process's CPU (utime + stime
from /proc) is divided by the requests it served.

    .venv/bin/python benchmarks/bench_gateway.py [--sessions 1 64 512] [--requests 1024]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = "Fix the bug in the TTL cache: entries never expire. " * 40
OUTPUT = "tests/test_cache.py::test_expiry FAILED\n" * 15
BASH = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {
    "command": {"type": "string"}}, "required": ["command"]}}}

SERVER = """
import sys, json, time
from http.server import ThreadingHTTPServer
ThreadingHTTPServer.request_queue_size = 1024  # this process only: 512 clients connect at once
from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.chat.toy_tokenizer import toy_tokenizer
tok = toy_tokenizer(["run the tests and read the output " * 50], vocab_size=400)
reply = {"content": "Let me run the tests.", "tool_calls": [{"id": "c", "function": {"name": "bash",
         "arguments": json.dumps({"command": "python -m pytest -q tests/test_cache.py"})}}]}
srv = FakeOpenAIServer(lambda body: reply, tokenizer=tok)
srv.__enter__()
print(srv.url, flush=True)
time.sleep(10**6)
"""


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"},
                                 method="POST")
    for attempt in range(5):
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return json.loads(resp.read())
        except (ConnectionError, urllib.error.URLError):
            if attempt == 4:
                raise
            time.sleep(0.05)
    raise AssertionError


def episode(base_url: str, turns: int, latencies: list[float], lock: threading.Lock) -> None:
    messages = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": TASK}]
    for _ in range(turns):
        t0 = time.perf_counter()
        out = post(base_url + "/chat/completions", {"model": "m", "messages": messages, "tools": [BASH]})
        dt = time.perf_counter() - t0
        with lock:
            latencies.append(dt)
        msg = out["choices"][0]["message"]
        messages += [{"role": "assistant", "content": msg["content"], "tool_calls": msg["tool_calls"]},
                     {"role": "tool", "tool_call_id": msg["tool_calls"][0]["id"], "content": OUTPUT}]


EPISODE_TURNS = 16
"""Calls per episode (a conversation, and through the gateway one session); a thread runs episodes
one after the other until it made its calls."""


def load(base: str, threads: int, calls: int, gateway: bool) -> tuple[list[float], float]:
    latencies: list[float] = []
    lock = threading.Lock()

    def worker(_: int) -> None:
        left = calls
        while left > 0:
            turns = min(EPISODE_TURNS, left)
            url = post(base + "/sessions", {})["base_url"] if gateway else base
            episode(url, turns, latencies, lock)
            left -= turns

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(worker, range(threads)))
    return latencies, time.perf_counter() - t0


def pct(xs: list[float], q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000


def start(cmd: list[str], env: dict[str, str], ready: "Path | None" = None) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if ready is None:
        return proc, proc.stdout.readline().strip()
    for _ in range(600):
        if ready.is_file():
            return proc, ready.read_text().strip()
        time.sleep(0.05)
    raise RuntimeError("the gateway did not start")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, nargs="+", default=[1, 64, 512])
    ap.add_argument("--requests", type=int, default=1024, help="requests per level (turns = requests / sessions, >= 2)")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    tmp = Path(tempfile.mkdtemp())
    server, url = start([sys.executable, "-c", SERVER], env)
    gw, gw_url = start([sys.executable, "-m", "ha_cli.main", "gateway", "serve", "--model", f"openai:m@{url}",
                        "--port", "0", "--out", str(tmp / "out"), "--ready-file", str(tmp / "url")], env, tmp / "url")
    rows = []
    try:
        load(url, 4, 8, False)  # warm both paths (imports, first connections)
        load(gw_url, 4, 8, True)
        for n in args.sessions:
            turns = max(2, args.requests // n)
            direct, direct_wall = load(url, n, turns, False)
            c0 = cpu_s(gw.pid)
            via, via_wall = load(gw_url, n, turns, True)
            cpu = (cpu_s(gw.pid) - c0) / len(via)
            rows.append((n, turns, statistics.median(direct) * 1000, pct(direct, 0.95), statistics.median(via) * 1000,
                         pct(via, 0.95), cpu * 1000, len(via) / via_wall, len(direct) / direct_wall))
            print(rows[-1], file=sys.stderr, flush=True)
    finally:
        gw.terminate()
        server.terminate()
    print("| sessions | calls per thread | direct p50 ms | direct p95 ms | via gateway p50 ms | via p95 ms | added p50 ms "
          "| gateway CPU ms / request (incl. opening) | throughput direct / via (req/s) |\n|---|---|---|---|---|---|---|---|---|")
    for n, turns, d50, d95, v50, v95, cpu, via_rps, direct_rps in rows:
        print(f"| {n} | {turns} | {d50:.2f} | {d95:.2f} | {v50:.2f} | {v95:.2f} | {v50 - d50:+.2f} | {cpu:.2f} "
              f"| {direct_rps:.0f} / {via_rps:.0f} |")


if __name__ == "__main__":
    main()
