"""Evolution: the gate decides for the right reasons, invalid candidates cost no rollouts, a teacher
over HTTP adds a script tool and a rule hook, the rule mutator reads the statistics, `ha evolve`
writes its log, specs and figures and resumes."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import yaml

from ha_agents.train.grpo import RateReport
from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_cli.main import main
from ha_envs.harness import load_spec
from ha_envs.harness.spec import Component
from ha_envs.loaders import load_suite
from ha_evolve.gate import dual_rate_gate, stat_gate
from ha_evolve.proposers import RuleMutator, make_proposer, ProposerOptions
from ha_evolve.report import table
from ha_evolve.schedule import EvolveConfig, Evolution
from ha_evolve.summary import trajectory_stats

from tests.ha_evolve.conftest import TASKS, FixedProposer

SUITE = {t.instance_id: t for t in load_suite("mini")}


def with_tool(spec, *names):
    tools = list(spec.tools)
    tools[-1:-1] = [Component(n) for n in names]
    return replace(spec, name=spec.name + "+" + "+".join(names), tools=tuple(tools)).validate()


def run(tmp_path, proposer, wins, rounds=1, **cfg):
    from tests.ha_evolve.conftest import ToolSensitive

    ToolSensitive.wins = wins
    evo = Evolution(tmp_path / "evo", [SUITE[t] for t in TASKS], "tool_sensitive", "h0", proposer,
                    EvolveConfig(rounds=rounds, group_size=2, workers=2, bootstrap_samples=200, **cfg))
    final = evo.run()
    props = [r for r in evo.log.records if r.get("kind") == "proposal"]
    return final, props


A, B = TASKS


def test_more_passes_but_less_signal_is_rejected(tmp_path, sensitive):
    cand = with_tool(load_spec("h0"), "run_tests")
    # without the tool each group is mixed (1 of 2); with it every sample passes: all-success groups
    final, (p,) = run(tmp_path, FixedProposer(cand), {(A, False): {1}, (B, False): {1}, (A, True): {1, 2}, (B, True): {1, 2}})
    assert p["current_rates"]["pass_rate"] == 0.5 and p["current_rates"]["trainable_rate"] == 1.0
    assert p["candidate_rates"]["pass_rate"] == 1.0 and p["candidate_rates"]["trainable_rate"] == 0.0
    assert not p["accepted"] and p["gate"]["reason"] == "trainable rate fell"
    assert final.hash == load_spec("h0").hash


def test_both_rates_up_is_accepted_and_attributed(tmp_path, sensitive):
    cand = with_tool(load_spec("h0"), "run_tests", "think")
    final, (p,) = run(tmp_path, FixedProposer(cand), {(A, False): {1}, (A, True): {1}, (B, True): {2}}, attribute=True,
                      decide_by="gate")  # the paper's point rule; two tasks are too few for the paired one
    assert p["current_rates"]["pass_rate"] == 0.25 and p["candidate_rates"]["pass_rate"] == 0.5
    assert p["current_rates"]["trainable_rate"] == 0.5 and p["candidate_rates"]["trainable_rate"] == 1.0
    assert p["accepted"] and p["gate"]["accept"] and final.hash == cand.hash and p["decided_by"] == "point"
    assert not p["paired"]["accept"] and p["paired"]["reason"].startswith("not enough evidence: 2 task(s)")
    assert [d.split(" {")[0] for d in p["diff"]] == ["+ tool run_tests", "+ tool think"]
    by = {a["component"]: a for a in p["attribution"]}
    assert by["tool run_tests"]["pass_drop"] == 0.25 and by["tool run_tests"]["trainable_drop"] == 0.5
    assert by["tool think"]["pass_drop"] == 0.0 and by["tool think"]["trainable_drop"] == 0.0
    assert (tmp_path / "evo" / "specs" / f"{cand.hash}.yaml").is_file()


def test_a_tie_is_rejected(tmp_path, sensitive):
    cand = with_tool(load_spec("h0"), "think")  # a tool the policy ignores
    final, (p,) = run(tmp_path, FixedProposer(cand), {(A, False): {1}, (A, True): {1}})
    assert p["current_rates"] == p["candidate_rates"] and not p["accepted"]
    assert p["gate"]["reason"] == "neither rate rose"


def test_a_candidate_rejected_in_one_epoch_may_come_back_in_the_next(tmp_path, sensitive):
    """Within an epoch a candidate is offered once; an earlier epoch's rejection may be offered again
    (the policy has changed since), an accepted one never."""
    cand = with_tool(load_spec("h0"), "think")
    run(tmp_path, FixedProposer(cand), {(A, False): {1}, (A, True): {1}}, rounds=2)  # epoch 1: a tie, rejected
    final2, _ = run(tmp_path, FixedProposer(cand), {(A, False): {1}, (A, True): {1}}, rounds=1, epoch=2)
    props = [json.loads(l) for l in (tmp_path / "evo" / "evolution.jsonl").read_text().splitlines()
             if json.loads(l).get("kind") == "proposal"]
    assert [(p["epoch"], p["candidate_hash"] is not None) for p in props] == [(1, True), (1, False), (2, True)]
    assert final2.hash == load_spec("h0").hash


def test_an_invalid_candidate_never_reaches_comparison(tmp_path, sensitive):
    bad = replace(load_spec("h0"), tools=load_spec("h0").tools + (Component("broken", {}, {
        "description": "x", "script": "if then ("}),))
    final, (p,) = run(tmp_path, FixedProposer(bad), {}, max_invalid=0)
    assert p["validation"]["ok"] is False and p["validation"]["stage"] == "schema"
    assert "does not parse" in p["validation"]["reason"]
    assert p["rollouts"]["candidate"] == 0 and "candidate_rates" not in p and p["candidate_hash"] is None
    assert [d.name for d in (tmp_path / "evo" / "rollouts").iterdir()] == [load_spec("h0").hash]
    rounds = [r for r in json.loads("[" + ",".join((tmp_path / "evo" / "evolution.jsonl").read_text().split("\n")[:-1]) + "]")
              if r["kind"] == "round"]
    assert rounds[-1]["stop"] is False and rounds[-1]["invalid"] == 1  # an invalid proposal does not end evolution


def test_statistical_gate_needs_more_than_noise():
    def recs(pattern):
        return [{"instance_id": f"t{i}", "reward": float(w), "termination": "submitted"}
                for i, ws in enumerate(pattern) for w in ws]
    cur = recs([(1, 0)] * 20)
    better = recs([(1, 1)] * 2 + [(1, 0)] * 18)  # 2 of 20 tasks better: within the noise
    much = recs([(1, 1, 0)[:2] if i % 2 else (1, 0) for i in range(20)])
    assert not stat_gate(cur, better, seed=1).accept
    assert dual_rate_gate(RateReport(0.5, 1.0, 40, 20, 0, 0), RateReport(0.55, 0.9, 40, 18, 2, 0)).reason == "trainable rate fell"
    up = stat_gate(recs([(0, 0)] * 20), recs([(1, 0)] * 20), seed=1)
    assert up.accept and up.pass_ci[0] > 0 and up.trainable_ci[0] > 0
    down = stat_gate(recs([(1, 0)] * 20), recs([(1, 1)] * 20), seed=1)
    assert not down.accept and "trainable rate fell" in down.reason
    assert stat_gate(cur, much, seed=1).n_tasks == 20


def test_rule_mutator_reads_the_statistics():
    long_out = {"role": "tool", "source": "tool", "content": "x" * 5000}
    recs = [{"instance_id": "a", "run": k, "resolved": False, "termination": "submitted", "test_runs": 0,
             "delivery": {"tested_after_last_edit": False}, "messages": [long_out, long_out], "tool_counts": {"bash": 3}}
            for k in (1, 2)]
    st = trajectory_stats(recs)
    assert st.untested_submits == 1.0 and st.long_outputs_per_traj == 2.0 and st.test_runs_per_traj == 0.0
    m = RuleMutator()
    p1 = m.propose(load_spec("h0"), recs, set())
    assert p1.candidate is not None and {"run_tests", "run_check"} <= set(p1.candidate.tool_names)
    assert "test runs per trajectory" in p1.diagnosis
    p2 = m.propose(load_spec("h0"), recs, {p1.candidate.hash})
    assert p2.candidate.hook_names == ["submit_gate"]  # the next rule, since the first was tried
    empty = m.propose(load_spec("h2"), [dict(r, test_runs=3, delivery={"tested_after_last_edit": True}, messages=[])
                                        for r in recs], set())
    assert empty.candidate is None and empty.error


def test_llm_teacher_over_http_adds_a_script_tool_and_a_rule_hook(tmp_path, sensitive):
    h0 = load_spec("h0").to_dict()
    h0["tools"].insert(1, {"name": "list_tests", "script": {
        "description": "List the repository's test files.", "parameters": {"type": "object", "properties": {}},
        "script": "find . -name 'test_*.py' -not -path './.git/*' | sort"}})
    h0["hooks"] = [{"name": "start_note", "rule": {"point": "pre_decision", "trigger": {"min_turn": 0},
                                                   "message": "Turn {turn}: find the tests first.", "max_fires": 1}}]
    reply = ("## Diagnosis\nAgents submit without ever locating the tests.\n\n## Harness\n```yaml\n"
             + yaml.safe_dump(h0, sort_keys=False) + "```\n")
    prompts = []

    def respond(body):
        prompts.append(body["messages"][0]["content"])
        return {"content": reply}

    from tests.ha_evolve.conftest import ToolSensitive

    ToolSensitive.wins = {(A, False): {1}, (A, True): {1}}
    with FakeOpenAIServer(respond) as srv:
        proposer = make_proposer("llm", ProposerOptions(teacher=f"openai:teacher@{srv.url}"))
        evo = Evolution(tmp_path / "evo", [SUITE[A]], "tool_sensitive", "h0", proposer,
                        EvolveConfig(rounds=1, group_size=2, workers=1, bootstrap_samples=100))
        evo.run()
    (p,) = [r for r in evo.log.records if r.get("kind") == "proposal"]
    assert "## Current harness" in prompts[0] and "trainable rate" in prompts[0] and A in prompts[0]
    assert p["validation"]["ok"] and list(p["validation"]["smoke_tools"]) == ["list_tests"]
    assert "+ tool list_tests" in " ".join(p["diff"]) and "+ hook start_note" in " ".join(p["diff"])
    assert p["diagnosis"].startswith("Agents submit without")
    recs = [json.loads(l) for l in next((tmp_path / "evo" / "rollouts" / p["candidate_hash"]).rglob("trajectories.jsonl"))
            .read_text().splitlines()]
    assert all(r["hooks"]["start_note"]["count"] == 1 for r in recs)
    assert all(m["content"].startswith("Turn 0: find the tests") for r in recs for m in r["messages"]
               if m.get("source") == "hook:start_note")


def test_ha_evolve_cli_end_to_end_and_resume(tmp_path, capsys):
    out = tmp_path / "cli"
    args = ["evolve", "run", "--suite", "mini", "--instances", *TASKS, "--model", "oracle", "--proposer", "rule",
            "--rounds", "1", "--group-size", "2", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "| epoch | round | proposer |" in printed and "frozen harness" in printed
    assert (out / "evolution.jsonl").is_file() and (out / "harness.yaml").is_file()
    assert (out / "figures" / "candidates.png").stat().st_size > 1000 and (out / "figures" / "rounds.png").is_file()
    (p,) = [json.loads(l) for l in (out / "evolution.jsonl").read_text().splitlines() if '"proposal"' in l]
    assert p["proposer"] == "rule" and p["rollouts"]["current"] == 4
    assert any(d.startswith("+ tool run_tests") for d in p["diff"])
    # a rerun without --resume refuses; with it, nothing is repeated
    assert main(args) == 2
    n = len((out / "evolution.jsonl").read_text().splitlines())
    assert main(args + ["--resume"]) == 0
    assert len((out / "evolution.jsonl").read_text().splitlines()) == n
    capsys.readouterr()
    assert main(["evolve", "log", str(out)]) == 0 and "rule" in capsys.readouterr().out
    assert table(out).count("\n") == 2


def test_config_is_checked():
    with pytest.raises(ValueError, match="group_size"):
        EvolveConfig(group_size=1).validate()
    with pytest.raises(ValueError, match="decide_by"):
        EvolveConfig(decide_by="vote").validate()
    with pytest.raises(ValueError, match="'auto' is gone"):
        EvolveConfig(decide_by="auto").validate()
    with pytest.raises(ValueError, match="alpha"):
        EvolveConfig(alpha=0.0).validate()
    with pytest.raises(ValueError, match="tasks"):
        EvolveConfig(tasks=0).validate()


def test_cli_teacher_edits_the_harness_in_its_work_directory(tmp_path):
    from ha_evolve.proposers import CLITeacher

    script = tmp_path / "agent.py"
    script.write_text(
        "import yaml\n"
        "spec = yaml.safe_load(open('harness.yaml'))\n"
        "assert 'Trajectories' in open('trajectories.md').read() and 'rule hooks' in open('PROMPT.md').read()\n"
        "spec['hooks'] = (spec.get('hooks') or []) + ['stuck_detector']\n"
        "yaml.safe_dump(spec, open('harness.yaml', 'w'), sort_keys=False)\n"
        "open('diagnosis.md', 'w').write('Agents loop on the same command.')\n")
    import sys

    recs = [{"instance_id": "a", "run": 1, "resolved": False, "termination": "submitted", "messages": []}]
    p = CLITeacher(f"{sys.executable} {script}").propose(load_spec("h0"), recs, set())
    assert p.candidate is not None and p.candidate.hook_names == ["stuck_detector"]
    assert p.diagnosis == "Agents loop on the same command." and p.proposer == "cli"
    failing = CLITeacher("exit 3").propose(load_spec("h0"), recs, set())
    assert failing.candidate is None and "exited 3" in failing.error
    unchanged = CLITeacher("true").propose(load_spec("h0"), recs, set())
    assert unchanged.candidate is None and "unchanged" in unchanged.error


def test_a_crash_mid_round_resumes_without_repeating_rollouts(tmp_path, sensitive):
    from tests.ha_evolve.conftest import ToolSensitive

    class Crashing:
        name = "crashing"

        def propose(self, current, records, tried):
            raise RuntimeError("teacher process killed")

    ToolSensitive.wins = {(A, False): {1}}
    tasks = [SUITE[A]]
    cfg = EvolveConfig(rounds=1, group_size=2, workers=1, bootstrap_samples=100)
    with pytest.raises(RuntimeError, match="killed"):
        Evolution(tmp_path / "evo", tasks, "tool_sensitive", "h0", Crashing(), cfg).run()
    current_log = next((tmp_path / "evo" / "rollouts" / load_spec("h0").hash).rglob("trajectories.jsonl"))
    before = current_log.read_text()
    assert len(before.splitlines()) == 2
    evo = Evolution(tmp_path / "evo", tasks, "tool_sensitive", "h0",
                    FixedProposer(with_tool(load_spec("h0"), "think")), cfg)
    evo.run()
    assert current_log.read_text() == before  # the current side was not run again
    (p,) = [r for r in evo.log.records if r.get("kind") == "proposal"]
    assert p["rollouts"]["current"] == 2 and p["rollouts"]["candidate"] == 2


def test_a_tool_the_policy_calls_but_the_harness_lacks_is_proposed_first():
    """A policy that expects ``edit_file`` (as one warm-started on train-edit does) under train-h0:
    each call is an unknown-tool format error in the record; the rule mutator reads those real
    records and offers exactly the tool, ahead of every other rule; a name outside the catalogue is
    never proposed."""
    from ha_agents.episode import run_episode
    from ha_agents.llm.policies import ScriptedPolicy
    from ha_envs.actions import ToolCall

    task = SUITE["mini__invoice_rounding"]
    calls = [ToolCall("edit_file", {"path": "x.py", "old_str": "a", "new_str": "b"}), ToolCall("submit", {})]
    recs = [run_episode(task, ScriptedPolicy(calls), "train-h0", seed=k) for k in (1, 2)]
    assert all(not r["resolved"] for r in recs)
    st = trajectory_stats(recs)
    assert st.unknown_tools == {"edit_file": 2}
    p = RuleMutator().propose(load_spec("train-h0"), recs, set())
    assert p.candidate is not None and p.candidate.tool_names == ["bash", "edit_file", "submit"]
    assert "edit_file (2x)" in p.diagnosis and p.candidate.parser == load_spec("train-h0").parser
    invented = [run_episode(task, ScriptedPolicy([ToolCall("teleport", {}), ToolCall("submit", {})]), "train-h0", seed=1)]
    assert trajectory_stats(invented).unknown_tools == {"teleport": 1}
    q = RuleMutator().propose(load_spec("train-h0"), invented, set())
    assert q.candidate is None or "teleport" not in q.candidate.tool_names


def test_the_budget_rule_retunes_a_list_parameter():
    """budget_reminder's turns_left is a list ([10, 3]): the retune rule scales each entry (it raised
    TypeError before), and the result validates."""
    from ha_evolve.proposers import RULES

    recs = [{"instance_id": "a", "run": k, "resolved": False, "termination": "max_turns", "test_runs": 2,
             "delivery": {"tested_after_last_edit": True}, "messages": [], "tool_counts": {"bash": 3}, "edits": 1,
             "patch": "x"} for k in (1, 2)]
    spec = load_spec("h2")
    retune = RULES[-1]
    assert retune.why(trajectory_stats(recs)) is not None
    new = retune.apply(spec, trajectory_stats(recs)).validate()
    assert next(c for c in new.hooks if c.name == "budget_reminder").params["turns_left"] == [20, 6]


def _epoch(tmp_path, start, proposer, epoch, version):
    evo = Evolution(tmp_path / "evo", [SUITE[t] for t in TASKS], "tool_sensitive", start, proposer,
                    EvolveConfig(rounds=1, group_size=2, workers=2, bootstrap_samples=200, decide_by="point", epoch=epoch),
                    policy_version=version)
    return evo, evo.run()


def test_a_frozen_policys_preparation_batch_is_reused_across_epochs_but_never_a_comparison(tmp_path, sensitive):
    """With the weights named (``policy_version``) and unchanged, epoch 2's preparation batch (the
    same harness, tasks, group size and seeds) is epoch 1's, read back, not run again; the round says
    so and counts only what ran. A comparison is never reused: its current side is drawn afresh with
    the epoch's own seeds. Weights that changed, or an earlier batch with a masked episode, run again."""
    cand = with_tool(load_spec("h0"), "run_tests", "think")
    sensitive.wins = {(A, False): {1}, (A, True): {1}, (B, True): {2}}
    evo1, final = _epoch(tmp_path, "h0", FixedProposer(cand), 1, "w@update-0")
    assert final.hash == cand.hash
    [r1] = [r for r in evo1.log.records if r.get("kind") == "round"]
    assert r1["rollouts_run"] == 4 + 1 + 4 + 4 and r1["preparation_run"] == 4  # prep, smoke, fresh current, candidate

    runs_before = dict(sensitive._counts)
    other = with_tool(load_spec("h0"), "think")
    evo2, _ = _epoch(tmp_path, "h0", FixedProposer(other), 2, "w@update-0")
    [r2] = [r for r in evo2.log.records if r.get("kind") == "round" and r["epoch"] == 2]
    [p2] = [r for r in evo2.log.records if r.get("kind") == "proposal" and r["epoch"] == 2]
    source = tmp_path / "evo" / "rollouts" / load_spec("h0").hash / "e1r1-prep"
    assert p2["reused"] == {"preparation": str(source), "current": None, "candidate": None}
    assert r2["preparation_run"] == 0 and r2["rollouts_run"] == 1 + 4 + 4  # smoke, fresh current, candidate
    assert sum(sensitive._counts.values()) - sum(runs_before.values()) == 8
    assert p2["preparation_rates"] == [p for p in evo1.log.records if p.get("kind") == "proposal"][0]["preparation_rates"]
    assert json.loads((source.parent / "e2r1-prep" / "reused.json").read_text())["from"] == str(source)

    # the weights changed: run again
    evo3, _ = _epoch(tmp_path, "h0", FixedProposer(None), 3, "w@update-2")
    [r3] = [r for r in evo3.log.records if r.get("kind") == "round" and r["epoch"] == 3]
    assert r3["rollouts_run"] == 4
    # an earlier batch with a masked episode is never reused (e1r1-prep and e3r1-prep ran this draw: mask both)
    for d in ("e1r1-prep", "e3r1-prep"):
        log = source.parent / d / "trajectories.jsonl"
        recs = [json.loads(l) for l in log.read_text().splitlines()]
        recs[0]["mask_sample"] = True
        log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    evo4, _ = _epoch(tmp_path, "h0", FixedProposer(None), 4, "w@update-0")
    [r4] = [r for r in evo4.log.records if r.get("kind") == "round" and r["epoch"] == 4]
    assert r4["rollouts_run"] == 4
    # without a name for the weights nothing is reused
    evo5, _ = _epoch(tmp_path, "h0", FixedProposer(None), 5, None)
    [r5] = [r for r in evo5.log.records if r.get("kind") == "round" and r["epoch"] == 5]
    assert r5["rollouts_run"] == 4 and not (source.parent / "e5r1-prep" / "draw.json").exists()


