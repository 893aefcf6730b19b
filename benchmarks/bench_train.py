"""Training cost on the bundled suite with a small local model.

1. Per-update wall time split into rollout (of which grading) and update, from a real ``train()``
   run (tiny Qwen-style model, ``train-edit`` harness, warm-started on oracle demonstrations so the
   groups are mixed and the update has work to do).
2. Tokens/s of the update step, ours (group micro-batches, LM head only at mask-1
   positions) against the naive loop (one sample per forward and backward, full-vocabulary
   log-softmax over every position), side by side on the same samples from the same weights.
   Ours also runs a GRPO group's shared prompt once (prefix sharing). Both compute the same update
   (``tests/ha_agents/test_train.py`` checks they agree).

3. ``--sizes``: update-step time and peak memory (RSS) of the local trainer in fp32 full, bf16 full
   and bf16 + LoRA on SmolLM2-135M-Instruct, side by side (``bench_train_size.py`` says how).

    python benchmarks/bench_train.py [--hidden 64] [--layers 2] [--updates 2] [--repeats 3]
    OMP_NUM_THREADS=1 python benchmarks/bench_train.py --sizes [--model DIR] [--repeats 2]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ha_agents.episode import EpisodeConfig  # noqa: E402
from ha_agents.train import BatchPolicy, TrainConfig, prepare_batch, train  # noqa: E402
from ha_agents.train.local import LocalConfig, LocalTrainer  # noqa: E402
from ha_agents.train.models import init_model  # noqa: E402
from ha_agents.train.recipes import TRAIN_HARNESS, warm_start  # noqa: E402
from ha_envs.loaders import load_suite  # noqa: E402

TASKS = ["mini__ini_interpolation", "mini__invoice_rounding"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--updates", type=int, default=2)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", action="store_true", help="only part 3: fp32 / bf16 / bf16 + LoRA on SmolLM2-135M")
    ap.add_argument("--model", default=None, help="--sizes: a SmolLM2 model directory (default: convert the GGUF)")
    args = ap.parse_args()
    if args.sizes:
        from benchmarks.bench_train_size import report, run

        report(run(args.model, args.repeats))
        return
    import torch

    torch.set_num_threads(2)
    tasks = [t for t in load_suite("mini") if t.instance_id in TASKS]
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        init_model(root / "model", "qwen", hidden=args.hidden, layers=args.layers, heads=4, seed=0)
        cfg = LocalConfig(lr=1e-3, max_tokens=700, context_tokens=8192, seed=0)
        tr = LocalTrainer(root / "model", cfg)
        t0 = time.monotonic()
        ws = warm_start(tr, tasks, root, epochs=150, lr=6e-3)
        print(f"warm start: {ws} ({time.monotonic() - t0:.0f}s)")
        tr.save(root / "warm")
        hist = train(tr, tasks, TrainConfig(updates=args.updates, tasks_per_update=len(tasks), group_size=args.group_size,
                                            episodes=EpisodeConfig.create(TRAIN_HARNESS), progress=False), root / "run")
        print("\n## per-update split")
        print("| update | rollouts | rollout s (wall) | grading s (summed over episodes) | update s | trainable tokens | samples |")
        print("|---|---|---|---|---|---|---|")
        for h in hist:
            print(f"| {h['update']} | {h['rollouts']} | {h['rollout_s']:.1f} | {h['grading_s']:.1f} | {h['update_s']:.2f} "
                  f"| {int(h.get('tokens', 0))} | {h['batch_samples']} |")
        import json

        records = [json.loads(l) for u in range(1, args.updates + 1)
                   for l in (root / "run" / "rollouts" / f"update-{u:04d}" / "trajectories.jsonl").read_text().splitlines()]
        samples = prepare_batch(records, BatchPolicy(keep_zero_advantage=True)).samples
        seq_tokens = sum(len(s.token_ids) for s in samples)
        print(f"\n## update step: {len(samples)} samples, {seq_tokens} sequence tokens, "
              f"{sum(s.n_trainable for s in samples)} trainable")
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.repeats):
            for pack in (False, True):  # side by side, alternating
                t = LocalTrainer(root / "warm" / "model", LocalConfig(lr=1e-3, pack=pack, seed=0))
                t1 = time.monotonic()
                t.update(samples)
                times[pack].append(time.monotonic() - t1)
        naive, ours = statistics.median(times[False]), statistics.median(times[True])
        print("| update step | median s | sequence tokens/s |\n|---|---|---|")
        print(f"| naive (per sample, full vocab) | {naive:.2f} | {seq_tokens / naive:,.0f} |")
        print(f"| ours (group micro-batches, shared prompt, mask-1 head) | {ours:.2f} | {seq_tokens / ours:,.0f} |")
        print(f"\nspeed-up: {naive / ours:.2f}x  (model hidden {args.hidden}, {args.layers} layers, torch "
              f"{torch.__version__}, {platform.processor() or platform.machine()}, 2 threads)")


if __name__ == "__main__":
    main()
