"""mini-swe-agent (2.4.x, from PyPI, in its own virtual environment) as the user's harness, evaluated
through the gateway on this library's tasks.

Per task: this library's sandbox is started for the task (a bare ``RepairEnv``: the sandbox, the
grader and the integrity rules every ``ha eval`` episode has); a gateway session is opened with it;
mini-swe-agent's own ``mini`` command runs **unmodified**, configured only through its config
files: its model is ``openai/<name>`` at the session's base URL (litellm), and its environment is its
own ``docker`` environment whose ``executable`` is ``docker_shim.py``: every ``docker exec`` it issues
becomes ``POST /s/<session>/exec``, which runs the command in the sandbox (a fresh subshell in its
cwd, as its environments do). The harness process itself runs on the host and never touches the
work copy. When it exits, its exit status says how the episode ended and the env grades the work
copy's diff exactly as it grades any submission:

- ``Submitted`` -> ``submitted`` (graded); the conversation filling the token-mode context budget
  (the gateway answered ``context_length_exceeded``) -> ``context_limit``; ``LimitsExceeded`` -> ``max_turns`` and
  ``TimeExceeded`` or the wall-clock cap -> ``agent_timeout`` (truncated, graded as they stand);
  ``RepeatedFormatError`` -> ``format_errors`` (reward 0);
- the model server failing for good under a call (the gateway answered 502) -> ``model_error``,
  the sandbox failing -> ``sandbox_error``, anything else (the harness crashed) -> ``internal_error``:
  masked, with the reason.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ha_envs.actions import ToolCall
from ha_envs.env import RepairEnv
from ha_envs.sandbox import SandboxError
from ha_envs.sandbox.base import COMMAND_TIMEOUT_S
from ha_envs.task import Task
from ha_envs.termination import Termination

from ..episode import record_of
from ..loop import Trajectory
from ..records.episode_record import EpisodeRecord
from .server import Gateway, Session

MSA_VERSION = "2.4.6"
"""The mini-swe-agent release this integration is written and tested against."""
MSA_VENV = os.environ.get("HA_MSA_VENV") or ".venv-msa"
"""mini-swe-agent's own venv (``make msa-venv`` creates ``.venv-msa``; ``HA_MSA_VENV`` names another)."""
SHIM = Path(__file__).with_name("docker_shim.py")
_ENDINGS = {"Submitted": "submitted", "LimitsExceeded": "max_turns", "TimeExceeded": "agent_timeout",
            "RepeatedFormatError": "format_errors"}


@dataclass(frozen=True)
class HarnessId:
    """The harness of a gateway episode, as a record names it."""

    name: str
    hash: str


@dataclass(frozen=True)
class MsaConfig:
    venv: str = MSA_VENV
    step_limit: int = 60
    """mini-swe-agent's own ``agent.step_limit`` (model calls); reaching it ends ``max_turns``."""
    command_timeout_s: float = COMMAND_TIMEOUT_S
    episode_timeout_s: float = 1800.0
    sandbox: str = "local"

    def __post_init__(self) -> None:
        object.__setattr__(self, "venv", str(Path(self.venv).absolute()))  # the harness runs in another cwd

    def check(self) -> str:
        """The installed mini-swe-agent's version; a ValueError naming the fix when it is absent or not 2.4.x."""
        py = Path(self.venv) / "bin" / "python"
        if not py.is_file() or not (Path(self.venv) / "bin" / "mini").is_file():
            raise ValueError(f"no mini-swe-agent venv at {self.venv}: create it with `make msa-venv` (python3.11 -m venv "
                             f"{self.venv} && {self.venv}/bin/pip install mini-swe-agent=={MSA_VERSION})")
        out = subprocess.run([str(py), "-c", "import importlib.metadata as m; print(m.version('mini-swe-agent'))"],
                             capture_output=True, text=True, timeout=60)
        version = out.stdout.strip()
        if out.returncode != 0 or not version.startswith("2.4."):
            raise ValueError(f"{self.venv}: mini-swe-agent {version or '?'} found; 2.4.x is supported "
                             f"({out.stderr.strip()[-200:]})")
        return version

    def harness(self, version: str) -> HarnessId:
        import hashlib

        key = json.dumps({"version": version, "step_limit": self.step_limit,
                          "command_timeout_s": self.command_timeout_s}, sort_keys=True)
        return HarnessId(f"mini-swe-agent@{version}", hashlib.sha256(key.encode()).hexdigest()[:12])


def overrides(session: Session, gw: Gateway, workdir: str, shim: Path, cfg: MsaConfig) -> dict[str, Any]:
    """What is merged over mini-swe-agent's own ``mini.yaml``: where its model and commands go."""
    return {
        "agent": {"step_limit": cfg.step_limit, "cost_limit": 0, "mode": "yolo", "confirm_exit": False},
        "environment": {"environment_class": "docker", "image": session.id, "cwd": workdir,
                        "executable": str(shim), "run_args": [], "timeout": int(cfg.command_timeout_s) + 30},
        "model": {"model_class": "litellm", "model_name": f"openai/{gw.model}", "cost_tracking": "ignore_errors",
                  "model_kwargs": {"api_base": gw.base_url(session.id), "api_key": "ha-gateway", "drop_params": True}},
    }


def _shim(work: Path, cfg: MsaConfig) -> Path:
    """The shim, started by the harness's own Python (standard library only)."""
    path = work / "docker"
    path.write_text(f"#!{Path(cfg.venv).resolve() / 'bin' / 'python'}\n" + SHIM.read_text())
    path.chmod(0o755)
    return path


