"""End to end through the CLI: mini-swe-agent 2.4.x (installed from PyPI into its own venv) runs
unmodified against `ha gateway eval`, a scripted model behind the gateway (the local fake OpenAI
server in token mode: the gateway renders mini-swe-agent's conversation with a chat template and
records prompt ids, generated ids, logprobs and the loss mask) answering its prompts: on one bundled task
with the commands that fix it, on another with an immediate submit, on a third with a failing model
server (the episode is masked ``model_error`` and the harness stopped). Its commands run in this
library's sandbox, the final diff is graded by this library's grader, and the records on disk are
ordinary episode records that `ha compare` and `ha show-trajectory` read, comparable to the same
tasks through the h0 wrapper stack (`ha eval`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_cli.main import main
from ha_envs.loaders import load_suite

ROOT = Path(__file__).resolve().parents[3]
VENV = Path(os.environ.get("HA_MSA_VENV") or ROOT / ".venv-msa")
FIX, NOOP, DOWN = "mini__ttl_cache", "mini__invoice_rounding", "mini__semver_ranges"



@pytest.fixture(autouse=True)
def _msa_venv():
    """Skip without mini-swe-agent's venv, except under CI, where .ci/run creates it: fail there."""
    if not (VENV / "bin" / "mini").is_file():
        why = f"no mini-swe-agent venv at {VENV} (`make msa-venv` creates it)"
        if os.environ.get("CI"):
            pytest.fail(why + "; CI is set, so .ci/run should have made it")
        pytest.skip(why)


def scripted_model(tokenizer):
    """The next command from the conversation so far (token mode: the prompt ids the gateway
    rendered with the chat template), as a Hermes tool call in the generated text."""
    tasks = {t.instance_id: t for t in load_suite("mini")}
    fix, down = tasks[FIX], tasks[DOWN]
    patch = fix.gold_patch if fix.gold_patch.endswith("\n") else fix.gold_patch + "\n"

    def respond(body):
        text = tokenizer.decode(body["prompt"], skip_special_tokens=False)
        step = text.count("<|im_start|>assistant") - 1
        if down.problem_statement.strip()[:200] in text:
            raise RuntimeError("the model server is down")  # the fake server answers 400: a failure for good
        if fix.problem_statement.strip()[:200] in text and step == 0:
            command = f"git apply --whitespace=nowarn - <<'HA_EOF'\n{patch}HA_EOF\ngit status --short"
        else:
            command = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
        return {"text": f"Step {step}.\n<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": command}})
                + "\n</tool_call>"}

    return respond


def records(out: Path) -> dict[str, dict]:
    return {r["instance_id"]: r for r in map(json.loads, (out / "trajectories.jsonl").read_text().splitlines())}


