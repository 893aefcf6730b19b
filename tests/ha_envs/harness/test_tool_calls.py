"""Tool-call parsers: each format, each typed error, the multi-call policies, and fuzzing."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ha_envs.actions import FormatError, ToolCall
from ha_envs.harness.tool_calls import (InvalidArguments, InvalidJSON, MalformedCall, MultipleToolCalls, NoToolCall,
                                     ToolCallParser, TruncatedCall, UnknownTool, render_call)
from ha_envs.harness.tools import TOOLS

SCHEMAS = {name: TOOLS[name].parameters for name in ("bash", "read_file", "edit_file", "run_tests", "submit", "view_diff")}


def parse(action, fmt="auto", multi="reject"):
    return ToolCallParser(fmt, multi).parse(action, SCHEMAS)


def openai(*calls):
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}} for i, (n, a) in enumerate(calls)]}


def test_openai_string_and_dict_arguments():
    p = parse(openai(("read_file", json.dumps({"path": "a.py", "start_line": 3})), ("submit", {})), multi="all")
    assert p.calls == [ToolCall("read_file", {"path": "a.py", "start_line": 3}, "c0"), ToolCall("submit", {}, "c1")]


def test_hermes_and_qwen_xml_and_fenced():
    hermes = 'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "x.py"}}\n</tool_call>'
    assert parse(hermes).calls == [ToolCall("read_file", {"path": "x.py"})]
    assert parse(hermes, "hermes").calls == [ToolCall("read_file", {"path": "x.py"})]
    qwen = ("<tool_call>\n<function=read_file>\n<parameter=path>\nx.py\n</parameter>\n<parameter=start_line>\n12\n"
            "</parameter>\n</function>\n</tool_call>")
    # XML carries strings only: an exact integer string is converted to the declared type.
    assert parse(qwen).calls == [ToolCall("read_file", {"path": "x.py", "start_line": 12})]
    multiline = "<function=bash>\n<parameter=command>\necho a\necho b\n</parameter>\n</function>"
    assert parse(multiline, "qwen3_xml").calls[0].arguments == {"command": "echo a\necho b"}
    assert parse("text\n```bash\nls -la\n```\n").calls == [ToolCall("bash", {"command": "ls -la"})]
    assert parse("```bash\nsubmit\n```", "fenced_bash").calls == [ToolCall("submit", {})]


@pytest.mark.parametrize("action,err,needle", [
    ("just words", NoToolCall, "no tool call"),
    (None, NoToolCall, "no tool call"),
    ({"content": None, "tool_calls": []}, NoToolCall, "no tool call"),
    (openai(("nope", "{}")), UnknownTool, "There is no tool `nope`. Available tools: bash, read_file"),
    (openai(("read_file", "{'path': 1}")), InvalidJSON, "arguments of `read_file` are not valid JSON"),
    (openai(("read_file", "[1, 2]")), InvalidArguments, "must be a JSON object"),
    (openai(("read_file", "{}")), InvalidArguments, "missing required argument `path`"),
    (openai(("read_file", '{"path": "a", "start_line": "three"}')), InvalidArguments, "`start_line` must be of type integer, got str"),
    (openai(("read_file", '{"path": "a", "colour": 1}')), InvalidArguments, "unknown argument `colour`"),
    (openai(("read_file", '{"path": 7}')), InvalidArguments, "`path` must be of type string, got int"),
    (openai(("bash", '{"command": "   "}')), InvalidArguments, "`command` is empty"),
    (openai(("run_tests", '{"paths": [1]}')), InvalidArguments, "`paths[0]` must be of type string"),
    ({"tool_calls": [{"function": {"arguments": "{}"}}]}, MalformedCall, "lacks a function name"),
    ({"tool_calls": "bash"}, MalformedCall, "not a list"),
    ("<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}", MalformedCall, "not closed"),
    ("<tool_call>[1]</tool_call>", MalformedCall, '"name" and "arguments"'),
    ("<function=bash><parameter=command>ls</function>", MalformedCall, "not closed"),
    (openai(("bash", '{"command": "ls"}'), ("submit", "{}")), MultipleToolCalls, "has 2 tool calls"),
    ("```bash\nls\n```\n```bash\npwd\n```", MultipleToolCalls, "has 2 tool calls"),
])
def test_each_error_is_typed_with_its_message(action, err, needle):
    with pytest.raises(err) as info:
        parse(action)
    assert needle in str(info.value)
    assert info.value.kind == err.kind


def test_truncated_reply_is_its_own_error():
    cut = {"content": '<tool_call>{"name": "bash", "arguments": {"comm', "finish_reason": "length"}
    with pytest.raises(TruncatedCall, match="cut at the output-token limit"):
        parse(cut)
    # A complete call in a reply cut later still counts.
    ok = {"content": "```bash\nls\n```\nand then I will", "finish_reason": "length"}
    assert parse(ok).calls == [ToolCall("bash", {"command": "ls"})]


def test_multi_call_policies():
    two = openai(("bash", '{"command": "ls"}'), ("view_diff", "{}"))
    first = parse(two, multi="first")
    assert [c.name for c in first.calls] == ["bash"] and "only the first was run" in first.note
    assert [c.name for c in parse(two, multi="all").calls] == ["bash", "view_diff"]
    with pytest.raises(ValueError, match="multi_call"):
        ToolCallParser("auto", "some")


@pytest.mark.parametrize("fmt", ["openai", "hermes", "qwen3_xml"])
def test_render_then_parse_round_trips(fmt):
    for call in [ToolCall("edit_file", {"path": "a b.py", "old_str": "x = '<tag>'\n", "new_str": "y\n\n"}),
                 ToolCall("read_file", {"path": "p", "start_line": 2, "end_line": -1}),
                 ToolCall("run_tests", {"paths": ["t/a.py", "t/b.py"]}), ToolCall("submit", {})]:
        got = parse(render_call(call, fmt, call_id="id1"), fmt).calls[0]
        assert (got.name, got.arguments) == (call.name, call.arguments)


# -- fuzzing: nothing but a typed FormatError ever escapes -------------------------------------

_names = st.sampled_from(list(SCHEMAS) + ["", "unknown", "bash\n", "<x>"])
_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
                            lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                            max_leaves=12)
_fragments = st.sampled_from(["<tool_call>", "</tool_call>", "<function=", "<function=bash>", "</function>",
                              "<parameter=", "<parameter=command>", "</parameter>", "```", "```bash\n", "\n", "{", "}",
                              '"name"', '"arguments"', ":", "submit", "[[[[[[[[", "\x00", "\udcff", "é"])
_text = st.lists(st.one_of(_fragments, st.text(max_size=12)), max_size=30).map("".join)
_arguments = st.one_of(_json_values, _text, _json_values.map(lambda v: json.dumps(v)))
_call = st.one_of(
    st.fixed_dictionaries({"id": st.one_of(st.none(), st.text(max_size=5), st.integers()),
                           "function": st.fixed_dictionaries({"name": st.one_of(_names, st.integers(), st.none()),
                                                              "arguments": _arguments})}),
    _json_values)
_message = st.one_of(
    _text, _json_values,
    st.fixed_dictionaries({"content": st.one_of(st.none(), _text, st.integers()),
                           "tool_calls": st.one_of(st.none(), st.lists(_call, max_size=3), _json_values)},
                          optional={"finish_reason": st.sampled_from(["stop", "length", None])}),
)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(action=_message, fmt=st.sampled_from(["auto", "openai", "hermes", "qwen3_xml", "fenced_bash"]),
       multi=st.sampled_from(["reject", "first", "all"]))
def test_fuzz_only_typed_errors_escape(action, fmt, multi):
    try:
        parsed = ToolCallParser(fmt, multi).parse(action, SCHEMAS)
    except FormatError as err:
        assert type(err) is not FormatError, "every parser error has its own type"
        assert err.kind in {"no_call", "bad_call", "several_calls", "unknown_tool", "bad_json", "bad_arguments", "truncated"}
        assert str(err)
        return
    for call in parsed.calls:  # what gets through is valid for the tool's schema
        assert call.name in SCHEMAS
        props = SCHEMAS[call.name]["properties"]
        assert set(call.arguments) <= set(props)
        assert set(SCHEMAS[call.name]["required"]) <= set(call.arguments)


@settings(max_examples=40, deadline=None)
@given(deep=st.integers(min_value=1000, max_value=50000))
def test_fuzz_pathologically_nested_json(deep):
    with pytest.raises(FormatError):
        parse(openai(("bash", "[" * deep)))
    with pytest.raises(FormatError):
        parse("<tool_call>" + "[" * deep + "</tool_call>")
