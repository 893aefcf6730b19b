"""The SkyRL-Gym and rllm adapters over real harness-wrapped envs (local sandbox), driven with
scripted text turns: the gold fix earns 1.0 at the last step only, an empty submission 0, a
malformed turn is a format-error observation, a turn limit truncates and is graded, a killed
sandbox is masked, and close() releases the sandbox. SkyRL's own ``make`` and ``BaseTextEnv``
are used (extra ``adapters``); rllm is not installable, so its interface is checked by shape."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ha_agents.adapters import AdapterConfig, AdapterConfigError
from ha_agents.adapters.rllm import HarnessRepairEnv
from ha_agents.llm.policies import OraclePolicy
from ha_envs.harness import load_spec
from ha_envs.loaders import load_suite

if not os.environ.get("CI"):
    pytest.importorskip("skyrl_gym")

import skyrl_gym  # noqa: E402
from omegaconf import DictConfig  # noqa: E402
from skyrl_gym.envs.base_text_env import BaseTextEnv  # noqa: E402

from ha_agents.adapters.skyrl import ENV_ID, HarnessTextEnv, register  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SUBMIT = "```bash\nsubmit\n```"


def _names(tools: list[dict[str, Any]]) -> set[str]:
    return {t["function"]["name"] for t in tools}


def _oracle(task, fmt: str, tools: list[dict[str, Any]]) -> OraclePolicy:
    policy = OraclePolicy()
    policy.start(task, {"parser": fmt, "tools": tools})
    return policy


def _skyrl(extras: dict[str, Any], harness: str = "h0") -> HarnessTextEnv:
    register()
    env = skyrl_gym.make(ENV_ID, env_config=DictConfig({"harness": harness, "sandbox": "local"}), extras=extras)
    assert isinstance(env, HarnessTextEnv) and isinstance(env, BaseTextEnv)
    return env


def test_skyrl_gold_fix_on_a_bundled_task_earns_1_at_the_end():
    [task] = [t for t in load_suite("mini") if t.instance_id == "mini__invoice_rounding"]
    env = _skyrl({"instance_id": task.instance_id, "max_turns": 8, "prompt": "ignored", "reward_spec": {}})
    prompt, meta = env.init([{"role": "user", "content": "the dataset's prompt"}])
    assert [m["role"] for m in prompt] == ["system", "user"] and "the dataset's prompt" not in str(prompt)
    assert task.problem_statement.strip()[:40] in prompt[1]["content"]
    assert meta["instance_id"] == task.instance_id and meta["mask_sample"] is False
    assert meta["harness_hash"] == load_spec("h0").with_limits(8, None, None).hash  # max_turns from extras
    assert _names(meta["tools"]) == _names(env.tools) == {"bash", "submit"} and env.max_turns == 8
    policy, rewards = _oracle(task, "fenced_bash", meta["tools"]), []
    sandbox = env.episode.env.unwrapped.sandbox
    for _ in range(6):
        action = policy.act([], meta)
        assert isinstance(action, str)
        out = env.step(action)
        rewards.append(out["reward"])
        assert out["postprocessed_action"] is None
        if out["done"]:
            break
    meta = out["metadata"]
    assert out["done"] and rewards[-1] == 1.0 and set(rewards[:-1]) == {0.0}
    assert meta["termination"] == "submitted" and meta["resolved"] is True and meta["grade"]["status"] == "resolved"
    assert meta["mask_sample"] is False and meta["truncated"] is False and meta["harness"] == "h0"
    assert env.get_metrics() == {"resolved": 1.0, "turns": len(rewards), "truncated": 0.0, "mask_sample": 0.0}
    env.close()
    assert sandbox.closed and not sandbox.root.exists() and env.episode.env.unwrapped.sandbox is None
    env.close()  # a second close does nothing


def test_skyrl_empty_submission_scores_0(tiny_task):
    env = _skyrl({"task": tiny_task})
    env.init([])
    out = env.step(SUBMIT)
    assert out["done"] and out["reward"] == 0.0 and out["observations"] == []
    assert out["metadata"]["resolved"] is False and out["metadata"]["grade"]["status"] == "unresolved"
    assert out["metadata"]["termination"] == "submitted" and out["metadata"]["mask_sample"] is False
    env.close()


def test_skyrl_malformed_turn_is_an_observation_and_the_turn_limit_truncates(tiny_task):
    env = _skyrl({"task": tiny_task, "max_turns": 2})
    env.init([])
    out = env.step("I think the bug is in clamp, but I will not call a tool.")
    assert not out["done"] and out["reward"] == 0.0
    assert out["observations"] == [{"role": "user", "content": out["observations"][0]["content"]}]
    assert out["observations"][0]["content"].startswith("Format error (no_call)")
    fix = "sed -i '0,/return lo/! s/return lo/return hi/' calc.py"
    out = env.step(f"```bash\n{fix}\n```")
    meta = out["metadata"]
    assert out["done"] and meta["truncated"] is True and meta["termination"] == "max_turns"
    assert meta["mask_sample"] is False and meta["resolved"] is True and out["reward"] == 1.0  # graded as it stands
    assert env.get_metrics()["truncated"] == 1.0 and env.turns == 2
    env.close()


def test_skyrl_config_without_a_task_is_refused():
    with pytest.raises(AdapterConfigError, match="instance_id"):
        _skyrl({"prompt": "no task here"})


def test_rllm_row_switches_harness_and_the_gold_fix_earns_1(tiny_task):
    env = HarnessRepairEnv.from_dict({"task": tiny_task, "harness": "h0"})
    assert HarnessRepairEnv.is_multithread_safe() and env.idx is None
    env.idx = 3
    obs, info = env.reset()
    assert info["harness"] == "h0" and _names(env.tools) == {"bash", "submit"}
    first = env.episode.env.unwrapped.sandbox
    obs, info = env.reset({"harness": "h2", "data_source": "mini"})  # rllm passes the dataset row
    assert first.closed and env.idx == 3
    assert info["harness"] == "h2" and info["harness_hash"] == load_spec("h2").hash
    assert {"edit_file", "run_tests", "submit"} <= _names(info["tools"]) == _names(env.tools)
    policy = _oracle(tiny_task, "hermes", info["tools"])  # text tool calls, read by h2's `auto` parser
    for _ in range(8):
        obs, reward, done, info = env.step(SimpleNamespace(action=policy.act(obs, info)))  # an rllm Action
        if done:
            break
    assert done and reward == 1.0 and info["resolved"] is True and info["termination"] == "submitted"
    assert all(set(m) <= {"role", "content", "tool_call_id", "name"} for m in obs)
    sandbox = env.episode.env.unwrapped.sandbox
    env.close()
    assert sandbox.closed and env.episode is None


def test_rllm_empty_submission_format_errors_and_masked_sandbox(tiny_task):
    env = HarnessRepairEnv(task=tiny_task)
    env.reset()
    obs, reward, done, info = env.step({"role": "assistant", "content": SUBMIT})
    assert done and reward == 0.0 and info["resolved"] is False and info["mask_sample"] is False
    env.reset()
    for _ in range(3):  # h0 ends an episode after 3 unusable messages in a row, ungraded
        obs, reward, done, info = env.step("no tool call")
        assert obs[0]["content"].startswith("Format error (no_call)")
    assert done and reward == 0.0 and info["termination"] == "format_errors" and "grade" not in info
    env.reset()
    os.killpg(env.episode.env.unwrapped.sandbox.shell.pid, signal.SIGKILL)  # the infrastructure fails
    obs, reward, done, info = env.step("```bash\nls\n```")
    assert done and info["termination"] == "sandbox_error" and info["mask_sample"] is True and info["error"]
    env.close()


def test_rllm_adapter_fills_rllm_base_env_when_rllm_is_importable(tmp_path):
    """With an ``rllm`` package on the path, the adapter is a concrete subclass of its BaseEnv."""
    base = tmp_path / "rllm" / "environments" / "base"
    base.mkdir(parents=True)
    for d in (tmp_path / "rllm", tmp_path / "rllm" / "environments", base):
        (d / "__init__.py").write_text("")
    (base / "base_env.py").write_text(textwrap.dedent("""\
        from abc import ABC, abstractmethod

        class BaseEnv(ABC):  # the abstract methods of rllm's BaseEnv
            @abstractmethod
            def reset(self): ...
            @abstractmethod
            def step(self, action): ...
            @staticmethod
            @abstractmethod
            def from_dict(info): ...
        """))
    code = ("from rllm.environments.base.base_env import BaseEnv\n"
            "from ha_agents.adapters.rllm import HarnessRepairEnv\n"
            "env = HarnessRepairEnv.from_dict({'instance_id': 'mini__ttl_cache'})\n"
            "assert isinstance(env, BaseEnv), type(env).__mro__\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert AdapterConfig.from_mappings({"instance_id": "a"}, {"task": "b", "harness": None}) == AdapterConfig(task="b")
