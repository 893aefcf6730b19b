"""Harness-R1 on SWE repair: the harness engineer's environment and what it needs.

A *target* is a frozen agent (a model spec, its sampling, a base harness, a sandbox). The engineer
sees a batch of the target's failed tasks and writes a ``harnessadapt-patch-v1`` patch
(``patches.py``); the patch is worth what re-running the target with it shows:

    reward = mean over the batch's tasks of (patched success - base success)

each side ``runs`` episodes per task with common seeds (member k of task t samples with the same
seed on either side). Both sides are fresh runs, and their seeds come from a stream disjoint from
the run that selected the failures: ``scoring_seed(seed)``, not ``seed`` itself. That run is biased
low (its tasks are there because they failed), and against a target whose draw depends on its
prompt (any seeded LLM) a base side replaying it seed for seed would pay a neutral patch that only
changes the prompt; ``HarnessEditEnv`` refuses records whose episode seeds meet the scoring
stream's. Base outcomes are computed once per batch and cached; patched outcomes are cached by the
*applied spec's hash* (two patches that produce the same harness run once), both keyed by the whole
target (the weights' identity, ``ha_agents.llm.weights``, not the model's name; sampling, base spec,
sandbox, grader version, runs, seed), with a file lock per key so concurrent workers never run a key
twice. An infrastructure fault (a masked episode) is retried once; a task still masked on either
side drops out of both for this score only: the cache holds graded outcomes alone, so the next
score of that key runs the faulted task again. More than ``max_masked_share`` dropped masks the
sample.

- ``failure_batches``: seeded batches of failed, unmasked tasks from a target's records, one
  benchmark per batch, spread across repositories;
- ``partition``: task ids split into SFT / RL / validation / test before anything runs;
- ``engineer_prompt``: the current spec, the patch format and catalogue, and per task the issue and
  a condensed trajectory within a character budget;
- ``HarnessEditEnv`` (``gymnasium.make("ha_evolve/HarnessEdit-v0", ...)``): ``reset`` gives the
  engineer's messages for the next batch, ``step(reply)`` ends the episode with the reward and an
  ``info`` holding the patch, its validation, both sides' per-task outcomes, the reward's paired
  bootstrap CI, rollouts run, cache hits and the lifecycle points touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import random
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

import gymnasium
import numpy as np
import yaml

from ha_agents.episode import EpisodeConfig, episode_seed
from ha_agents.llm.options import ModelOptions
from ha_agents.llm.weights import weights_identity
from ha_agents.records.episode_record import classify
from ha_agents.runs.compare import percentile_interval
from ha_agents.runs.rollouts import collect
from ha_envs.harness import HarnessSpec
from ha_envs.messages import AssistantMessageSpace, MessageListSpace, message
from ha_envs.task import Task
from ha_envs.termination import Termination

from ..proposers import catalogue_text
from ..summary import digest
from .patches import FORMAT, MAX_OPS, PatchError, apply_patch, parse_patch

PATCH_GUIDE = f"""Reply with one patch in <patch>...</patch> (YAML or JSON), format {FORMAT}, at most {MAX_OPS} ops:
  add_hook {{hook: NAME | {{name, params}} | {{name, rule: {{point, trigger, message, max_fires, veto | rewrite | force}}}},
            before?: NAME}}   (rewrite: {{argument, pattern, replace}} at pre_action; force: {{command, timeout_s}}
            at post_feedback: the harness runs the command in the sandbox; or a code hook instead of
            trigger and message: rule: {{point, code: "def hook(ctx): ..."}}, run in the sandbox, returning
            None, a message or {{message, veto | rewrite: {{argument, value}} | force: COMMAND}}; no imports,
            while, classes, IO or names starting with _)
  replace_hook {{name: NAME, hook: ...}}   set_params {{hook: NAME | tool: NAME, params: {{...}}}}
  remove_hook {{name: NAME}}   add_tool {{tool: NAME | {{name, params}} | {{name, script: {{...}}}}, before?: NAME}}
