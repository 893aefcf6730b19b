"""Fixtures: a locally trained tokenizer, and a fake OpenAI-compatible server."""

from __future__ import annotations

import pytest

from ha_agents.chat.template import CHATML
from ha_agents.chat.toy_tokenizer import toy_tokenizer
from ha_envs.harness import TOOLS
from ha_envs.loaders import load_suite


@pytest.fixture(scope="session")
def tokenizer():
    corpus = [t.problem_statement for t in load_suite("mini")] + [t.gold_patch for t in load_suite("mini")]
    corpus += [CHATML.jinja, str([t.openai_schema() for t in TOOLS.values()])] * 3
    return toy_tokenizer(corpus, vocab_size=2000)


def with_rollout_logprobs(trainer, samples):
    """``samples`` carrying ``trainer``'s current logprobs as the sampler's (the ratio's denominator:
    what the in-process sampler would report)."""
    import torch

    for s in samples:
        with torch.no_grad():
            lp = trainer._micro(trainer.model, [s])[0]
        s.logprobs = [None] + [float(x) if m else None for x, m in zip(lp[0], s.loss_mask[1:])]
    return samples


def h2_plan_responder(tokenizer, middle):
    """A completions responder for the fake OpenAI server in token mode, playing one plan on
    ``mini__invoice_rounding`` under h2 as Hermes tool calls: the oracle's first edit, the calls in
    ``middle``, then submit (every later turn submits). Returns (task, plan, respond)."""
    import json

    from ha_agents.llm.policies import OraclePolicy
    from ha_envs.actions import ToolCall
    from ha_envs.harness import load_spec

    task = next(t for t in load_suite("mini") if t.instance_id == "mini__invoice_rounding")
    oracle = OraclePolicy().plan(task, {"tools": [{"function": {"name": n}} for n in load_spec("h2").tool_names]})
    plan = [oracle[0], *middle, ToolCall("submit", {})]

    def respond(body):
        step = tokenizer.decode(body["prompt"], skip_special_tokens=False).count("<|im_start|>assistant") - 1
        c = plan[step] if step < len(plan) else ToolCall("submit", {})
        return {"text": "<tool_call>\n" + json.dumps({"name": c.name, "arguments": c.arguments}) + "\n</tool_call>"}

    return task, plan, respond
