"""HarnessAdapt-RL's co-evolution inside one verl 0.9.1 run (``ha train --backend verl --evolve
[--skill-teacher]``), built on verl's extension points, not a fork:

- ``CoEvolvingAgentLoopManager`` (``ha_evolve.verl_manager``) is verl's ``AgentLoopManager`` named by verl's own setting
  ``actor_rollout_ref.rollout.agent.agent_loop_manager_class``. verl's trainer (``RayPPOTrainer.fit``,
  the sync trainer: ``trainer.use_v1=false``) calls its ``generate_sequences`` once per training
  step with ``meta_info.global_steps``; at the first step of every epoch (steps 1, every + 1, ...)
  it first runs the epoch start, then the step's rollouts as verl's manager does. The weights are
  synced to the rollout servers at that point (verl wakes them before each step's generation), so
  the epoch start samples the policy about to be trained; the actor, its optimizer and scheduler,
  and verl's step counters are never touched: training goes on after it as before.
- The epoch start is the library's ``CoEvolution`` (the skill teacher, then evolution's rounds and
  the gate, ``ha_evolve.schedule``) with one change: every rollout it asks for (the skill
  teacher's preparation, both sides of every comparison) runs through this manager's own
  agent-loop workers (``AgentLoopCollector``): the same ``HarnessAgentLoop``, token mode, rollout
  servers and sampling settings as training, the harness of each row given in
  ``extra_info.harness``. The gate thus decides on the rollouts training sees.
- The accepted harness and the epoch's skills go to the harness board (``ha_agents.train.verl_board``),
  which every agent-loop worker reads at each episode's start: no worker restarts.
- ``OUT/verl_epochs.jsonl`` records each epoch start (step, harness before and after, board
  version, skills) and ``OUT/harness.yaml`` is the harness training runs on; a resumed run (verl's ``trainer.resume_mode``) publishes the last one's harness
  and skills before its first step.

The plan (``write_plan``: tasks, starting harness, the ``--evolve*`` and gate settings) is a JSON
file verl's config names under ``harnessadapt.coevolution``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ha_agents.records.log import JsonlLog
from ha_agents.runs.rollouts import group_records
from ha_envs.harness import HarnessSpec, load_spec

MANAGER_CLASS = "ha_evolve.verl_manager.CoEvolvingAgentLoopManager"
PLAN_KEY = "harnessadapt"
"""The top-level key of verl's config under which the plan file is named (``+harnessadapt.coevolution=PATH``)."""


@dataclass(frozen=True)
class VerlCoEvolvePlan:
    """Everything the trainer process needs for the epoch starts (written as JSON by ``ha train``)."""

    out: str
    task_source: dict[str, Any]
    """``verl_loop.load_tasks``'s source (the agent loop's own)."""
    instances: list[str]
    """The training pool evolution draws its rounds' tasks from."""
    harness: dict[str, Any]
    """The starting harness (a ``HarnessSpec`` mapping)."""
    every: int = 5
    proposer: str | None = "rule"
    proposer_options: dict[str, Any] = field(default_factory=dict)
    evolve: dict[str, Any] = field(default_factory=dict)
    """``EvolveConfig``'s fields."""
    skill_teacher: str | None = None
    model_label: str = "policy"
    sandbox: str = "local"
    env_placement: str = "local"
    board: str = "harnessadapt_board"

    @classmethod
    def load(cls, path: str | Path) -> "VerlCoEvolvePlan":
        return cls(**json.loads(Path(path).read_text()))


