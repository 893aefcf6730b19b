"""Evaluation runs: episodes of (task x run) with a policy, streamed to disk, resumable.

Output directory:
- ``trajectories.jsonl``: one line per finished episode, appended and flushed as it ends;
- ``predictions.jsonl`` (run 1) and ``predictions-run<k>.jsonl`` (run k > 1): SWE-bench's format
  (``instance_id``, ``model_name_or_path``, ``model_patch``), rebuilt from the trajectories;
- ``summary.json``: pass@1 per run, its mean, and per-instance outcomes.
A rerun with the same directory skips the (instance, run) pairs already in trajectories.jsonl.
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ha_envs import make
from ha_envs.grading import GRADER_VERSION
from ha_envs.harness import HarnessSpec, load_spec
from ha_envs.sandbox import SandboxError
from ha_envs.task import Task

from .llm.base import LLMClient
from .llm.openai_http import OpenAIClient, parse_model_spec
from .llm.scripted import PolicyClient, ReplayClient
from .loop import AgentLoop, LoopConfig, Trajectory
from .policies import POLICIES, Policy, make_policy
from .trajectory import write_traj_json


def make_agent(spec: str) -> LLMClient:
    """An agent by name: ``oracle`` / ``null`` (scripted policies), ``openai:NAME@URL``,
    ``replay:TRAJECTORIES.jsonl``, ``hf:PATH`` (a local transformers model)."""
    if spec in POLICIES:
        return PolicyClient(make_policy(spec))
    if spec.startswith("openai:"):
        return OpenAIClient(parse_model_spec(spec))
    if spec.startswith("replay:"):
        return ReplayClient(spec[len("replay:"):])
    if spec.startswith("hf:"):
        from .llm.hf import TransformersClient

        return TransformersClient(spec[len("hf:"):])
    raise ValueError(f"unknown model {spec!r}: use oracle, null, openai:NAME@URL, replay:FILE or hf:PATH")


def run_episode(task: Task, agent: "LLMClient | Policy | str", harness: "str | HarnessSpec" = "h0",
                sandbox: str = "local", env_kwargs: dict[str, Any] | None = None,
                loop: AgentLoop | None = None) -> dict[str, Any]:
    """One episode through the AgentLoop; returns its trajectory record (never raises for a
    sandbox or model failure: those end masked)."""
    harness = load_spec(harness)
    if isinstance(agent, str):
        agent = make_agent(agent)
    elif not hasattr(agent, "complete"):
        agent = PolicyClient(agent)
    if loop is None:
        loop = AgentLoop(agent, config=LoopConfig(max_turns=harness.limits.max_turns))
    else:
        loop.client = agent
    t0 = time.monotonic()
    env = make(task=task, harness=harness, sandbox=sandbox, **(env_kwargs or {}))
    try:
        try:
            traj = loop.run(env, task)
        except SandboxError as exc:
            traj = Trajectory(instance_id=task.instance_id, model=agent.name, harness=harness.name,
                              harness_hash=harness.hash, termination="sandbox_error", mask_sample=True,
                              info={"termination": "sandbox_error", "mask_sample": True, "error": str(exc)})
        return _record(task, agent.name, harness, traj, t0)
    finally:
        env.close()


def _record(task: Task, model: str, harness: HarnessSpec, traj: Trajectory, t0: float) -> dict[str, Any]:
    info = traj.info
    grade = info.get("grade") or {}
    return {
        "instance_id": task.instance_id,
        "benchmark": task.benchmark,
        "policy": model,
        "model": model,
        "harness": harness.name,
        "harness_hash": traj.harness_hash or harness.hash,
        "reward": traj.reward,
        "resolved": bool(grade.get("resolved", False)),
        "termination": traj.termination,
        "mask_sample": traj.mask_sample,
        "error": info.get("error", ""),
        "turns": info.get("turn", 0),
        "tool_counts": info.get("tool_counts", {}),
        "hooks": info.get("hooks", {}),
        "edits": info.get("edits", 0),
        "test_runs": info.get("test_runs", 0),
        "delivery": info.get("delivery"),
        "timings": traj.timings,
        "patch": info.get("patch", ""),
        "grade": grade,
        "messages": traj.messages,
        "model_calls": traj.model_calls,
        "token_ids": traj.token_ids,
        "loss_mask": traj.loss_mask,
        "logprobs": traj.logprobs,
        "token_error": traj.token_error,
        "skill": traj.skill,
        "duration_s": round(time.monotonic() - t0, 3),
        "grader_version": GRADER_VERSION,
        "task_fingerprint": task.fingerprint(),
    }


class TrajectoryLog:
    """Append-only JSONL; a line cut off by a killed writer is dropped (and the file mended) on open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.records: list[dict[str, Any]] = self._load()

    def _load(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        records, good_bytes = [], 0
        with self.path.open("rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break
                try:
                    records.append(json.loads(raw))
                except json.JSONDecodeError:
                    break
                good_bytes += len(raw)
        if good_bytes != self.path.stat().st_size:
            with self.path.open("r+b") as fh:
                fh.truncate(good_bytes)
        return records

    def done(self) -> set[tuple[str, int]]:
        return {(r["instance_id"], int(r["run"])) for r in self.records}

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=True) + "\n"
        with self._lock:
            with self.path.open("a") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            self.records.append(record)


@dataclass
class EvalSummary:
    model: str
    harness: str
    harness_hash: str
    runs: int
    n_tasks: int
    pass_at_1: list[float] = field(default_factory=list)
    mean_pass_at_1: float = 0.0
    masked: int = 0
    per_instance: dict[str, list[bool]] = field(default_factory=dict)

    def markdown(self) -> str:
        head = "| harness | model | " + " | ".join(f"run {i + 1}" for i in range(self.runs)) + " | pass@1 (mean) |"
        sep = "|---|---|" + "---|" * self.runs + "---|"
        row = (f"| {self.harness} ({self.harness_hash}) | {self.model} | " + " | ".join(f"{100 * p:.1f}" for p in self.pass_at_1)
               + f" | {100 * self.mean_pass_at_1:.1f} |")
        lines = [head, sep, row, "", f"{self.n_tasks} tasks x {self.runs} runs; {self.masked} episodes masked "
                 "(infrastructure failures, counted unresolved)."]
        return "\n".join(lines)


def evaluate(tasks: list[Task], policy: str, harness: "str | HarnessSpec" = "h0", runs: int = 1,
             out_dir: Path | str = "runs/eval", sandbox: str = "local", workers: int = 1,
             env_kwargs: dict[str, Any] | None = None,
             progress: Callable[[dict[str, Any]], None] | None = None) -> EvalSummary:
    kw = dict(env_kwargs or {})
    spec = load_spec(harness).with_limits(kw.pop("max_turns", None), kw.pop("command_timeout_s", None),
                                          kw.pop("max_format_errors", None))
    env_kwargs = kw
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = TrajectoryLog(out / "trajectories.jsonl")
    other = {r.get("harness_hash") for r in log.records} - {spec.hash}
    if other:
        raise ValueError(f"{out} holds episodes of another harness (hash {', '.join(sorted(map(str, other)))}); "
                         f"this run's harness {spec.name} has hash {spec.hash}: use another --out")
    spec.save(out / "harness.yaml")
    harness = spec
    done = log.done()
    todo = [(t, r) for r in range(1, runs + 1) for t in tasks if (t.instance_id, r) not in done]

    def work(task: Task, run: int) -> dict[str, Any]:
        record = run_episode(task, make_agent(policy), harness, sandbox, env_kwargs)
        record["run"] = run
        log.append(record)
        return record

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(work, t, r) for t, r in todo]
        for fut in as_completed(futures):
            rec = fut.result()
            if progress:
                progress(rec)
    model_name = make_agent(policy).name
    summary = summarize(log.records, [t.instance_id for t in tasks], runs, model_name, spec.name, spec.hash)
    write_predictions(log.records, out, runs, model_name)
    write_traj_json([r for r in log.records if r["instance_id"] in {t.instance_id for t in tasks}], out)
    (out / "summary.json").write_text(json.dumps(summary.__dict__, indent=2) + "\n")
    return summary


