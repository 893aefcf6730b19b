"""The training loop any ``Trainer`` plugs into.

Per update: sample tasks (``TaskSampler``: shuffled epochs, no repeats within one) -> ``collect()``
a group of ``group_size`` episodes per task with the trainer's current policy (seeded per update,
task and sample) -> ``prepare_batch`` (the drop / mask policy of ``base.BatchPolicy``) ->
``trainer.update`` -> metrics -> checkpoint. Everything lands in ``out``:

- ``rollouts/update-NNNN/trajectories.jsonl``: every episode of the update (the rollout log);
- ``metrics.jsonl``: one line per update: pass rate, trainable rate and the three group shares (from
  ``grpo.rates``), mean reward, what the batch policy dropped, the trainer's metrics (loss, gradient
  norm, tokens, clip fraction, rollout/trainer logprob mismatch), the time split (rollout, of which
  grading, update), and the rollout ledger;
- ``checkpoint/``: the trainer's state plus ``driver.json`` (next update, sampler state, ledger),
  written to a temporary directory and renamed, so a killed run leaves the previous one whole;
- ``training.png``: reward and trainable rate per update.

Where an update's groups come from is a ``RolloutSource``: by default ``EpisodeSource``, repair
episodes of the current harness through ``collect()``; the harness engineer (``ha_evolve.harness_r1.engineer``)
gives its own (one-turn episodes of ``HarnessEditEnv``), and every other step of the loop, the
batch policy, the update, the metrics and the checkpoints, is this one.

``resume=True`` continues from ``checkpoint/``: the episodes of a half-done update that are already
in its log are kept (they were sampled by the same weights with the same seeds) and the rest are run.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from statistics import mean
from typing import Any, Callable, Protocol, Sequence

from ha_envs.harness import HarnessSpec
from ha_envs.task import Task

from .grpo import Rollout, rates
from ..records.log import append_jsonl, read_jsonl
from ..episode import EpisodeConfig, episode_seed
from ..runs.rollouts import collect
from .base import BatchPolicy, Trainer, prepare_batch

log = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    updates: int = 10
    tasks_per_update: int = 46
    group_size: int = 4
    episodes: EpisodeConfig = field(default_factory=EpisodeConfig.create)
    """How every repair episode of the run is set up (harness, sandbox, env placement, sampling, env
    options): the run's one ``EpisodeConfig``; each update's groups are ``replace(episodes,
    harness=the epoch's, seed=the update's)``. A config without a token mode gets the trainer's own
    (``trainer.token_mode``)."""
    workers: int = 2
    seed: int = 0
    batch: BatchPolicy = field(default_factory=BatchPolicy)
    save_every: int = 1
    evolve_every: int = 0
    """With an ``evolve`` callback: an epoch is this many updates, and the harness evolves at the
    start of every epoch (epoch -> evolve -> train -> next epoch), frozen for its updates; 0: never."""
    progress: bool = True
    freeze_policy: bool = False
    """Roll out and measure every update but never change the weights: the "evolution with the
    policy frozen" arm of the paper's ablation (with ``evolve``), measured exactly as training is."""


class TaskSampler:
    """Tasks in shuffled epochs: each update takes the next ``n``; an epoch's order is a function
    of (seed, epoch), so the state is two integers."""

    def __init__(self, tasks: list[Task], seed: int = 0) -> None:
        if not tasks:
            raise ValueError("no tasks to train on")
        self.tasks = sorted(tasks, key=lambda t: t.instance_id)
        self.seed = seed
        self.epoch = 0
        self.pos = 0

    def _order(self) -> list[Task]:
        order = list(self.tasks)
        random.Random(f"{self.seed}/{self.epoch}").shuffle(order)
        return order

    def next(self, n: int) -> list[Task]:
        out: list[Task] = []
        n = min(n, len(self.tasks))
        while len(out) < n:
            order = self._order()
            taken = {t.instance_id for t in out}
            for t in order[self.pos:]:
                self.pos += 1
                if t.instance_id not in taken:
                    out.append(t)
                    if len(out) == n:
                        break
            if self.pos >= len(order):
                self.epoch += 1
                self.pos = 0
        return out

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "pos": self.pos, "seed": self.seed}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.pos, self.seed = int(state["epoch"]), int(state["pos"]), int(state["seed"])


@dataclass
class RolloutLedger:
    """The paper's accounting of rollouts: ``preparation`` (building the task pool), ``comparison``
    (harness evaluation for the evolution gate), ``training`` (the GRPO groups)."""

    preparation: int = 0
    comparison: int = 0
    training: int = 0

    def add(self, kind: str, n: int) -> None:
        if kind not in ("preparation", "comparison", "training"):
            raise ValueError(f"unknown rollout kind {kind!r}")
        setattr(self, kind, getattr(self, kind) + int(n))

    @property
    def total(self) -> int:
        return self.preparation + self.comparison + self.training


