"""The evolution schedule: at an epoch's start, up to R rounds of propose -> validate -> compare ->
gate, against a fixed policy; then the harness is frozen for the epoch.

One round:
1. the round's tasks (``tasks`` of the pool, drawn per epoch and round; all of them when unset)
   and the current harness's rollouts on them (group size G): the preparation batch the proposer
   reads;
2. up to ``candidates`` valid proposals, each validated first: an invalid one is logged with its
   reason, costs no rollout and the proposer is asked again (at most ``max_invalid`` times a
   round);
3. at the first valid one, the current harness runs again on the same tasks with *fresh* seeds:
   the current side of the round's comparisons. The batch the proposer read is never compared
   against: a proposal follows from how that batch looked (a bad draw invites a change), so
   reusing it would bias every comparison toward the candidate. Each candidate runs on the same
   tasks, group size and fresh seeds (common seeds: member k of task t samples with the same
   seed on both sides); every gate is logged, the one named in ``decide_by`` decides:
   ``paired`` (default: the exact sign-flip test with the false acceptance per epoch ``alpha``
   split over the two rates and the epoch's comparisons, ``ha_evolve.gate_plan``), ``point``
   (the paper's rule on point estimates; no error control, a warning says so) or ``stat``;
4. the first candidate accepted becomes current.
The schedule stops early only when the proposer has nothing left to propose (``Proposal.exhausted``);
a round without a valid candidate is logged and the next round runs.

Seeds: the preparation batch of round r samples from a stream of (seed, r), the comparison from a
stream of (seed, epoch, r): disjoint from each other, and every epoch's comparisons from every
other epoch's, so each epoch's false acceptance holds on its own draws.

Every proposal goes to an append-only JSONL log (``evolution.jsonl``) with its lineage, and every
spec the run met to ``specs/<hash>.yaml``; rollouts go to ``rollouts/<hash>/e<epoch>r<round>/``
(comparison) and ``.../e<epoch>r<round>-prep/`` (the proposer's batch). A rerun with the same
directory resumes: finished rounds are read back, finished rollouts are not repeated.

Rollouts are reused across epochs only when they would be the same draw: the caller names the
policy's weights (``policy_version``: ``ha train`` passes its update count, which a frozen policy
never moves) and an earlier epoch ran the same harness on the same tasks, group size, seeds,
skills and sampling with those weights, none of its episodes masked. Only preparation batches can
be (their seeds do not depend on the epoch); comparisons never are. The log says which were
reused (``reused``) and counts only the rollouts that ran (``rollouts`` of each round record).
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

from ha_agents.train.grpo import Rollout, rates
from ha_agents.records.log import JsonlLog
from ha_agents.episode import EpisodeConfig
from ha_agents.runs.rollouts import collect, group_records
from ha_agents.records.episode_record import classify
from ha_envs.harness import HarnessSpec, diff, load_spec
from ha_envs.task import Task

from .gate import dual_rate_gate, stat_gate
from .gate_plan import RULES, GatePlan
from .paired_gate import PairedGateConfig, paired_gate
from .proposers import Proposer
from .candidate_checks import validate_candidate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvolveConfig:
    rounds: int = 5
    """R: rounds at most (the paper: 5), fewer when a round has no valid candidate."""
    group_size: int = 4
    """Rollouts per task and side (the paper: 4; 46 tasks x 4 = 184 a side)."""
    tasks: int | None = None
    """Tasks per round, drawn from the pool per epoch and round (the paper: 46); None: all of them."""
    candidates: int = 1
    """Proposals per round (the current side's rollouts are shared by all of them)."""
    decide_by: str = "paired"
    """``paired`` (the dual-rate rule on paired per-task outcomes, an exact sign-flip test at the
    level ``alpha`` sets, ``paired_gate``), ``point`` (the paper's rule on point estimates, not a
    test; ``gate`` is its old name) or ``stat`` (the bootstrap rule, unadjusted). All are logged."""
    alpha: float = 0.05
    """``paired``: false acceptance per epoch, split over the 2 rates x ``rounds`` x ``candidates``."""
    min_tasks: int | None = None
    """``paired``: tasks both sides must run (None: the least at which the split ``alpha`` can be reached)."""
    epochs: int = 1
    """Epochs planned (reported: the run's false acceptance is at most ``epochs`` x the per-epoch rate)."""
    alpha_epochs: int = 1
    """``alpha`` covers this many epochs together, each running at ``alpha / alpha_epochs`` (1: per epoch)."""
    max_invalid: int = 3
    """Invalid proposals a round asks again after (each logged); then the round ends without one."""
    attribute: bool = False
    """After an acceptance, re-run the candidate without each added or changed component."""
    epoch: int = 1
    workers: int = 2
    executor: str = "threads"
    """``threads``, or ``ray`` (a GRPO group per Ray task: the agent must be a model spec string)."""
    bootstrap_samples: int = 2000
    """The ``stat`` rule's resamples; 0: not computed unless it decides."""
    seed: int = 0
    """The schedule's seed: the streams of the preparation and comparison seeds, the round's tasks
    and the gates' resampling."""

    def validate(self) -> "EvolveConfig":
        if self.rounds < 1:
            raise ValueError("rounds must be at least 1")
        if self.group_size < 2:
            raise ValueError("group_size must be at least 2: the trainable rate needs groups with a success "
                             "and a failure")
        if self.candidates < 1:
            raise ValueError("candidates must be at least 1")
        if self.tasks is not None and self.tasks < 1:
            raise ValueError("tasks (per round) must be at least 1")
        if self.decide_by == "auto":
            raise ValueError("decide_by 'auto' is gone: it switched to the point rule at 184 rollouts a side, where a "
                             "candidate that makes no difference is accepted in most epochs; use paired (default) "
                             "or, to reproduce the paper, point")
        if self.rule not in RULES:
            raise ValueError(f"decide_by must be one of {', '.join(RULES)}, not {self.decide_by!r}")
        if self.max_invalid < 0:
            raise ValueError("max_invalid must be at least 0")
        if self.bootstrap_samples < 0:
            raise ValueError("bootstrap_samples must be at least 0")
        self.plan(1).validate()
        return self

    @property
    def rule(self) -> str:
        """The deciding rule's name (``gate``: the point rule's old name)."""
        return "point" if self.decide_by == "gate" else self.decide_by

    def plan(self, pool: int) -> GatePlan:
        """The gate's plan for a pool of ``pool`` tasks."""
        tasks = pool if self.tasks is None else min(self.tasks, pool)
        return GatePlan(self.rule, self.alpha, max(tasks, 1), self.group_size, self.rounds, self.candidates,
                        self.epochs, self.min_tasks, split_epochs=self.alpha_epochs)

    def paired_config(self, pool: int) -> PairedGateConfig:
        plan = self.plan(pool)
        return PairedGateConfig(1 - plan.alpha_test, plan.needed_tasks, seed=self.seed)


def stream_seed(seed: int, *parts: Any) -> int:
    """A seed of its own stream (``parts``: what the stream is for), disjoint from small integers."""
    digest = hashlib.sha256(json.dumps(["evolve", seed, *parts]).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def round_tasks(tasks: list[Task], n: int | None, seed: int, epoch: int, rnd: int) -> list[Task]:
    """The round's tasks: ``n`` of the pool drawn for this epoch and round (all when ``n`` is None or larger)."""
    if n is None or n >= len(tasks):
        return list(tasks)
    pool = sorted(tasks, key=lambda t: t.instance_id)
    return sorted(random.Random(stream_seed(seed, "tasks", epoch, rnd)).sample(pool, n), key=lambda t: t.instance_id)


def decide(current: list[dict[str, Any]], candidate: list[dict[str, Any]], config: EvolveConfig,
           pool: int) -> dict[str, Any]:
    """Every gate's decision on one comparison (logged), and the verdict of the one ``config``
    names. ``pool``: the tasks evolution draws from (it sizes the plan and so the test's level)."""
    cur, cand = [Rollout.from_record(r) for r in current], [Rollout.from_record(r) for r in candidate]
    g = dual_rate_gate(rates(cur), rates(cand))
    p = paired_gate(cur, cand, config.paired_config(pool))
    out: dict[str, Any] = {"gate": asdict(g), "paired": asdict(p)}
    verdicts: dict[str, Any] = {"point": g, "paired": p}
    if config.bootstrap_samples or config.rule == "stat":
        s = stat_gate(current, candidate, config.bootstrap_samples or 2000, config.seed)
        out["stat"], verdicts["stat"] = asdict(s), s
    verdict = verdicts[config.rule]
    return {**out, "decided_by": config.rule, "decision_reason": verdict.reason, "accepted": verdict.accept}


def spec_hash(spec: HarnessSpec | None) -> str | None:
    """A candidate's hash, or None when it is too broken to have one (its validation says why)."""
    try:
        return spec.hash if spec is not None else None
    except Exception:  # noqa: BLE001 - the hash validates the components it covers
        return None


def _rates(records: list[dict[str, Any]]) -> dict[str, Any]:
    rep = rates(Rollout.from_record(r) for r in records)
    return asdict(rep)


class Evolution:
    """Runs the schedule for one epoch and owns its directory."""

    def __init__(self, out: Path | str, tasks: list[Task], agent: Any, start: "EpisodeConfig | HarnessSpec | str",
                 proposer: Proposer, config: EvolveConfig = EvolveConfig(),
                 smoke_task: Task | None = None,
                 progress: Callable[[str], None] | None = None, skills: dict[str, str] | None = None,
                 policy_version: str | None = None, collector: Callable[..., list[Any]] | None = None) -> None:
        """``agent``: a model spec, or (threads) a client object such as a trainer's in-process policy;
        ``start``: the run's ``EpisodeConfig`` (its harness is where evolution starts; its sandbox, env
        placement and options, token mode and sampling are alike on both sides of every comparison,
        the seeds the round's), or a harness (preset, file, spec) with the default config;
        ``skills``: instance id -> skill, shown alike to both sides of every comparison;
        ``policy_version``: names the agent's weights, the same exactly when they are (None: they may
        change unseen, nothing is reused); an earlier epoch's rollouts of the same draw are reused;
        ``collector``: what runs a batch of rollouts, called as ``ha_agents.runs.rollouts.collect``
        (default: that function; verl's co-evolution passes its agent-loop manager's, so the gate
        sees the rollouts training sees)."""
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.tasks, self.agent, self.proposer = tasks, agent, proposer
        self.config = config.validate()
        self.smoke_task = smoke_task if smoke_task is not None else (tasks[0] if tasks else None)
        self.episodes = EpisodeConfig.of(start)
        self.skills = dict(skills or {})
        self.policy_version = policy_version
        self.collector = collector or collect
        self.ran = 0
        """Rollouts this object ran (reused ones not counted)."""
        self._spent_s, self._batch_ran = 0.0, 0  # batches run here: their seconds and rollouts (the ETA's pace)
        self.say = progress or (lambda text: log.info("%s", text))
        self.log = JsonlLog(self.out / "evolution.jsonl")
        self.current = self.episodes.harness
        self._save(self.current)
        for rec in self.log.records:  # resume: the harness where the last finished round left it
            if rec.get("kind") == "round" and rec.get("epoch") == config.epoch:
                self.current = load_spec(self.out / "specs" / f"{rec['current_after']}.yaml")
        self.plan = self.config.plan(len(tasks)).validate()
        self.say(self.plan.text())

    # -- bookkeeping --------------------------------------------------------------------------
    def _save(self, spec: HarnessSpec) -> None:
        d = self.out / "specs"
        d.mkdir(exist_ok=True)
        path = d / f"{spec.hash}.yaml"
        if not path.exists():
            spec.save(path)

    def _rollouts(self, spec: HarnessSpec, rnd: int, tasks: list[Task],
                  stream: str = "compare") -> tuple[list[dict[str, Any]], str | None]:
        """The round's rollouts of ``spec`` on ``tasks`` from a seed stream (``prep``: the proposer's
        batch; ``compare``: the comparison's), and the directory they were reused from (None: run here)."""
        cfg = self.config
        tag = f"e{cfg.epoch}r{rnd}" + ("-prep" if stream == "prep" else "")
        out = self.out / "rollouts" / spec.hash / tag
        seed = (stream_seed(cfg.seed, "prep", rnd) if stream == "prep"
                else stream_seed(cfg.seed, "compare", cfg.epoch, rnd))
        episodes = replace(self.episodes, harness=spec, seed=seed)
        key = self._draw_key(episodes, tasks)
        if key is not None and not (out / "trajectories.jsonl").exists():
            earlier = self._same_draw(spec, key, tasks)
            if earlier is not None:
                out.mkdir(parents=True, exist_ok=True)
                (out / "reused.json").write_text(json.dumps({"from": str(earlier), "key": key}, indent=1))
                return self._records(earlier, tasks), str(earlier)

        def count(_: dict[str, Any]) -> None:
            self.ran += 1

        t0, before = time.monotonic(), self.ran
        records = self.collector(tasks, cfg.group_size, self.agent, episodes, out=out, workers=cfg.workers,
                          executor=cfg.executor, progress_bar=False, skills=self.skills, on_record=count)
        self.say(self._batch_line(rnd, stream, spec, self.ran - before, time.monotonic() - t0))
        if key is not None:
            (out / "draw.json").write_text(json.dumps(key, indent=1))
        return records, None

    def _batch_line(self, rnd: int, stream: str, spec: HarnessSpec, ran: int, took: float) -> str:
        """A batch done: its size and time, the epoch's rollouts so far and, at this batch's pace, an
        ETA for the rest the plan allows (an upper bound: a round may end before its last candidate)."""
        from ha_agents.runs.progress import clock

        self._spent_s += took
        self._batch_ran += ran
        what = "the proposer's batch" if stream == "prep" else f"{spec.name}'s comparison batch"
        left = max(0, self.plan.rollouts_per_epoch() - self._batch_ran)
        pace = self._spent_s / self._batch_ran if self._batch_ran else 0.0
        return (f"  round {rnd}: {what}: {ran} rollouts in {clock(took)}; {self._batch_ran} of at most "
                f"{self.plan.rollouts_per_epoch()} this epoch, ETA at most {clock(pace * left)}")

    def _draw_key(self, episodes: EpisodeConfig, tasks: list[Task]) -> dict[str, Any] | None:
        """What makes two batches of rollouts the same draw; None when the weights are not named."""
        if self.policy_version is None:
            return None
        return {"policy": self.policy_version, **episodes.draw_key(), "group_size": self.config.group_size,
                "tasks": sorted(t.instance_id for t in tasks), "skills": self.skills}

    def _same_draw(self, spec: HarnessSpec, key: dict[str, Any], tasks: list[Task]) -> Path | None:
        """An earlier epoch's finished batch of exactly this draw, none of its episodes masked."""
        for marker in sorted((self.out / "rollouts" / spec.hash).glob("*/draw.json")):
            try:
                if json.loads(marker.read_text()) != key:
                    continue
            except ValueError:
                continue
            records = self._records(marker.parent, tasks)
            if len(records) == len(tasks) * self.config.group_size and not any(classify(r).masked for r in records):
                return marker.parent
        return None

    def _records(self, d: Path, tasks: list[Task]) -> list[dict[str, Any]]:
        return group_records(JsonlLog(d / "trajectories.jsonl").records, tasks, self.config.group_size)

    def _done_rounds(self) -> set[int]:
        return {int(r["round"]) for r in self.log.records if r.get("kind") == "round" and r.get("epoch") == self.config.epoch}

    def _tried(self) -> set[str]:
        """Candidates a proposer must not offer again: every one of this epoch, earlier epochs'
        accepted ones, and those an earlier epoch judged with these very weights (``policy_version``:
        the verdict stands; a second look would only be a second chance for noise). Otherwise an
        earlier epoch's rejection may come back: the policy has changed since (the paper's point that
        the harness must keep evolving), and a 'not enough evidence' then may be evidence now."""
        return {r["candidate_hash"] for r in self.log.records if r.get("kind") == "proposal" and r.get("candidate_hash")
                and (r.get("epoch") == self.config.epoch or r.get("accepted")
                     or (self.policy_version is not None and r.get("policy") == self.policy_version
                         and r["validation"]["ok"]))}

    # -- the schedule -------------------------------------------------------------------------
    def run(self) -> HarnessSpec:
        """Up to R rounds; returns the harness frozen for the epoch."""
        done = self._done_rounds()
        stopped = any(r.get("kind") == "round" and r.get("epoch") == self.config.epoch and r.get("stop")
                      for r in self.log.records)
        for rnd in range(1, self.config.rounds + 1):
            if stopped:
                break
            if rnd in done:
                continue
            stopped = self.round(rnd)
        self.say(f"epoch {self.config.epoch}: harness {self.current.name} ({self.current.hash}) frozen")
        return self.current

    def round(self, rnd: int) -> bool:
        """One round; True when the schedule should stop (the proposer has nothing left to propose)."""
        cfg = self.config
        t0 = time.monotonic()
        parent = self.current
        ran = self.ran
        tasks = round_tasks(self.tasks, cfg.tasks, cfg.seed, cfg.epoch, rnd)
        prep, prep_reused = self._rollouts(parent, rnd, tasks, "prep")
        prep_rates = _rates(prep)
        prep_run = self.ran - ran
        self.say(f"round {rnd}: current {parent.name} ({parent.hash}) pass {prep_rates['pass_rate']:.3f} "
                 f"trainable {prep_rates['trainable_rate']:.3f} over {prep_rates['n_rollouts']} rollouts on "
                 f"{len(tasks)} tasks (the proposer's batch"
                 + (f", reused from {Path(prep_reused).name}: the same weights, harness and seeds)" if prep_reused else ")"))
        state = {"valid": 0, "invalid": 0, "accepted": None, "exhausted": False, "current": None,
                 "prep": (prep, prep_rates, prep_reused), "tasks": tasks}
        k = 0
        while (state["valid"] < cfg.candidates and state["invalid"] <= cfg.max_invalid and state["accepted"] is None
               and not state["exhausted"]):
            k += 1
            self._proposal(rnd, k, parent, state)
        if state["accepted"] is not None:
            self.current = state["accepted"]
        stop = state["exhausted"] and state["accepted"] is None
        self.log.append({"kind": "round", "epoch": cfg.epoch, "round": rnd, "current_before": parent.hash,
                         "current_after": self.current.hash, "accepted": state["accepted"] is not None,
                         "valid": state["valid"], "invalid": state["invalid"], "stop": stop,
                         "tasks": [t.instance_id for t in tasks], "rollouts_run": self.ran - ran,
                         "preparation_run": prep_run, "seconds": round(time.monotonic() - t0, 2)})
        return stop

    def _proposal(self, rnd: int, k: int, parent: HarnessSpec, state: dict[str, Any]) -> None:
        """Proposal k of the round: asked, validated, compared on fresh draws and logged (or, on a
        resume, read back from the log); ``state`` carries the round's counts and its current side."""
        cfg = self.config
        already = [r for r in self.log.records if r.get("kind") == "proposal" and r.get("epoch") == cfg.epoch
                   and r.get("round") == rnd and r.get("k") == k]
        if already:  # resumed inside a round: this proposal was decided
            entry = already[-1]
            ok = bool(entry["validation"]["ok"])
            state["valid"] += ok
            state["invalid"] += not ok
            state["exhausted"] = bool(entry.get("exhausted"))
            if entry.get("accepted"):
                state["accepted"] = load_spec(self.out / "specs" / f"{entry['candidate_hash']}.yaml")
            return
        prep, prep_rates, prep_reused = state["prep"]
        proposal = self.proposer.propose(parent, prep, self._tried() | {parent.hash})
        check = validate_candidate(proposal.candidate, parent, self.smoke_task, self.episodes.sandbox, proposal.error)
        exhausted = state["exhausted"] = proposal.candidate is None and getattr(proposal, "exhausted", False)
        entry: dict[str, Any] = {
            "kind": "proposal", "epoch": cfg.epoch, "round": rnd, "k": k, "proposer": proposal.proposer,
            "policy": self.policy_version,
            "parent_hash": parent.hash, "candidate_hash": spec_hash(proposal.candidate),
            "candidate_name": proposal.candidate.name if proposal.candidate else None,
            "diff": diff(parent, proposal.candidate) if proposal.candidate is not None and check.stage != "schema" else [],
            "diagnosis": proposal.diagnosis, "validation": asdict(check), "preparation_rates": prep_rates,
            "rollouts": {"preparation": len(prep), "current": 0, "candidate": 0,
                         "smoke": 1 if check.stage in ("smoke", "passed") else 0},
            "reused": {"preparation": prep_reused, "current": None, "candidate": None},
            "exhausted": exhausted,
        }
        self.ran += entry["rollouts"]["smoke"]
        if proposal.candidate is not None and check.ok:
            state["valid"] += 1
            self._compare(rnd, parent, proposal.candidate, entry, state)
        else:
            state["invalid"] += 1
            entry["accepted"] = False
            self.say(f"  proposal {k} rejected before comparison ({check.stage}): {check.reason}"
                     + ("" if exhausted else "; asking again"
                        if state["invalid"] <= cfg.max_invalid and state["valid"] < cfg.candidates else ""))
        self.log.append(entry)
        if entry["accepted"]:
            state["accepted"] = proposal.candidate

    def _compare(self, rnd: int, parent: HarnessSpec, cand: HarnessSpec, entry: dict[str, Any],
                 state: dict[str, Any]) -> None:
        """Both sides of a comparison on fresh seeds (the current side drawn once a round, at its first
        valid candidate), every gate, and the verdict, into ``entry``."""
        if state["current"] is None:
            state["current"] = self._rollouts(parent, rnd, state["tasks"], "compare")
        current, entry["reused"]["current"] = state["current"]
        self._save(cand)
        cand_records, entry["reused"]["candidate"] = self._rollouts(cand, rnd, state["tasks"], "compare")
        entry["current_rates"], entry["candidate_rates"] = _rates(current), _rates(cand_records)
        entry["rollouts"].update(current=len(current), candidate=len(cand_records))
        entry.update(decide(current, cand_records, self.config, len(self.tasks)))
        self.say(f"  candidate {cand.name}: {'; '.join(entry['diff']) or 'no change'} -> pass "
                 f"{entry['current_rates']['pass_rate']:.3f} -> {entry['candidate_rates']['pass_rate']:.3f}, trainable "
                 f"{entry['current_rates']['trainable_rate']:.3f} -> {entry['candidate_rates']['trainable_rate']:.3f} "
                 f"(fresh draws); {entry['decided_by']}: {entry['decision_reason']}; "
                 f"{'ACCEPTED' if entry['accepted'] else 'rejected'}")
        if entry["accepted"] and self.config.attribute:
            entry["attribution"] = self._attribute(parent, cand, cand_records, rnd, state["tasks"])

    def _attribute(self, parent: HarnessSpec, cand: HarnessSpec, cand_records: list[dict[str, Any]],
                   rnd: int, tasks: list[Task]) -> list[dict[str, Any]]:
        """Leave one component out: the candidate with each added or changed part reverted to the
        parent's, re-run; the drop in each rate is what that part carried."""
        out = []
        full = _rates(cand_records)
        parent_tools = {c.name: c for c in parent.tools}
        parent_hooks = {c.name: c for c in parent.hooks}
        for kind, comps, before in (("tool", cand.tools, parent_tools), ("hook", cand.hooks, parent_hooks)):
            for c in comps:
                if c.name in before and before[c.name] == c:
                    continue
                if c.name in before:
                    reverted = tuple(before[c.name] if x.name == c.name else x for x in comps)
                    spec = replace(cand, **{"tools" if kind == "tool" else "hooks": reverted})
                else:
                    spec = cand.without(c.name)
                try:
                    spec = spec.validate()
                except Exception as exc:  # noqa: BLE001 - a part others depend on cannot be left out alone
                    out.append({"component": f"{kind} {c.name}", "error": str(exc)})
                    continue
                self._save(spec)
                rep = _rates(self._rollouts(spec, rnd, tasks)[0])
                out.append({"component": f"{kind} {c.name}", "hash": spec.hash,
                            "pass_drop": full["pass_rate"] - rep["pass_rate"],
                            "trainable_drop": full["trainable_rate"] - rep["trainable_rate"]})
        return out
