"""GRPO of a user's harness through the gateway: `ha train --agent mini-swe-agent` on one bundled task
until an update has mixed groups (too slow for the test suite: every episode starts mini-swe-agent,
~6 s of CPU importing litellm, and the warm start's SFT runs over its ~1,700-token prompt).

Two `ha` commands, as a user runs them:

1. warm start: a tiny Qwen-style model (`--init-model qwen`) fine-tuned on two demonstrations recorded
   through mini-swe-agent behind the gateway (the gold fix and a give-up), `--updates 0`;
2. GRPO from it: `--updates U --group-size G --temperature T`, every episode mini-swe-agent behind a
   gateway in front of the weights being trained.

Then, per update: the episodes' outcomes (exact fix, give-up, anything else), the mixed groups, the
batch's samples, loss and gradient norm, and the trainer's rollout/recomputed logprob mismatch; and
for the last update's kept episodes, their rollout logprobs against the warm-start weights (they
differ when the update before changed the weights and the gateway sampled the new ones).

    .venv/bin/python benchmarks/bench_gateway_train.py --out /tmp/bench-gwtrain [--epochs 110]
        [--updates 2] [--group-size 6] [--temperature 1.0] [--msa-venv .venv-msa]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = "mini__ini_interpolation"


def ha(*args: str) -> float:
    """Run one `ha` command (its output to this terminal); its wall time."""
    t0 = time.monotonic()
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    subprocess.run([sys.executable, "-m", "ha_cli.main", *args], cwd=ROOT, env=env, check=True)
    return time.monotonic() - t0


def outcome(r: dict) -> str:
    if r.get("mask_sample"):
        return "masked"
    if r.get("resolved"):
        return "fix"
    if r["termination"] == "submitted" and not r.get("patch"):
        return "give-up"
    return f"{r['termination']}{' (token_error)' if r.get('token_error') else ''}"


def mismatch_vs(model_dir: Path, records: list[dict], temperature: float) -> float:
    """The mean |rollout - recomputed| logprob of the records' generated tokens under ``model_dir``."""
    import torch

    from ha_agents.train.base import Sample
    from ha_agents.train.local import LocalConfig, LocalTrainer

    tr = LocalTrainer(model_dir, LocalConfig(temperature=temperature, context_tokens=8192))
    diffs = []
    for r in records:
        s = Sample(r["token_ids"], r["loss_mask"], r["logprobs"], float(r["reward"]), 0.0, r["instance_id"])
        with torch.no_grad():
            lp = tr._micro(tr.model, [s])[0][0]
        diffs += [abs(float(x) - old) for x, m, old in zip(lp, r["loss_mask"][1:], r["logprobs"][1:])
                  if m and old is not None]
    return sum(diffs) / max(1, len(diffs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=110)
    ap.add_argument("--updates", type=int, default=2)
    ap.add_argument("--group-size", type=int, default=6)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--msa-venv", default=os.environ.get("HA_MSA_VENV") or str(ROOT / ".venv-msa"))
    a = ap.parse_args()
    out = Path(a.out)
    common = ["--suite", "mini", "--instances", TASK, "--agent", "mini-swe-agent", "--msa-venv", a.msa_venv,
              "--max-tokens", "700", "--context-tokens", "8192", "--step-limit", "4", "--temperature",
              str(a.temperature), "--tasks-per-update", "1", "--workers", "2", "--no-progress", "--seed", "0"]
    warm = out / "warm"
    t_warm = ha("train", *common, "--model", str(out / "init"), "--init-model", "qwen", "--warm-start", str(a.epochs),
                "--warm-start-lr", "6e-3", "--updates", "0", "--out", str(warm))
    run = out / "run"
    t_run = ha("train", *common, "--model", str(warm / "checkpoint" / "model"), "--optimizer-from",
               str(warm / "checkpoint"), "--lr", str(a.lr), "--updates", str(a.updates), "--group-size",
               str(a.group_size), "--out", str(run))
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    print(f"\nwarm start {t_warm:.0f} s, GRPO {t_run:.0f} s ({a.updates} updates x {a.group_size} episodes)\n")
    print("| update | outcomes | mixed groups | samples | dropped | loss | grad norm | mismatch (trainer) |")
    print("|---|---|---|---|---|---|---|---|")
    last: list[dict] = []
    for row in rows:
        recs = [json.loads(x) for x in (run / "rollouts" / f"update-{row['update']:04d}" / "trajectories.jsonl")
                .read_text().splitlines()]
        outcomes: dict[str, int] = {}
        for r in recs:
            outcomes[outcome(r)] = outcomes.get(outcome(r), 0) + 1
        print(f"| {row['update']} | {', '.join(f'{k} {v}' for k, v in sorted(outcomes.items()))} | "
              f"{row['mixed_groups']} | {row['batch_samples']} | {row.get('dropped')} | {row.get('loss', float('nan')):.4f} | "
              f"{row.get('grad_norm', float('nan')):.4f} | {row.get('logprob_mismatch_mean', float('nan')):.2e} |")
        last = [r for r in recs if not r.get("token_error") and not r.get("mask_sample") and any(r["loss_mask"])]
    if last:
        print(f"\nupdate {rows[-1]['update']}'s episodes: rollout logprobs vs the warm-start weights: mean |diff| "
              f"{mismatch_vs(warm / 'checkpoint' / 'model', last, a.temperature):.2e} over {len(last)} episodes")
        if rows[-1]["batch_samples"] == 0:  # the last update made no step: the checkpoint holds the weights that sampled it
            print(f"... vs the final checkpoint (the weights before update {rows[-1]['update']}, which made no step): "
                  f"{mismatch_vs(run / 'checkpoint' / 'model', last, a.temperature):.2e}")


if __name__ == "__main__":
    main()
