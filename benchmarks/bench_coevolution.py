"""The paper's ablation at CPU scale, end to end through the library: GRPO with the harness frozen vs
evolution with the policy frozen vs co-evolution, same task pool, several seeds, evaluated on tasks
no arm trained or evolved on, paired bootstrap CIs with ``compare`` (``ha compare``).

Set-up (a constructed demonstration, and honest about it):

- **Policy:** a tiny Qwen-style model built here (hidden 64, 2 layers), warm-started once
  (``ha train --updates 0 --warm-start E``) on every task of the pool, training and held-out
  alike (the stand-in for pre-training: the model has seen the held-out repositories, never been
  trained or evolved on them). Demonstrations: the oracle's fix with ``edit_file`` and a give-up
  under the demonstration harness (``train-h0`` plus ``edit_file``), and under ``train-h0`` (bash and
  submit only) the give-up and the *same* ``edit_file`` calls, which fail there as unknown tools
  (``--warm-start-harness``: a policy used to another agent's tools).
- **Start harness:** ``train-h0``. On it the policy's fixes fail: pass rate 0, trainable rate 0.
- **Arms** (per seed, same training tasks, group size G, U updates, an epoch every E updates):
  ``grpo`` (``ha train`` on train-h0), ``evolution`` (``ha train --evolve --freeze-policy``: the
  harness evolves at each epoch's start under the paired dual-rate gate, the weights never change,
  every update's rollouts measured as training measures them), ``coevolution`` (``ha train
  --evolve``). Proposer: ``rule``, which reads the trajectories (here: calls to a tool the harness
  lacks) and proposes one catalogue change a round.
- **Evaluation:** each arm's final model-harness pair (``OUT/seed-S/ARM/checkpoint``: the weights
  and ``harness.yaml``) on the held-out tasks with ``ha eval`` (R runs per task, temperature 1, the
  same evaluation seed for every arm of a seed), and the warm start on train-h0 (``start``).
  ``ha compare`` pairs the arms with the seeds as replicates.

What evolution does here is by construction discoverable (the policy's calls to a missing tool);
what is measured is whether the gate accepts it at this sample size and for a logged reason, what
GRPO then makes of the harness it trains on, and whether either carries to unseen tasks.

    python benchmarks/bench_coevolution.py [--seeds 1 2 3] [--out runs/coevolution] [--plan]

Every step builds its configs and calls the library in this process: ``Training`` (a ``LocalRun``
started as a ``LocalSession``, trained alone or with ``CoEvolution``) and ``Evaluation``
(``evaluate``). Each prints the equivalent ``ha`` command line (what reproduces it from the CLI),
writes its output to its log (``OUT/seed-S/ARM.log``, ...), and is skipped when its output exists
(a rerun resumes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from statistics import mean, pstdev
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TRAIN = ["mini__ini_interpolation", "mini__invoice_rounding", "mini__js_template", "mini__url_router",
         "mini__semver_ranges"]
HELDOUT = ["mini__rust_intervals", "mini__jsonpath_lite", "mini__recurring_events"]
ARMS = ("grpo", "evolution", "coevolution")


@dataclass(frozen=True)
class Gate:
    """``ha train --evolve``'s settings: ``CoEvolveConfig`` with its ``EvolveConfig``."""

    every: int
    rounds: int
    group_size: int
    proposer: str = "rule"
    level: float | None = None
    """The paired gate's confidence as ``--level`` gave it (alpha = 1 - level); None: ``alpha``."""
    alpha: float = 0.05
    decide_by: str = "paired"
    tasks: int = 46
    """Tasks per round (``--gate-tasks``; ``ha train``'s default, the paper's)."""

    def flags(self) -> list[str]:
        gate = ["--level", str(self.level)] if self.level is not None else ["--gate", self.decide_by, "--alpha",
                                                                             str(self.alpha)]
        return ["--evolve", "--evolve-every", str(self.every), "--evolve-rounds", str(self.rounds),
                "--evolve-group-size", str(self.group_size), "--proposer", self.proposer, *gate]

    def config(self, workers: int, seed: int, model: str) -> Any:
        from ha_evolve.coevolution import CoEvolveConfig
        from ha_evolve.schedule import EvolveConfig

        alpha = 1 - self.level if self.level is not None else self.alpha
        evolve = EvolveConfig(rounds=self.rounds, group_size=self.group_size, workers=workers, seed=seed,
                              decide_by=self.decide_by, alpha=alpha, tasks=self.tasks).validate()
        return CoEvolveConfig(every=self.every, proposer=self.proposer, evolve=evolve, model_label=model).validate()