def write_plan(path: Path, plan: VerlCoEvolvePlan) -> list[str]:
    """Write the plan; returns verl's overrides that turn co-evolution on (the sync trainer, our
    manager, the plan's path)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(plan), indent=1))
    return ["trainer.use_v1=false", f"+actor_rollout_ref.rollout.agent.agent_loop_manager_class={MANAGER_CLASS}",
            f"+{PLAN_KEY}.coevolution={path}"]


def _rows(todo: list[tuple[Any, int]], episodes: Any, step: int, divisor: int = 1) -> Any:
    """verl's generation batch for (task, sample) pairs under ``episodes``' harness (one row per
    rollout), each with its episode seed (common seeds: sample k of a task alike on both gate sides),
    filled up to a multiple of ``divisor`` (verl splits a batch evenly over its agent-loop workers)
    with ``pad`` rows, which run no episode."""
    pad = (-len(todo)) % max(1, divisor)
    todo = list(todo) + [todo[0]] * pad
    import torch
    from verl.protocol import DataProto

    from ha_agents.train.verl_launch import AGENT_NAME

    harness = episodes.harness.to_dict()
    prompts = np.empty(len(todo), dtype=object)  # one chat (a list) per row
    for i, (t, _) in enumerate(todo):
        prompts[i] = [{"role": "user", "content": t.problem_statement}]
    batch = DataProto.from_single_dict({
        "dummy_tensor": torch.zeros(len(todo), 1, dtype=torch.uint8), "raw_prompt": prompts,
        "extra_info": np.array([{"instance_id": t.instance_id, "index": i, "harness": harness, "run": k, "record": True,
                                 "seed": episodes.episode_seed(t.instance_id, k), "pad": i >= len(todo) - pad}
                                for i, (t, k) in enumerate(todo)], dtype=object),
        "agent_name": np.array([AGENT_NAME] * len(todo), dtype=object),
        "index": np.array(list(range(len(todo))), dtype=object),
        "uid": np.array([f"evolve-{t.instance_id}" for t, _ in todo], dtype=object)})
    batch.meta_info.update(global_steps=step, validate=False)
    return batch


def _record(out: Any, i: int, task: Any, run: int, spec: HarnessSpec, model: str,
            skill: str | None = None) -> dict[str, Any]:
    """Sample ``i`` of an agent-loop output as an episode record (``EpisodeRecord``'s fields)."""
    nt = out.non_tensor_batch
    detail = json.loads(str(nt["episode"][i]) or "{}")  # messages and counts: what the proposer reads
    return {**detail, "instance_id": task.instance_id, "benchmark": task.benchmark, "model": model, "harness": spec.name,
            "harness_hash": str(nt["harness_hash"][i]), "run": run,
            "reward": float(out.batch["rm_scores"][i].sum()), "resolved": bool(nt["resolved"][i]),
            "termination": str(nt["termination"][i]), "mask_sample": bool(nt["mask_sample"][i]),
            "turns": int(nt["turns"][i]), "board_version": int(nt["harness_version"][i]),
            "skill": skill if float(nt["skill"][i]) else None, "source": "verl-agent-loop"}


class AgentLoopCollector:
    """``collect()``'s signature over verl's agent-loop manager: a batch of rollouts of the
    config's harness, one row per (task, sample), through ``generate`` (the manager's own
    ``generate_sequences``), written to ``out/trajectories.jsonl`` (a rerun runs only what is missing)."""

    def __init__(self, generate: Callable[[Any], Any], label: str = "verl-policy",
                 show_skills: Callable[[dict[str, str]], None] | None = None, divisor: int = 1) -> None:
        """``show_skills``: makes the given skills the ones every episode sees (the board's);
        ``divisor``: the agent-loop workers a batch is split over (rows are padded to a multiple)."""
        self.generate, self.label, self.show_skills, self.divisor = generate, label, show_skills, divisor
        self.step = 0
        """verl's training step the rollouts belong to (the policy's weights after step - 1 updates)."""
        self.batches = 0

    def __call__(self, tasks: list[Any], group_size: int, model: Any, config: Any, *, out: Path | str,
                 workers: int = 2, executor: str = "threads", on_record: Callable[[dict[str, Any]], None] | None = None,
                 progress_bar: bool = False, skills: dict[str, str] | None = None, **_: Any) -> list[Any]:
        """``skills`` are not passed per row: they go to the board first (``show_skills``), so
        every episode of the batch sees them, as both sides of a comparison and the epoch's training
        do (the skill teacher's preparation batch: none)."""
        Path(out).mkdir(parents=True, exist_ok=True)
        log = JsonlLog(Path(out) / "trajectories.jsonl")
        done = log.done()
        todo = [(t, k) for t in tasks for k in range(1, group_size + 1) if (t.instance_id, k) not in done]
        if todo:
            if self.show_skills is not None:
                self.show_skills(dict(skills or {}))
            output = self.generate(_rows(todo, config, self.step, self.divisor))
            self.batches += 1
            label = f"{self.label}@update-{max(0, self.step - 1)}"
            for i, (t, k) in enumerate(todo):
                got = (output.non_tensor_batch.get("extra_info", [None] * len(todo))[i] or {}).get("instance_id")
                if got not in (None, t.instance_id):
                    raise RuntimeError(f"agent-loop output {i} is {got}, expected {t.instance_id}: rows reordered")
                rec = _record(output, i, t, k, config.harness, label, (skills or {}).get(t.instance_id))
                rec["seed"] = config.episode_seed(t.instance_id, k)
                log.append(rec)
                if on_record:
                    on_record(rec)
        return group_records(log.records, tasks, group_size)


@dataclass
class _Policy:
    """What ``CoEvolution`` asks of a trainer: a client (here only a label: the collector runs the
    rollouts) and the updates done (names the weights, so reuse across epochs stays exact)."""

    label: str
    step: int

    def client(self) -> str:
        return self.label


class VerlEpochStart:
    """The epoch start of one verl run: ``at_step(global_steps)`` before the step's rollouts."""

    def __init__(self, plan: VerlCoEvolvePlan, generate: Callable[[Any], Any], total_steps: int,
                 progress: Callable[[str], None] | None = None, workers: int = 1) -> None:
        """``workers``: verl's agent-loop workers (``rollout.agent.num_workers``): batches are padded
        to a multiple of it."""
        from ha_agents.episode import EpisodeConfig
        from ha_agents.train.verl_board import open_board, publish
        from ha_agents.train.verl_loop import load_tasks

        from .coevolution import CoEvolution, CoEvolveConfig
        from .proposers import ProposerOptions
        from .schedule import EvolveConfig

        self.plan, self.out = plan, Path(plan.out)
        tasks = load_tasks(plan.task_source)
        missing = [i for i in plan.instances if i not in tasks]
        if missing:
            raise ValueError(f"co-evolution plan names {len(missing)} task(s) not in {plan.task_source}: {missing[:3]}")
        self.spec = HarnessSpec.from_dict(plan.harness).validate()
        config = CoEvolveConfig(every=plan.every, proposer=plan.proposer,
                                proposer_options=ProposerOptions(**plan.proposer_options),
                                evolve=EvolveConfig(**plan.evolve), skill_teacher=plan.skill_teacher,
                                model_label=plan.model_label)
        self.collector = AgentLoopCollector(generate, plan.model_label, self._show_skills, workers)
        self.progress = progress or (lambda text: print(text, file=sys.stderr, flush=True))
        episodes = EpisodeConfig(self.spec, sandbox=plan.sandbox, env_placement=plan.env_placement)
        self.coevolution = CoEvolution([tasks[i] for i in plan.instances], self.out, episodes, config,
                                       progress=self.progress, collector=self.collector)
        self.coevolution.epochs = max(1, -(-total_steps // plan.every))
        self.log = JsonlLog(self.out / "verl_epochs.jsonl")
        skills: dict[str, str] = {}
        if self.log.records:  # a resumed run: the harness and skills the last epoch start left
            last = self.log.records[-1]
            self.spec = load_spec(self.out / "evolve" / "specs" / f"{last['harness_after']}.yaml")
            skills = last.get("skills") or {}
        self.board = open_board(plan.board)
        self.skills = skills
        self.version = publish(self.board, self.spec, skills)

    def _show_skills(self, skills: dict[str, str]) -> None:
        """Publish ``skills`` (with the current harness) unless the board holds them already."""
        from ha_agents.train.verl_board import publish

        if skills != self.skills:
            self.skills, self.version = skills, publish(self.board, self.spec, skills)

    def epoch_of(self, step: int) -> int | None:
        """The epoch ``step`` starts (1-based), or None when it starts none."""
        every = self.plan.every
        return (step - 1) // every + 1 if step >= 1 and (step - 1) % every == 0 else None

    def at_step(self, step: int) -> dict[str, Any] | None:
        """At an epoch's first step (once; a resumed run skips epochs already logged): the epoch
        start, then the accepted harness and the skills published. Returns the epoch's log line."""
        from ha_agents.train.verl_board import publish

        epoch = self.epoch_of(step)
        if epoch is None or any(r["epoch"] == epoch for r in self.log.records):
            return None
        self.collector.step = step
        before = self.spec
        new, compared, skills = self.coevolution(epoch, before, _Policy(self.plan.model_label, step - 1))
        self.spec, self.skills = new, skills
        self.version = publish(self.board, new, skills)
        new.save(self.out / "harness.yaml")  # the harness training runs on now (evaluate the pair with it)
        line = {"epoch": epoch, "step": step, "harness_before": before.hash, "harness_after": new.hash,
                "accepted": new.hash != before.hash, "comparison_rollouts": compared,
                "board_version": self.version, "skills": skills, "batches": self.collector.batches}
        self.log.append(line)
        self.progress(f"verl step {step}: epoch {epoch} starts with harness {new.name} ({new.hash}), board version "
                      f"{self.version}, {len(skills)} skill(s)")
        return line


__all__ = ["AgentLoopCollector", "MANAGER_CLASS", "PLAN_KEY", "VerlCoEvolvePlan", "VerlEpochStart", "write_plan"]
