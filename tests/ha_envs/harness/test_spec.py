"""HarnessSpec: round trips, hash stability, diff, ablations and invalid specs."""

from __future__ import annotations


import pytest

from ha_envs.harness import HarnessSpec, HarnessSpecError, diff, load_spec, preset_names
from ha_envs.harness.spec import Component


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


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d["tools"].append("teleport"), "unknown tool 'teleport'; available:"),
    (lambda d: d["tools"].append("bash"), "duplicate tool 'bash'"),
    (lambda d: d["hooks"].append("budget_reminder"), "duplicate hook 'budget_reminder'"),
    (lambda d: d["hooks"].append("mind_reader"), "unknown hook 'mind_reader'"),
    (lambda d: d.update(tools=["submit", "view_diff"], hooks=["verification_reminder"]),
     "hook 'verification_reminder' needs one of the tools bash, run_tests, run_check"),
    (lambda d: d["tools"].remove("submit"), "has no `submit` tool"),
    (lambda d: d["parser"].update(format="xml9"), "unknown parser 'xml9'"),
    (lambda d: d["parser"].update(multi_call="some"), "unknown multi_call policy 'some'"),
    (lambda d: d["parser"].update(format="fenced_bash"), "the fenced_bash parser can only call bash and submit"),
    (lambda d: d["hooks"].append({"name": "stuck_detector", "params": {"same_stepp": 3}}), "has no parameter(s) same_stepp"),
    (lambda d: d["hooks"].append({"name": "stuck_detector", "params": {"same_step": "3"}}), "must be int, got '3'"),
    (lambda d: d["tools"].append({"name": "run_check", "params": {"timeout_s": True}}), "option 'timeout_s' must be float"),
    (lambda d: d["limits"].update(max_turns=0), "max_turns must be a positive integer"),
    (lambda d: d.update(colour="blue"), "unknown field(s) colour"),
    (lambda d: d["tools"].append(["bash"]), "a tool entry must be a name or"),
])
def test_invalid_specs_are_rejected_clearly(mutate, message):
    d = {"name": "t", "parser": {"format": "auto"}, "limits": {},
         "tools": ["bash", "read_file", "view_diff", "run_tests", "submit"],
         "hooks": ["budget_reminder", "verification_reminder"]}
    HarnessSpec.from_dict(d).validate()
    mutate(d)
    with pytest.raises(HarnessSpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        HarnessSpec.from_dict(d).validate()


def test_load_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("tools: [bash\n")
    with pytest.raises(HarnessSpecError, match="bad.yaml: not valid YAML"):
        load_spec(bad)
    with pytest.raises(HarnessSpecError, match="cannot read harness spec"):
        load_spec(tmp_path / "missing.yaml")
    with pytest.raises(HarnessSpecError, match="not a preset"):
        load_spec("h7")


def test_components_accept_both_forms():
    spec = HarnessSpec.from_dict({"tools": ["bash", {"name": "run_check", "params": {"timeout_s": 10}}, "submit"]})
    assert spec.tools[1] == Component("run_check", {"timeout_s": 10})
    assert spec.to_dict()["tools"] == ["bash", {"name": "run_check", "params": {"timeout_s": 10}}, "submit"]
    spec.validate()
