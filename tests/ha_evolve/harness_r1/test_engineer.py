"""Training and evaluating the harness engineer: the fixture target ``hasty`` (helped by a veto or a
forced test run, not by a reminder), the ``menu:`` teacher, the driver's rollout source, and the
CLI's base / sft-data / eval / ablate on a real target (``tool_user``) with outputs on disk."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ha_agents.llm.base import LLMError
from ha_agents.llm.fixture_policies import HastyPolicy
from ha_agents.llm.registry import make_model
from ha_agents.train.driver import TrainConfig, train
from ha_envs.actions import ToolCall
from ha_envs.loaders import load_suite
from ha_evolve.harness_r1.engineer import FIXTURE_MENU, ablations, batch_items, summarize
from ha_evolve.harness_r1.harness_edit import HarnessEditEnv, Target

SUITE = {t.instance_id: t for t in load_suite("mini")}
IDS = ["mini__invoice_rounding", "mini__semver_ranges"]
ADD = "<patch>ops: [{op: add_tool, tool: run_tests}]</patch>"
HINT = ("<patch>ops: [{op: add_hook, hook: {name: test_hint, rule: {point: pre_decision, trigger: {min_turn: 0}, "
        "message: Run the tests first.}}}]</patch>")


def test_hasty_is_careful_on_a_seeded_fifth_of_its_episodes():
    solved = [ToolCall("submit", {"solved": True})]
    p = HastyPolicy(lambda task, info: list(solved))
    careful = [p.decide(SUITE[IDS[0]], {}, seed) == solved for seed in range(4000)]
    assert 0.18 < sum(careful) / len(careful) < 0.22
    assert careful[:50] == [p.decide(SUITE[IDS[0]], {}, s) == solved for s in range(50)]  # seeded


def test_hasty_target_is_helped_by_a_veto_or_a_forced_run_not_a_reminder(tmp_path):
    menu = {m["kind"]: m["reply"] for m in FIXTURE_MENU}
    force = ("<patch>ops: [{op: add_hook, hook: {name: show_tests, rule: {point: post_feedback, trigger: {tool: bash}, "
             "message: Tests ran., force: {command: 'python -m pytest -q 2>&1 | tail -3', timeout_s: 60}}}}]</patch>")
    code = ("<patch>ops: [{op: add_hook, hook: {name: gate_code, rule: {point: pre_action, code: \"def hook(ctx):\\n"
            "    if ctx['tool'] == 'submit' and ctx['test_runs'] == 0:\\n"
            "        return {'veto': True, 'message': 'Run the tests first.'}\\n\"}}}]</patch>")
    env = HarnessEditEnv(Target.create("hasty", "h0", runs=2, seed=3), [SUITE[IDS[0]]], [[IDS[0]]], [], tmp_path)
    got = {}
    for name, reply in (("veto", menu["helpful"]), ("reminder", menu["wrong_point"]), ("force", force),
                        ("code", code)):
        env.reset()
        _, reward, _, _, info = env.step(reply)
        got[name] = (info["base"][IDS[0]], info["patched"][IDS[0]])
    base = got["veto"][0]
    assert base < 1.0  # seed 3: at least one hasty episode of the two
    assert got["veto"] == (base, 1.0) and got["force"] == (base, 1.0)
    assert got["code"] == (base, 1.0)  # the same veto written as a code hook, run in the sandbox
    assert got["reminder"] == (base, base)  # the wrong lifecycle point changes nothing


def test_menu_client_draws_from_the_seed_and_refuses_bad_files(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("- a\n- {reply: b, weight: 3}\n- {reply: c, weight: 0}\n")
    c = make_model(f"menu:{f}")
    draws = [c.complete([], [], seed=s).text for s in range(400)]
    assert draws == [c.complete([], [], seed=s).text for s in range(400)]
    n = Counter(draws)
    assert n["c"] == 0 and 0.65 < n["b"] / 400 < 0.85
    for text, why in (("{}", "non-empty list"), ("- 3\n", "item 1"), ("- {reply: a, weight: 0}\n", "every weight")):
        f.write_text(text)
        with pytest.raises(LLMError, match=why):
            make_model(f"menu:{f}")
    with pytest.raises(LLMError, match="no such file"):
        make_model(f"menu:{tmp_path / 'none.yaml'}")


class _Source:
    """A rollout source of fixed records: item i's member k earns reward k (group 1..G)."""

    def __init__(self):
        self.calls = []

    def rollouts(self, items, group_size, client, *, seed, out, harness, skills):
        self.calls.append(([i.instance_id for i in items], group_size, seed))
        return [{"instance_id": i.instance_id, "run": k, "token_ids": [1, 2, 3], "loss_mask": [0, 1, 1],
                 "logprobs": [None, -1.0, -1.0], "reward": float(k), "termination": "patch_scored",
                 "info": {"stage": "passed", "rollouts": 2}} for i in items for k in range(1, group_size + 1)]

    def metrics(self, records):
        return {"comparison_rollouts": sum(r["info"]["rollouts"] for r in records), "extra": len(records)}


