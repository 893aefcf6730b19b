"""Learning on this machine, through the real env, sandbox, grader and agent loop.

Set-up (honest about what it is): a tiny Qwen-style model (built here, random init) is first
fine-tuned (``warm_start``) on two demonstrations per task: the oracle's fix and a give-up (the
``null`` policy submits at once). The warm policy therefore picks either at its first tool name,
about half the time each, and at temperature 1 sometimes corrupts a patch it copies: mixed GRPO
groups. Then GRPO (our local trainer, the paper's batch policy and loss, continuing the warm
start's optimizer) runs for ``--updates`` updates. Reported: mean reward and trainable rate per
update, and a held-out evaluation (``--eval-samples`` per task, the same seeds before and after) of
the policy before the first and after the last update.

What it shows: the whole training path (rollouts of the policy being trained, grading, batch
policy, advantages, clipped token-mean loss, in-process weights) raises the reward of the policy
it samples. What it does not show: learning to repair unseen bugs; the tasks are the ones
demonstrated, and the gain is GRPO choosing, among behaviours the warm policy already has, the one
the reward favours (and copying it more faithfully).

    python benchmarks/bench_learning.py [--updates 8] [--group-size 8] [--lr 5e-4] [--out benchmarks/learning.png]
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
from ha_agents.train.driver import plot  # noqa: E402
from ha_agents.train.local import LocalConfig, LocalTrainer  # noqa: E402
from ha_agents.train.models import init_model  # noqa: E402
from ha_agents.train.recipes import TRAIN_HARNESS, warm_start  # noqa: E402
from ha_envs.loaders import load_suite  # noqa: E402
from ha_agents.episode import EpisodeConfig

TASKS = ["mini__ini_interpolation", "mini__invoice_rounding"]


def evaluate(trainer: LocalTrainer, tasks: list, n: int, out: Path) -> float:
    recs = collect(tasks, n, trainer.client(), EpisodeConfig.create(TRAIN_HARNESS, token_mode=trainer.token_mode, seed=12345),
                   out=out, progress_bar=False)
    return sum(r["reward"] for r in recs) / len(recs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--updates", type=int, default=8)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--mini-batches", type=int, default=1)
    ap.add_argument("--sft-epochs", type=int, default=250)
    ap.add_argument("--eval-samples", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tasks", nargs="+", default=TASKS)
    ap.add_argument("--out", default=str(Path(__file__).with_name("learning.png")))
    args = ap.parse_args()
    tasks = [t for t in load_suite("mini") if t.instance_id in args.tasks]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        init_model(root / "model", "qwen", hidden=64, layers=2, heads=4, seed=args.seed)
        tr = LocalTrainer(root / "model", LocalConfig(lr=args.lr, mini_batches=args.mini_batches, max_new_tokens=700,
                                                      context_tokens=8192, seed=args.seed))
        ws = warm_start(tr, tasks, root, epochs=args.sft_epochs, lr=6e-3)
        print(f"warm start: {json.dumps(ws)}", flush=True)
        before = evaluate(tr, tasks, args.eval_samples, root / "eval-before")
        print(f"held-out reward before GRPO: {before:.3f}", flush=True)
        hist = train(tr, tasks, TrainConfig(updates=args.updates, tasks_per_update=len(tasks), group_size=args.group_size,
                                            harness=TRAIN_HARNESS, seed=args.seed, progress=False), root / "run",
                     on_update=lambda h: print(f"update {h['update']}: reward {h['reward_mean']:.3f} trainable "
                                               f"{h['trainable_rate']:.3f} loss {h.get('loss', float('nan')):.4f} "
                                               f"mismatch {h.get('logprob_mismatch_max', float('nan')):.1e}", flush=True))
        after = evaluate(tr, tasks, args.eval_samples, root / "eval-after")
        plot(hist, Path(args.out))
    print("\n| update | mean reward | trainable rate | mixed groups | loss | grad norm | max logprob mismatch |")
    print("|---|---|---|---|---|---|---|")
    for h in hist:
        print(f"| {h['update']} | {h['reward_mean']:.3f} | {h['trainable_rate']:.3f} | {h['mixed_groups']} | "
              f"{h.get('loss', float('nan')):.4f} | {h.get('grad_norm', float('nan')):.3f} | "
              f"{h.get('logprob_mismatch_max', float('nan')):.1e} |")
    print(f"\nheld-out reward ({args.eval_samples} samples per task, same seeds): before {before:.3f}, after {after:.3f}")
    print(f"plot: {args.out}; total {time.monotonic() - t0:.0f}s")


if __name__ == "__main__":
    main()
