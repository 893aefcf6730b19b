"""Data-only components (script tools, rule hooks): in the spec (hash, diff, YAML), validated with a
reason, and used in real episodes inside the sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ha_envs
from ha_cli.main import main
from ha_envs.harness import HarnessSpec, diff, load_spec
from ha_envs.harness.spec import Component, HarnessSpecError

COUNT_LINES = {"description": "Count the lines of a file of the repository.",
               "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
               "script": 'wc -l < "$ARG_PATH"'}
PY_TOOL = {"description": "Echo the arguments as the tool sees them.", "language": "python",
           "parameters": {"type": "object", "properties": {"n": {"type": "integer"}, "flag": {"type": "boolean"}}},
           "script": "import json, os\nprint(json.loads(os.environ['HA_ARGS']), os.environ['ARG_N'], os.environ['ARG_FLAG'])\n"}
GATE = {"point": "pre_action", "trigger": {"submit_without_test": True}, "veto": True, "max_fires": 1,
        "message": "Run a test before submitting (turn {turn} of {max_turns})."}
TRACEBACK = {"point": "post_feedback", "trigger": {"output_regex": "Traceback"}, "max_fires": 1,
             "message": "A traceback: read its last line before editing."}


def spec_with(*tools: tuple[str, dict], hooks: tuple[tuple[str, dict], ...] = ()) -> HarnessSpec:
    h0 = load_spec("h0")
    return HarnessSpec(name="custom", parser=h0.parser, limits=h0.limits,
                       tools=h0.tools + tuple(Component(n, {}, d) for n, d in tools),
                       hooks=tuple(Component(n, {}, d) for n, d in hooks)).validate()


def call(name: str, **args) -> dict:
    return {"content": "", "tool_calls": [{"id": "c", "type": "function",
                                           "function": {"name": name, "arguments": json.dumps(args)}}]}


def test_spec_carries_them_in_yaml_hash_and_diff(tmp_path):
    spec = spec_with(("count_lines", COUNT_LINES), hooks=(("test_gate", GATE),))
    back = HarnessSpec.load(spec.save(tmp_path / "s.yaml")).validate()
    assert back == spec and back.hash == spec.hash
    changed = spec_with(("count_lines", dict(COUNT_LINES, script='wc -l "$ARG_PATH"')), hooks=(("test_gate", GATE),))
    assert changed.hash != spec.hash
    assert any(line.startswith("~ tool count_lines.script") for line in diff(spec, changed))
    assert "+ hook test_gate" in " ".join(diff(load_spec("h0"), spec))


@pytest.mark.parametrize("tools,hooks,why", [
    ((("read_file", COUNT_LINES),), (), "clashes with the catalogue"),
    ((("bad_schema", dict(COUNT_LINES, parameters={"type": "object", "properties": {"p": {"type": "file"}}})),), (),
     "needs a type"),
    ((("bad_bash", dict(COUNT_LINES, script="if then fi (")),), (), "bash script does not parse"),
    ((("bad_py", dict(PY_TOOL, script="def f(:\n")),), (), "Python script does not parse"),
    ((), (("r1", dict(GATE, trigger={"when_ever": 1})),), "unknown trigger field"),
    ((), (("r2", dict(TRACEBACK, point="pre_decision")),), "cannot be evaluated at pre_decision"),
    ((), (("r3", dict(TRACEBACK, veto=True)),), "only a pre_action hook can veto"),
    ((), (("r4", dict(TRACEBACK, message="see {secret}")),), "may only use the fields"),
    ((), (("r5", dict(TRACEBACK, trigger={"output_regex": "("})),), "not a valid regex"),
    ((("count_lines", COUNT_LINES), ("count_lines", COUNT_LINES)), (), "duplicate tool"),
    ((), (("r6", dict(GATE, trigger={"tool": "run_tests"})),), "lacks"),
    ((), (("r7", dict(TRACEBACK, rewrite={"argument": "command", "pattern": "x"})),), "only a pre_action hook can rewrite"),
    ((), (("r8", dict(GATE, rewrite={"argument": "command", "pattern": "x"})),), "either vetoes or rewrites"),
    ((), (("r9", dict(GATE, veto=False, rewrite={"argument": "command", "pattern": "(", "replace": ""})),),
     "rewrite.pattern is not a valid regex"),
    ((), (("r10", dict(GATE, veto=False, rewrite={"argument": "command", "pattern": "a", "replace": r"\2"})),),
     "refers to a group"),
    ((), (("r11", dict(GATE, veto=False, force={"command": "pytest"})),), "only a post_feedback hook can force"),
    ((), (("r12", dict(TRACEBACK, force={"command": "if then fi ("})),), "force.command does not parse"),
    ((), (("r13", dict(TRACEBACK, force={"command": "true", "timeout_s": 9999})),), "timeout_s must be in"),
])
def test_invalid_components_are_rejected_with_the_reason(tools, hooks, why):
    with pytest.raises(HarnessSpecError, match=why):
        spec_with(*tools, hooks=hooks)


def test_python_syntax_check_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    spec_with(("py_tool", dict(PY_TOOL, script=f"open({str(marker)!r}, 'w').write('x')\n")))
    assert not marker.exists()


def test_script_tools_and_rule_hooks_in_an_episode():
    spec = spec_with(("count_lines", COUNT_LINES), ("echo_args", PY_TOOL), hooks=(("test_gate", GATE), ("tb", TRACEBACK)))
    env = ha_envs.make(task="mini__ttl_cache", harness=spec)
    try:
        obs, info = env.reset()
        assert {"count_lines", "echo_args"} <= {t["function"]["name"] for t in info["tools"]}
        obs, *_ = env.step(call("count_lines", path="ttlcache/clock.py"))
        assert obs[0]["source"] == "tool" and "<returncode>0</returncode>" in obs[0]["content"]
        assert int(obs[0]["content"].split("<output>\n")[1].split()[0]) > 10
        obs, *_ = env.step(call("echo_args", n=3, flag=True))
        assert "{'n': 3, 'flag': True} 3 true" in obs[0]["content"]
        obs, *_ = env.step(call("bash", command="python -c 'import ttlcache.nope'"))
        assert [m["source"] for m in obs] == ["tool", "hook:tb"]
        obs, reward, term, _, info = env.step(call("bash", command="echo edit >> README.md"))
        assert not any(m["source"] == "hook:tb" for m in obs)  # fired once, its cap
        obs, reward, term, _, info = env.step(call("submit"))
        assert not term and obs[0]["source"] == "hook:test_gate" and "Run a test" in obs[0]["content"]
        assert info["hooks"]["test_gate"]["count"] == 1 and info["hooks"]["tb"]["count"] == 1
        obs, reward, term, _, info = env.step(call("submit"))
        assert term and info["termination"] == "submitted"  # the cap: the second submit goes through
    finally:
        env.close()


REWRITE = {"point": "pre_action", "trigger": {"tool": "bash", "command_regex": r"\bpytest\b(?!.*-x)"}, "max_fires": 5,
           "message": "pytest runs with -x here (stop at the first failure).",
           "rewrite": {"argument": "command", "pattern": r"\bpytest\b", "replace": "pytest -x"}}
FORCE = {"point": "post_feedback", "trigger": {"tool": "bash", "command_regex": ">>"}, "max_fires": 1,
         "message": "You changed a file; the harness ran the check for you.",
         "force": {"command": "echo forced-$(wc -l < README.md)", "timeout_s": 10}}


def test_a_rule_hook_rewrites_a_call_and_forces_one_in_an_episode():
    """rewrite: the model's bash call runs with the substituted argument and is told so; force: after
    an edit, the harness runs its own command in the sandbox and shows the output as the hook's
    (non-trainable) message; both in the spec's hash; a call the pattern leaves unchanged is untouched."""
    spec = spec_with(hooks=(("pytest_x", REWRITE), ("check_after_edit", FORCE)))
    assert spec.hash != spec_with(hooks=(("pytest_x", dict(REWRITE, rewrite=dict(REWRITE["rewrite"], replace="pytest -q"))),
                                         ("check_after_edit", FORCE))).hash
    env = ha_envs.make(task="mini__ttl_cache", harness=spec)
    try:
        env.reset()
        obs, *_ = env.step(call("bash", command="echo pytest"))
        assert [m["source"] for m in obs] == ["hook:pytest_x", "tool"]
        assert "was adjusted" in obs[0]["content"] and "pytest -x" in obs[1]["content"]
        obs, *_ = env.step(call("bash", command="echo pytest -x"))  # already has -x: no rewrite
        assert [m["source"] for m in obs] == ["tool"]
        obs, *_, info = env.step(call("bash", command="echo line >> README.md"))
        forced = [m for m in obs if m["source"] == "hook:check_after_edit"]
        assert len(forced) == 1 and "[the harness ran: echo forced" in forced[0]["content"]
        assert "forced-" in forced[0]["content"] and forced[0]["trainable"] is False
        assert info["hooks"]["pytest_x"]["count"] == 1 and info["hooks"]["check_after_edit"]["count"] == 1
    finally:
        env.close()