class _Recorder:
    """A trainer that keeps what it was given (the seam, not a model)."""

    def __init__(self):
        self.batches = []

    def update(self, samples):
        self.batches.append(samples)
        return {"loss": 0.0}

    def save(self, path):
        path.mkdir(parents=True, exist_ok=True)

    def load(self, path):
        pass

    def client(self):
        return "engineer"


def test_the_driver_trains_on_any_rollout_source(tmp_path):
    source, trainer = _Source(), _Recorder()
    items = batch_items([["a", "b"], ["c", "d"], ["e", "f"]])
    rows = train(trainer, items, TrainConfig(updates=2, tasks_per_update=2, group_size=3, progress=False),
                 tmp_path / "run", source=source)
    assert [len(c[0]) for c in source.calls] == [2, 2] and source.calls[0][2] != source.calls[1][2]
    assert {i for c in source.calls for i in c[0]} <= {"batch-0000", "batch-0001", "batch-0002"}
    adv = sorted(round(s.advantage, 3) for s in trainer.batches[0])
    assert adv == [-1.0, -1.0, 0.0, 0.0, 1.0, 1.0]  # reward minus the group mean, per batch
    assert rows[0]["extra"] == 6 and rows[-1]["ledger"]["comparison"] == 24 and rows[-1]["ledger"]["training"] == 12
    with pytest.raises(ValueError, match="default rollout source"):
        train(trainer, items, TrainConfig(updates=1, evolve_every=1), tmp_path / "other", source=source,
              evolve=lambda *a: None)


def test_summary_rates_and_the_lifecycle_variants():
    rows = [{"reward": 0.5, "info": {"stage": "passed", "rollouts": 4}}, {"reward": -0.5, "info": {"stage": "passed"}},
            {"reward": 0.0, "info": {"stage": "no_op"}}, {"reward": 0.0, "info": {"stage": "parse"}}]
    s = summarize(rows)
    assert (s["helpful_rate"], s["harmful_rate"], s["no_op_rate"], s["invalid_rate"], s["valid_rate"]) == \
        (0.25, 0.25, 0.25, 0.25, 0.75)
    assert s["comparison_rollouts"] == 4 and s["invalid_with_rollouts"] == 0
    both = "<patch>ops: [{op: add_tool, tool: run_tests}, " + HINT[len("<patch>ops: ["):]
    v = ablations(both)
    assert set(v) == {"full", "-tools", "-pre_decision"} and len(v["full"]) == 2
    assert [o["op"] for o in v["-tools"]] == ["add_hook"] and [o["op"] for o in v["-pre_decision"]] == ["add_tool"]


