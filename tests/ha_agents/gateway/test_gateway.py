"""The gateway over real HTTP: a harness's calls forwarded to a local OpenAI-compatible server and
recorded token-faithfully (chat mode: the ids the server returned; token mode: the chat template's
prompt ids, generated ids, logprobs and mask), and its errors (400, 404, 502 + model_error)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from ha_agents.chat.template import CHATML
from ha_agents.episode import TokenMode
from ha_agents.gateway.run import make_gateway
from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.llm.options import ModelOptions

BASH = {"type": "function", "function": {"name": "bash", "description": "run", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}


def post(url: str, body, raw: bytes | None = None) -> tuple[int, dict]:
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def call(command: str, n: int = 0) -> dict:
    return {"content": f"step {n}", "tool_calls": [{"id": f"c{n}", "function": {
        "name": "bash", "arguments": json.dumps({"command": command})}}]}


def chat_respond(body):
    n = sum(m["role"] == "assistant" for m in body["messages"])
    return call(["ls", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"][min(n, 1)], n)


def conversation(reply: dict | None = None, output: str = "a.py") -> list[dict]:
    msgs = [{"role": "system", "content": "You run bash."}, {"role": "user", "content": "Fix the bug."}]
    if reply is not None:
        msgs += [dict(reply, role="assistant"), {"role": "tool", "tool_call_id": reply["tool_calls"][0]["id"],
                                                 "content": output}]
    return msgs


def test_chat_mode_records_the_ids_and_logprobs_the_server_returned(tokenizer):
    with FakeOpenAIServer(chat_respond, tokenizer=tokenizer) as srv, \
            make_gateway(f"openai:m@{srv.url}") as gw:
        code, s = post(f"{gw.url}/sessions", {"name": "ep1"})
        assert code == 201 and s["base_url"] == f"{gw.url}/s/ep1/v1"
        code, models = get(f"{s['base_url']}/models")
        assert code == 200 and models["data"][0]["id"] == "m"
        code, r1 = post(f"{s['base_url']}/chat/completions", {"model": "m", "messages": conversation(), "tools": [BASH]})
        assert code == 200, r1
        reply = r1["choices"][0]["message"]
        assert json.loads(reply["tool_calls"][0]["function"]["arguments"]) == {"command": "ls"}
        code, r2 = post(f"{s['base_url']}/chat/completions", {"messages": conversation(reply), "tools": [BASH]})
        assert code == 200 and "COMPLETE" in r2["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        # the server was asked for its ids and logprobs, and the tools went through natively
        assert all(b.get("return_token_ids") and b.get("logprobs") and b["tools"] == [BASH] for b in srv.requests)
        code, rec = post(f"{gw.url}/s/ep1/end", {})
        assert code == 200, rec
    calls = rec["model_calls"]
    assert len(calls) == 2 and calls[0]["token_ids"] == tokenizer.encode("step 0", add_special_tokens=False).ids
    assert calls[1]["logprobs"] == [-0.5] * len(calls[1]["token_ids"]) and not calls[0]["text_only"]
    # chat mode without the prompt's ids: no stream is built, and the record says why
    assert rec["token_ids"] == [] and "not the prompt's" in rec["token_error"]
    assert [m["role"] for m in rec["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert rec["messages"][2]["trainable"] and rec["messages"][2]["source"] == "policy"


def test_a_server_without_ids_gives_text_only_turns_never_invented_ids():
    with FakeOpenAIServer(chat_respond) as srv, make_gateway(f"openai:m@{srv.url}") as gw:
        s = gw.open("ep")
        code, _ = post(f"{gw.base_url(s.id)}/chat/completions", {"messages": conversation(), "tools": [BASH]})
        assert code == 200
        rec = s.record()
    assert rec["model_calls"][0]["text_only"] and rec["model_calls"][0]["token_ids"] is None
    assert rec["token_ids"] == [] and "no token ids" in rec["token_error"]


def test_token_mode_continues_the_exact_prompt_ids_and_parses_tool_calls(tokenizer, tmp_path):
    tok_file = tmp_path / "tokenizer.json"
    tokenizer.save(str(tok_file))
    plan = ["ls", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]

    def respond(body):
        step = tokenizer.decode(body["prompt"], skip_special_tokens=False).count("<|im_start|>assistant") - 1
        return {"text": "<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": plan[min(step, 1)]}})
                + "\n</tool_call>"}

    with FakeOpenAIServer(respond, tokenizer=tokenizer) as srv, \
            make_gateway(f"openai:m@{srv.url}", token_mode=TokenMode("chatml", str(tok_file))) as gw:
        s = gw.open("tok")
        code, r1 = post(f"{gw.base_url(s.id)}/chat/completions", {"messages": conversation(), "tools": [BASH]})
        assert code == 200
        reply = r1["choices"][0]["message"]
        assert json.loads(reply["tool_calls"][0]["function"]["arguments"]) == {"command": "ls"}
        assert r1["choices"][0]["token_ids"]  # the generated ids go back to the harness too
        code, r2 = post(f"{gw.base_url(s.id)}/chat/completions", {"messages": conversation(reply), "tools": [BASH]})
        assert code == 200 and "COMPLETE" in r2["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        rec = s.record()
        prompts = [b["prompt"] for b in srv.requests]
    ids, mask, lps = rec["token_ids"], rec["loss_mask"], rec["logprobs"]
    # the second call continued exactly the first prompt + the generated ids + the observation's delta
    assert prompts[1][:len(prompts[0])] == prompts[0] and ids[:len(prompts[1])] == prompts[1]
    first = CHATML.prompt(conversation(), [BASH])
    assert tokenizer.decode(prompts[0], skip_special_tokens=False) == first
    assert mask[:len(prompts[0])] == [0] * len(prompts[0]) and mask[len(prompts[0])] == 1
    gen = [i for i, m in zip(ids, mask) if m == 1]
    assert gen[:-1] and all(lp == -0.5 for lp, m in zip(lps, mask) if m == 1 and lp is not None)
    assert rec["token_error"] == ""
    # one stream: what the template renders for the whole conversation, tool-call ids aside
    assert tokenizer.decode(ids, skip_special_tokens=False).startswith(first)


def test_a_rewritten_history_is_said_not_recorded_as_one_stream(tokenizer, tmp_path):
    tok_file = tmp_path / "tokenizer.json"
    tokenizer.save(str(tok_file))
    with FakeOpenAIServer(lambda b: {"text": "```bash\nls\n```"}, tokenizer=tokenizer) as srv, \
            make_gateway(f"openai:m@{srv.url}", token_mode=TokenMode("chatml", str(tok_file))) as gw:
        s = gw.open("rw")
        assert post(f"{gw.base_url(s.id)}/chat/completions", {"messages": conversation(), "tools": [BASH]})[0] == 200
        msgs = conversation() + [{"role": "assistant", "content": "something else"}, {"role": "user", "content": "go"}]
        code, _ = post(f"{gw.base_url(s.id)}/chat/completions", {"messages": msgs, "tools": [BASH]})
        assert code == 200
        rec = s.record()
    assert "does not extend" in rec["token_error"] and len(rec["model_calls"]) == 2
    assert len(rec["token_ids"]) == len(srv.requests[0]["prompt"]) + rec["model_calls"][0]["completion_tokens"] + 1


@pytest.fixture(scope="module")
def served():
    with FakeOpenAIServer(chat_respond) as srv, make_gateway(f"openai:m@{srv.url}") as gw:
        yield srv, gw


@pytest.mark.parametrize("body,raw,needle", [
    (None, b"{not json", "not JSON"),
    ({"messages": []}, None, "non-empty list"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, None, "role system, user"),
    ({"messages": [{"role": "user", "content": "x"}], "stream": True}, None, "streaming is not supported"),
    ({"messages": [{"role": "user", "content": "x"}], "n": 3}, None, "n=1"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": ["bash"]}, None, "tools:"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, None, "text content parts"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1}, None, "max_tokens"),
])
def test_malformed_requests_are_400_with_a_message(served, body, raw, needle):
    srv, gw = served
    s = gw.open("bad")
    code, err = post(f"{gw.base_url(s.id)}/chat/completions", body, raw=raw)
    assert code == 400 and needle in err["error"]["message"], err
    assert srv.requests == [] and s.record()["model_calls"] == []


def test_unknown_sessions_routes_and_sandboxless_exec_are_404():
    with FakeOpenAIServer(chat_respond) as srv, make_gateway(f"openai:m@{srv.url}") as gw:
        code, err = post(f"{gw.url}/s/nope/v1/chat/completions", {"messages": conversation()})
        assert code == 404 and "unknown session 'nope'" in err["error"]["message"]
        code, err = post(f"{gw.url}/v1/chat/completions", {"messages": conversation()})
        assert code == 404 and "/s/<session>/v1" in err["error"]["message"]
        s = gw.open("x")
        code, err = post(f"{gw.url}/s/x/exec", {"command": "ls"})
        assert code == 404 and "no sandbox" in err["error"]["message"]
        post(f"{gw.url}/s/x/end", {})
        code, err = post(f"{gw.base_url(s.id)}/chat/completions", {"messages": conversation()})
        assert code == 409 and "ended" in err["error"]["message"]


def test_an_upstream_failure_is_502_and_marks_the_session_model_error():
    with FakeOpenAIServer(chat_respond) as srv, \
            make_gateway(f"openai:m@{srv.url}", ModelOptions(max_attempts=2, backoff_max_s=0.01)) as gw:
        s = gw.open("up")
        srv.inject("500", "500")
        code, err = post(f"{gw.base_url(s.id)}/chat/completions", {"messages": conversation()})
        assert code == 502 and "gave up after 2 attempts" in err["error"]["message"]
        assert "gave up" in s.model_error and s.record()["model_calls"] == []
        code, _ = post(f"{gw.base_url(s.id)}/chat/completions", {"messages": conversation()})
        assert code == 200 and s.model_error  # the episode stays marked (masked), calls go on


def test_sessions_are_independent_under_concurrency():
    from concurrent.futures import ThreadPoolExecutor

    with FakeOpenAIServer(chat_respond) as srv, make_gateway(f"openai:m@{srv.url}") as gw:
        sessions = [gw.open(f"s{i}") for i in range(16)]

        def run(s):
            _, r1 = post(f"{gw.base_url(s.id)}/chat/completions", {"messages": conversation(), "tools": [BASH]})
            reply = r1["choices"][0]["message"]
            return post(f"{gw.base_url(s.id)}/chat/completions", {"messages": conversation(reply), "tools": [BASH]})[0]

        with ThreadPoolExecutor(16) as pool:
            assert list(pool.map(run, sessions)) == [200] * 16
    assert all(len(s.recorder.model_calls) == 2 and len(s.recorder.seen) == 5 for s in sessions)


def test_an_hf_model_is_recorded_with_its_own_chat_template(tmp_path):
    """``hf:DIR``: the gateway renders with the model's own template and records prompt ids (mask 0),
    the generated ids (mask 1) with their logprobs, as the agent loop does."""
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from ha_agents.train.models import init_model

    path = init_model(tmp_path / "m", "qwen", hidden=32, layers=1, heads=2, seed=0)
    with make_gateway(f"hf:{path}", ModelOptions(max_tokens=6)) as gw:
        s = gw.open("hf")
        code, r = post(f"{gw.base_url(s.id)}/chat/completions", {"messages": conversation(), "tools": [BASH]})
        assert code == 200 and r["choices"][0]["token_ids"]
        rec = s.record()
    tok = AutoTokenizer.from_pretrained(str(path))
    prompt = tok.apply_chat_template(conversation(), tools=[BASH], tokenize=False, add_generation_prompt=True)
    ids, mask = rec["token_ids"], rec["loss_mask"]
    n = mask.index(1)
    assert tok.decode(ids[:n]) == prompt and rec["model_calls"][0]["prompt_tokens"] == n
    assert ids[n:n + len(r["choices"][0]["token_ids"])] == r["choices"][0]["token_ids"]
    assert all(lp is not None for lp, m in zip(rec["logprobs"], mask) if m == 1)
    assert rec["token_error"] == ""


def test_token_mode_a_failed_call_leaves_no_trace_and_a_full_context_is_context_limit(tokenizer, tmp_path):
    tok_file = tmp_path / "tokenizer.json"
    tokenizer.save(str(tok_file))
    first = len(tokenizer.encode(CHATML.prompt(conversation(), [BASH]), add_special_tokens=False).ids)
    mode = TokenMode("chatml", str(tok_file), context_tokens=first + 40)
    with FakeOpenAIServer(lambda b: {"text": "```bash\nls\n```"}, tokenizer=tokenizer) as srv, \
            make_gateway(f"openai:m@{srv.url}", ModelOptions(max_attempts=1), token_mode=mode) as gw:
        s = gw.open("ctx")
        srv.inject("500")
        code, _ = post(f"{gw.base_url(s.id)}/chat/completions", {"messages": conversation(), "tools": [BASH]})
        assert code == 502 and s.record()["token_ids"] == []  # the prompt rendered for it was taken back
        code, r1 = post(f"{gw.base_url(s.id)}/chat/completions", {"messages": conversation(), "tools": [BASH]})
        assert code == 200 and srv.requests[-1]["max_tokens"] == 40  # capped at the context left
        assert s.record()["token_ids"][:first] == srv.requests[-1]["prompt"] and len(srv.requests[-1]["prompt"]) == first
        reply = r1["choices"][0]["message"]
        code, err = post(f"{gw.base_url(s.id)}/chat/completions",
                         {"messages": conversation(reply, output="x " * 200), "tools": [BASH]})
    assert code == 400 and err["error"]["code"] == "context_length_exceeded"
    assert "maximum context length is" in err["error"]["message"] and s.context_limit
    assert len(srv.requests) == 2 and len(s.recorder.model_calls) == 1
