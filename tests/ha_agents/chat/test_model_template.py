"""Token mode with the model's own chat template (Hugging Face tokenizers, two template families):
incremental ids equal one full render of the final conversation, mask-1 ids are exactly the model's,
every call asks for ids and logprobs on one endpoint with max_tokens within the context left."""

from __future__ import annotations

import json
import os

import pytest

import ha_envs
from ha_agents.chat.template import ModelTemplate, TemplateError
from ha_agents.episode import TokenMode
from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.llm.scripted import ScriptedClient
from ha_agents.loop import AgentLoop, LoopConfig
from ha_agents.chat.families import FAMILIES, hf_tokenizer
from ha_agents.chat.tokens import as_codec
from ha_agents.chat.toy_tokenizer import toy_tokenizer
from ha_envs.harness import TOOLS
from ha_envs.loaders import load_suite

from tests.ha_agents.test_loop_tokens import HERMES_SPEC, SCRIPT, _tools, call

if not os.environ.get("CI"):
    pytest.importorskip("transformers")


@pytest.fixture(scope="module", params=["qwen", "llama"])
def family(request, tmp_path_factory):
    """(family, raw tokenizers.Tokenizer, HF tokenizer with the family's template, its directory)."""
    name = request.param
    f = FAMILIES[name]
    corpus = [t.problem_statement for t in load_suite("mini")] + [t.gold_patch for t in load_suite("mini")]
    corpus += [f["template"], str([t.openai_schema() for t in TOOLS.values()]), *SCRIPT] * 3
    raw = toy_tokenizer(corpus, vocab_size=2000, special=f["special"])
    hf = hf_tokenizer(raw, name)
    path = tmp_path_factory.mktemp(f"tok-{name}")
    hf.save_pretrained(path)
    return name, raw, hf, path


class Recording(ScriptedClient):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.returned, self.kwargs = [], []

    def complete(self, messages, tools, prompt_ids=None, max_tokens=None, seed=None):
        self.kwargs.append({"max_tokens": max_tokens, "prompt_len": len(prompt_ids or [])})
        out = super().complete(messages, tools, prompt_ids, max_tokens=max_tokens)
        self.returned.append(list(out.token_ids or []))
        return out


def _run(task, client, template, tok, **cfg):
    env = ha_envs.make(task=task, harness=HERMES_SPEC)
    try:
        return AgentLoop(client, template, tok, LoopConfig(**cfg)).run(env)
    finally:
        env.close()


def test_incremental_ids_equal_a_full_render_of_the_models_template(tiny_task, family):
    name, raw, hf, _ = family
    template = ModelTemplate(hf)
    assert template.eos == FAMILIES[name]["eos"]  # read from the template itself
    client = Recording(SCRIPT, tokenizer=raw, eos=template.eos)
    traj = _run(tiny_task, client, template, hf)
    assert traj.termination == "submitted" and traj.reward == 1.0 and not traj.token_error
    assert any(m.get("error_kind") == "no_call" for m in traj.messages)  # observations of several kinds
    last = max(i for i, m in enumerate(traj.messages) if m["role"] == "assistant")
    full = template.render(traj.messages[: last + 1], _tools(tiny_task), add_generation_prompt=False)
    close = template._prefix_for(None)[1]
    after_eos = close[close.index(template.eos) + len(template.eos):]
    assert full.endswith(template.eos + after_eos)
    assert traj.token_ids == as_codec(hf).encode(full[: len(full) - len(after_eos)])
    ones = [t for t, m in zip(traj.token_ids, traj.loss_mask) if m == 1]
    assert ones == [t for ids in client.returned for t in ids]
    if name == "llama":  # the template's own marks, not ChatML's
        assert full.count("<|start_header_id|>assistant<|end_header_id|>") == 6 and "<|im_start|>" not in full


def test_token_mode_auto_picks_the_models_own_template(family):
    name, _, _, path = family
    template, tok = TokenMode("auto", str(path)).resolve()
    assert isinstance(template, ModelTemplate) and template.eos == FAMILIES[name]["eos"]
    with pytest.raises(ValueError, match="unknown chat template"):
        TokenMode("qwen9", str(path)).resolve()


