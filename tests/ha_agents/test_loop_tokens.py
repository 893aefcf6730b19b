"""Token-faithful trajectories: incremental prompt + model ids + rendered deltas equal one full
render of the final conversation, and every mask-1 token is a token the model produced."""

from __future__ import annotations

import json

import pytest

import ha_envs
from ha_agents.chat.template import CHATML, HERMES
from ha_agents.llm.base import Completion
from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.llm.openai_http import OpenAIClient, OpenAIConfig
from ha_agents.llm.scripted import ScriptedClient
from ha_agents.loop import AgentLoop, LoopConfig
from ha_envs.harness import HarnessSpec

HERMES_SPEC = HarnessSpec.from_dict({"name": "text-tools", "parser": {"format": "hermes"},
                                     "tools": ["bash", "read_file", "view_diff", "submit"],
                                     "hooks": ["budget_reminder", "review_on_submit"]})


def call(name, **args):
    return f"I will call {name}.\n<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


SCRIPT = [call("read_file", path="calc.py", start_line=5, end_line=11),
          "Let me think about this without a tool call.",  # a format error: its observation is rendered too
          call("bash", command="sed -i '10s/return lo/return hi/' calc.py"),
          call("view_diff"), call("submit"), call("submit")]


class Recording(ScriptedClient):
    """Keeps every id it returned, to prove the mask-1 tokens are exactly the model's."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.returned: list[list[int]] = []
        self.prompts: list[list[int]] = []

    def complete(self, messages, tools, prompt_ids=None):
        self.prompts.append(list(prompt_ids or []))
        out = super().complete(messages, tools, prompt_ids)
        self.returned.append(list(out.token_ids or []))
        return out


def template_view(messages):
    """The conversation as a chat template sees it (our provenance fields dropped)."""
    out = []
    for m in messages:
        v = {"role": m["role"], "content": m["content"]}
        if m.get("tool_calls"):
            v["tool_calls"] = m["tool_calls"]
        out.append(v)
    return out


@pytest.mark.parametrize("template", [CHATML, HERMES], ids=["chatml", "hermes"])
def test_incremental_ids_equal_one_full_render(tiny_task, tokenizer, template):
    client = Recording(SCRIPT, tokenizer=tokenizer)
    env = ha_envs.make(task=tiny_task, harness=HERMES_SPEC)
    try:
        traj = AgentLoop(client, template, tokenizer).run(env)
    finally:
        env.close()
    assert traj.termination == "submitted" and traj.reward == 1.0 and not traj.token_error
    assert len(traj.token_ids) > 800 and 50 < sum(traj.loss_mask) < len(traj.token_ids) / 2
    assert any(m.get("error_kind") == "no_call" for m in traj.messages)
    assert any(m["source"].startswith("hook:") for m in traj.messages)
    # the final conversation, up to the last model turn, rendered once from the Jinja template
    last = max(i for i, m in enumerate(traj.messages) if m["role"] == "assistant")
    full = template.render(template_view(traj.messages[: last + 1]), _tools(tiny_task), add_generation_prompt=False)
    assert full.endswith(template.eos + "\n")
    assert traj.token_ids == tokenizer.encode(full[:-1], add_special_tokens=False).ids
    # every mask-1 token came from the model, in order, and nothing else is mask 1
    ones = [t for t, m in zip(traj.token_ids, traj.loss_mask) if m == 1]
    assert ones == [t for ids in client.returned for t in ids]
    assert len(traj.loss_mask) == len(traj.token_ids) == len(traj.logprobs)
    # each prompt the model saw is exactly the trajectory so far (never re-rendered differently)
    for p in client.prompts:
        assert traj.token_ids[: len(p)] == p


def _tools(task):
    env = ha_envs.make(task=task, harness=HERMES_SPEC)
    try:
        return env.reset()[1]["tools"]
    finally:
        env.close()


def test_token_mode_through_http_completions(tiny_task, tokenizer):
    """vLLM-style: /v1/completions with the token-id prompt, ids returned by the server."""
    def respond(body):
        prompt = tokenizer.decode(body["prompt"], skip_special_tokens=False)
        return {"text": SCRIPT[min(prompt.count("<|im_start|>assistant") - 1, len(SCRIPT) - 1)] + "<|im_end|>"}

    with FakeOpenAIServer(respond, tokenizer=tokenizer) as srv:
        client = OpenAIClient(OpenAIConfig(model="fake", base_url=srv.url, return_token_ids=True))
        env = ha_envs.make(task=tiny_task, harness=HERMES_SPEC)
        try:
            traj = AgentLoop(client, CHATML, tokenizer).run(env)
        finally:
            env.close()
    assert traj.termination == "submitted" and traj.reward == 1.0 and not traj.token_error
    prompts = [r["prompt"] for r in srv.requests]
    assert all(prompts[i] == prompts[i + 1][: len(prompts[i])] for i in range(len(prompts) - 1))
    assert traj.token_ids[: len(prompts[-1])] == prompts[-1]


def test_context_budget_truncates_and_grades(tiny_task, tokenizer):
    client = ScriptedClient([call("bash", command="sed -i '10s/return lo/return hi/' calc.py"),
                             call("bash", command="seq 1 2000")] + [call("bash", command="ls")] * 10, tokenizer=tokenizer)
    env = ha_envs.make(task=tiny_task, harness=HERMES_SPEC)
    try:
        traj = AgentLoop(client, CHATML, tokenizer, LoopConfig(context_tokens=2500)).run(env)
    finally:
        env.close()
    assert traj.termination == "context_limit" and traj.info["grade"]["resolved"] and traj.reward == 1.0
    assert not traj.mask_sample and len(traj.token_ids) >= 2500


def test_missing_ids_stop_tracking_instead_of_retokenising(tiny_task, tokenizer):
    class NoIds(ScriptedClient):
        def complete(self, messages, tools, prompt_ids=None):
            c = super().complete(messages, tools, prompt_ids)
            return Completion(message=c.message, token_ids=None if self.calls == 2 else c.token_ids)

    env = ha_envs.make(task=tiny_task, harness=HERMES_SPEC)
    try:
        traj = AgentLoop(NoIds(SCRIPT, tokenizer=tokenizer), CHATML, tokenizer).run(env)
    finally:
        env.close()
    assert "turn 2: the backend returned no token ids" in traj.token_error
    assert traj.reward == 1.0  # the episode itself is unaffected


def test_token_mode_needs_both_parts(tokenizer):
    with pytest.raises(ValueError, match="needs both"):
        AgentLoop(ScriptedClient([]), CHATML, None)