def summarize(records: list[dict[str, Any]], ids: list[str], runs: int, model: str, harness: str,
              harness_hash: str = "") -> EvalSummary:
    wanted = set(ids)
    by_key = {(r["instance_id"], int(r["run"])): r for r in records if r["instance_id"] in wanted}
    s = EvalSummary(model=model, harness=harness, harness_hash=harness_hash, runs=runs, n_tasks=len(ids))
    for run in range(1, runs + 1):
        outcomes = [bool(by_key.get((i, run), {}).get("resolved", False)) for i in ids]
        s.pass_at_1.append(sum(outcomes) / len(ids) if ids else 0.0)
        for i, ok in zip(ids, outcomes):
            s.per_instance.setdefault(i, []).append(ok)
    s.masked = sum(1 for r in by_key.values() if r.get("mask_sample"))
    s.mean_pass_at_1 = sum(s.pass_at_1) / runs if runs else 0.0
    return s


def write_predictions(records: list[dict[str, Any]], out: Path, runs: int, model: str) -> None:
    for run in range(1, runs + 1):
        name = "predictions.jsonl" if run == 1 else f"predictions-run{run}.jsonl"
        rows = sorted((r for r in records if int(r["run"]) == run), key=lambda r: r["instance_id"])
        tmp = out / (name + ".tmp")
        with tmp.open("w") as fh:
            for r in rows:
                fh.write(json.dumps({"instance_id": r["instance_id"], "model_name_or_path": model,
                                     "model_patch": r.get("patch", "")}) + "\n")
        tmp.replace(out / name)
