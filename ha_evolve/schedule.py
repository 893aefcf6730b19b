"""The evolution schedule: at an epoch's start, up to R rounds of propose -> validate -> compare ->
gate, against a fixed policy; then the harness is frozen for the epoch.

One round:
1. the current harness's rollouts on the round's tasks (group size G): the preparation
   trajectories the proposer reads, and the current side of every comparison in the round (under a
   fixed policy they need not be re-run per candidate: k candidates cost k + 1 batches, not 2k);
2. up to ``candidates`` valid proposals, each validated first: an invalid one is logged with its
   reason, costs no rollout and the proposer is asked again (at most ``max_invalid`` times a
   round); each valid one runs on the same tasks, group size and seeds (common seeds: member k of
   task t samples with the same seed on both sides); every gate is logged, the one named in
   ``decide_by`` decides (``auto``: the paired rule of ``paired_gate`` below the paper's 184
   rollouts a side, the paper's point rule from there);
3. the first candidate accepted becomes current.
The schedule stops early only when the proposer has nothing left to propose (``Proposal.exhausted``);
a round without a valid candidate is logged and the next round runs.

Every proposal goes to an append-only JSONL log (``evolution.jsonl``) with its lineage, and every
spec the run met to ``specs/<hash>.yaml``; rollouts go to ``rollouts/<hash>/e<epoch>r<round>/``. A rerun
with the same directory resumes: finished rounds are read back, finished rollouts are not repeated.

Rollouts are reused across epochs only when they would be the same draw: the caller names the
policy's weights (``policy_version``: ``ha train`` passes its update count, which a frozen policy
never moves) and an earlier epoch ran the same harness on the same tasks, group size, seeds,
skills and sampling with those weights, none of its episodes masked. The log says which were reused
(``reused``) and counts only the rollouts that ran (``rollouts`` of each round record).
"""

from __future__ import annotations

import json
import logging
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
    candidates: int = 1
    """Proposals per round (the current side's rollouts are shared by all of them)."""
    decide_by: str = "auto"
    """``paired`` (the dual-rate rule on paired per-task outcomes with a confidence requirement,
    ``paired_gate``), ``gate`` (the paper's rule on point estimates), ``stat`` (the bootstrap
    rule) or ``auto``: ``paired`` while a side has fewer than ``point_gate_from`` rollouts, else
    ``gate``. All are logged."""
    level: float = 0.95
    """``paired``: the confidence a rise needs."""
    min_tasks: int | None = None
    """``paired``: tasks both sides must run (None: the least at which ``level`` can be reached, 5 at 0.95)."""
    point_gate_from: int = 184
    """``auto``: rollouts a side from which the paper's point rule decides (the paper's 46 x 4)."""
    max_invalid: int = 3
    """Invalid proposals a round asks again after (each logged); then the round ends without one."""
    attribute: bool = False
    """After an acceptance, re-run the candidate without each added or changed component."""
    epoch: int = 1
    workers: int = 2
    executor: str = "threads"
    """``threads``, or ``ray`` (a GRPO group per Ray task: the agent must be a model spec string)."""
    bootstrap_samples: int = 2000
    seed: int = 0
    """The schedule's seed: round r's episodes sample with ``seed * 1000 + r`` (both sides alike), the
    gates resample with it."""

    def validate(self) -> "EvolveConfig":
        if self.rounds < 1:
            raise ValueError("rounds must be at least 1")
        if self.group_size < 2:
            raise ValueError("group_size must be at least 2: the trainable rate needs groups with a success "
                             "and a failure")
        if self.candidates < 1:
            raise ValueError("candidates must be at least 1")
        if self.decide_by not in DECIDERS:
            raise ValueError(f"decide_by must be one of {', '.join(DECIDERS)}, not {self.decide_by!r}")
        if self.max_invalid < 0:
            raise ValueError("max_invalid must be at least 0")
        PairedGateConfig(self.level, self.min_tasks).validate()
        return self

    def decider(self, rollouts_a_side: int) -> str:
        """The gate that decides for a comparison of this size."""
        if self.decide_by != "auto":
            return self.decide_by
        return "paired" if rollouts_a_side < self.point_gate_from else "gate"


