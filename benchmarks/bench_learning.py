"""Learning on this machine, through the real env, sandbox, grader and agent loop: GRPO on some
tasks, evaluated on tasks it never trained on, over several seeds.

Set-up (honest about what it is): a tiny Qwen-style model (built here, random init) is first
fine-tuned once (``warm_start``) on two demonstrations of *every* task, training and held-out
alike: the oracle's fix and a give-up (the ``null`` policy submits at once). That stands in for
pre-training: the warm policy has seen the held-out repositories but was never trained with reward
on them. It picks fix or give-up at its first tool name, about half the time each, and at
temperature 1 sometimes corrupts a patch it copies: mixed GRPO groups. Then, per seed, GRPO (our
local trainer, the paper's batch policy and loss) runs ``--updates`` updates on ``--train-tasks``
only. Reported per seed: mean reward and trainable rate per update, and the pass rate of the policy
before the first and after the last update on the training tasks and on the held-out tasks
(``--eval-samples`` per task, the same evaluation seeds before and after and across seeds), with
the mean, the spread over seeds and a paired bootstrap CI (``ha compare``'s, seeds as replicates).

What it shows: whether what GRPO learns on some tasks (here, to choose the fix over the give-up,
and to copy it faithfully) carries to tasks it never trained on. What it does not show: learning
to repair bugs the model has never seen a fix for.

    python benchmarks/bench_learning.py [--seeds 1 2 3] [--updates 8] [--group-size 8] [--lr 5e-4]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ha_agents.runs.rollouts import collect  # noqa: E402
from ha_agents.train import TrainConfig, train  # noqa: E402
from ha_agents.train.local import LocalConfig, LocalTrainer  # noqa: E402
from ha_agents.train.models import init_model  # noqa: E402
from ha_agents.train.recipes import TRAIN_HARNESS, warm_start  # noqa: E402
from ha_envs.loaders import load_suite  # noqa: E402
from ha_agents.episode import EpisodeConfig  # noqa: E402
from statistics import mean, pstdev  # noqa: E402

TRAIN = ["mini__ini_interpolation", "mini__invoice_rounding"]
HELDOUT = ["mini__js_template", "mini__url_router"]


def evaluate(trainer: LocalTrainer, tasks: list, n: int, out: Path, seed: int = 12345) -> float:
    recs = collect(tasks, n, trainer.client(), EpisodeConfig.create(TRAIN_HARNESS, token_mode=trainer.token_mode, seed=seed),
                   out=out, progress_bar=False)
    return sum(float(bool(r["resolved"])) for r in recs) / len(recs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--updates", type=int, default=8)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--mini-batches", type=int, default=1)
    ap.add_argument("--sft-epochs", type=int, default=250)
    ap.add_argument("--eval-samples", type=int, default=16)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--train-tasks", nargs="+", default=TRAIN)
    ap.add_argument("--heldout-tasks", nargs="+", default=HELDOUT)
    ap.add_argument("--out", default=str(Path(__file__).with_name("learning.png")))
    ap.add_argument("--keep", default=None, help="keep the runs' records in this directory (default: a temporary one)")
    args = ap.parse_args()
    if set(args.train_tasks) & set(args.heldout_tasks):
        raise SystemExit("--train-tasks and --heldout-tasks overlap")
    suite = {t.instance_id: t for t in load_suite("mini")}
    train_tasks = [suite[i] for i in args.train_tasks]
    held_tasks = [suite[i] for i in args.heldout_tasks]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as d:
        root = Path(args.keep) if args.keep else Path(d)
        root.mkdir(parents=True, exist_ok=True)
        init_model(root / "model", "qwen", hidden=64, layers=2, heads=4, seed=0)
        tr = LocalTrainer(root / "model", LocalConfig(lr=args.lr, max_tokens=700, context_tokens=8192, seed=0))
        ws = warm_start(tr, train_tasks + held_tasks, root, epochs=args.sft_epochs, lr=6e-3)
        print(f"warm start (all {len(train_tasks) + len(held_tasks)} tasks): {json.dumps(ws)}", flush=True)
        tr.save(root / "warm")
        results = []
        for s in args.seeds:
            tr = LocalTrainer(root / "warm" / "model", LocalConfig(lr=args.lr, mini_batches=args.mini_batches,
                                                                   max_tokens=700, context_tokens=8192, seed=s))
            tr.load(root / "warm")  # the warm start's optimizer state too, as one continuous run would have it
            sd = root / f"seed-{s}"
            before = {"train": evaluate(tr, train_tasks, args.eval_samples, sd / "eval-before-train"),
                      "heldout": evaluate(tr, held_tasks, args.eval_samples, sd / "eval-before-heldout")}
            hist = train(tr, train_tasks, TrainConfig(updates=args.updates, tasks_per_update=len(train_tasks),
                                                      group_size=args.group_size, episodes=EpisodeConfig.create(TRAIN_HARNESS), seed=s,
                                                      progress=False), sd / "run",
                         on_update=lambda h: print(f"seed {s} update {h['update']}: reward {h['reward_mean']:.3f} "
                                                   f"trainable {h['trainable_rate']:.3f}", flush=True))
            after = {"train": evaluate(tr, train_tasks, args.eval_samples, sd / "eval-after-train"),
                     "heldout": evaluate(tr, held_tasks, args.eval_samples, sd / "eval-after-heldout")}
            print(f"seed {s}: train {before['train']:.3f} -> {after['train']:.3f}; held-out {before['heldout']:.3f} -> "
                  f"{after['heldout']:.3f}", flush=True)
            results.append({"seed": s, "before": before, "after": after, "history": hist})
        plot_seeds(results, Path(args.out))
        from ha_agents.runs.compare import compare

        cis = {}
        for split in ("train", "heldout"):
            cmp = compare(",".join(str(root / f"seed-{r['seed']}" / f"eval-before-{split}") for r in results),
                          ",".join(str(root / f"seed-{r['seed']}" / f"eval-after-{split}") for r in results))
            cis[split] = (cmp.pooled.diff, cmp.pooled.ci_low, cmp.pooled.ci_high, cmp.pooled.n)
    print("\n| seed | " + " | ".join(f"update {h['update']}" for h in results[0]["history"]) + " |")
    print("|---|" + "---|" * len(results[0]["history"]))
    for r in results:
        print(f"| {r['seed']} (reward / trainable) | " + " | ".join(f"{h['reward_mean']:.3f} / {h['trainable_rate']:.2f}"
                                                                   for h in r["history"]) + " |")
    print("\n| split | before per seed | after per seed | mean before -> after (sd of after) | after - before, 95% CI |")
    print("|---|---|---|---|---|")
    for split in ("train", "heldout"):
        b = [r["before"][split] for r in results]
        a = [r["after"][split] for r in results]
        diff, lo, hi, n = cis[split]
        print(f"| {split} | {', '.join(f'{x:.3f}' for x in b)} | {', '.join(f'{x:.3f}' for x in a)} | "
              f"{mean(b):.3f} -> {mean(a):.3f} ({pstdev(a):.3f}) | {100 * diff:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] "
              f"({n} task-seed units) |")
    print(f"\nplot: {args.out}; total {time.monotonic() - t0:.0f}s")


def plot_seeds(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for r in results:
        xs = [h["update"] for h in r["history"]]
        axes[0].plot(xs, [h["reward_mean"] for h in r["history"]], marker="o", label=f"seed {r['seed']}")
        axes[1].plot(xs, [h["trainable_rate"] for h in r["history"]], marker="o", label=f"seed {r['seed']}")
    axes[0].set_title("mean reward per update (training tasks)")
    axes[1].set_title("trainable rate per update")
    for ax in axes:
        ax.set_xlabel("update")
        ax.set_ylim(-0.05, 1.05)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