@dataclass(frozen=True)
class Training:
    """One local training run (``ha train --backend local``), built as the library's ``LocalRun``
    and run by ``LocalSession`` (with ``CoEvolution`` when ``gate`` is set)."""

    model: str
    out: Path
    tasks: list[str]
    harness: str = "train-h0"
    seed: int = 0
    updates: int = 10
    tasks_per_update: int = 46
    group_size: int = 4
    lr: float = 1e-6
    workers: int = 2
    max_tokens: int = 700
    context_tokens: int = 8192
    init_model: str | None = None
    warm_epochs: int = 0
    warm_lr: float = 3e-3
    warm_harness: str | None = None
    optimizer_from: Path | None = None
    gate: Gate | None = None
    freeze_policy: bool = False

    def argv(self) -> list[str]:
        """The same run from the command line."""
        return ["train", "--backend", "local", "--model", self.model,
                *(["--init-model", self.init_model] if self.init_model else []), "--harness", self.harness,
                *(["--warm-start-harness", self.warm_harness] if self.warm_harness else []),
                *(["--warm-start", str(self.warm_epochs), "--warm-start-lr", str(self.warm_lr)] if self.warm_epochs else []),
                "--instances", *self.tasks, "--tasks-per-update", str(self.tasks_per_update), "--group-size",
                str(self.group_size), "--updates", str(self.updates), "--lr", str(self.lr), "--temperature", "1",
                "--workers", str(self.workers), "--no-progress", "--max-tokens", str(self.max_tokens),
                "--context-tokens", str(self.context_tokens),
                *(["--optimizer-from", str(self.optimizer_from)] if self.optimizer_from else []), "--seed", str(self.seed),
                *(self.gate.flags() if self.gate else []), *(["--freeze-policy"] if self.freeze_policy else []),
                "--out", str(self.out)]

    def run(self) -> Any:
        from ha_agents.episode import EpisodeConfig
        from ha_agents.llm.options import ModelOptions
        from ha_agents.train import TrainConfig
        from ha_agents.train.local import LocalConfig
        from ha_agents.train.session import LocalRun, WarmStart
        from ha_envs.harness import load_spec

        episodes = EpisodeConfig(load_spec(self.harness), model_options=ModelOptions(max_tokens=self.max_tokens)).validate()
        train = TrainConfig(updates=self.updates, tasks_per_update=self.tasks_per_update, group_size=self.group_size,
                            episodes=episodes, workers=self.workers, seed=self.seed, progress=False,
                            freeze_policy=self.freeze_policy)
        warm = (WarmStart(self.warm_epochs, self.warm_lr, load_spec(self.warm_harness) if self.warm_harness else None)
                if self.warm_epochs else None)
        return LocalRun(self.model, self.out, train, LocalConfig(lr=self.lr, temperature=1.0, max_tokens=self.max_tokens,
                                                                 seed=self.seed),
                        context_tokens=self.context_tokens, init_model=self.init_model, warm_start=warm,
                        optimizer_from=self.optimizer_from)

    def __call__(self) -> list[dict]:
        from ha_agents.train.reporting import UpdateReporter
        from ha_agents.train.session import LocalSession
        from ha_evolve.coevolution import CoEvolution

        run = self.run()
        session = LocalSession.start(run, tasks_of(self.tasks))
        report = UpdateReporter(self.updates, self.out)
        loop = CoEvolution.of(session, self.gate.config(self.workers, self.seed, self.model)) if self.gate else None
        history = session.train(report, loop=loop)
        report.close()
        session.finish()
        return history


