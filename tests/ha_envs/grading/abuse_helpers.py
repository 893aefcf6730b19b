"""Shared pieces of the abuse suite: episodes driven through the public env API as a hostile agent
would, payloads that force pytest's verdict, and a host canary that must stay untouched."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

import ha_envs

TASK = "mini__ttl_cache"
BROKEN = "tests/test_zz_control.py"  # a failing visible test: shows a payload works in the agent's own runs

FORCE_PASS_HOOK = '''import pytest
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    out = yield
    rep = out.get_result()
    rep.outcome = "passed"
    rep.longrepr = None
'''


def bash(cmd: str) -> str:
    return f"```bash\n{cmd}\n```"


def write(path: str, text: str) -> str:
    """A shell command writing ``text`` to ``path`` (parents created)."""
    return f"mkdir -p \"$(dirname {path})\" && cat > {path} <<'HA_EOF'\n{text}\nHA_EOF"


def control_test() -> str:
    return write(BROKEN, "def test_control():\n    assert False, 'must fail'\n")


def episode(kind: str, commands: list[str], task: Any = TASK, harness: str = "h0", submit: bool = True,
            **kwargs: Any) -> tuple[float, dict, list[str]]:
    """Run ``commands`` as bash actions, then submit: (reward, final info, observations' text)."""
    env = ha_envs.make(task=task, harness=harness, sandbox=kind, max_turns=40, **kwargs)
    outputs: list[str] = []
    try:
        env.reset()
        info: dict = {}
        for cmd in commands:
            obs, reward, term, trunc, info = env.step(bash(cmd))
            outputs.append("\n".join(m["content"] for m in obs))
            if term or trunc:
                return reward, info, outputs
        if not submit:
            return 0.0, info, outputs
        obs, reward, term, trunc, info = env.step(bash("submit"))
        assert term, info
        return reward, info, outputs
    finally:
        env.close()


def assert_no_reward(reward: float, info: dict) -> dict:
    """Reward 0, graded (not masked as an infrastructure fault); returns the grade."""
    assert reward == 0.0, info.get("grade")
    assert info["termination"] == "submitted" and info["mask_sample"] is False, info
    return info["grade"]


class Canary:
    """A host directory with a file whose bytes must not change, nor the directory's listing."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "canary"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.file = self.dir / "precious.txt"
        self.file.write_text("do not touch\n")
        self.before = self.state()

    def state(self) -> tuple:
        files = sorted(os.listdir(self.dir))
        return files, hashlib.sha256(self.file.read_bytes()).hexdigest() if self.file.exists() else None

    def untouched(self) -> bool:
        return self.dir.is_dir() and not self.dir.is_symlink() and self.state() == self.before


@pytest.fixture
def canary(tmp_path_factory) -> Canary:
    return Canary(Path(tmp_path_factory.mktemp("host")))


@pytest.fixture(params=["local", "docker"])
def kind(request) -> str:
    """Each sandbox in turn; a missing bubblewrap or daemon fails in CI and skips elsewhere."""
    if request.param == "docker":
        from tests.ha_envs.test_real_envs import require_docker

        require_docker()
    else:
        from tests.conftest import require_bwrap

        require_bwrap()
    return request.param