def test_ha_engineer_base_sft_data_eval_ablate_cli(tmp_path, capsys):
    """The user's path on a real target: batches, base outcomes once, a teacher's patches scored (the
    verified one kept; all with --keep all), an engineer evaluated on its batch and on a held-out
    task, a patch's lifecycle ablation; every key runs once across commands (one --out)."""
    from ha_cli.main import main

    ids = [*IDS, "mini__ttl_cache"]
    src = ["--suite", "mini", "--instances", *ids]
    assert main(["eval", *src, "--model", "tool_user", "--harness", "h0", "--no-progress", "--out", str(tmp_path / "t")]) == 0
    b = tmp_path / "b.json"
    assert main(["engineer", "batches", "--suite", "mini", "--instances", *IDS, "--run", str(tmp_path / "t"),
                 "--n", "2", "--out", str(b)]) == 0
    menu = tmp_path / "menu.yaml"
    menu.write_text(json.dumps([{"reply": ADD, "weight": 4}, "<patch>ops: [{op: set_params, tool: bash, params: {}}]</patch>",
                                "no patch"]))
    target = ["--model", "tool_user", "--runs", "1", "--out", str(tmp_path / "e")]
    capsys.readouterr()
    assert main(["engineer", "base", *src, "--batches", str(b), *target]) == 0
    assert "(2 rollouts)" in capsys.readouterr().out
    assert main(["engineer", "base", *src, "--batches", str(b), *target]) == 0
    assert "(cached)" in capsys.readouterr().out
    assert main(["engineer", "sft-data", *src, "--batches", str(b), "--teacher", f"menu:{menu}", "--samples", "6",
                 *target]) == 0
    rows = [json.loads(x) for x in (tmp_path / "e" / "sft.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["reply"] == ADD and rows[0]["reward"] == 1.0 and rows[0]["verified"]
    assert rows[0]["messages"][0]["role"] == "user" and "## Failures" in rows[0]["messages"][0]["content"]
    scores = [json.loads(x) for x in (tmp_path / "e" / "teacher-scores.jsonl").read_text().splitlines()]
    assert len(scores) == 6 and sum(s["info"]["rollouts"] for s in scores) == 2  # the patched side ran once
    assert all(s["info"]["rollouts"] == 0 for s in scores if s["kind"] in ("invalid", "no_op"))
    assert main(["engineer", "sft-data", *src, "--batches", str(b), "--teacher", f"menu:{menu}", "--samples", "6",
                 "--keep", "all", *target]) == 0
    assert len((tmp_path / "e" / "sft.jsonl").read_text().splitlines()) == 6
    capsys.readouterr()
    menu.write_text(json.dumps([ADD]))
    assert main(["engineer", "eval", *src, "--batches", str(b), "--engineer", f"menu:{menu}",
                 "--heldout-instances", "mini__ttl_cache", "--name", "fixed", *target]) == 0
    out = capsys.readouterr().out
    s = json.loads((tmp_path / "e" / "eval-fixed.json").read_text())
    assert s["batch_delta"] == 1.0 and s["heldout_delta"] == 1.0 and s["overfit_gap"] == 0.0, out
    assert (s["heldout_pass_base"], s["heldout_pass_patched"]) == (0.0, 1.0)
    # the rule mutator as a fixed editor over its rounds (--samples; 5 by default, as the schedule's):
    # round 1 adds a test runner (the target never ran a test), round 2 a change it has not tried
    assert main(["engineer", "eval", *src, "--batches", str(b), "--engineer", "proposer:rule", "--samples", "2",
                 "--heldout-instances", "mini__ttl_cache", "--name", "rule", *target]) == 0
    rule = json.loads((tmp_path / "e" / "eval-rule.json").read_text())
    rounds = [json.loads(x) for x in (tmp_path / "e" / "eval-rule.jsonl").read_text().splitlines()]
    assert len(rounds) == rule["patches"] == 2 and rounds[0]["reward"] == 1.0 and rounds[0]["heldout"]["delta"] == 1.0
    assert "round 1:" in rounds[0]["reply"] and "round 2:" in rounds[1]["reply"]
    assert rounds[0]["info"]["patch"] != rounds[1]["info"]["patch"]  # a candidate is never proposed twice for a batch
    assert rule["batch_delta"] == pytest.approx((rounds[0]["reward"] + rounds[1]["reward"]) / 2), rule
    reply = rounds[0]["reply"]
    assert "test runs per trajectory" in reply and "{op: add_tool, tool: run_tests}" in reply.replace("\n", " ") \
        or "tool: run_tests" in reply, reply
    assert main(["engineer", "eval", *src, "--batches", str(b), "--engineer", "none", "--name", "none", *target]) == 0
    none = json.loads((tmp_path / "e" / "eval-none.json").read_text())
    assert none["batch_delta"] == 0.0 and none["invalid_rate"] == 1.0 and none["comparison_rollouts"] == 0
    patch = tmp_path / "p.txt"
    patch.write_text("<patch>ops: [{op: add_tool, tool: run_tests}, " + HINT[len("<patch>ops: ["):])
    capsys.readouterr()
    assert main(["engineer", "ablate", *src, "--batches", str(b), "--patch", str(patch), *target]) == 0
    ab = json.loads((tmp_path / "e" / "ablation.json").read_text())
    assert ab["full"]["delta"] == 1.0 and ab["-pre_decision"]["delta"] == 1.0 and ab["-tools"]["delta"] == 0.0
    assert ab["-pre_decision"]["rollouts"] == 0  # that variant is the teacher's patch: cached
    assert main(["engineer", "eval", *src, "--batches", str(b), "--engineer", "none", "--heldout-instances", "nope",
                 *target]) == 2
    assert "not among the selected tasks" in capsys.readouterr().err
    assert main(["engineer", "sft", "--data", str(tmp_path / "e" / "sft.jsonl"), "--engineer", str(tmp_path / "none")]) == 2
    assert "--init-model" in capsys.readouterr().err


def test_engineer_batch_items_name_their_batches():
    items = batch_items([["x", "y"]])
    assert items[0].instance_id == "batch-0000" and items[0].task_ids == ("x", "y")


def test_ha_engineer_sft_in_lora_gives_an_adapter_and_a_plain_engineer(tmp_path, capsys):
    """The cold start of a larger engineer (issue 43 item 4): `ha engineer sft` takes `ha train`'s
    precision and size flags; with LoRA it prints the memory estimate (only the adapter trains), saves
    the adapter, and writes the merged engineer as a plain model directory `--engineer` takes next.
    verl's engineer GRPO refuses the local-only flags with the setting verl uses instead."""
    from ha_agents.train.local import LocalConfig, LocalTrainer
    from ha_cli.main import main

    data = tmp_path / "sft.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"## Failures\nbatch {k}"}],
                                        "reply": ADD, "reward": 1.0}) + "\n" for k in range(2)))
    out = tmp_path / "cold"
    assert main(["engineer", "sft", "--data", str(data), "--engineer", str(tmp_path / "eng"), "--init-model", "qwen",
                 "--lora-rank", "4", "--lr", "1e-2", "--epochs", "3", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    estimate = next(line for line in err.splitlines() if line.startswith("memory estimate"))
    assert "trainable" in estimate and (out / "adapter").is_dir(), err
    merged = LocalTrainer(out / "model", LocalConfig())  # a plain model directory, no adapter needed
    base = LocalTrainer(tmp_path / "eng", LocalConfig())
    changed = [n for n, p in merged.model.named_parameters()
               if not (p.detach() == dict(base.model.named_parameters())[n].detach()).all()]
    assert changed and all("proj" in n for n in changed)  # the adapter's modules, merged in; nothing else moved
    assert main(["engineer", "train", "--backend", "verl", "--suite", "mini", "--model", "tool_user", "--batches",
                 str(tmp_path / "missing.json"), "--engineer", str(out / "model"), "--lora-rank", "4",
                 "--out", str(tmp_path / "v")]) == 2
    assert "actor_rollout_ref.model.lora_rank" in capsys.readouterr().err
