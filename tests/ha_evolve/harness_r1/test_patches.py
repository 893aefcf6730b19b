"""Harness patches (harnessadapt-patch-v1): read from model text (tags, fences, thinking kept),
applied purely and validated, every malformed or inapplicable patch refused with the operation and
the reason, a no-op recognisable by its hash."""

from __future__ import annotations

import pytest

from ha_envs.harness import load_spec
from ha_evolve.harness_r1.patches import MAX_OPS, Patch, PatchError, apply_patch, parse_patch

VETO = {"name": "test_before_submit", "rule": {"point": "pre_action", "trigger": {"submit_without_test": True},
                                               "message": "Run the tests before you submit.", "veto": True}}


def test_a_patch_in_tags_after_thinking_adds_a_rule_veto_and_a_tool():
    reply = ("<think>The agent submits without testing in 14 of 20 failures.</think>\nHere it is:\n<patch>\n"
             "format: harnessadapt-patch-v1\nops:\n"
             "  - op: add_tool\n    tool: run_tests\n"
             "  - op: add_hook\n    hook: {name: test_before_submit, rule: {point: pre_action, trigger: "
             "{submit_without_test: true}, message: Run the tests before you submit., veto: true}}\n"
             "</patch>")
    patch = parse_patch(reply)
    assert patch.thinking.startswith("The agent submits") and patch.points == ["pre_action", "tools"]
    base = load_spec("h1")
    new = apply_patch(base, patch)
    assert new.tool_names[-2:] == ["run_tests", "submit"] and new.hook_names[-1] == "test_before_submit"
    assert new.hash != base.hash and base.hook_names == load_spec("h1").hook_names  # pure: base untouched


def test_json_in_a_fence_and_every_operation_kind():
    base = load_spec("h2")
    text = ('```json\n{"ops": [{"op": "set_params", "tool": "run_check", "params": {"timeout_s": 30}},'
            '{"op": "replace_hook", "name": "budget_reminder", "hook": {"name": "budget_reminder", "params": {"turns_left": [9, 3]}}},'
            '{"op": "remove_hook", "name": "verification_reminder"},'
            '{"op": "add_hook", "hook": "stuck_detector", "before": "submit_gate"}]}\n```')
    new = apply_patch(base, parse_patch(text))
    assert "verification_reminder" not in new.hook_names
    assert new.hook_names.index("stuck_detector") == new.hook_names.index("submit_gate") - 1
    assert next(c for c in new.tools if c.name == "run_check").params == {"timeout_s": 30}
    assert next(c for c in new.hooks if c.name == "budget_reminder").params == {"turns_left": [9, 3]}


def test_a_no_op_patch_keeps_the_hash():
    base = load_spec("h2")
    cur = next(c for c in base.hooks if c.name == "budget_reminder")
    same = apply_patch(base, parse_patch(f"<patch>ops: [{{op: set_params, hook: budget_reminder, params: {dict(cur.params)}}}]</patch>"))
    assert same.hash == base.hash


@pytest.mark.parametrize("text,stage,why", [
    ("no patch here", "parse", "holds no patch"),
    ("<patch>ops: [</patch>", "parse", "not valid YAML"),
    ("<patch>- op: add_tool</patch>", "parse", "a mapping with `ops`"),
    ("<patch>format: v0\nops: [{op: add_tool, tool: x}]</patch>", "parse", "unknown patch format"),
    ("<patch>ops: []</patch>", "parse", "non-empty list"),
    ("<patch>ops: [{op: delete_everything}]</patch>", "parse", "must be one of"),
    ("<patch>ops: [{op: add_tool}]</patch>", "parse", "missing ['tool']"),
    ("<patch>ops: [{op: add_tool, tool: run_tests, colour: red}]</patch>", "parse", "unknown keys ['colour']"),
    ("<patch>ops: [{op: set_params, params: {}}]</patch>", "parse", "exactly one of"),
    ("<patch>ops: [{op: remove_hook, name: nope}]</patch>", "apply", "has no hook 'nope'"),
    ("<patch>ops: [{op: add_tool, tool: bash}]</patch>", "apply", "already has 'bash'"),
    ("<patch>ops: [{op: add_hook, hook: submit_gate, before: nope}]</patch>", "apply", "no 'nope' to insert before"),
    ("<patch>ops: [{op: add_tool, tool: teleport}]</patch>", "apply", "patched harness is invalid"),
    ("<patch>ops: [{op: add_hook, hook: submit_gate}, {op: set_params, hook: submit_gate, params: {colour: 1}}]"
     "</patch>", "apply", "invalid"),
    ("<patch>ops: [{op: add_hook, hook: {name: late, rule: {point: pre_decision, trigger: {output_regex: x}, "
     "message: m}}}]</patch>", "apply", "cannot be evaluated at pre_decision"),
])
def test_bad_patches_are_refused_with_the_operation_and_reason(text, stage, why):
    with pytest.raises(PatchError) as err:
        apply_patch(load_spec("h0"), parse_patch(text))
    assert err.value.stage == stage and why in str(err.value), str(err.value)