class RolloutSource(Protocol):
    """What an update trains on: ``group_size`` records per item, each a ``trajectories.jsonl``-shaped
    mapping (``instance_id``, ``run``, ``token_ids``, ``loss_mask``, ``logprobs``, ``reward``,
    ``termination``, ``mask_sample``), written under ``out`` so a resumed update keeps what ran."""

    def rollouts(self, items: Sequence[Any], group_size: int, client: Any, *, seed: int, out: Path,
                 harness: HarnessSpec, skills: dict[str, str]) -> list[dict[str, Any]]: ...

    def metrics(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """Extra metrics of the update's records (``comparison_rollouts``: rollouts of others the
        source ran to score them, counted in the ledger's ``comparison``)."""
        ...


@dataclass
class EpisodeSource:
    """Repair episodes of the current harness (and the epoch's skills), through ``collect()``."""

    episodes: EpisodeConfig
    workers: int = 2
    progress: bool = True

    def rollouts(self, items: Sequence[Task], group_size: int, client: Any, *, seed: int, out: Path,
                 harness: HarnessSpec, skills: dict[str, str]) -> list[dict[str, Any]]:
        run = replace(self.episodes, harness=harness, seed=seed)
        return collect(list(items), group_size, client, run, out=out, workers=self.workers,
                       progress_bar=self.progress, skills=skills or None)

    def metrics(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return {}


def with_token_mode(episodes: EpisodeConfig, trainer: Any) -> EpisodeConfig:
    """``episodes`` as given when it has a token mode, else with the trainer's own (training is token-faithful)."""
    if episodes.token_mode is not None:
        return episodes
    token_mode = getattr(trainer, "token_mode", None)
    if callable(token_mode):
        token_mode = token_mode()
    if token_mode is None:
        raise ValueError("training needs token mode: give TrainConfig.episodes a token_mode (template and tokenizer) "
                         "or use a trainer with a token_mode")
    return replace(episodes, token_mode=token_mode).validate()


def train(trainer: Trainer, tasks: list[Any], config: TrainConfig, out: str | Path, resume: bool = False,
          ledger: RolloutLedger | None = None,
          on_update: Callable[[dict[str, Any]], None] | None = None,
          evolve: Callable[[int, HarnessSpec, Trainer], tuple[Any, ...]] | None = None,
          source: RolloutSource | None = None) -> list[dict[str, Any]]:
    """``evolve(epoch, harness, trainer) -> (harness for the epoch, comparison rollouts[, skills])``:
    what happens at an epoch's start (``ha train --evolve`` wires ``ha_evolve``'s schedule here, and
    ``--skill-teacher`` the skill teacher); its rollouts count as ``comparison`` in the ledger.
    ``skills`` (instance id -> text), when returned, are shown to every GRPO rollout of the epoch
    (a non-trainable message) and kept in the checkpoint for a resume; evaluation never sees them.

    ``source``: where the groups come from (``RolloutSource``); default ``EpisodeSource`` over
    ``tasks`` with ``config.episodes``. ``tasks`` are the items it is given
    (anything with an ``instance_id``). Evolution changes a harness, so it needs the default source."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    spec: HarnessSpec = config.episodes.harness
    if source is None:
        source = EpisodeSource(with_token_mode(config.episodes, trainer), config.workers, config.progress)
    elif evolve is not None:
        raise ValueError("evolution replaces the harness of repair episodes: it needs the default rollout source")
    sampler = TaskSampler(tasks, config.seed)
    ledger = ledger or RolloutLedger()
    metrics_path = out / "metrics.jsonl"
    ckpt = out / "checkpoint"
    start, evolved, skills = 1, 0, {}
    if resume and (ckpt / "driver.json").is_file():
        start, ledger, spec, evolved, skills = _resume(trainer, ckpt, sampler, spec)
        _truncate_metrics(metrics_path, start)
    elif metrics_path.exists() and metrics_path.stat().st_size and not resume:
        raise ValueError(f"{out} already holds a training run; pass --resume to continue it or choose another --out")
    elif resume:
        log.warning("nothing to resume in %s; starting at update 1", out)
    history = read_jsonl(metrics_path)
    for u in range(start, config.updates + 1):
        epoch = (u - 1) // config.evolve_every + 1 if config.evolve_every else 0
        if evolve is not None and config.evolve_every and (u - 1) % config.evolve_every == 0 and epoch > evolved:
            before = spec.hash
            result = evolve(epoch, spec, trainer)
            spec, n = result[0], result[1]
            skills = dict(result[2]) if len(result) > 2 else {}
            ledger.add("comparison", n)
            log.info("epoch %d: harness %s -> %s (%d comparison rollouts, %d skills)", epoch, before, spec.hash, n,
                     len(skills))
            evolved = epoch
            _save(trainer, ckpt, {"next_update": u, "sampler": sampler.state_dict(), "ledger": asdict(ledger),
                                  "harness": _harness_state(spec, source), "evolved_epoch": evolved, "skills": skills})
        batch_tasks = sampler.next(config.tasks_per_update)
        t0 = time.monotonic()
        records = source.rollouts(batch_tasks, config.group_size, trainer.client(),
                                  seed=episode_seed(config.seed, "update", u), out=out / "rollouts" / f"update-{u:04d}",
                                  harness=spec, skills=skills)
        rollout_s = time.monotonic() - t0
        ledger.add("training", len(records))
        extra = source.metrics(records)
        ledger.add("comparison", int(extra.get("comparison_rollouts", 0)))
        report = rates([Rollout.from_record(r) for r in records])
        batch = prepare_batch(records, config.batch)
        t1 = time.monotonic()
        upd = trainer.update(batch.samples) if batch.samples and not config.freeze_policy else {"skipped": 1.0}
        update_s = time.monotonic() - t1
        row = {"update": u, "harness": spec.name, "harness_hash": spec.hash, "tasks": len(batch_tasks),
               "skills": sum(1 for t in batch_tasks if t.instance_id in skills),
               **_batch_stats(records, report, batch), **extra, **{k: v for k, v in upd.items()},
               "rollout_s": round(rollout_s, 3),
               "grading_s": round(sum(float((r.get("timings") or {}).get("grade_s", 0.0)) for r in records), 3),
               "update_s": round(update_s, 3), "ledger": {**asdict(ledger), "total": ledger.total}}
        append_jsonl(metrics_path, row)
        history.append(row)
        if u % max(1, config.save_every) == 0 or u == config.updates:
            _save(trainer, ckpt, {"next_update": u + 1, "sampler": sampler.state_dict(), "ledger": asdict(ledger),
                                  "harness": _harness_state(spec, source), "evolved_epoch": evolved, "skills": skills})
        if on_update:
            on_update(row)
    if start > config.updates and not ckpt.exists():  # no update (--updates 0): keep the model as it is now
        _save(trainer, ckpt, {"next_update": start, "sampler": sampler.state_dict(), "ledger": asdict(ledger),
                              "harness": _harness_state(spec, source), "evolved_epoch": evolved})
    if history:
        plot(history, out / "training.png")
    return history


def _harness_state(spec: HarnessSpec, source: Any) -> dict[str, Any] | None:
    """The harness a checkpoint keeps (``harness.yaml`` beside the model): none when the source's
    episodes do not run this library's harness (``uses_harness = False``: a gateway harness)."""
    return spec.to_dict() if getattr(source, "uses_harness", True) else None


def _resume(trainer: Trainer, ckpt: Path, sampler: TaskSampler,
            spec: HarnessSpec) -> tuple[int, RolloutLedger, HarnessSpec, int, dict[str, str]]:
    """A checkpoint's state: (next update, ledger, harness, last evolved epoch, skills); the trainer
    and the sampler are restored in place."""
    state = json.loads((ckpt / "driver.json").read_text())
    trainer.load(ckpt)
    sampler.load_state_dict(state["sampler"])
    start = int(state["next_update"])
    if state.get("harness"):
        spec = HarnessSpec.from_dict(state["harness"])
    log.info("resumed from %s at update %d", ckpt, start)
    return (start, RolloutLedger(**state["ledger"]), spec, int(state.get("evolved_epoch", 0)),
            dict(state.get("skills") or {}))


def _batch_stats(records: list[dict[str, Any]], report: Any, batch: Any) -> dict[str, Any]:
    return {"rollouts": len(records), "reward_mean": mean(float(r["reward"]) for r in records) if records else 0.0,
            "pass_rate": report.pass_rate, "trainable_rate": report.trainable_rate,
            "mixed_groups": report.mixed_groups, "all_success_groups": report.all_success_groups,
            "all_failure_groups": report.all_failure_groups, "masked": report.masked,
            "batch_samples": len(batch.samples), "dropped": batch.dropped}


def _save(trainer: Trainer, ckpt: Path, state: dict[str, Any]) -> None:
    tmp = ckpt.with_name(ckpt.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    trainer.save(tmp)
    (tmp / "driver.json").write_text(json.dumps(state, indent=1))
    if state.get("harness"):  # the run's deliverable is a model-harness pair: the harness as a spec file
        HarnessSpec.from_dict(state["harness"]).save(tmp / "harness.yaml")
    old = ckpt.with_name(ckpt.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if ckpt.exists():
        ckpt.rename(old)
    tmp.rename(ckpt)
    shutil.rmtree(old, ignore_errors=True)


def _truncate_metrics(path: Path, next_update: int) -> None:
    """Drop metric lines of updates the checkpoint does not include (written after it was saved)."""
    rows = [r for r in read_jsonl(path) if int(r["update"]) < next_update]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def plot(history: list[dict[str, Any]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["update"] for r in history]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(xs, [r["reward_mean"] for r in history], marker="o", label="mean reward")
    ax.plot(xs, [r["trainable_rate"] for r in history], marker="s", label="trainable rate")
    ax.set_xlabel("update")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