def test_a_round_says_each_batch_it_ran_with_an_eta_for_the_epoch(tmp_path, sensitive):
    """A round is minutes of rollouts: each batch it runs is a line (what it was, its size and time,
    the epoch's rollouts so far of the plan's most, and an ETA for the rest at this pace)."""
    import re

    from tests.ha_evolve.conftest import ToolSensitive

    ToolSensitive.wins = {(A, True): {1, 2}, (B, True): {1, 2}}
    said: list[str] = []
    cand = with_tool(load_spec("h0"), "run_tests")
    Evolution(tmp_path / "evo", [SUITE[t] for t in TASKS], "tool_sensitive", "h0", FixedProposer(cand),
              EvolveConfig(rounds=1, group_size=2, workers=2, bootstrap_samples=200), progress=said.append).run()
    lines = [s for s in said if s.startswith("  round 1: ")]
    assert [re.sub(r"\d+:\d\d", "T", s.split(": ", 2)[1]) for s in lines] == [
        "the proposer's batch", "h0's comparison batch", f"{cand.name}'s comparison batch"]
    assert re.fullmatch(r"  round 1: the proposer's batch: 4 rollouts in \d+:\d\d; 4 of at most 12 this epoch, "
                        r"ETA at most \d+:\d\d", lines[0]), lines[0]
    assert lines[-1].endswith("12 of at most 12 this epoch, ETA at most 0:00")