def test_mini_swe_agent_through_the_gateway_is_graded_like_h0(tokenizer, tmp_path, capsys):
    gw_out, tok_file = tmp_path / "gw", tmp_path / "tokenizer.json"
    tokenizer.save(str(tok_file))
    with FakeOpenAIServer(scripted_model(tokenizer), tokenizer=tokenizer) as srv:
        assert main(["gateway", "eval", "--suite", "mini", "--instances", FIX, NOOP, DOWN, "--model",
                     f"openai:scripted@{srv.url}", "--tokenizer", str(tok_file), "--template", "chatml",
                     "--msa-venv", str(VENV), "--step-limit", "5", "--workers", "3", "--out", str(gw_out)]) == 0
    assert "mini-swe-agent@2.4." in capsys.readouterr().out
    gw = records(gw_out)
    fixed, noop = gw[FIX], gw[NOOP]
    assert fixed["resolved"] and fixed["reward"] == 1.0 and fixed["termination"] == "submitted"
    assert not noop["resolved"] and noop["termination"] == "submitted" and noop["patch"] == ""
    assert fixed["harness"].startswith("mini-swe-agent@2.4.") and fixed["harness_exit_status"] == "Submitted"
    # its commands ran in the sandbox (the diff the grader took is the gold patch's change)
    assert fixed["tool_counts"] == {"bash": 2} and "ttlcache/" in fixed["patch"]
    # token-faithful: one stream (the template's prompt, mask 0; the generated ids as the server gave
    # them, mask 1, with their logprobs), each call continuing exactly the ids recorded before it
    ids, mask, lps = fixed["token_ids"], fixed["loss_mask"], fixed["logprobs"]
    assert fixed["token_error"] == "" and len(ids) == len(mask) == len(lps) and 1 in mask
    assert all(lp == -0.5 for lp, m in zip(lps, mask) if m == 1 and lp is not None)
    starts = [c["prompt_tokens"] for c in fixed["model_calls"]]
    assert len(starts) == 2 and mask[starts[0]] == 1 and mask[starts[0] - 1] == 0
    stream = tokenizer.decode(ids, skip_special_tokens=False)
    assert "git apply" in stream and stream.count("<tool_response>") == 1 and "COMPLETE_TASK_AND_SUBMIT" in stream
    assert [m["role"] for m in fixed["messages"]][:3] == ["system", "user", "assistant"]
    down_rec = gw[DOWN]
    assert down_rec["termination"] == "model_error" and down_rec["mask_sample"] and "model server" in down_rec["error"]
    summary = json.loads((gw_out / "summary.json").read_text())
    assert summary["per_instance"] == {FIX: [True], NOOP: [False], DOWN: [False]} and summary["masked"] == 1
    preds = [json.loads(x) for x in (gw_out / "predictions.jsonl").read_text().splitlines()]
    assert {p["instance_id"] for p in preds} == {FIX, NOOP, DOWN}
    assert (gw_out / "harness" / FIX / "traj.json").is_file()

    # the same tasks through the h0 wrapper stack: the same fix resolves, the empty submission does not
    h0_fix, h0_noop = tmp_path / "h0-fix", tmp_path / "h0-noop"
    assert main(["eval", "--suite", "mini", "--instances", FIX, "--model", "oracle", "--out",
                 str(h0_fix), "--no-progress"]) == 0
    assert main(["eval", "--suite", "mini", "--instances", NOOP, "--model", "null", "--out", str(h0_noop),
                 "--no-progress"]) == 0
    h0 = records(h0_fix)
    assert set(h0[FIX]) <= set(fixed) and set(fixed) - set(h0[FIX]) == {"harness_exit_status", "session"}
    assert h0[FIX]["resolved"] == fixed["resolved"] and records(h0_noop)[NOOP]["resolved"] == noop["resolved"]
    assert h0[FIX]["patch"] == fixed["patch"]
    # ha compare and the viewer read the gateway's run as any other
    capsys.readouterr()
    assert main(["compare", str(gw_out), str(h0_fix), "--json", "--samples", "200"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    row = cmp["rows"][0]
    assert (row["n"], row["a"], row["b"]) == (1, 1.0, 1.0) and sorted(cmp["only_in_a"]) == sorted([NOOP, DOWN])
    html = tmp_path / "t.html"
    assert main(["show-trajectory", str(gw_out / "trajectories.jsonl"), "--instance", FIX, "--html", str(html)]) == 0
    assert "mini-swe-agent" in html.read_text()

    # a rerun resumes: nothing left to run, the same records
    with FakeOpenAIServer(scripted_model(tokenizer), tokenizer=tokenizer) as srv:
        assert main(["gateway", "eval", "--suite", "mini", "--instances", FIX, NOOP, DOWN, "--model",
                     f"openai:scripted@{srv.url}", "--tokenizer", str(tok_file), "--template", "chatml",
                     "--msa-venv", str(VENV), "--out", str(gw_out)]) == 0
        assert srv.requests == []
    assert len((gw_out / "trajectories.jsonl").read_text().splitlines()) == 3
