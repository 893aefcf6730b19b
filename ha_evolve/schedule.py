"""The evolution schedule: at an epoch's start, up to R rounds of propose -> validate -> compare ->
gate, against a fixed policy; then the harness is frozen for the epoch.

One round:
1. the current harness's rollouts on the round's tasks (group size G): the preparation
   trajectories the proposer reads, and the current side of every comparison in the round (under a
   fixed policy they need not be re-run per candidate: k candidates cost k + 1 batches, not 2k);
2. up to ``candidates`` proposals, each validated (an invalid one costs no rollout), then run on
   the same tasks and group size; the dual-rate gate and the statistical gate decide;
3. the first candidate accepted (by the gate named in ``decide_by``) becomes current.
The round ends early when no proposal is valid, and the schedule stops there.

Every proposal goes to an append-only JSONL log (``evolution.jsonl``) with its lineage, and every
spec the run met to ``specs/<hash>.yaml``; rollouts go to ``rollouts/<hash>/r<round>/``. A rerun with
the same directory resumes: finished rounds are read back, finished rollouts are not repeated.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

from ha_agents.train.grpo import Rollout, rates
from ha_agents.records.log import JsonlLog
from ha_agents.episode import EpisodeConfig
from ha_agents.runs.rollouts import collect
from ha_envs.harness import HarnessSpec, diff, load_spec
from ha_envs.task import Task

from .gate import dual_rate_gate, stat_gate
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
    decide_by: str = "gate"
    """``gate`` (the paper's dual-rate rule) or ``stat`` (the bootstrap rule); both are logged."""
    attribute: bool = False
    """After an acceptance, re-run the candidate without each added or changed component."""
    epoch: int = 1
    sandbox: str = "local"
    workers: int = 2
    bootstrap_samples: int = 2000
    seed: int = 0

    def validate(self) -> "EvolveConfig":
        if self.rounds < 1:
            raise ValueError("rounds must be at least 1")
        if self.group_size < 2:
            raise ValueError("group_size must be at least 2: the trainable rate needs groups with a success "
                             "and a failure")
        if self.candidates < 1:
            raise ValueError("candidates must be at least 1")
        if self.decide_by not in ("gate", "stat"):
            raise ValueError(f"decide_by must be gate or stat, not {self.decide_by!r}")
        return self


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

    def __init__(self, out: Path | str, tasks: list[Task], agent: Any, start: HarnessSpec | str,
                 proposer: Proposer, config: EvolveConfig = EvolveConfig(),
                 smoke_task: Task | None = None, env_kwargs: dict[str, Any] | None = None,
                 progress: Callable[[str], None] | None = None, skills: dict[str, str] | None = None,
                 token_mode: Any = None) -> None:
        """``agent``: a model spec, or (threads) a client object such as a trainer's in-process policy;
        ``token_mode``: run comparisons token-faithfully (as training does); ``skills``: instance id ->
        skill, shown alike to both sides of every comparison."""
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.tasks, self.agent, self.proposer = tasks, agent, proposer
        self.config = config.validate()
        self.smoke_task = smoke_task if smoke_task is not None else (tasks[0] if tasks else None)
        self.env_kwargs = dict(env_kwargs or {})
        self.skills = dict(skills or {})
        self.token_mode = token_mode
        self.say = progress or (lambda text: log.info("%s", text))
        self.log = JsonlLog(self.out / "evolution.jsonl")
        self.current = load_spec(start)
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

    def _rollouts(self, spec: HarnessSpec, rnd: int) -> list[dict[str, Any]]:
        out = self.out / "rollouts" / spec.hash / f"e{self.config.epoch}r{rnd}"
        episodes = EpisodeConfig.create(spec, sandbox=self.config.sandbox, env_options=self.env_kwargs,
                                        token_mode=self.token_mode, seed=self.config.seed * 1000 + rnd)
        return collect(self.tasks, self.config.group_size, self.agent, episodes, out=out, workers=self.config.workers,
                       progress_bar=False, skills=self.skills)

    def _done_rounds(self) -> set[int]:
        return {int(r["round"]) for r in self.log.records if r.get("kind") == "round" and r.get("epoch") == self.config.epoch}

    def _tried(self) -> set[str]:
        return {r["candidate_hash"] for r in self.log.records if r.get("kind") == "proposal" and r.get("candidate_hash")}

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
        """One round; True when the schedule should stop (no valid candidate)."""
        cfg = self.config
        t0 = time.monotonic()
        parent = self.current
        current_records = self._rollouts(parent, rnd)
        cur_rates = _rates(current_records)
        self.say(f"round {rnd}: current {parent.name} ({parent.hash}) pass {cur_rates['pass_rate']:.3f} "
                 f"trainable {cur_rates['trainable_rate']:.3f} over {cur_rates['n_rollouts']} rollouts")
        valid = 0
        accepted = None
        for k in range(1, cfg.candidates + 1):
            already = [r for r in self.log.records if r.get("kind") == "proposal" and r.get("epoch") == cfg.epoch
                       and r.get("round") == rnd and r.get("k") == k]
            if already:  # resumed inside a round: this proposal was decided
                entry = already[-1]
                valid += bool(entry["validation"]["ok"])
                if entry.get("accepted"):
                    accepted = load_spec(self.out / "specs" / f"{entry['candidate_hash']}.yaml")
                    break
                continue
            proposal = self.proposer.propose(parent, current_records, self._tried() | {parent.hash})
            check = validate_candidate(proposal.candidate, parent, self.smoke_task, cfg.sandbox, proposal.error)
            entry: dict[str, Any] = {
                "kind": "proposal", "epoch": cfg.epoch, "round": rnd, "k": k, "proposer": proposal.proposer,
                "parent_hash": parent.hash, "candidate_hash": spec_hash(proposal.candidate),
                "candidate_name": proposal.candidate.name if proposal.candidate else None,
                "diff": diff(parent, proposal.candidate) if proposal.candidate is not None and check.stage != "schema" else [],
                "diagnosis": proposal.diagnosis, "validation": asdict(check), "current_rates": cur_rates,
                "rollouts": {"current": len(current_records), "candidate": 0, "smoke": 1 if check.stage in ("smoke", "passed") else 0},
            }
            if proposal.candidate is not None and check.ok:
                valid += 1
                cand = proposal.candidate
                self._save(cand)
                cand_records = self._rollouts(cand, rnd)
                entry["candidate_rates"] = _rates(cand_records)
                entry["rollouts"]["candidate"] = len(cand_records)
                g = dual_rate_gate(rates(Rollout.from_record(r) for r in current_records),
                                   rates(Rollout.from_record(r) for r in cand_records))
                s = stat_gate(current_records, cand_records, cfg.bootstrap_samples, cfg.seed)
                entry["gate"] = asdict(g)
                entry["stat"] = asdict(s)
                entry["accepted"] = g.accept if cfg.decide_by == "gate" else s.accept
                self.say(f"  candidate {cand.name}: {'; '.join(entry['diff']) or 'no change'} -> "
                         f"pass {entry['candidate_rates']['pass_rate']:.3f} trainable "
                         f"{entry['candidate_rates']['trainable_rate']:.3f}; gate: {g.reason}; stat: {s.reason}; "
                         f"{'ACCEPTED' if entry['accepted'] else 'rejected'}")
                if entry["accepted"] and cfg.attribute:
                    entry["attribution"] = self._attribute(parent, cand, cand_records, rnd)
            else:
                entry["accepted"] = False
                self.say(f"  proposal {k} rejected before comparison ({check.stage}): {check.reason}")
            self.log.append(entry)
            if entry["accepted"]:
                accepted = proposal.candidate
                break
        if accepted is not None:
            self.current = accepted
        stop = valid == 0
        self.log.append({"kind": "round", "epoch": cfg.epoch, "round": rnd, "current_before": parent.hash,
                         "current_after": self.current.hash, "accepted": accepted is not None, "valid": valid,
                         "stop": stop, "seconds": round(time.monotonic() - t0, 2)})
        return stop

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
                rep = _rates(self._rollouts(spec, rnd))
                out.append({"component": f"{kind} {c.name}", "hash": spec.hash,
                            "pass_drop": full["pass_rate"] - rep["pass_rate"],
                            "trainable_drop": full["trainable_rate"] - rep["trainable_rate"]})
        return out