def test_a_template_that_rewrites_history_is_refused(family):
    _, _, hf, _ = family
    import copy

    bad = copy.deepcopy(hf)
    # renders the number of messages into the system turn: every new message changes turn one
    bad.chat_template = ("{{- '<|im_start|>system n=' ~ (messages|length) ~ '<|im_end|>' }}{%- for m in messages %}"
                         "{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endfor %}")
    with pytest.raises(TemplateError, match="changes earlier turns"):
        ModelTemplate(bad, eos="<|im_end|>").delta([{"role": "user", "content": "x"}], closed=True)


def test_http_token_mode_asks_for_ids_and_logprobs_on_one_endpoint(tiny_task, family, tmp_path):
    """`ha eval --tokenizer DIR --model openai:...` end to end: every request goes to /completions with
    the token prompt, return_token_ids and logprobs, and max_tokens within the context left."""
    from ha_cli.main import main

    name, raw, hf, path = family
    eos = FAMILIES[name]["eos"]
    calls = []

    def respond(body):
        calls.append(1)
        return {"text": (call("read_file", path="README.md") if len(calls) < 3 else call("submit")) + eos}

    out = tmp_path / "run"
    with FakeOpenAIServer(respond, tokenizer=raw) as srv:
        rc = main(["eval", "--suite", "mini", "--instances", "mini__semver_ranges", "--model", f"openai:fake@{srv.url}",
                   "--tokenizer", str(path), "--harness", str(_spec_file(tmp_path)), "--context-tokens", "6000",
                   "--max-new-tokens", "300", "--out", str(out)])  # the deprecated alias of --max-tokens
        reqs = list(srv.requests)
    assert rc == 0
    [rec] = [json.loads(l) for l in (out / "trajectories.jsonl").read_text().splitlines()]
    assert not rec["token_error"] and rec["termination"] == "submitted" and len(reqs) >= 2
    assert all("prompt" in r and "messages" not in r for r in reqs)
    assert all(r["return_token_ids"] is True and r["logprobs"] == 1 for r in reqs)
    assert all(r["max_tokens"] <= min(300, 6000 - len(r["prompt"])) for r in reqs)
    ones = [(t, lp) for t, m, lp in zip(rec["token_ids"], rec["loss_mask"], rec["logprobs"]) if m == 1]
    assert ones and all(lp == -0.5 for _, lp in ones)  # the server's logprobs, kept per token


def test_context_limit_ends_graded_not_model_error(tiny_task, family):
    """Near the limit each call gets only the tokens left; the episode ends context_limit, graded."""
    name, raw, hf, _ = family
    template = ModelTemplate(hf)
    fix = call("bash", command="sed -i '10s/return lo/return hi/' calc.py")
    probe = Recording([call("submit")], tokenizer=raw, eos=template.eos)
    _run(tiny_task, probe, template, hf)
    budget = probe.kwargs[0]["prompt_len"] + 700  # room for the fix and its observation, not for a long call
    client = Recording([fix] + [call("bash", command="ls -la " + "x" * 3000)] * 5, tokenizer=raw, eos=template.eos)
    traj = _run(tiny_task, client, template, hf, context_tokens=budget)
    assert traj.termination == "context_limit" and not traj.mask_sample and traj.info["grade"]["resolved"]
    assert all(k["max_tokens"] <= budget - k["prompt_len"] for k in client.kwargs)
    assert any(r[-1] != client.eos_id for r in client.returned)  # a call was cut at max_tokens


def test_missing_ids_keep_the_endpoint_and_train_on_nothing(tiny_task, family):
    name, raw, hf, _ = family
    template = ModelTemplate(hf)

    class NoIds(Recording):
        def complete(self, messages, tools, prompt_ids=None, max_tokens=None, seed=None):
            out = super().complete(messages, tools, prompt_ids, max_tokens, seed)
            assert prompt_ids is not None  # never a fall back to the chat endpoint
            if len(self.returned) == 2:
                out.token_ids = None
            return out

    client = NoIds(SCRIPT, tokenizer=raw, eos=template.eos)
    traj = _run(tiny_task, client, template, hf)
    assert "turn 2: the backend returned no token ids" in traj.token_error and traj.reward == 1.0
    ones = [t for t, m in zip(traj.token_ids, traj.loss_mask) if m == 1]
    assert ones == [t for i, ids in enumerate(client.returned) if i != 1 for t in ids]


def _spec_file(tmp_path):
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(HERMES_SPEC.to_dict()))
    return p