DECIDERS = ("auto", "paired", "gate", "stat")


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
                 policy_version: str | None = None) -> None:
        """``agent``: a model spec, or (threads) a client object such as a trainer's in-process policy;
        ``start``: the run's ``EpisodeConfig`` (its harness is where evolution starts; its sandbox, env
        placement and options, token mode and sampling are alike on both sides of every comparison,
        the seeds the round's), or a harness (preset, file, spec) with the default config;
        ``skills``: instance id -> skill, shown alike to both sides of every comparison;
        ``policy_version``: names the agent's weights, the same exactly when they are (None: they may
        change unseen, nothing is reused); an earlier epoch's rollouts of the same draw are reused."""
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.tasks, self.agent, self.proposer = tasks, agent, proposer
        self.config = config.validate()
        self.smoke_task = smoke_task if smoke_task is not None else (tasks[0] if tasks else None)
        self.episodes = EpisodeConfig.of(start)
        self.skills = dict(skills or {})
        self.policy_version = policy_version
        self.ran = 0
        """Rollouts this object ran (reused ones not counted)."""
        self.say = progress or (lambda text: log.info("%s", text))
        self.log = JsonlLog(self.out / "evolution.jsonl")
        self.current = self.episodes.harness
        self._save(self.current)
        for rec in self.log.records:  # resume: the harness where the last finished round left it
            if rec.get("kind") == "round" and rec.get("epoch") == config.epoch:
                self.current = load_spec(self.out / "specs" / f"{rec['current_after']}.yaml")

    # -- bookkeeping --------------------------------------------------------------------------
    def _save(self, spec: HarnessSpec) -> None:
        d = self.out / "specs"
        d.mkdir(exist_ok=True)
        path = d / f"{spec.hash}.yaml"
        if not path.exists():
            spec.save(path)

    def _rollouts(self, spec: HarnessSpec, rnd: int) -> tuple[list[dict[str, Any]], str | None]:
        """The round's rollouts of ``spec``, and the directory they were reused from (None: run here)."""
        out = self.out / "rollouts" / spec.hash / f"e{self.config.epoch}r{rnd}"
        seed = self.config.seed * 1000 + rnd
        key = self._draw_key(replace(self.episodes, harness=spec, seed=seed))
        if key is not None and not (out / "trajectories.jsonl").exists():
            earlier = self._same_draw(spec, key)
            if earlier is not None:
                out.mkdir(parents=True, exist_ok=True)
                (out / "reused.json").write_text(json.dumps({"from": str(earlier), "key": key}, indent=1))
                return self._records(earlier), str(earlier)
        episodes = replace(self.episodes, harness=spec, seed=seed)

        def count(_: dict[str, Any]) -> None:
            self.ran += 1

        records = collect(self.tasks, self.config.group_size, self.agent, episodes, out=out, workers=self.config.workers,
                          executor=self.config.executor, progress_bar=False, skills=self.skills, on_record=count)
        if key is not None:
            (out / "draw.json").write_text(json.dumps(key, indent=1))
        return records, None

    def _draw_key(self, episodes: EpisodeConfig) -> dict[str, Any] | None:
        """What makes two batches of rollouts the same draw; None when the weights are not named."""
        if self.policy_version is None:
            return None
        return {"policy": self.policy_version, **episodes.draw_key(), "group_size": self.config.group_size,
                "tasks": sorted(t.instance_id for t in self.tasks), "skills": self.skills}

    def _same_draw(self, spec: HarnessSpec, key: dict[str, Any]) -> Path | None:
        """An earlier epoch's finished batch of exactly this draw, none of its episodes masked."""
        for marker in sorted((self.out / "rollouts" / spec.hash).glob("*/draw.json")):
            try:
                if json.loads(marker.read_text()) != key:
                    continue
            except ValueError:
                continue
            records = self._records(marker.parent)
            if len(records) == len(self.tasks) * self.config.group_size and not any(classify(r).masked for r in records):
                return marker.parent
        return None

    def _records(self, d: Path) -> list[dict[str, Any]]:
        return group_records(JsonlLog(d / "trajectories.jsonl").records, self.tasks, self.config.group_size)

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
        current_records, cur_reused = self._rollouts(parent, rnd)
        cur_rates = _rates(current_records)
        self.say(f"round {rnd}: current {parent.name} ({parent.hash}) pass {cur_rates['pass_rate']:.3f} "
                 f"trainable {cur_rates['trainable_rate']:.3f} over {cur_rates['n_rollouts']} rollouts"
                 + (f" (reused from {Path(cur_reused).name}: the same weights, harness and seeds)" if cur_reused else ""))
        valid = invalid = 0
        accepted = None
        exhausted = False
        k = 0
        while valid < cfg.candidates and invalid <= cfg.max_invalid and accepted is None and not exhausted:
            k += 1
            already = [r for r in self.log.records if r.get("kind") == "proposal" and r.get("epoch") == cfg.epoch
                       and r.get("round") == rnd and r.get("k") == k]
            if already:  # resumed inside a round: this proposal was decided
                entry = already[-1]
                ok = bool(entry["validation"]["ok"])
                valid, invalid = valid + ok, invalid + (not ok)
                exhausted = bool(entry.get("exhausted"))
                if entry.get("accepted"):
                    accepted = load_spec(self.out / "specs" / f"{entry['candidate_hash']}.yaml")
                continue
            proposal = self.proposer.propose(parent, current_records, self._tried() | {parent.hash})
            check = validate_candidate(proposal.candidate, parent, self.smoke_task, self.episodes.sandbox, proposal.error)
            exhausted = proposal.candidate is None and getattr(proposal, "exhausted", False)
            entry: dict[str, Any] = {
                "kind": "proposal", "epoch": cfg.epoch, "round": rnd, "k": k, "proposer": proposal.proposer,
                "policy": self.policy_version,
                "parent_hash": parent.hash, "candidate_hash": spec_hash(proposal.candidate),
                "candidate_name": proposal.candidate.name if proposal.candidate else None,
                "diff": diff(parent, proposal.candidate) if proposal.candidate is not None and check.stage != "schema" else [],
                "diagnosis": proposal.diagnosis, "validation": asdict(check), "current_rates": cur_rates,
                "rollouts": {"current": len(current_records), "candidate": 0, "smoke": 1 if check.stage in ("smoke", "passed") else 0},
                "reused": {"current": cur_reused, "candidate": None},
                "exhausted": exhausted,
            }
            self.ran += entry["rollouts"]["smoke"]
            if proposal.candidate is not None and check.ok:
                valid += 1
                cand = proposal.candidate
                self._save(cand)
                cand_records, entry["reused"]["candidate"] = self._rollouts(cand, rnd)
                entry["candidate_rates"] = _rates(cand_records)
                entry["rollouts"]["candidate"] = len(cand_records)
                entry.update(self._decide(current_records, cand_records))
                self.say(f"  candidate {cand.name}: {'; '.join(entry['diff']) or 'no change'} -> "
                         f"pass {entry['candidate_rates']['pass_rate']:.3f} trainable "
                         f"{entry['candidate_rates']['trainable_rate']:.3f}; {entry['decided_by']}: "
                         f"{entry['decision_reason']}; {'ACCEPTED' if entry['accepted'] else 'rejected'}")
                if entry["accepted"] and cfg.attribute:
                    entry["attribution"] = self._attribute(parent, cand, cand_records, rnd)
            else:
                invalid += 1
                entry["accepted"] = False
                self.say(f"  proposal {k} rejected before comparison ({check.stage}): {check.reason}"
                         + ("" if exhausted else "; asking again" if invalid <= cfg.max_invalid and valid < cfg.candidates
                            else ""))
            self.log.append(entry)
            if entry["accepted"]:
                accepted = proposal.candidate
        if accepted is not None:
            self.current = accepted
        stop = exhausted and accepted is None
        self.log.append({"kind": "round", "epoch": cfg.epoch, "round": rnd, "current_before": parent.hash,
                         "current_after": self.current.hash, "accepted": accepted is not None, "valid": valid,
                         "invalid": invalid, "stop": stop, "rollouts_run": self.ran - ran,
                         "seconds": round(time.monotonic() - t0, 2)})
        return stop

    def _decide(self, current: list[dict[str, Any]], candidate: list[dict[str, Any]]) -> dict[str, Any]:
        """Every gate's decision (logged), and the one ``decide_by`` names as the verdict."""
        cfg = self.config
        g = dual_rate_gate(rates(Rollout.from_record(r) for r in current),
                           rates(Rollout.from_record(r) for r in candidate))
        s = stat_gate(current, candidate, cfg.bootstrap_samples, cfg.seed)
        p = paired_gate(current, candidate, PairedGateConfig(cfg.level, cfg.min_tasks, seed=cfg.seed))
        by = cfg.decider(min(len(current), len(candidate)))
        verdict = {"gate": g, "stat": s, "paired": p}[by]
        return {"gate": asdict(g), "stat": asdict(s), "paired": asdict(p), "decided_by": by,
                "decision_reason": verdict.reason, "accepted": verdict.accept}

    def _attribute(self, parent: HarnessSpec, cand: HarnessSpec, cand_records: list[dict[str, Any]],
                   rnd: int) -> list[dict[str, Any]]:
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
                rep = _rates(self._rollouts(spec, rnd)[0])
                out.append({"component": f"{kind} {c.name}", "hash": spec.hash,
                            "pass_drop": full["pass_rate"] - rep["pass_rate"],
                            "trainable_drop": full["trainable_rate"] - rep["trainable_rate"]})
        return out