@dataclass(frozen=True)
class Evaluation:
    """One evaluation run (``ha eval``) of a local model in token mode, through ``evaluate``."""

    model: Path
    harness: str
    tasks: list[str]
    runs: int
    seed: int
    out: Path
    workers: int = 2
    max_tokens: int = 700
    context_tokens: int = 8192

    def argv(self) -> list[str]:
        return ["eval", "--model", f"hf:{self.model}", "--tokenizer", str(self.model), "--harness", self.harness,
                "--instances", *self.tasks, "--runs", str(self.runs), "--temperature", "1", "--seed", str(self.seed),
                "--workers", str(self.workers), "--no-progress", "--max-tokens", str(self.max_tokens),
                "--context-tokens", str(self.context_tokens), "--out", str(self.out)]

    def options(self) -> Any:
        from ha_agents.llm.options import ModelOptions

        return ModelOptions(temperature=1.0, max_tokens=self.max_tokens)

    def config(self) -> Any:
        from ha_agents.episode import EpisodeConfig, TokenMode

        return EpisodeConfig.create(self.harness, token_mode=TokenMode.of_model(str(self.model), self.context_tokens),
                                    model_options=self.options(), seed=self.seed)

    def __call__(self) -> Any:
        from ha_agents.runs.evaluate import evaluate

        summary = evaluate(tasks_of(self.tasks), f"hf:{self.model}", self.config(), runs=self.runs, out_dir=self.out,
                           workers=self.workers)
        print(summary.markdown())
        return summary


def tasks_of(ids: list[str]) -> list:
    """The bundled suite's tasks named by ``ids``, in that order (``ha ... --instances``)."""
    from ha_envs.loaders import pick_ids, resolve_tasks

    return pick_ids(resolve_tasks(suite="mini"), ids, "suite mini")


Step = tuple[Path, "Training | Evaluation", Path]
"""(the file that marks it done, what it runs, its log)."""


