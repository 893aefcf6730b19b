"""The harness stack as ``build`` makes it: limits passed in at construction, one runtime shared by
the tools and hooks layers, one reset-before-step guard on top, episodes ended from outside going
down through every layer, and no layer reading another's private state."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

import ha_envs
from ha_envs import EpisodeOverError, RepairEnv
from ha_envs.harness import EpisodeGuard, HooksWrapper, ParserWrapper, ToolsWrapper, build, load_spec
from ha_envs.harness.schema import Limits

from tests.ha_envs.harness.conftest import Driver, spec_with

HARNESS = Path(ha_envs.__file__).parent / "harness"


def _layers(env) -> list:
    out = [env]
    while hasattr(env, "env"):
        env = env.env
        out.append(env)
    return out


def test_the_stack_is_built_whole_from_the_spec(tiny_task):
    spec = replace(spec_with(hooks=[("verification_reminder", {"after_turns": 1})], parser={"max_format_errors": 2}),
                   limits=Limits(max_turns=4, command_timeout_s=7.0, output_head_bytes=300, output_tail_bytes=200))
    env = build(spec, task=tiny_task)
    try:
        guard, parser, hooks, tools, base = _layers(env)
        assert [type(x) for x in (guard, parser, hooks, tools, base)] == [EpisodeGuard, ParserWrapper, HooksWrapper,
                                                                          ToolsWrapper, RepairEnv]
        # the limits were given at construction, and nothing changed them since
        assert (base.max_turns, base.max_format_errors, base.command_timeout_s) == (4, 2, 7.0)
        assert (hooks.max_turns, tools.command_timeout_s) == (4, 7.0)
        assert hooks.runtime is tools.runtime  # one runtime, handed to both layers by build
        d = Driver(env)
        assert d.env.get_wrapper_attr("sandbox").config.command_timeout_s == 7.0
        out = d.text("bash", command="python3 -c \"print('a' * 300 + 'b' * 2000 + 'c' * 200)\"")
        # the spec's output caps: the first 300 bytes and the last 200 (199 c and the newline)
        assert "\n" + "a" * 300 + "\n[... 2001 bytes of output cut (2501 in all)" in out and "bbb" not in out
        assert "\n" + "c" * 199 + "\n</output>" in out
        # the tools layer's edit reaches the hooks layer through the shared state: the reminder fires
        d("edit_file", path="calc.py", old_str="return lo\n    return x", new_str="return hi\n    return x")
        assert tools.runtime.state.edits == 1 and d.info["edits"] == 1
        d("think", thought="done?")
        assert d.info["hooks"]["verification_reminder"]["count"] == 1
        d("think", thought="still")
        assert d.done and d.info["termination"] == "max_turns" and d.info["turn"] == 4
    finally:
        env.close()


def test_build_refuses_limits_beside_the_spec(tiny_task):
    with pytest.raises(TypeError, match="max_turns.*spec.with_limits"):
        build("h0", task=tiny_task, max_turns=3)
    env = ha_envs.make(task=tiny_task, harness="h0", max_turns=3, command_timeout_s=9)  # make() folds them into the spec
    try:
        assert env.get_wrapper_attr("max_turns") == 3 and env.get_wrapper_attr("command_timeout_s") == 9.0
        assert env.get_wrapper_attr("harness_spec").hash == load_spec("h0").with_limits(3, 9).hash
    finally:
        env.close()


@pytest.mark.parametrize("harness", ["h0", "h2"])
def test_the_guard_refuses_steps_outside_an_episode(tiny_task, harness):
    env = ha_envs.make(task=tiny_task, harness=harness)
    try:
        for call in (lambda: env.step("```bash\nls\n```"), lambda: env.end("context_limit"), lambda: env.abort("x")):
            with pytest.raises(EpisodeOverError, match=r"before reset\(\): call reset\(\) first"):
                call()
        assert env.get_wrapper_attr("sandbox") is None  # nothing below the guard ran
        env.reset()
        *_, terminated, truncated, info = env.end("context_limit")
        assert truncated and info["termination"] == "context_limit"
        with pytest.raises(EpisodeOverError, match="after the episode ended"):
            env.step("```bash\nls\n```")
        with pytest.raises(EpisodeOverError, match="after the episode ended"):
            env.abort("late")
        env.reset()
        for _ in range(2):  # h2's submit gate refuses an empty submission once
            *_, terminated, truncated, info = env.step("```bash\nsubmit\n```")
            if terminated:
                break
        assert terminated and info["termination"] == "submitted"
        with pytest.raises(EpisodeOverError, match="after the episode ended"):
            env.step("```bash\nls\n```")
        env.reset()  # a new episode runs again
        assert not any(env.step("```bash\nls\n```")[2:4])
    finally:
        env.close()
    with pytest.raises(EpisodeOverError):
        env.step("```bash\nls\n```")


def test_one_guard_and_no_layer_below_checks_the_base(tiny_task):
    env = ha_envs.make(task=tiny_task, harness="h2")
    try:
        assert sum(isinstance(x, EpisodeGuard) for x in _layers(env)) == 1 and isinstance(env, EpisodeGuard)
    finally:
        env.close()


def _private_reaches(path: Path) -> list[str]:
    """Accesses in ``path`` of another object's private state, of ``unwrapped``, or of
    ``configure``: ``x._name`` with ``x`` not ``self``/``cls``, ``self.env._name``, ``.unwrapped``,
    ``get_wrapper_attr("_name")`` / ``_below("_name")``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Attribute):
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if node.attr in ("unwrapped", "configure") or (private and owner not in ("self", "cls")):
                found.append(f"{where}: .{node.attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            on_self = name == "getattr" and isinstance(node.args[0], ast.Name) and node.args[0].id == "self"
            if name in ("get_wrapper_attr", "_below", "getattr") and not on_self and any(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("_")
                    for a in node.args):
                found.append(f"{where}: {name}(private)")
    return found


def test_the_probe_finds_reaches_inside(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f(self, env, base):\n    env.unwrapped.max_turns\n    self.env._done\n    base._done = True\n"
                      "    self._below('_actions')\n    base.configure(max_turns=3)\n    self._mine\n"
                      "    getattr(self, '_idx', None)\n    getattr(env, '_done')\n")
    assert len(_private_reaches(sample)) == 6, _private_reaches(sample)


def test_no_harness_module_reaches_into_another_layer():
    modules = sorted(HARNESS.glob("*.py")) + [HARNESS.parent / "factory.py", HARNESS.parent / "env.py"]
    agents = Path(ha_envs.__file__).parents[1] / "ha_agents"
    modules += [agents / "train" / "verl_loop.py", *sorted((agents / "adapters").glob("*.py"))]
    reaches = [r for m in modules for r in _private_reaches(m)]
    assert reaches == []
