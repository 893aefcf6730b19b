"""A local-backend training run as a library object: what ``ha train --backend local`` composes
from its flags, for a benchmark or a notebook to build in Python (torch and transformers needed).

``LocalRun`` is the run as data; ``LocalSession.start(run, tasks)`` does what comes before the
first update: the model (a tiny one built when asked), the claim on ``out`` (``run-identity.json``:
another run's folder is refused), the trainer, the first prompt's length against the context, the
optimizer state, the task pool and the warm start. ``session.train()`` then runs GRPO, or hands the
trainer to a loop such as ``ha_evolve.coevolution.CoEvolution`` (``loop=``)::

    episodes = EpisodeConfig(load_spec("train-h0"), model_options=ModelOptions(max_tokens=700))
    run = LocalRun(Path("model"), Path("runs/grpo"), TrainConfig(updates=4, episodes=episodes),
                   LocalConfig(lr=1e-4, max_tokens=700), context_tokens=8192)
    session = LocalSession.start(run, tasks)
    history = session.train(UpdateReporter(4, run.out))
    session.finish()

Messages (the memory estimate, the optimizer, the pool, the warm start) go to ``progress``
(default: a line on stderr).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ha_envs.harness import HarnessSpec

from .driver import RolloutLedger, TrainConfig, train, with_token_mode
from .reporting import PhaseProgress, stderr_line

if TYPE_CHECKING:  # the module imports torch; a run's trainer needs it, this module's import does not
    from .local import LocalConfig


def _local_config() -> "LocalConfig":
    from .local import LocalConfig

    return LocalConfig()


@dataclass(frozen=True)
class WarmStart:
    """SFT on two demonstrations per task before the first update (``ha train --warm-start``)."""

    epochs: int
    lr: float = 3e-3
    harness: HarnessSpec | None = None
    """Record the demonstrations under this harness (default: the run's); with one, the give-up and
    the same calls are also recorded under the run's harness (the policy's habits)."""


@dataclass(frozen=True)
class LocalRun:
    """One local training run. ``train.episodes`` sets up every episode (its token mode, when
    missing, is the trainer's); ``local`` the trainer (its ``context_tokens`` is replaced by
    ``context_tokens`` resolved against the model)."""

    model: Path
    out: Path
    train: TrainConfig
    local: "LocalConfig" = field(default_factory=_local_config)
    context_tokens: int | None = None
    """The episode's token budget; None: the model's positions, at most 65536."""
    init_model: str | None = None
    """``qwen`` | ``llama``: build a tiny model of this family at ``model`` when it does not exist."""
    warm_start: WarmStart | None = None
    optimizer_from: Path | None = None
    """A checkpoint directory whose AdamW moments (``trainer.pt``) a new run continues."""
    pool_k: int = 0
    """Drop the tasks the initial policy solves in all K samples (0: keep every task)."""
    exclude_benchmark: str | None = None
    """Refuse training tasks of this evaluation benchmark (``verified`` | ``multilingual`` | ``pro``)."""
    resume: bool = False
    agent: Any = None
    """A user's harness trained through the gateway (``ha_agents.train.gateway``): its ``HarnessId``
    (name, hash) is what the run's identity names instead of the episodes' wrapper stack."""


@dataclass
class LocalSession:
    """A run ready to train: the trainer, the tasks kept, the training config with the trainer's
    token mode, and the rollout ledger (the pool's preparation rollouts already in it)."""

    run: LocalRun
    trainer: Any
    tasks: list[Any]
    config: TrainConfig
    ledger: RolloutLedger
    progress: Callable[[str], None] = stderr_line

    @property
    def episodes(self) -> Any:
        return self.config.episodes

    @classmethod
    def start(cls, run: LocalRun, tasks: list[Any], progress: Callable[[str], None] | None = None) -> "LocalSession":
        progress = progress or stderr_line
        if not tasks:
            raise ValueError("no tasks to train on")
        trainer = local_trainer(run, tasks, progress)
        check_context(trainer.token_mode, tasks[0], run.train.episodes.harness)
        episodes = with_token_mode(run.train.episodes, trainer)
        start_optimizer(trainer, run, progress)
        session = cls(run, trainer, list(tasks), replace(run.train, episodes=episodes), RolloutLedger(), progress)
        if run.exclude_benchmark or run.pool_k:
            session.tasks = session._pool()
        if run.warm_start and not run.resume:
            session._warm_start(run.warm_start)
        return session

    def train(self, on_update: Callable[[dict[str, Any]], None] | None = None, loop: Any = None) -> list[dict[str, Any]]:
        """GRPO over the session's tasks; ``loop``: an object whose ``train(trainer, config, resume,
        on_update)`` runs the updates instead (``ha_evolve.coevolution.CoEvolution``)."""
        if loop is not None:
            return loop.train(self.trainer, self.config, self.run.resume, on_update)
        return train(self.trainer, self.tasks, self.config, self.run.out, resume=self.run.resume, ledger=self.ledger,
                     on_update=on_update)

    def finish(self) -> Path | None:
        """With a LoRA adapter saved without ``merge_on_save``: the final policy merged into
        ``out/checkpoint/model`` (a plain model directory), returned; else None."""
        ckpt = self.run.out / "checkpoint"
        if getattr(self.trainer, "peft", None) is None or self.run.local.merge_on_save or not ckpt.is_dir():
            return None
        self.trainer.save_merged(ckpt / "model")
        self.progress(f"merged the LoRA adapter into {ckpt / 'model'} (the adapter: {ckpt / 'adapter'})")
        return ckpt / "model"

    def _pool(self) -> list[Any]:
        from ha_envs.swe_datasets import load_benchmark

        from .pool import build_pool

        run = self.run
        evaluation = load_benchmark(run.exclude_benchmark) if run.exclude_benchmark else []
        report = build_pool(self.tasks, evaluation=evaluation, model=self.trainer.client() if run.pool_k else None,
                            k=max(1, run.pool_k), out=run.out / "pool", seed=self.config.seed, ledger=self.ledger,
                            workers=self.config.workers, episodes=self.episodes)
        self.progress(f"task pool: {len(report.tasks)} of {len(self.tasks)} (always solved: "
                      f"{len(report.solved_always)}; repositories shared with the evaluation set: "
                      f"{len(report.repo_overlap)})")
        if not report.tasks:
            raise ValueError("the task pool is empty: the policy solves every task in all samples")
        return report.tasks

    def _warm_start(self, ws: WarmStart) -> None:
        from .recipes import warm_start

        spec = self.episodes.harness
        demo = ws.harness or spec
        self.progress(f"warm start: demonstrations of {len(self.tasks)} task(s), then {ws.epochs} SFT epochs")
        got = warm_start(self.trainer, self.tasks, self.run.out, harness=demo, epochs=ws.epochs, lr=ws.lr,
                         habit_harness=spec if demo.hash != spec.hash else None,
                         progress=PhaseProgress(progress=self.progress))
        self.progress(f"warm start: {got['resolved']}/{got['demonstrations']} demonstrations resolved "
                      f"({got['unknown_tool_calls']} calls to tools the harness lacks), {got['tokens']} tokens, "
                      f"SFT loss {got['sft_loss_first']:.3f} -> {got['sft_loss_last']:.4f}")


def local_trainer(run: LocalRun, tasks: list[Any], progress: Callable[[str], None] = stderr_line) -> Any:
    """The local torch trainer on ``run.model`` (built first with ``init_model`` when missing), once
    ``run.out`` is claimed for this run."""
    from ha_agents.chat.positions import resolve_context

    from .local import LocalTrainer

    model = Path(run.model)
    if not model.exists():
        if not run.init_model:
            raise ValueError(f"--model {model}: no such directory (pass --init-model qwen|llama to build a tiny one)")
        from .models import init_model

        init_model(model, run.init_model, seed=run.train.seed)
        progress(f"built a tiny {run.init_model}-family model at {model}")
    config = replace(run.local, context_tokens=resolve_context(model, run.context_tokens)).validate()
    spec = run.agent or run.train.episodes.harness
    claim = dict(backend="local", model=str(run.model), harness=spec, seed=run.train.seed,
                 temperature=config.temperature, weights=(config.dtype, config.lora_rank),
                 agent=run.agent.name if run.agent is not None else None)
    if run.out.exists() and (run.out / "metrics.jsonl").exists() and not run.resume:
        claim_training(run.out, tasks, only_check=True, **claim)  # another run's folder: its differences first
        raise ValueError(f"{run.out} already holds a training run; pass --resume to continue it or choose another --out")
    claim_training(run.out, tasks, **claim)
    trainer = LocalTrainer(model, config)
    progress(trainer.memory_estimate().line())
    return trainer


def claim_training(out: Path, tasks: list[Any], *, backend: str, model: str, harness: HarnessSpec, seed: int,
                   temperature: float, weights: tuple[str, int] | None = None, only_check: bool = False,
                   agent: str | None = None) -> None:
    """Record the run's identity in ``out``, refusing a folder another command or another run wrote
    (``ha_agents.runs.identity``); the number of epochs may grow on a resume. ``weights``: what the
    local trainer trains them as, (dtype, LoRA rank)."""
    from ha_agents.runs.identity import check, claim, command_identity

    fields: dict[str, Any] = {"backend": backend, "model": model, "harness_hash": harness.hash, "seed": seed,
                              "temperature": temperature}
    if weights is not None:  # an older folder without them is not compared on them
        fields.update(dtype=weights[0], lora_rank=weights[1])
    if agent:  # a user's harness through the gateway (an older folder has no such field)
        fields["agent"] = agent
    identity = command_identity("train", fields, tasks)
    problem = check(Path(out), identity)
    if problem is not None:
        raise problem
    if not only_check:
        claim(Path(out), identity)


def start_optimizer(trainer: Any, run: LocalRun, progress: Callable[[str], None] = stderr_line) -> None:
    """``optimizer_from``: continue a checkpoint's AdamW moments in this new run; without it, say so
    when the weights come from a checkpoint whose optimizer state lies beside them."""
    if run.resume:
        if run.optimizer_from:
            progress(f"--optimizer-from {run.optimizer_from}: not read, --resume continues {run.out}/checkpoint's "
                     "own optimizer state")
        return
    model = Path(run.model)
    if run.optimizer_from:
        blob = trainer.load_optimizer(Path(run.optimizer_from))
        steps = max((float(s.get("step", 0)) for s in blob["optimizer"]["state"].values()), default=0)
        progress(f"optimizer: continued from {run.optimizer_from} (AdamW moments of {steps:.0f} optimizer steps); "
                 f"learning rate {run.local.lr:g}")
    elif (model.parent / "trainer.pt").is_file():
        progress(f"optimizer: fresh (the checkpoint's own state, {model.parent / 'trainer.pt'}, is not read; "
                 f"pass --optimizer-from {model.parent} to continue it)")


def check_context(token_mode: Any, task: Any, spec: Any) -> int:
    """The first prompt's length; a ValueError when it leaves no room to generate."""
    import ha_envs
    from ha_agents.chat.tokens import as_codec

    template, tok = token_mode.resolve()
    env = ha_envs.make(task=task, harness=spec)
    try:
        obs, info = env.reset()
    finally:
        env.close()
    n = len(as_codec(tok).encode(template.prompt(obs, info.get("tools") or [])))
    if n >= token_mode.context_tokens:
        raise ValueError(f"the first prompt of {task.instance_id} is {n} tokens, the context budget "
                         f"{token_mode.context_tokens}: raise --context-tokens or use a harness with fewer tools")
    return n


__all__ = ["LocalRun", "LocalSession", "WarmStart", "check_context", "claim_training", "local_trainer",
           "start_optimizer"]