def run_harness(gw: Gateway, session: Session, task: Task, workdir: str, work: Path, cfg: MsaConfig) -> tuple[str, str]:
    """Run ``mini`` once for the task; (its exit status, what to say about it). ``work``: where its
    config, trajectory and output go."""
    work.mkdir(parents=True, exist_ok=True)
    conf = work / "gateway.yaml"
    conf.write_text(yaml.safe_dump(overrides(session, gw, workdir, _shim(work, cfg), cfg)))
    traj = work / "traj.json"
    cmd = [str(Path(cfg.venv) / "bin" / "mini"), "-c", "mini.yaml", "-c", str(conf), "--agent-class", "default",
           "-t", task.problem_statement, "-y", "--exit-immediately", "-o", str(traj)]
    env = dict(os.environ, HA_GATEWAY_URL=gw.url, MSWEA_CONFIGURED="true", MSWEA_SILENT_STARTUP="1",
               MSWEA_GLOBAL_CONFIG_DIR=str(work / "msa-config"), MSWEA_COST_TRACKING="ignore_errors",
               LITELLM_LOCAL_MODEL_COST_MAP="True", NO_COLOR="1")
    env.pop("OPENAI_API_KEY", None)
    status = _wait(cmd, env, work, session, cfg.episode_timeout_s)
    if status is not None:
        return status
    status = ""
    if traj.is_file():
        try:
            status = json.loads(traj.read_text()).get("info", {}).get("exit_status", "")
        except json.JSONDecodeError:
            status = ""
    tail = " / ".join((work / "harness.log").read_text(errors="replace").strip().splitlines()[-5:])
    return status, f"mini-swe-agent exited with status {status or 'none'}: {tail}"[:2000]


def _wait(cmd: list[str], env: dict[str, str], work: Path, session: Session, timeout_s: float) -> tuple[str, str] | None:
    """Run the harness to its end; stopped early (its whole process group) when the episode can no
    longer count (the model server or the sandbox failed under it: masked) or runs out of time.
    None when it ended by itself."""
    with (work / "harness.log").open("w") as log:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    cwd=work, start_new_session=True)
        except OSError as exc:
            return "", f"mini-swe-agent could not be started: {exc}"
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None:
            fault = session.model_error or session.sandbox_error
            late = time.monotonic() > deadline
            if fault or late:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return ("", f"stopped: {fault}") if fault else \
                    ("TimeExceeded", f"mini-swe-agent ran past the episode's {timeout_s:.0f} s")
            time.sleep(0.1)
    return None


def _finish(env: RepairEnv, session: Session, status: str, detail: str) -> tuple[float, dict[str, Any]]:
    """End the env's episode the way the harness ended it: graded, truncated, or masked."""
    if session.model_error:
        _, reward, _, _, info = env.abort(session.model_error, reason="model_error")
    elif session.sandbox_error:
        _, reward, _, _, info = env.abort(session.sandbox_error, reason="sandbox_error")
    elif session.context_limit:  # the model's context is full: truncated, graded as it stands
        _, reward, _, _, info = env.end("context_limit")
    elif _ENDINGS.get(status) == "submitted":
        _, reward, _, _, info = env.step(ToolCall("submit", {}))
    elif status in _ENDINGS:
        _, reward, _, _, info = env.end(_ENDINGS[status])
    else:
        _, reward, _, _, info = env.abort(detail, reason="internal_error")
    return reward, info


def gateway_episode(gw: Gateway, task: Task, cfg: MsaConfig, harness: HarnessId, model: str, work: Path,
                    seed: int | None = None) -> EpisodeRecord:
    """One task: sandbox, session, harness, grade; never raises for a sandbox, model or harness fault.
    ``seed``: the episode's sampling seed (training: each call samples with it and its turn)."""
    t0 = time.monotonic()
    env = RepairEnv(task=task, tasks=[task], sandbox=cfg.sandbox, command_timeout_s=cfg.command_timeout_s)
    try:
        try:
            _, reset_info = env.reset(options={"task": task})
        except SandboxError as exc:
            traj = Trajectory(instance_id=task.instance_id, model=model, harness=harness.name, harness_hash=harness.hash,
                              termination=Termination.SANDBOX_ERROR, mask_sample=True,
                              info={"error": str(exc), "termination": Termination.SANDBOX_ERROR, "mask_sample": True})
            return record_of(task, model, harness, traj, t0)
        session = gw.open(task.instance_id, sandbox=env.sandbox, command_timeout_s=cfg.command_timeout_s, seed=seed)
        status, detail = run_harness(gw, session, task, reset_info["workdir"], work, cfg)
        reward, info = _finish(env, session, status, detail)
        gw.end(session)
        return record_of(task, model, harness, _trajectory(task, session, harness, model, reward, info), t0) \
            .with_fields(harness_exit_status=status, session=session.id)
    finally:
        env.close()


def _trajectory(task: Task, session: Session, harness: HarnessId, model: str, reward: float,
                info: dict[str, Any]) -> Trajectory:
    r = session.recorder
    info = dict(info, turn=len(r.model_calls), tool_counts={"bash": session.execs} if session.execs else {})
    model_s = sum(float(c.get("latency_s") or 0.0) for c in r.model_calls)
    timings = dict(info.get("timings") or {}, sandbox_s=round(session.exec_s, 4), model_s=round(model_s, 4),
                   episode_s=round(time.monotonic() - session.started, 4))
    return Trajectory(instance_id=task.instance_id, model=model, harness=harness.name, harness_hash=harness.hash,
                      messages=r.messages(), token_ids=r.stream.token_ids, loss_mask=r.stream.loss_mask,
                      logprobs=r.stream.logprobs, token_error=r.token_error, model_calls=r.model_calls, reward=reward,
                      termination=info.get("termination"), mask_sample=bool(info.get("mask_sample")),
                      info={k: v for k, v in info.items() if k != "timings"}, timings=timings)
