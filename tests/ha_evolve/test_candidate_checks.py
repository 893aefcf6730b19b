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
