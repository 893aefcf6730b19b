"""HarnessSpec: round trips, hash stability, diff, ablations, invalid specs and the schema."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace

import pytest

from ha_envs.harness import PARSERS, HarnessSpec, HarnessSpecError, diff, load_spec, preset_names
from ha_envs.harness.schema import json_schema, problems
from ha_envs.harness.spec import PRESET_DIR, Component, read_data_file


def test_presets_match_the_paper_counts():
    assert set(preset_names()) >= {"h0", "h1", "h2", "openhands"}
    h0, h1, h2 = load_spec("h0"), load_spec("h1"), load_spec("h2")
    assert h0.tool_names == ["bash", "submit"] and h0.hooks == ()
    # T (tools besides H0's bash and submit) and K, as in the paper: H1 = 7 tools, 4 hooks; H2 = 8 tools, 5 hooks
    assert len(set(h1.tool_names) - {"bash", "submit"}) == 7 and len(h1.hooks) == 4
    assert len(set(h2.tool_names) - {"bash", "submit"}) == 8 and len(h2.hooks) == 5
    for named in ("view_diff", "restore_file", "run_check"):
        assert named in h1.tool_names
    assert {"run_tests"} <= set(h2.tool_names) and {"review_on_submit", "long_output_condenser"} <= set(h2.hook_names)
    assert load_spec("openhands").tool_names == ["bash", "str_replace_editor", "think", "submit"]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_round_trip_keeps_hash(tmp_path, suffix):
    for name in preset_names():
        spec = load_spec(name)
        back = HarnessSpec.load(spec.save(tmp_path / f"{name}{suffix}"))
        assert back == spec and back.hash == spec.hash


def test_hash_is_stable_and_about_behaviour_only():
    h2 = load_spec("h2")
    assert h2.hash == load_spec("h2").hash and len(h2.hash) == 16
    # renaming or re-describing does not change behaviour
    renamed = HarnessSpec.from_dict(dict(h2.to_dict(), name="other", description="x"))
    assert renamed.hash == h2.hash
    # spelling a default out does not either
    spelled = HarnessSpec.from_dict(dict(h2.to_dict(), hooks=[{"name": "budget_reminder", "params": {"turns_left": [10, 3]}}
                                                               if h == "budget_reminder" else h for h in h2.to_dict()["hooks"]]))
    assert spelled.hash == h2.hash
    # any behavioural change does
    tweaked = HarnessSpec.from_dict(dict(h2.to_dict(), hooks=[{"name": "budget_reminder", "params": {"turns_left": [5]}}
                                                               if h == "budget_reminder" else h for h in h2.to_dict()["hooks"]]))
    assert tweaked.hash != h2.hash
    reordered = HarnessSpec.from_dict(dict(h2.to_dict(), hooks=list(reversed(h2.to_dict()["hooks"]))))
    assert reordered.hash != h2.hash


def test_diff_lists_every_change():
    h1, h2 = load_spec("h1"), load_spec("h2")
    changes = diff(h1, h2)
    assert "- hook stuck_detector" in changes and "- hook dangerous_command_guard" in changes
    assert any(c.startswith("+ tool run_tests") for c in changes)
    assert any(c.startswith("+ hook review_on_submit") for c in changes)
    assert diff(h2, h2) == []
    d = h2.to_dict()
    d["limits"]["max_turns"] = 40
    d["hooks"] = [{"name": "budget_reminder", "params": {"turns_left": [5]}} if h == "budget_reminder" else h
                  for h in d["hooks"]][::-1]
    changes = diff(h2, HarnessSpec.from_dict(d))
    assert "limits.max_turns: 60 -> 40" in changes
    assert "~ hook budget_reminder.turns_left: [10, 3] -> [5]" in changes
    assert any(c.startswith("~ hooks order: long_output_condenser, budget_reminder") for c in changes)


def test_without_builds_an_ablation():
    h2 = load_spec("h2")
    ab = h2.without("view_diff", "budget_reminder")
    assert "view_diff" not in ab.tool_names and "budget_reminder" not in ab.hook_names
    assert ab.hash != h2.hash and ab.name == "h2-without-view_diff-budget_reminder"
    assert diff(h2, ab) == ["- tool view_diff", "- hook budget_reminder"]
    with pytest.raises(HarnessSpecError, match="cannot remove nothing: not in harness 'h2'"):
        h2.without("nothing")


VALID = {"name": "t", "parser": {"format": "auto"}, "limits": {},
         "tools": ["bash", "read_file", "view_diff", "run_tests", "submit"],
         "hooks": ["budget_reminder", "verification_reminder"]}


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d["tools"].append("teleport"), "tools[5]: unknown tool 'teleport'; available: bash, "),
    (lambda d: d["tools"].append("read_fil"), "tools[5]: unknown tool 'read_fil'; did you mean 'read_file'?"),
    (lambda d: d["tools"].append({"name": "run_chek", "params": {"timeout_s": 3}}), "did you mean 'run_check'?"),
    (lambda d: d["tools"].append("bash"), "tools[5]: duplicate tool 'bash'"),
    (lambda d: d["hooks"].append("budget_reminder"), "hooks[2]: duplicate hook 'budget_reminder'"),
    (lambda d: d["hooks"].append("mind_reader"), "hooks[2]: unknown hook 'mind_reader'"),
    (lambda d: d["hooks"].append("stuck_detecter"), "unknown hook 'stuck_detecter'; did you mean 'stuck_detector'?"),
    (lambda d: d.update(tools=["submit", "view_diff"], hooks=["verification_reminder"]),
     "hooks[0]: hook 'verification_reminder' needs one of the tools bash, run_tests, run_check"),
    (lambda d: d["tools"].remove("submit"), "has no `submit` tool"),
    (lambda d: d["parser"].update(format="xml9"), "parser.format: unknown parser 'xml9'"),
    (lambda d: d["parser"].update(format="hermez"), "unknown parser 'hermez'; did you mean 'hermes'?"),
    (lambda d: d["parser"].update(multi_call="some"), "unknown multi_call policy 'some'"),
    (lambda d: d["parser"].update(format="fenced_bash"), "the fenced_bash parser can only call bash and submit"),
    (lambda d: d["parser"].update(max_format_errors=0), "parser.max_format_errors: expected an integer >= 1, got 0"),
    (lambda d: d["hooks"].append({"name": "stuck_detector", "params": {"same_stepp": 3}}),
     "hooks[2].params.same_stepp: unknown key; did you mean 'same_step'? allowed: same_step, "),
    (lambda d: d["hooks"].append({"name": "stuck_detector", "params": {"same_step": "3"}}),
     "hooks[2].params.same_step: expected an integer >= 0, got '3'"),
    (lambda d: d["hooks"].append({"name": "stuck_detector", "params": {"same_step": -1}}),
     "hooks[2].params.same_step: expected an integer >= 0, got -1"),
    (lambda d: d["hooks"].append({"name": "repo_overview", "params": {"text": 7}}),
     "hooks[2].params.text: expected a string, got 7"),
    (lambda d: d["hooks"][0:1].clear() or d["hooks"].insert(0, {"name": "budget_reminder", "params": {"turns_left": [3, "x"]}}),
     "hooks[0].params.turns_left[1]: expected an integer >= 0, got 'x'"),
    (lambda d: d["hooks"][0:1].clear() or d["hooks"].insert(0, {"name": "budget_reminder", "params": {"turns_left": [0]}}),
     "hooks[0]: hook 'budget_reminder': turns_left must be a list of positive integers"),
    (lambda d: d["tools"].append({"name": "run_check", "params": {"timeout_s": True}}),
     "tools[5].params.timeout_s: expected a number >= 0, got True"),
    (lambda d: d["tools"].append({"name": "run_check", "params": {"timeout_s": "abc"}}),
     "tools[5].params.timeout_s: expected a number >= 0, got 'abc'"),
    (lambda d: d["tools"].append({"name": "run_check", "timeout_s": 3}),
     "tools[5].timeout_s: unknown key; allowed: name, params"),
    (lambda d: d["tools"].append({"name": "think", "params": {"x": 1}}), "tools[5].params.x: unknown key; allowed: none"),
    (lambda d: d["limits"].update(max_turns=0), "limits.max_turns: expected an integer >= 1, got 0"),
    (lambda d: d["limits"].update(max_turns=-5), "limits.max_turns: expected an integer >= 1, got -5"),
    (lambda d: d["limits"].update(max_turns="60"), "limits.max_turns: expected an integer >= 1, got '60'"),
    (lambda d: d["limits"].update(max_turns=2.5), "limits.max_turns: expected an integer >= 1, got 2.5"),
    (lambda d: d["limits"].update(command_timeout_s="abc"), "limits.command_timeout_s: expected a number > 0, got 'abc'"),
    (lambda d: d["limits"].update(command_timeout_s=0), "limits.command_timeout_s: expected a number > 0, got 0"),
    (lambda d: d["limits"].update(output_head_bytes=-1), "limits.output_head_bytes: expected an integer >= 0, got -1"),
    (lambda d: d["limits"].update(max_turn=5), "limits.max_turn: unknown key; did you mean 'max_turns'?"),
    (lambda d: d.update(colour="blue"), "colour: unknown key; allowed: name, description, "),
    (lambda d: d.update(name=3), "name: expected a string, got 3"),
    (lambda d: d.update(limits=[1]), "limits: expected a mapping, got [1]"),
    (lambda d: d["tools"].append(["bash"]), "tools[5]: a tool entry must be a name or"),
])
def test_invalid_specs_are_rejected_clearly(mutate, message):
    d = copy.deepcopy(VALID)
    HarnessSpec.from_dict(d).validate()
    mutate(d)
    with pytest.raises(HarnessSpecError, match=re.escape(message)):
        HarnessSpec.from_dict(d).validate()


def test_every_problem_is_reported_at_once():
    d = dict(copy.deepcopy(VALID), colour="blue", limits={"max_turns": -1})
    with pytest.raises(HarnessSpecError) as err:
        HarnessSpec.from_dict(d, origin="mine.yaml")
    assert str(err.value) == ("mine.yaml: 2 problems:\n  - limits.max_turns: expected an integer >= 1, got -1\n  - "
                              "colour: unknown key; allowed: name, description, base, parser, limits, system_prompt, "
                              "tools, hooks")


def test_a_spec_built_in_code_is_checked_against_the_schema_too():
    h0 = load_spec("h0")
    with pytest.raises(HarnessSpecError, match=re.escape("limits.max_turns: expected an integer >= 1, got -1")):
        h0.with_limits(max_turns=-1).validate()
    with pytest.raises(HarnessSpecError, match=re.escape("tools[2]: unknown tool 'read_fil'; did you mean 'read_file'?")):
        replace(h0, tools=h0.tools + (Component("read_fil"),)).validate()


def test_load_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: mine\ntools: [bash\nhooks: []\n")
    with pytest.raises(HarnessSpecError, match=re.escape(f"{bad}:3:6: not valid YAML: while parsing a flow sequence")):
        load_spec(bad)
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"name": "x",\n "tools": [}')
    with pytest.raises(HarnessSpecError, match=re.escape(f"{bad_json}:2:12: not valid JSON: Expecting value")):
        load_spec(bad_json)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("tools: [bash, submit]\nlimits: {max_turns: -1}\n")
    with pytest.raises(HarnessSpecError, match=re.escape(f"{wrong}: limits.max_turns: expected an integer >= 1, got -1")):
        load_spec(wrong)
    # errors found after the schema (cross-field) name the file too
    (tmp_path / "nosubmit.yaml").write_text("tools: [bash]\n")
    with pytest.raises(HarnessSpecError, match=re.escape(f"{tmp_path / 'nosubmit.yaml'}: tools: the harness has no")):
        load_spec(tmp_path / "nosubmit.yaml")
    with pytest.raises(HarnessSpecError, match="cannot read harness spec"):
        load_spec(tmp_path / "missing.yaml")
    with pytest.raises(HarnessSpecError, match="not a preset"):
        load_spec("h7")
    with pytest.raises(HarnessSpecError, match=re.escape("unknown harness 'openhand' (not a preset nor a spec file); did you mean 'openhands'?")):
        load_spec("openhand")
    with pytest.raises(HarnessSpecError, match=re.escape("did you mean 'view_diff'?")):
        load_spec("h2").without("view_dif")


def test_schema_accepts_every_preset_and_rejects_what_the_loader_rejects():
    schema = json_schema()
    assert schema["$schema"].endswith("2020-12/schema") and schema["additionalProperties"] is False
    json.dumps(schema)
    docs = {p.stem: read_data_file(p, "preset") for p in PRESET_DIR.glob("*.yaml")}
    assert set(docs) == set(preset_names())
    bad = [dict(VALID, limits={"max_turns": -1}), dict(VALID, colour=1),
           dict(VALID, tools=["bash", {"name": "run_check", "params": {"timeout_s": "abc"}}, "submit"]),
           dict(VALID, hooks=[{"name": "stuck_detector", "params": {"same_step": "3"}}]),
           dict(VALID, tools=["bash", {"name": "submit", "colour": 1}])]
    try:
        import jsonschema
    except ImportError:  # the schema is the pydantic model's: check through it instead
        assert all(problems(d) == [] for d in docs.values()) and all(problems(d) for d in bad)
        return
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for name, doc in docs.items():
        assert list(validator.iter_errors(doc)) == [], name
    for doc in bad:
        assert list(validator.iter_errors(doc)) and problems(doc)


def test_schema_types_catalogue_parameters():
    defs = json_schema()["$defs"]
    assert defs["tool_run_check_params"]["properties"]["timeout_s"] == {
        "default": 45.0, "minimum": 0, "title": "Timeout S", "type": "number"}
    assert defs["hook_budget_reminder_params"]["properties"]["turns_left"]["items"]["type"] == "integer"
    assert defs["Limits"]["properties"]["max_turns"]["minimum"] == 1
    assert defs["ParserSpec"]["properties"]["format"]["enum"] == list(PARSERS)


def test_preset_hashes_are_unchanged_by_the_schema():
    # recorded before the schema check was added: loading through it must not alter a value
    assert {n: load_spec(n).hash for n in preset_names()} == {
        "h0": "b63aecc6848db20f", "h1": "8c770daf53c8f640", "h2": "724a508cca7d91fe", "openhands": "97805ab970873cb7",
        "train-edit": "f8ef09af274001f0", "train-h0": "176bb00117af5a93"}
    assert HarnessSpec.from_dict({"tools": ["bash", "submit"], "limits": {"command_timeout_s": 120}}).limits.command_timeout_s == 120


def test_components_accept_both_forms():
    spec = HarnessSpec.from_dict({"tools": ["bash", {"name": "run_check", "params": {"timeout_s": 10}}, "submit"]})
    assert spec.tools[1] == Component("run_check", {"timeout_s": 10})
    assert spec.to_dict()["tools"] == ["bash", {"name": "run_check", "params": {"timeout_s": 10}}, "submit"]
    spec.validate()