def run_step(done: Path, what: "Training | Evaluation", log: Path) -> None:
    """Run one step in this process unless ``done`` exists; its output goes to ``log``."""
    from ha_envs.signals import signals_interrupt

    if done.exists():
        print(f"# done: {done}")
        return
    print("$ ha " + shlex.join(what.argv()), flush=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(log, "w") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        try:
            with signals_interrupt():
                what()
        except Exception as exc:  # the traceback to the log, one line here
            traceback.print_exc()
            failure = exc
        else:
            failure = None
    if failure is not None:
        raise SystemExit(f"step failed ({type(failure).__name__}: {failure}); see {log}")
    print(f"  ({time.monotonic() - t0:.0f}s)", flush=True)


def demo_harness(out: Path) -> Path:
    """train-h0 with edit_file added exactly as the rule proposer adds it (same tool order)."""
    from ha_envs.harness import load_spec
    from ha_evolve.proposers import with_tools

    spec = with_tools(load_spec("train-h0"), ["edit_file"])
    path = out / "demo-harness.yaml"
    if not path.exists():
        spec.save(path)
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def steps(args: argparse.Namespace, out: Path) -> list[Step]:
    """Every step in order: the warm start, then per seed the start's evaluation and each arm's
    training and evaluation."""
    warm = out / "warm"
    model = warm / "checkpoint" / "model"
    todo: list[Step] = [(model, Training(str(out / "init-model"), warm, args.train + args.heldout, init_model="qwen",
                                         warm_harness=str(demo_harness(out)), warm_epochs=args.warm_epochs, warm_lr=6e-3,
                                         updates=0), out / "warm.log")]
    gate = Gate(args.evolve_every, args.evolve_rounds, args.evolve_group_size, level=args.level)
    for s in args.seeds:
        sd = out / f"seed-{s}"

        def evals(name: str, model_dir: Path, harness: str) -> list[Step]:
            sets = [("", args.heldout)] + ([("-train", args.train)] if args.eval_train else [])
            return [(sd / f"{name}{x}" / "summary.json",
                     Evaluation(model_dir, harness, tasks, args.eval_runs, 1000 + s, sd / f"{name}{x}", args.workers),
                     sd / f"{name}{x}.log") for x, tasks in sets]

        todo += evals("eval-start", model, "train-h0")
        for arm in ARMS:
            ck = sd / arm / "checkpoint"
            todo.append((sd / arm / "training.png",
                         Training(str(model), sd / arm, args.train, seed=s, updates=args.updates,
                                  tasks_per_update=len(args.train), group_size=args.group_size, lr=args.lr,
                                  workers=args.workers, optimizer_from=warm / "checkpoint" if args.optimizer_from_warm else None,
                                  gate=None if arm == "grpo" else gate, freeze_policy=arm == "evolution"),
                         sd / f"{arm}.log"))
            todo += evals(f"eval-{arm}", ck / "model", str(ck / "harness.yaml"))
    return todo


def run(args: argparse.Namespace) -> dict:
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for done, what, log in steps(args, out):
        if args.plan:
            print("$ ha " + shlex.join(what.argv()))
        else:
            run_step(done, what, log)
    if args.plan:
        return {}
    return summarise(out, args)


def summarise(out: Path, args: argparse.Namespace) -> dict:
    from ha_agents.runs.compare import compare

    seeds = args.seeds
    res: dict = {"train": args.train, "heldout": args.heldout, "seeds": seeds, "arms": {}, "compare": {},
                 "settings": {k: v for k, v in vars(args).items() if k not in ("plan", "out")}}
    for arm in ("start",) + ARMS:
        held = [json.loads((out / f"seed-{s}" / f"eval-{arm}" / "summary.json").read_text()) for s in seeds]
        per_seed = [pass_rate(out / f"seed-{s}" / f"eval-{arm}") for s in seeds]
        entry = {"heldout_pass": per_seed, "heldout_mean": mean(per_seed), "heldout_sd": pstdev(per_seed),
                 "masked": sum(masked(out / f"seed-{s}" / f"eval-{arm}{x}") for s in seeds for x in ("", "-train")),
                 "harness": [h.get("harness", {}).get("name") if isinstance(h.get("harness"), dict) else h.get("harness")
                             for h in held]}
        if arm != "start":
            rows = [read_jsonl(out / f"seed-{s}" / arm / "metrics.jsonl") for s in seeds]
            entry["train_pass"] = [[r["pass_rate"] for r in rr] for rr in rows]
            entry["train_trainable"] = [[r["trainable_rate"] for r in rr] for rr in rows]
            entry["harness_changes"] = [[r["update"] for a, r in zip(rr, rr[1:]) if a["harness_hash"] != r["harness_hash"]]
                                        + ([1] if rr and rr[0]["harness"] != "train-h0" else []) for rr in rows]
            entry["accepted"] = [accepted(out / f"seed-{s}" / arm / "evolve" / "evolution.jsonl") for s in seeds]
        res["arms"][arm] = entry
    for suffix, label in (("", "held-out"), ("-train", "training tasks")):
        if suffix and not args.eval_train:
            continue
        runs = lambda arm: ",".join(str(out / f"seed-{s}" / f"eval-{arm}{suffix}") for s in seeds)  # noqa: E731
        for a, b in (("grpo", "coevolution"), ("evolution", "coevolution"), ("grpo", "evolution"), ("start", "grpo"),
                     ("start", "evolution"), ("start", "coevolution")):
            c = compare(runs(a), runs(b), samples=10000, seed=0)
            res["compare"][f"{label}: {b} - {a}"] = {"diff": c.pooled.diff, "ci": [c.pooled.ci_low, c.pooled.ci_high],
                                                     "n": c.pooled.n, "a": c.pooled.a, "b": c.pooled.b}
    (out / "summary.json").write_text(json.dumps(res, indent=1))
    figure(res, out / "coevolution.png", args)
    print(markdown(res))
    return res


def pass_rate(run: Path) -> float:
    recs = read_jsonl(run / "trajectories.jsonl")
    return mean(float(bool(r.get("resolved"))) for r in recs) if recs else 0.0


def masked(run: Path) -> int:
    return sum(1 for r in read_jsonl(run / "trajectories.jsonl") if r.get("mask_sample"))


def accepted(log: Path) -> list[dict]:
    return [{"epoch": r["epoch"], "round": r["round"], "candidate": r.get("candidate_name"), "diff": r.get("diff"),
             "reason": r.get("decision_reason"), "diagnosis": r.get("diagnosis")}
            for r in read_jsonl(log) if r.get("kind") == "proposal" and r.get("accepted")]


def markdown(res: dict) -> str:
    lines = ["| arm | held-out pass per seed | mean (sd) | masked eval episodes | harness accepted during training |",
             "|---|---|---|---:|---|"]
    for arm, e in res["arms"].items():
        acc = "; ".join(f"seed {s}: " + (", ".join(f"epoch {a['epoch']} {'+'.join(a['diff'] or [])}" for a in acc_s) or "none")
                        for s, acc_s in zip(res["seeds"], e.get("accepted", []))) or "-"
        lines.append(f"| {arm} | {', '.join(f'{p:.3f}' for p in e['heldout_pass'])} | {e['heldout_mean']:.3f} "
                     f"({e['heldout_sd']:.3f}) | {e['masked']} | {acc} |")
    lines += ["", "| paired (seeds as replicates) | A | B | B - A (points) | 95% CI | units |", "|---|---:|---:|---:|---|---:|"]
    for k, c in res["compare"].items():
        lines.append(f"| {k} | {c['a']:.3f} | {c['b']:.3f} | {100 * c['diff']:+.1f} | "
                     f"[{100 * c['ci'][0]:+.1f}, {100 * c['ci'][1]:+.1f}] | {c['n']} |")
    return "\n".join(lines)


def figure(res: dict, path: Path, args: argparse.Namespace) -> None:
    """The method's Fig. 3 shape: pass and trainable rate per update (mean over seeds, thin lines per
    seed), epochs shaded, the updates where a seed's harness changed marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharex=True)
    colours = {"grpo": "tab:blue", "evolution": "tab:orange", "coevolution": "tab:green"}
    for ax, key, title in ((axes[0], "train_pass", "pass rate (training tasks)"),
                           (axes[1], "train_trainable", "trainable rate (training tasks)")):
        for arm in ARMS:
            series = res["arms"][arm][key]
            n = min((len(x) for x in series), default=0)
            xs = list(range(1, n + 1))
            for sr in series:
                ax.plot(xs, sr[:n], color=colours[arm], alpha=0.25, lw=1)
            if n:
                ax.plot(xs, [mean(sr[i] for sr in series) for i in range(n)], color=colours[arm], lw=2.2, label=arm,
                        marker="o")
            for ch in res["arms"][arm].get("harness_changes", []):
                for u in ch:
                    ax.axvline(u - 0.5, color=colours[arm], ls=":", lw=1.2)
        for e in range(args.evolve_every, args.updates, args.evolve_every):
            ax.axvspan(e + 0.5, min(args.updates, e + args.evolve_every) + 0.5, color="0.93", zorder=0)
        ax.set_title(title)
        ax.set_xlabel("update (shaded: epoch 2; dotted: the harness changed before this update)")
        ax.set_ylim(-0.05, 1.05)
    axes[0].legend()
    fig.suptitle("GRPO (harness frozen) vs evolution (policy frozen) vs co-evolution; "
                 f"{len(res['seeds'])} seeds, tiny model, CPU; GRPO lr {args.lr:g}"
                 + (", warm start's optimizer continued" if args.optimizer_from_warm else ""))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "runs" / "coevolution"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--train", nargs="+", default=TRAIN)
    ap.add_argument("--heldout", nargs="+", default=HELDOUT)
    ap.add_argument("--warm-epochs", type=int, default=200)
    ap.add_argument("--updates", type=int, default=4)
    ap.add_argument("--evolve-every", type=int, default=2)
    ap.add_argument("--evolve-rounds", type=int, default=1)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--evolve-group-size", type=int, default=16,
                    help="samples per task on each side of the gate: with 5 tasks the paired rule at 0.9 needs four "
                         "tasks to move and none to fall, so a side needs enough samples per task to show a rise "
                         "(at 8, a task the policy fixes one time in five shows none on either side 17%% of the time)")
    ap.add_argument("--lr", type=float, default=1e-4,
                    help="GRPO's step (only the co-evolution arm ever updates: GRPO on train-h0 has no signal, "
                         "evolution freezes the policy); at 5e-4 co-evolution collapsed into format errors")
    ap.add_argument("--optimizer-from-warm", action="store_true",
                    help="every arm's training continues the warm start's AdamW moments (ha train --optimizer-from) "
                         "instead of a fresh optimizer")
    ap.add_argument("--level", type=float, default=0.9,
                    help="the paired gate's confidence: at 0.95 five tasks must all rise (p = 1/32); at 0.9, four")
    ap.add_argument("--eval-runs", type=int, default=8,
                    help="evaluation runs per task and arm: a unit (task, seed) that fixes a task now and then needs "
                         "enough runs to show it (at 4, most units of every arm read 0)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--eval-train", action="store_true",
                    help="also evaluate every arm's final pair on the training tasks (same seeds), compared alike")
    ap.add_argument("--plan", action="store_true", help="print the commands, run nothing")
    args = ap.parse_args()
    if set(args.train) & set(args.heldout):
        raise SystemExit(f"--train and --heldout overlap: {sorted(set(args.train) & set(args.heldout))}")
    t0 = time.monotonic()
    run(args)
    print(f"total {time.monotonic() - t0:.0f}s")


if __name__ == "__main__":
    main()