You may think first inside <think>...</think>."""


# -- tasks -------------------------------------------------------------------------------------

def partition(ids: list[str], fractions: tuple[float, float, float, float] = (0.4, 0.3, 0.1, 0.2),
              seed: int = 0) -> dict[str, list[str]]:
    """Task ids split into ``sft``, ``rl``, ``val``, ``test`` (seeded, disjoint, every id once)."""
    if abs(sum(fractions) - 1) > 1e-9 or any(f < 0 for f in fractions):
        raise ValueError(f"fractions must be non-negative and sum to 1, got {fractions}")
    order = sorted(set(ids))
    random.Random(seed).shuffle(order)
    cuts = np.cumsum([0.0, *fractions]) * len(order)
    names = ("sft", "rl", "val", "test")
    return {n: sorted(order[int(round(cuts[i])):int(round(cuts[i + 1]))]) for i, n in enumerate(names)}


def failure_batches(records: list[dict[str, Any]], tasks: dict[str, Task], n: int, seed: int = 0,
                    only: set[str] | None = None) -> list[list[str]]:
    """Batches of ``n`` task ids the target failed (every run unresolved, none masked), one benchmark
    per batch, repositories taken in turn so a batch spreads across them; seeded. ``only``: keep
    these ids (a partition)."""
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        runs[r["instance_id"]].append(r)
    failed = [i for i, rs in runs.items() if i in tasks and (only is None or i in only)
              and not any(classify(r).masked for r in rs) and not any(r.get("resolved") for r in rs)]
    rng = random.Random(seed)
    batches: list[list[str]] = []
    by_bench: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for i in sorted(failed):
        by_bench[tasks[i].benchmark][tasks[i].repo or "?"].append(i)
    for bench in sorted(by_bench):
        repos = by_bench[bench]
        for ids in repos.values():
            rng.shuffle(ids)
        order = sorted(repos)
        rng.shuffle(order)
        flat: list[str] = []
        while any(repos[r] for r in order):
            flat += [repos[r].pop() for r in order if repos[r]]
        batches += [flat[k:k + n] for k in range(0, len(flat) - n + 1, n)]
    rng.shuffle(batches)
    return batches


def engineer_prompt(spec: HarnessSpec, batch: list[str], records: list[dict[str, Any]], tasks: dict[str, Task],
                    budget_chars: int = 24000) -> str:
    """What the engineer reads: the spec, the patch format and catalogue, then per task the issue
    and a condensed failed trajectory, shortened evenly to fit ``budget_chars``."""
    cat = catalogue_text()
    head = ("You improve the harness (tools and hooks) of a frozen coding agent. It failed the tasks below. "
            "Diagnose what went wrong in how it worked, across tasks, and write a patch to its harness "
            "that would make it succeed more often. The patch is judged by re-running the agent.\n\n"
            f"## Current harness\n```yaml\n{yaml.safe_dump(spec.to_dict(), sort_keys=False).strip()}\n```\n\n"
            f"## Patch format\n{PATCH_GUIDE}\n\n## Catalogue\ntools: {cat['catalogue_tools']}\n"
            f"hooks: {cat['catalogue_hooks']}\nrule trigger fields: {cat['trigger_fields']}\n\n## Failures\n")
    per = max(400, (budget_chars - len(head)) // max(1, len(batch)))
    first = {}
    for r in records:
        first.setdefault(r["instance_id"], r)
    parts = []
    for i in batch:
        issue = tasks[i].problem_statement.strip()
        text = f"### {i}\n<issue>\n{issue[: per // 2]}\n</issue>\n" + digest(first[i], per // 2) if i in first else f"### {i}\n"
        parts.append(text[:per])
    return head + "\n\n".join(parts)


# -- the target and its outcomes -----------------------------------------------------------------

SCORING_STREAM = "harness-r1/scoring-v1"
"""Names the seed stream of the scoring runs (part of every cache key)."""


def scoring_seed(seed: int | None) -> int | None:
    """The run seed of the scoring runs for the target's ``seed``: a stream of its own, so that no
    scoring episode replays an episode of the run that selected the failures (which ran at
    ``seed``). None stays None (unseeded: fresh draws)."""
    return None if seed is None else episode_seed(seed, SCORING_STREAM, 0)


@dataclass(frozen=True)
class Target:
    """The frozen agent whose harness the engineer edits: a model and how its episodes are set up
    (``episodes``: its base harness, sandbox, seed and sampling; each side of a comparison runs
    ``replace(episodes, harness=that side's)``)."""

    model: str
    episodes: EpisodeConfig = field(default_factory=lambda: EpisodeConfig.create("h0", seed=0))
    """An ``EpisodeConfig``, or a harness (preset, file, spec): its default config with seed 0."""
    runs: int = 1
    """Episodes per task on each side (m)."""
    workers: int = 2
    revision: str | None = None
    """The weights' revision as the user names it (a checkpoint's tag or hash): part of the weights'
    identity, what tells apart new weights served under an old name."""

    def __post_init__(self) -> None:
        if not isinstance(self.episodes, EpisodeConfig):
            object.__setattr__(self, "episodes", EpisodeConfig.create(self.episodes, seed=0))
        object.__setattr__(self, "_weights", None)

    @classmethod
    def create(cls, model: str, harness: Any = "h0", *, sandbox: str = "local", runs: int = 1, seed: int = 0,
               temperature: float | None = None, top_p: float | None = None, workers: int = 2,
               revision: str | None = None) -> "Target":
        """A target from plain fields (the command line's, a verl agent-loop YAML's: ``to_dict()``)."""
        if isinstance(harness, dict):
            harness = HarnessSpec.from_dict(harness)
        options = ModelOptions(temperature=temperature, top_p=top_p)
        return cls(model, EpisodeConfig.create(harness, sandbox=sandbox, seed=seed, model_options=options), runs, workers,
                   revision)

    def to_dict(self) -> dict[str, Any]:
        """Plain fields ``create`` reads back (the harness as its spec's mapping)."""
        options = self.episodes.model_options or ModelOptions()
        return {"model": self.model, "harness": self.episodes.harness.to_dict(), "sandbox": self.episodes.sandbox,
                "runs": self.runs, "seed": self.episodes.seed, "temperature": options.temperature,
                "top_p": options.top_p, "workers": self.workers, "revision": self.revision}

    def spec(self) -> HarnessSpec:
        return self.episodes.harness

    def weights(self) -> dict[str, Any]:
        """The weights' identity (``ha_agents.llm.weights``), found once per target."""
        if self._weights is None:
            object.__setattr__(self, "_weights", weights_identity(self.model, self.revision, self.episodes.model_options))
        return self._weights

    def scoring(self, spec: HarnessSpec) -> EpisodeConfig:
        """The episodes of one side of a score: ``spec`` on the scoring seed stream."""
        return replace(self.episodes, seed=scoring_seed(self.episodes.seed)).with_harness(spec)

    def key(self) -> dict[str, Any]:
        """What an outcome depends on besides the harness and the task: the episodes' draw key (with
        the base harness), the weights' identity, the runs and the scoring seed stream."""
        return {**self.episodes.draw_key(), "base": self.episodes.harness.hash, "model": self.model,
                "weights": self.weights(), "runs": self.runs, "stream": SCORING_STREAM}


@dataclass
class SideOutcome:
    """One side of a comparison: task id -> success rate over its runs (graded runs only)."""

    rates: dict[str, float] = field(default_factory=dict)
    masked: list[str] = field(default_factory=list)
    """Tasks still masked after the retry: they drop out of both sides."""
    rollouts: int = 0
    cached: bool = False


class OutcomeCache:
    """JSON outcomes under ``root``, one file per key, written under a per-key file lock."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def name(key: dict[str, Any]) -> str:
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]

    @contextlib.contextmanager
    def locked(self, key: dict[str, Any]) -> Iterator[Path]:
        path = self.root / f"{self.name(key)}.json"
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield path
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def run_side(target: Target, spec: HarnessSpec, task_ids: list[str], tasks: dict[str, Task], cache: OutcomeCache,
             out: Path) -> SideOutcome:
    """The target under ``spec`` on the tasks (the scoring seed stream), from the cache where this key
    graded them before. A masked episode is retried once; a task still masked is reported and left
    out of the cache, so the next score of this key runs it again (a fault never outlives its retry)."""
    key = {**target.key(), "harness": spec.hash, "tasks": sorted(task_ids)}
    with cache.locked(key) as path:
        stored = json.loads(path.read_text())["rates"] if path.exists() else {}
        side = SideOutcome({i: stored[i] for i in task_ids if i in stored})
        todo = [i for i in task_ids if i not in side.rates]
        side.cached = not todo
        if not todo:
            return side
        runs_dir = out / cache.name(key)
        first = 1 + sum(1 for _ in runs_dir.glob("attempt-*")) if runs_dir.is_dir() else 1
        for attempt in (first, first + 1):  # the retry window: one more attempt for what a fault masked
            todo = _attempt(target, spec, todo, tasks, side, runs_dir / f"attempt-{attempt}")
            if not todo:
                break
        side.masked = sorted(todo)
        path.write_text(json.dumps({"key": key, "rates": side.rates}))
        return side


def _attempt(target: Target, spec: HarnessSpec, todo: list[str], tasks: dict[str, Task], side: SideOutcome,
             out: Path) -> list[str]:
    """One attempt at ``todo``: graded tasks' rates go into ``side``; the tasks a fault masked come back."""
    recs = collect([tasks[i] for i in todo], target.runs, target.model, target.scoring(spec), out=out,
                   workers=target.workers, progress_bar=False)
    side.rollouts += len(recs)
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in recs:
        by[r["instance_id"]].append(r)
    again = []
    for i in todo:
        rs = by.get(i, [])
        if not rs or any(classify(r).masked for r in rs):
            again.append(i)
        else:
            side.rates[i] = sum(bool(r.get("resolved")) for r in rs) / len(rs)
    return again


def paired_ci(diffs: list[float], samples: int = 4000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean paired difference (``ha compare``'s interval)."""
    if not diffs:
        return 0.0, 0.0
    d = np.asarray(diffs, dtype=float)
    return percentile_interval(d[np.random.default_rng(seed).integers(0, len(d), size=(samples, len(d)))].mean(axis=1))


# -- the env -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class EngineerBatch:
    """One failure batch as an item a training driver samples (``instance_id`` names it)."""

    index: int
    task_ids: tuple[str, ...]
    benchmark: str = "harness-edit"

    @property
    def instance_id(self) -> str:
        return f"batch-{self.index:04d}"



def _check_streams(target: Target, batches: list[list[str]], records: list[dict[str, Any]]) -> None:
    """Refuse a target whose scoring episodes would replay episodes of the run that selected the
    failures (same task, same episode seed): their base side would be that biased run again."""
    seed = scoring_seed(target.episodes.seed)
    if seed is None:
        return
    ran: dict[str, set[int]] = defaultdict(set)
    for r in records:
        if r.get("seed") is not None:
            ran[r["instance_id"]].add(int(r["seed"]))
    clash = sorted(i for i in {i for b in batches for i in b}
                   if ran[i] & {episode_seed(seed, i, k) for k in range(target.runs + 1)})
    if clash:
        raise ValueError(f"the scoring runs (seed stream {SCORING_STREAM} of --seed {target.episodes.seed}) would replay "
                         f"episodes of the run that selected the failures on {len(clash)} task(s) ({clash[:3]}): "
                         "that run was made on the scoring stream itself; select failures from a run at another seed")


class HarnessEditEnv(gymnasium.Env):
    """One step per episode: the engineer's reply -> reward = mean(patched - base) on the batch."""

    metadata = {"render_modes": []}

    def __init__(self, target: Target, tasks: list[Task], batches: list[list[str]], records: list[dict[str, Any]],
                 out: str | Path, budget_chars: int = 24000, max_masked_share: float = 0.5) -> None:
        if not batches:
            raise ValueError("no batch to edit for: failure_batches found no failed, unmasked tasks")
        self.target, self.batches, self.records = target, batches, records
        self.tasks = {t.instance_id: t for t in tasks}
        missing = sorted({i for b in batches for i in b} - set(self.tasks))
        if missing:
            raise ValueError(f"batches name tasks that were not given: {missing[:5]}")
        _check_streams(target, batches, records)
        self.out = Path(out)
        self.cache = OutcomeCache(self.out / "cache")
        self.budget_chars, self.max_masked_share = budget_chars, max_masked_share
        self.base_spec = target.spec()
        self.observation_space = MessageListSpace()
        self.action_space = AssistantMessageSpace()
        self._batch: list[str] | None = None
        self._item: EngineerBatch | None = None
        self._next = 0

    @property
    def task(self) -> EngineerBatch | None:
        """The batch being edited (what ``AgentLoop`` hands a scripted client's ``start``)."""
        return self._item

    def _ended(self, **info: Any):
        self._batch = None
        return [], 0.0, True, False, {"rollouts": 0, "cache_hits": 0, "masked": [], "points": [], **info}

    def end(self, reason: str):
        """Ended from outside (the engineer's reply ran out of context): no patch, truncated."""
        return self._ended(termination=reason, stage="truncated", reason=reason)

    def abort(self, message: str, reason: str = "model_error"):
        """The engineer's model failed for good: no verdict, masked."""
        return self._ended(termination=reason, mask_sample=True, stage="masked", reason=message)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        if isinstance(options.get("task"), EngineerBatch):  # the driver's item (AgentLoop passes it as the task)
            options = {"batch": options["task"].index}
        if "batch" in options:
            k = int(options["batch"])
            if not 0 <= k < len(self.batches):
                raise ValueError(f"batch {k}: there are batches 0..{len(self.batches) - 1}")
        else:
            k = self._next % len(self.batches)
            self._next += 1
        self._batch = list(self.batches[k])
        self._item = EngineerBatch(k, tuple(self._batch))
        prompt = engineer_prompt(self.base_spec, self._batch, self.records, self.tasks, self.budget_chars)
        obs = [message("user", prompt, "task")]
        return obs, {"batch": k, "instance_id": self._item.instance_id, "tasks": list(self._batch),
                     "base_harness": self.base_spec.hash}

    def step(self, action: Any):
        if self._batch is None:
            raise RuntimeError("call reset() before step()")
        batch, self._batch = self._batch, None
        text = action if isinstance(action, str) else str((action or {}).get("content") or "")
        info: dict[str, Any] = {"tasks": batch, "rollouts": 0, "cache_hits": 0, "masked": [], "points": [],
                                "stage": "passed", "reason": "", "patch": None}
        try:
            patch = parse_patch(text)
            info["patch"], info["points"], info["thinking"] = list(patch.ops), patch.points, patch.thinking
            spec = apply_patch(self.base_spec, patch)
        except PatchError as exc:
            info.update(stage=exc.stage, reason=str(exc), termination=Termination.INVALID_PATCH)
            return [], 0.0, True, False, info
        info["patched_harness"] = spec.hash
        if spec.hash == self.base_spec.hash:
            info.update(stage="no_op", reason="the patch leaves the harness as it was (same hash)",
                        termination=Termination.NO_OP_PATCH)
            return [], 0.0, True, False, info
        base = run_side(self.target, self.base_spec, batch, self.tasks, self.cache, self.out / "runs")
        patched = run_side(self.target, spec, batch, self.tasks, self.cache, self.out / "runs")
        info["rollouts"] = base.rollouts + patched.rollouts
        info["base_rollouts"], info["patched_rollouts"] = base.rollouts, patched.rollouts
        info["cache_hits"] = int(base.cached) + int(patched.cached)
        dropped = sorted(set(base.masked) | set(patched.masked))
        kept = [i for i in batch if i not in dropped and i in base.rates and i in patched.rates]
        info["masked"] = dropped
        info["base"] = {i: base.rates.get(i) for i in batch}
        info["patched"] = {i: patched.rates.get(i) for i in batch}
        if not kept or len(dropped) > self.max_masked_share * len(batch):
            info.update(stage="masked", reason=f"{len(dropped)} of {len(batch)} tasks masked on a side", mask_sample=True,
                        termination=Termination.SANDBOX_ERROR)  # masked: no verdict
            return [], 0.0, True, False, info
        diffs = [patched.rates[i] - base.rates[i] for i in kept]
        reward = float(np.mean(diffs))
        info["delta"], info["delta_ci"] = reward, list(paired_ci(diffs))
        info["termination"] = Termination.PATCH_SCORED
        return [], reward, True, False, info


def make_harness_edit(**kwargs: Any) -> HarnessEditEnv:
    """``gymnasium.make("ha_evolve/HarnessEdit-v0", target=..., tasks=..., batches=..., records=..., out=...)``;
    ``target`` may be a mapping of ``Target`` fields."""
    target = kwargs.pop("target")
    if isinstance(target, dict):
        target = Target.create(**target)
    return HarnessEditEnv(target, **kwargs)