def test_at_most_eight_operations():
    ops = ", ".join(["{op: add_tool, tool: run_tests}"] * (MAX_OPS + 1))
    with pytest.raises(PatchError, match="at most 8"):
        parse_patch(f"<patch>ops: [{ops}]</patch>")


def test_a_whole_spec_proposal_written_as_a_patch():
    """``delta_ops``: the operations that turn one spec into another, applied to the same hash; what
    a patch cannot express (a tool removed, too many operations) is refused, not approximated."""
    from ha_envs.harness.spec import load_spec
    from ha_evolve.harness_r1.patches import delta_ops

    for a, b in (("h1", "h2"), ("train-h0", "train-edit")):
        ops = delta_ops(load_spec(a), load_spec(b))
        assert apply_patch(load_spec(a), Patch(tuple(ops))).hash == load_spec(b).hash and len(ops) <= 8
    with pytest.raises(PatchError, match="removes or reorders tools"):
        delta_ops(load_spec("h2"), load_spec("h1"))
    with pytest.raises(PatchError, match="at most 8"):
        delta_ops(load_spec("h0"), load_spec("h2"))
    assert delta_ops(load_spec("h2"), load_spec("h2")) == []


def test_a_patch_adds_a_code_hook_and_a_bad_one_is_refused_with_its_reason():
    """A code hook travels in a patch like a rule hook (its point counted); code that breaks the
    syntax rules is refused by apply_patch with the rule it broke, before anything runs."""
    from ha_envs.harness import load_spec
    from ha_evolve.harness_r1.patches import PatchError, apply_patch, parse_patch

    good = ('<patch>ops: [{op: add_hook, hook: {name: gate, rule: {point: pre_action, code: "def hook(ctx):\\n'
            '    return {\'veto\': ctx[\'tool\'] == \'submit\', \'message\': \'test first\'}\\n"}}}]</patch>')
    patch = parse_patch(good)
    assert patch.points == ["pre_action"]
    spec = apply_patch(load_spec("h0"), patch)
    assert "gate" in spec.hook_names and spec.hash != load_spec("h0").hash
    bad = good.replace("return {", "import os\\n    return {")
    with pytest.raises(PatchError, match="code may not use imports"):
        apply_patch(load_spec("h0"), parse_patch(bad))


def test_a_patch_whose_names_are_not_text_is_refused_not_a_crash():
    """Model text can put a mapping or a list where a name goes (seen from the tiny engineer during
    evaluation: it crashed the env's step): the patch's points still read, and applying it is a
    PatchError with the reason, as for any other invalid patch."""
    from ha_envs.harness import load_spec
    from ha_evolve.harness_r1.patches import PatchError, apply_patch, parse_patch

    for text in ("<patch>ops: [{op: add_hook, hook: {name: {point: pre_action}}}]</patch>",
                 "<patch>ops: [{op: remove_hook, name: [a, b]}]</patch>",
                 "<patch>ops: [{op: replace_hook, name: {x: 1}, hook: {name: [1]}}]</patch>"):
        patch = parse_patch(text)
        assert patch.points == ["?"]
        with pytest.raises(PatchError, match="needs a name|has no hook"):
            apply_patch(load_spec("h0"), patch)