def test_script_tool_timeout_and_output_cap():
    slow = dict(COUNT_LINES, script="seq 1 200000; sleep 30", timeout_s=1, output_bytes=1000,
                parameters={"type": "object", "properties": {}})
    env = ha_envs.make(task="mini__ttl_cache", harness=spec_with(("slow", slow)))
    try:
        env.reset()
        obs, *_ = env.step(call("slow"))
        text = obs[0]["content"]
        assert "timed out after 1s" in text and "bytes of output cut" in text and len(text) < 3000
    finally:
        env.close()


def test_cli_shows_custom_components(tmp_path, capsys):
    path = spec_with(("count_lines", COUNT_LINES), hooks=(("test_gate", GATE),)).save(tmp_path / "c.yaml")
    assert main(["harness", "show", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [t["kind"] for t in shown["tools"]][-1] == "script" and shown["hooks"][0]["kind"] == "rule"
    assert shown["hooks"][0]["points"] == ["pre_action"] and Path(path).exists()


def test_cli_help_and_a_closed_pipe():
    import subprocess
    import sys

    ha = [sys.executable, "-m", "ha_cli.main"]
    top = subprocess.run(ha + ["--help"], capture_output=True, text=True)
    assert top.returncode == 0 and "evolve" in top.stdout and "bootstrap" in top.stdout
    piped = subprocess.run(" ".join(ha) + " evolve prompts | head -1", shell=True, capture_output=True, text=True)
    assert piped.stdout.startswith("==> ") and "Broken pipe" not in piped.stderr and piped.stderr == ""


def test_fences_pair_in_order_and_prose_is_not_xml():
    from ha_envs.actions import parse_h0_action
    from ha_envs.harness.tool_calls import ToolCallParser

    text = "```python\nx = 1\n```\nNow run:\n```bash\nls -la\n```"
    assert parse_h0_action(text).arguments == {"command": "ls -la"}
    assert parse_h0_action("```python … ``` Now run: ```bash ls ```").arguments == {"command": "ls"}
    schemas = {"bash": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
               "submit": {"type": "object", "properties": {}}}
    parsed = ToolCallParser("auto").parse("The docs mention <function=foo> tags; anyway:\n```bash\npwd\n```", schemas)
    assert [(c.name, c.arguments) for c in parsed.calls] == [("bash", {"command": "pwd"})]


GATE_CODE = '''
LIMIT = 1


def hook(ctx):
    """Block a submit that no test run followed, the first time."""
    if ctx["tool"] == "submit" and not ctx["tested_since_edit"]:
        return {"veto": True, "message": "Run a test first (turn %d of %d)." % (ctx["turn"], ctx["max_turns"])}
    return None
'''
CODE_AT_EACH_POINT = {
    "start_hint": {"point": "episode_start", "code": "def hook(ctx):\n    return 'tools: ' + ', '.join(ctx['tools'])\n"},
    "x_flag": {"point": "pre_action", "max_fires": 5, "code": (
        "def hook(ctx):\n    c = ctx['arguments'].get('command', '')\n"
        "    if ctx['tool'] == 'bash' and 'pytest' in c and '-x' not in c:\n"
        "        return {'rewrite': {'argument': 'command', 'value': c.replace('pytest', 'pytest -x')},"
        " 'message': 'pytest runs with -x here.'}\n")},
    "check_edit": {"point": "post_feedback", "code": (
        "def hook(ctx):\n    if '>>' in ctx['command']:\n"
        "        return {'message': 'edited at turn %d' % ctx['turn'], 'force': 'echo forced-$(wc -l < README.md)'}\n")},
}


@pytest.mark.parametrize("code,why", [
    ("import os\ndef hook(ctx):\n    return None\n", "imports"),
    ("def hook(ctx):\n    while True:\n        pass\n", "while loops"),
    ("class A:\n    pass\ndef hook(ctx):\n    return None\n", "classes"),
    ("def hook(ctx):\n    return open('/etc/passwd').read()\n", "the name 'open'"),
    ("def hook(ctx):\n    return eval('1')\n", "the name 'eval'"),
    ("def hook(ctx):\n    return ctx.__class__\n", "the attribute '__class__'"),
    ("def hook(ctx):\n    return ().__class__.__bases__[0].__subclasses__()\n", "the attribute '__"),
    ("def hook(ctx):\n    with ctx as f:\n        pass\n", "with blocks"),
    ("def helper(x):\n    return x\n", "exactly one `def hook(ctx)`"),
    ("def hook(ctx, other):\n    return None\n", "exactly one argument"),
    ("len('x')\ndef hook(ctx):\n    return None\n", "only functions, constants"),
    ("def hook(ctx):\n    return print('x')\n", "the name 'print'"),
    ("def hook(ctx):\n    return (\n", "does not parse"),
    ("def hook(ctx):\n    return " + "+".join(["1"] * 700) + "\n", "syntax nodes"),
    ("def hook(ctx):\n    return '" + "x" * 8100 + "'\n", "at most 8000 characters"),
])
def test_a_code_hook_is_checked_by_its_syntax_tree_and_never_run_on_the_host(code, why):
    with pytest.raises(HarnessSpecError, match=why.replace("(", r"\(").replace(")", r"\)")):
        spec_with(hooks=(("bad", {"point": "pre_action", "code": code}),)).validate()


@pytest.mark.parametrize("sandbox", ["local", "docker"])
def test_code_hooks_act_at_their_points_inside_the_sandbox(sandbox):
    """A code hook at each lifecycle point, run in the episode's sandbox: a hint at the start, a
    rewrite before the action, a forced command after an edit, and a veto of an untested submit (the
    same behaviour as the rule hook); every effect in info["hooks"]; the spec's hash covers the code."""
    hooks = tuple(CODE_AT_EACH_POINT.items()) + (("gate", {"point": "pre_action", "code": GATE_CODE}),)
    spec = spec_with(hooks=hooks)
    assert spec.hash != spec_with(hooks=hooks[:-1] + (("gate", {"point": "pre_action", "code": GATE_CODE + "\n"}),)).hash
    if sandbox == "docker":
        from tests.ha_envs.test_real_envs import require_docker

        require_docker()
    env = ha_envs.make(task="mini__ttl_cache", harness=spec, sandbox=sandbox)
    try:
        obs, info = env.reset()
        start = [m for m in obs if m.get("source") == "hook:start_hint"]
        assert len(start) == 1 and "bash" in start[0]["content"] and "submit" in start[0]["content"]
        obs, *_ = env.step(call("bash", command="echo pytest"))
        assert [m["source"] for m in obs] == ["hook:x_flag", "tool"] and "pytest -x" in obs[1]["content"]
        obs, *_ = env.step(call("bash", command="echo line >> README.md"))
        forced = [m for m in obs if m["source"] == "hook:check_edit"]
        assert len(forced) == 1 and "edited at turn" in forced[0]["content"] and "forced-" in forced[0]["content"]
        assert forced[0]["trainable"] is False
        obs, _, term, _, info = env.step(call("submit"))
        assert not term and obs[0]["source"] == "hook:gate" and "Run a test first" in obs[0]["content"]
        assert {k: v["count"] for k, v in info["hooks"].items()} == {"start_hint": 1, "x_flag": 1, "check_edit": 1,
                                                                      "gate": 1}
        obs, _, term, _, info = env.step(call("submit"))  # max_fires 1: the second submit goes through
        assert term and info["termination"] == "submitted"
    finally:
        env.close()


@pytest.mark.parametrize("body,failure", [
    ("    return sum(range(10 ** 12))\n", "CPU or memory limit|wall-clock"),
    ("    x = 'x' * 10 ** 10\n    return x\n", "MemoryError|exit status"),
    ("    return [1 for i in range(10 ** 9) for j in range(10 ** 9)]\n", "CPU or memory limit|wall-clock|MemoryError"),
    ("    return 1 / 0\n", "ZeroDivisionError"),
    ("    return {'veto': True}\n", "only a pre_action hook can veto"),
    ("    return {'launch': 1}\n", "use None, a message"),
])
def test_a_code_hook_that_fails_or_runs_away_has_no_effect(body, failure):
    """The original's in-process alarm cannot stop sum(range(10**12)) or 'x' * 10**10; here the hook
    runs in the sandbox under a CPU-time and an address-space limit and a wall-clock kill: whatever it
    does, the episode goes on as if it were not there, and the failure is counted, not fired."""
    code = "def hook(ctx):\n" + body
    spec = spec_with(hooks=(("runaway", {"point": "post_feedback", "code": code, "timeout_s": 3, "cpu_s": 1,
                                         "memory_mb": 128}),))
    env = ha_envs.make(task="mini__ttl_cache", harness=spec)
    try:
        env.reset()
        obs, _, term, _, info = env.step(call("bash", command="echo still-here"))
        assert not term and [m["source"] for m in obs] == ["tool"] and "still-here" in obs[0]["content"]
        assert "runaway" not in info["hooks"]
        reasons = info["hooks"]["runaway:failed"]["reasons"]
        assert len(reasons) == 1 and __import__("re").search(failure, reasons[0]), reasons
        obs, *_ = env.step(call("bash", command="echo next"))  # the session's shell survived the hook
        assert "next" in obs[0]["content"]
    finally:
        env.close()
