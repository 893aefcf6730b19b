"""Harness-R1's reward is unbiased where it used not to be (issue 40 item 3):

- the scoring runs draw from a seed stream disjoint from the run that selected the failures (a
  neutral patch against the prompt-sensitive target ``hasty_prompt`` earns 0 within its CI, and a
  selection run made on the scoring stream itself is refused);
- a fault is not cached past its retry: a task still masked after the retry is run again by the
  next score of the same patch;
- the outcome cache is keyed by the weights' identity: the same served name with another
  ``--model-revision`` runs again, an ``hf:`` directory whose weights change at the same size has
  another identity.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from ha_agents.episode import EpisodeConfig
from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.llm.weights import weights_identity
from ha_agents.runs.rollouts import collect
from ha_cli.main import main
from ha_envs.loaders import load_suite
from ha_evolve.harness_r1.harness_edit import HarnessEditEnv, Target, scoring_seed
from tests.conftest import require_bwrap, task_row

SUITE = {t.instance_id: t for t in load_suite("mini")}
IDS = ["mini__invoice_rounding", "mini__semver_ranges"]
NEUTRAL = "<patch>ops: [{op: add_tool, tool: view_diff}]</patch>"  # hasty never calls it: only the prompt changes


def test_a_neutral_patch_earns_zero_against_a_prompt_sensitive_target(tmp_path, capsys):
    """Through the CLI: the target's selection run at --seed 0, its failures batched, a neutral patch
    scored with the same --seed 0; no scoring episode reuses a selection episode's seed."""
    require_bwrap()
    src = ["--suite", "mini", "--instances", *IDS]
    assert main(["eval", *src, "--model", "hasty_prompt", "--seed", "0", "--no-progress", "--out", str(tmp_path / "t")]) == 0
    selection = [json.loads(x) for x in (tmp_path / "t" / "trajectories.jsonl").read_text().splitlines()]
    assert main(["engineer", "batches", *src, "--run", str(tmp_path / "t"), "--n", "2", "--out", str(tmp_path / "b.json")]) == 0
    (tmp_path / "p.txt").write_text(NEUTRAL)
    capsys.readouterr()
    assert main(["engineer", "score", *src, "--batches", str(tmp_path / "b.json"), "--model", "hasty_prompt",
                 "--seed", "0", "--runs", "1", "--patch", str(tmp_path / "p.txt"), "--out", str(tmp_path / "s"),
                 "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["stage"] == "passed" and info["rollouts"] == 2 * 2
    lo, hi = info["delta_ci"]
    assert lo <= 0.0 <= hi, info
    scored = [json.loads(x) for p in (tmp_path / "s" / "runs").rglob("trajectories.jsonl")
              for x in p.read_text().splitlines()]
    assert len(scored) == 4
    assert not {(r["instance_id"], r["seed"]) for r in scored} & {(r["instance_id"], r["seed"]) for r in selection}


def test_a_selection_run_on_the_scoring_stream_is_refused(tmp_path):
    require_bwrap()
    on_stream = EpisodeConfig.create("h0", seed=scoring_seed(0))
    records = collect([SUITE[IDS[0]]], 1, "null", on_stream, out=tmp_path / "sel", progress_bar=False)
    with pytest.raises(ValueError, match="would replay episodes of the run that selected the failures"):
        HarnessEditEnv(Target("null", "h0"), [SUITE[IDS[0]]], [[IDS[0]]], records, tmp_path / "e")
    HarnessEditEnv(Target.create("null", "h0", seed=1), [SUITE[IDS[0]]], [[IDS[0]]], records, tmp_path / "e")


def _server_target(tiny_task, down: dict[str, bool]):
    """Two copies of the tiny task behind a fake OpenAI server that submits at once; while
    ``down["b"]``, every request of copy b fails (model_error: masked)."""
    marker = " (second copy)"
    b = dataclasses.replace(tiny_task, instance_id="tiny__clamp_b", problem_statement=tiny_task.problem_statement + marker)

    def respond(body):
        text = " ".join(str(m.get("content")) for m in body["messages"])
        if marker in text and down["b"]:
            raise RuntimeError("the model behind this server is down")
        return {"content": "```bash\nsubmit\n```"}

    return [tiny_task, b], respond


def test_a_fault_is_not_cached_past_its_retry(tiny_task, tmp_path):
    require_bwrap()
    down = {"b": True}
    tasks, respond = _server_target(tiny_task, down)
    ids = [t.instance_id for t in tasks]
    with FakeOpenAIServer(respond) as srv:
        target = Target.create(f"openai:m@{srv.url}", "h0", revision="r1")
        env = HarnessEditEnv(target, tasks, [ids], [], tmp_path / "e", max_masked_share=1.0)
        env.reset()
        _, _, _, _, first = env.step(NEUTRAL)
        assert first["masked"] == ["tiny__clamp_b"] and first["rollouts"] == 2 + 2 * 2  # a: 1 per side; b: 1 + retry
        down["b"] = False
        env.reset()
        _, _, _, _, second = env.step(NEUTRAL)
    assert second["masked"] == [] and second["base"] == {i: 0.0 for i in ids}
    assert second["rollouts"] == 2 and second["cache_hits"] == 0  # b on each side again, a from the cache


def test_the_outcome_cache_is_keyed_by_the_weights_not_the_name(tiny_task, tmp_path, capsys):
    """Through the CLI: the same served name with the same --model-revision reads the cache, with
    another it runs again; without one, a warning says the cache trusts the name."""
    require_bwrap()
    _, respond = _server_target(tiny_task, {"b": False})
    (tmp_path / "t.jsonl").write_text(json.dumps(task_row(tiny_task)) + "\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "trajectories.jsonl").write_text("")
    (tmp_path / "b.json").write_text(json.dumps({"run": str(tmp_path / "run"), "batches": [[tiny_task.instance_id]]}))
    (tmp_path / "p.txt").write_text(NEUTRAL)

    def score(*revision):
        assert main(["engineer", "score", "--jsonl", str(tmp_path / "t.jsonl"), "--batches", str(tmp_path / "b.json"),
                     "--model", f"openai:m@{srv.url}", *revision, "--runs", "1", "--patch", str(tmp_path / "p.txt"),
                     "--out", str(tmp_path / "s"), "--json"]) == 0
        printed = capsys.readouterr()
        return json.loads(printed.out)["rollouts"], printed.err

    with FakeOpenAIServer(respond, models=["m"]) as srv:
        assert score("--model-revision", "r1")[0] == 2
        assert score("--model-revision", "r1")[0] == 0  # the same weights: cached
        assert score("--model-revision", "r2")[0] == 2  # new weights under the same name: run again
        rollouts, err = score()
        assert rollouts == 2 and "pass --model-revision" in err
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "qwen2"}')
    (model / "model.safetensors").write_bytes(b"\x00" * 64)
    before = weights_identity(f"hf:{model}")
    (model / "model.safetensors").write_bytes(b"\x01" * 64)  # trained weights, the same size
    assert weights_identity(f"hf:{model}") != before
    with pytest.raises(ValueError, match="no config.json"):
        weights_identity(f"hf:{tmp_path}")


def test_a_teacher_menu_without_the_answer(tmp_path, capsys):
    import yaml

    assert main(["engineer", "menu", "--without", "helpful", "--out", str(tmp_path / "m.yaml")]) == 0
    kinds = [m["kind"] for m in yaml.safe_load((tmp_path / "m.yaml").read_text())]
    assert kinds == ["wrong_point", "malformed", "no_op"]
    assert main(["engineer", "menu", "--without", "helpfull", "--out", str(tmp_path / "x.yaml")]) == 2
    assert "--without helpfull: the menu's kinds are helpful, wrong_point" in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()
