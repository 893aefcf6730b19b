"""HarnessAdapt-RL's co-evolution loop as one library object: GRPO updates, and at every epoch's
start the skill teacher and an evolution schedule against the policy being trained.

``CoEvolution`` is the epoch-start callback ``ha_agents.train.train`` takes (``evolve=``): the
training side knows nothing of evolution (``ha_agents`` never imports ``ha_evolve``), and this
module composes the two. ``ha train --evolve`` / ``--skill-teacher`` only parse flags into a
``CoEvolveConfig``; a benchmark or a notebook builds the same object in Python, over a started
``LocalSession`` (``ha_agents.train.session``: the trainer, the pool, the warm start)::

    session = LocalSession.start(LocalRun(model, out, TrainConfig(updates=4, episodes=episodes)), tasks)
    history = session.train(loop=CoEvolution.of(session, CoEvolveConfig(every=2, evolve=EvolveConfig(rounds=1))))

or on its parts: ``CoEvolution(tasks, out, episodes, config).train(trainer, train_config)``.

Every episode (the skill teacher's preparation rollouts, both sides of every gate comparison, the
GRPO rollouts) runs a variant of the one ``EpisodeConfig`` given (``replace``: the epoch's
harness, a seed), so a setting such as the env placement reaches them all.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from ha_agents.episode import EpisodeConfig
from ha_agents.train import RolloutLedger, TrainConfig, train
from ha_evolve.proposers import ProposerOptions, make_proposer
from ha_evolve.schedule import EvolveConfig, Evolution


@dataclass(frozen=True)
class CoEvolveConfig:
    """What happens at an epoch's start. ``proposer`` None: no evolution (skills only)."""

    every: int = 5
    """Updates per epoch: the callback runs before updates 1, every + 1, 2 * every + 1, ..."""
    proposer: str | None = "rule"
    """``rule`` | ``llm`` | ``cli`` (``ha_evolve.proposers``), or None to keep the harness."""
    proposer_options: ProposerOptions = field(default_factory=ProposerOptions)
    evolve: EvolveConfig = field(default_factory=lambda: EvolveConfig(tasks=46))
    """The schedule's settings (rounds, tasks and group size per round, candidates, the gate and its
    false acceptance per epoch); ``epoch`` is set per epoch. Evolution runs on ``evolve.tasks`` tasks
    a round drawn from the training pool (default 46, the paper's), never the whole pool unasked."""
    skill_teacher: str | None = None
    """A model spec: at every epoch's start, preparation rollouts, then a screened skill per task."""
    model_label: str = "policy"
    """How evolution's log names the policy (``LABEL@update-N``: the same weights exactly when N is)."""

    def validate(self) -> "CoEvolveConfig":
        if self.every < 1:
            raise ValueError("the epoch length (--evolve-every) must be at least 1 update")
        if self.proposer is None and self.skill_teacher is None:
            raise ValueError("co-evolution needs a proposer, a skill teacher, or both")
        self.evolve.validate()
        return self


class CoEvolution:
    """The epoch-start callback of ``train()``: returns (the epoch's harness, comparison rollouts,
    skills). Evolution logs go to ``OUT/evolve``, skills to ``OUT/skills/epoch-N``."""

    def __init__(self, tasks: list[Any], out: str | Path, episodes: EpisodeConfig, config: CoEvolveConfig,
                 ledger: RolloutLedger | None = None, progress: Callable[[str], None] | None = None,
                 collector: Callable[..., list[Any]] | None = None):
        """``collector``: what runs the epoch start's rollouts (``collect``'s signature; default
        ``collect`` with ``trainer.client()``; verl's co-evolution passes its agent-loop manager's)."""
        self.tasks, self.out, self.episodes = tasks, Path(out), episodes
        self.config = config.validate()
        self.ledger = ledger or RolloutLedger()
        self.collector = collector
        self.epochs = config.evolve.epochs
        """Epochs planned (``train`` sets it from the updates): the plan states the run's bound."""
        self.progress = progress or (lambda text: print(text, file=sys.stderr, flush=True))
        self.proposer = (make_proposer(config.proposer, config.proposer_options)
                         if config.proposer is not None else None)
        self.teacher = None
        if config.skill_teacher:
            from ha_agents.llm.registry import make_model
            from ha_evolve.skills import SkillTeacher

            self.teacher = SkillTeacher(make_model(config.skill_teacher))

    @classmethod
    def of(cls, session: Any, config: CoEvolveConfig, progress: Callable[[str], None] | None = None) -> "CoEvolution":
        """The loop over a started ``ha_agents.train.session.LocalSession`` (its tasks, out folder,
        episodes and ledger): ``session.train(on_update, loop=CoEvolution.of(session, config))``."""
        return cls(session.tasks, session.run.out, session.episodes, config, session.ledger,
                   progress=progress or session.progress)

    def train(self, trainer: Any, config: TrainConfig, resume: bool = False,
              on_update: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
        """The whole loop: ``train()`` with this object at every epoch's start."""
        if config.episodes is not self.episodes and config.episodes != self.episodes:
            raise ValueError("the training config's episodes differ from co-evolution's: pass the same EpisodeConfig")
        config = replace(config, evolve_every=self.config.every)
        self.epochs = max(1, -(-config.updates // self.config.every))
        return train(trainer, self.tasks, config, self.out, resume=resume, ledger=self.ledger,
                     on_update=on_update, evolve=self)

    def __call__(self, epoch: int, spec: Any, trainer: Any) -> tuple[Any, int, dict[str, str]]:
        skills = self._skills(epoch, spec, trainer) if self.teacher is not None else {}
        if self.proposer is None:
            return spec, 0, skills
        evo = Evolution(self.out / "evolve", self.tasks, trainer.client(), replace(self.episodes, harness=spec),
                        self.proposer, replace(self.config.evolve, epoch=epoch, epochs=self.epochs), skills=skills,
                        progress=self.progress, collector=self.collector,
                        policy_version=(f"{self.config.model_label}@update-{trainer.step}"
                                        if hasattr(trainer, "step") else None))
        new = evo.run()
        rounds = [r for r in evo.log.records if r.get("kind") == "round" and r.get("epoch") == epoch]
        prep = sum(r.get("preparation_run", 0) for r in rounds)
        n = sum(r.get("rollouts_run", 0) for r in rounds) - prep
        self.ledger.add("preparation", prep)
        self.progress(f"epoch {epoch}: harness {spec.name} ({spec.hash}) -> {new.name} ({new.hash}); "
                      f"{prep} preparation and {n} comparison rollouts")
        return new, n, skills

    def _skills(self, epoch: int, spec: Any, trainer: Any) -> dict[str, str]:
        from ha_evolve.skills import teach_skills

        where = self.out / "skills" / f"epoch-{epoch}"
        config = replace(self.episodes, harness=spec, seed=self.config.evolve.seed * 1000 + epoch)
        skills, prep = teach_skills(self.teacher, self.tasks, trainer.client(), config, self.config.evolve.group_size,
                                    where, workers=self.config.evolve.workers, collector=self.collector)
        self.ledger.add("preparation", len(prep))
        self.progress(f"epoch {epoch}: {len(skills)} of {len(self.tasks)} tasks got a skill (screened; reports in "
                      f"{where / 'skills.jsonl'})")
        return skills


__all__ = ["CoEvolution", "CoEvolveConfig"]
