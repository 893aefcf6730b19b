"""The OpenAI-compatible client against a real local HTTP server: native and text tool calls,
retries that never duplicate a turn, faults, token ids and logprobs."""

from __future__ import annotations

import json

import pytest

from ha_agents.episode import run_episode
from ha_agents.llm.base import LLMError
from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.llm.openai_http import OpenAIClient, OpenAIConfig, parse_model_spec

FIX_CMD = "sed -i '10s/return lo/return hi/' calc.py"


def n_assistant(body):
    return sum(1 for m in body.get("messages", []) if m["role"] == "assistant")


def fixer_native(body):
    """Stateless script: the answer depends only on how many assistant turns the request holds."""
    step = n_assistant(body)
    calls = [("bash", {"command": FIX_CMD}), ("submit", {})]
    name, args = calls[min(step, 1)]
    return {"tool_calls": [{"id": f"call_{step}", "function": {"name": name, "arguments": json.dumps(args)}}]}


def fixer_text(body):
    step = n_assistant(body)
    return ["I will fix the comparison.\n```bash\n" + FIX_CMD + "\n```", "```bash\nsubmit\n```"][min(step, 1)]


def client(server, **kw):
    return OpenAIClient(OpenAIConfig(model="fake", base_url=server.url, backoff_max_s=0.05, **kw))


def test_native_tool_calls_resolve_through_http(tiny_task):
    with FakeOpenAIServer(fixer_native) as srv:
        rec = run_episode(tiny_task, client(srv), "h0")
        assert rec["resolved"] and rec["termination"] == "submitted" and len(srv.requests) == 2
        first = srv.requests[0]
        assert [t["function"]["name"] for t in first["tools"]] == ["bash", "submit"]
        assert first["messages"][0]["role"] == "system" and "source" not in first["messages"][0]
        second = srv.requests[1]
        assert second["messages"][2]["tool_calls"][0]["id"] == "call_0"
        assert second["messages"][3] == {"role": "tool", "content": second["messages"][3]["content"], "tool_call_id": "call_0"}


def test_text_mode_tool_calls(tiny_task):
    with FakeOpenAIServer(fixer_text) as srv:
        rec = run_episode(tiny_task, client(srv, tool_mode="text"), "h0")
        assert rec["resolved"] and "tools" not in srv.requests[0]


@pytest.mark.parametrize("faults", [("429", "429"), ("500",), ("truncated_body",), ("drop",), ("slow",)])
def test_transient_faults_are_retried_without_duplicating_turns(tiny_task, faults):
    with FakeOpenAIServer(fixer_native, slow_s=5) as srv:
        srv.inject(*faults)
        c = client(srv, timeout_s=2.5)  # margin for a loaded CI machine: only "slow" may time out
        rec = run_episode(tiny_task, c, "h0")
        assert rec["resolved"], rec["error"]
        assert len(srv.requests) == 2 + len(faults)  # every fault cost one extra request...
        assert sum(1 for m in rec["messages"] if m["role"] == "assistant") == 2  # ...and no extra turn
        assert rec["model_calls"][0]["attempts"] == 1 + len(faults)


def test_persistent_failure_ends_the_episode_masked(tiny_task):
    with FakeOpenAIServer(fixer_native) as srv:
        srv.inject(*["500"] * 3)
        rec = run_episode(tiny_task, client(srv, max_attempts=3), "h0")
        assert rec["termination"] == "model_error" and rec["mask_sample"] and "gave up after 3 attempts" in rec["error"]


def test_client_errors_are_not_retried():
    with FakeOpenAIServer(lambda body: 1 / 0) as srv:  # the script raises: the server answers 400
        c = client(srv)
        with pytest.raises(LLMError, match="HTTP 400"):
            c.complete([{"role": "user", "content": "hi"}], [])
        assert len(srv.requests) == 1


def test_length_cut_reply_is_a_truncated_format_error(tiny_task):
    def cut(body):
        if n_assistant(body) == 0:
            return {"content": '<tool_call>{"name": "bash", "arguments": {"command": "ls', "finish_reason": "length"}
        return fixer_native({"messages": [{"role": "assistant"}] * (n_assistant(body) - 1)})

    with FakeOpenAIServer(cut) as srv:
        rec = run_episode(tiny_task, client(srv), "h2")
        errors = [m for m in rec["messages"] if m.get("error_kind")]
        assert errors and errors[0]["error_kind"] == "truncated" and rec["resolved"]


def test_token_ids_and_logprobs_are_captured(tokenizer):
    with FakeOpenAIServer(lambda body: "hello world", tokenizer=tokenizer) as srv:
        c = client(srv, logprobs=True, return_token_ids=True)
        chat = c.complete([{"role": "user", "content": "hi"}], [])
        assert chat.token_ids == tokenizer.encode("hello world", add_special_tokens=False).ids
        assert chat.logprobs == [-0.5] * len(chat.token_ids)
        prompt = [1, 2, 3]
        text = c.complete([], [], prompt_ids=prompt)
        assert text.text == "hello world" and text.token_ids == chat.token_ids and text.prompt_token_ids == prompt
        assert srv.requests[-1]["prompt"] == prompt and srv.requests[-1]["return_token_ids"] is True


def test_model_spec_parsing():
    cfg = parse_model_spec("openai:Qwen/Qwen3-8B@http://10.0.0.2:8000/v1")
    assert (cfg.model, cfg.base_url) == ("Qwen/Qwen3-8B", "http://10.0.0.2:8000/v1")
    with pytest.raises(ValueError, match="openai:NAME@URL"):
        parse_model_spec("openai:nourl")
