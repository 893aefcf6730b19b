"""Candidate validation speaks the candidate's own tool-call format: a script tool added to every
preset (native calls) and to text-format harnesses (Hermes, Qwen3 XML) passes the smoke episode;
a broken one is rejected with its reason."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ha_agents.train.recipes import TRAIN_HARNESS
from ha_envs.harness import load_spec, preset_names
from ha_envs.harness.spec import Component
from ha_envs.loaders import load_suite
from ha_evolve.candidate_checks import validate_candidate

TASK = next(t for t in load_suite("mini") if t.instance_id == "mini__invoice_rounding")


def with_script_tool(spec, name="list_tests", script="find . -name 'test_*.py' -not -path './.git/*' | sort", **params):
    definition = {"description": "List the repository's test files.", "script": script,
                  "parameters": {"type": "object", "properties": {k: {"type": v} for k, v in params.items()},
                                 "required": list(params)}}
    tools = list(spec.tools)
    at = next(i for i, c in enumerate(tools) if c.name == "submit")
    tools[at:at] = [Component(name, {}, definition)]
    return replace(spec, name=spec.name + "+" + name, tools=tuple(tools)).validate()


def harnesses():
    out = {name: load_spec(name) for name in preset_names()}
    out["train-edit"] = TRAIN_HARNESS  # Hermes <tool_call> text, as `ha train` uses
    out["h0-qwen3-xml"] = replace(load_spec("h0"), name="h0-qwen3-xml",
                                  parser=replace(load_spec("h0").parser, format="qwen3_xml")).validate()
    return out


@pytest.mark.parametrize("name", sorted(harnesses()))
def test_a_valid_script_tool_passes_in_the_harness_format(name):
    parent = harnesses()[name]
    cand = with_script_tool(parent, pattern="string", depth="integer")
    check = validate_candidate(cand, parent, TASK)
    assert check.ok and check.stage == "passed", check.reason
    assert check.smoke_tools == ("list_tests",) and f"in the {parent.parser.format} format" in check.reason


def test_a_catalogue_tool_added_to_the_text_format_training_harness_passes():
    parent = TRAIN_HARNESS
    tools = list(parent.tools)
    tools[-1:-1] = [Component("run_tests"), Component("view_diff")]
    check = validate_candidate(replace(parent, tools=tuple(tools)).validate(), parent, TASK)
    assert check.ok and check.smoke_tools == ("run_tests", "view_diff"), check.reason


@pytest.mark.parametrize("name", ["h0", "train-edit"])
def test_a_broken_script_tool_is_rejected_with_its_reason(name):
    parent = harnesses()[name]
    cand = with_script_tool(parent, name="show_fixtures", script="ha_no_such_command --all")
    check = validate_candidate(cand, parent, TASK)
    assert not check.ok and check.stage == "smoke"
    assert "show_fixtures is broken" in check.reason and "exit 127" in check.reason


def test_a_policy_used_to_a_missing_tool_gets_it_through_the_paired_gate(tmp_path):
    """The co-evolution benchmark's mechanism, shortened and model-free: a policy with train-edit's
    habits (the oracle's edit_file calls, ``HabitPolicy``) under train-h0 fails every task with
    unknown-tool errors; the rule proposer reads that from the records and offers edit_file, the
    smoke check passes in the harness's Hermes text format, and the paired gate accepts over 6
    tasks (every task rose: p = 1/64; the exact test at 0.025 a rate needs 6) for a logged reason."""
    import json

    from ha_agents.llm.policies import POLICIES
    from ha_agents.train.recipes import HabitPolicy
    from ha_envs.loaders import load_suite
    from ha_evolve.proposers import RuleMutator
    from ha_evolve.schedule import EvolveConfig, Evolution

    ids = ["mini__ini_interpolation", "mini__invoice_rounding", "mini__url_router", "mini__semver_ranges",
           "mini__jsonpath_lite", "mini__ttl_cache"]
    POLICIES["habit_edit"] = lambda: HabitPolicy("train-edit")
    try:
        evo = Evolution(tmp_path / "evo", [t for t in load_suite("mini") if t.instance_id in ids], "habit_edit",
                        "train-h0", RuleMutator(), EvolveConfig(rounds=1, group_size=2, workers=2, seed=0))
        final = evo.run()
    finally:
        POLICIES.pop("habit_edit", None)
    assert "edit_file" in final.tool_names and final.parser.format == "hermes"
    [prop] = [json.loads(l) for l in (tmp_path / "evo" / "evolution.jsonl").read_text().splitlines()
              if json.loads(l).get("kind") == "proposal"]
    assert prop["accepted"] and prop["decided_by"] == "paired" and prop["validation"]["ok"]
    assert "tools this harness lacks: edit_file" in prop["diagnosis"]
    assert prop["current_rates"]["pass_rate"] == 0.0 and prop["candidate_rates"]["pass_rate"] == 1.0
    assert "pass rate rose" in prop["decision_reason"] and "p = 0.0156" in prop["decision_reason"]
