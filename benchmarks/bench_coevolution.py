"""The paper's ablation at CPU scale, end to end through the CLI: GRPO with the harness frozen vs
evolution with the policy frozen vs co-evolution, same task pool, several seeds, evaluated on tasks
no arm trained or evolved on, paired bootstrap CIs with ``ha compare``.

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

Every step is a printed ``ha`` command, skipped when its output exists (a rerun resumes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from statistics import mean, pstdev

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TRAIN = ["mini__ini_interpolation", "mini__invoice_rounding", "mini__js_template", "mini__url_router",
         "mini__semver_ranges"]
HELDOUT = ["mini__rust_intervals", "mini__jsonpath_lite", "mini__recurring_events"]
ARMS = ("grpo", "evolution", "coevolution")
MODEL_FLAGS = ["--max-tokens", "700", "--context-tokens", "8192"]


def ha(*args: str, log: Path | None = None) -> None:
    cmd = [sys.executable, "-m", "ha_cli.main", *args]
    print("$ ha " + " ".join(args), flush=True)
    t0 = time.monotonic()
    with (open(log, "w") if log else open("/dev/null", "w")) as fh:
        proc = subprocess.run(cmd, cwd=ROOT, stdout=fh if log else None, stderr=subprocess.STDOUT if log else None)
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}); see {log}")
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


def run(args: argparse.Namespace) -> dict:
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    pool = args.train + args.heldout
    warm = out / "warm"
    model = warm / "checkpoint" / "model"
    train_flags = ["--instances", *args.train, "--tasks-per-update", str(len(args.train)),
                   "--group-size", str(args.group_size), "--updates", str(args.updates), "--lr", str(args.lr),
                   "--temperature", "1", "--workers", str(args.workers), "--no-progress", *MODEL_FLAGS,
                   *(["--optimizer-from", str(warm / "checkpoint")] if args.optimizer_from_warm else [])]
    evolve_flags = ["--evolve", "--evolve-every", str(args.evolve_every), "--evolve-rounds", str(args.evolve_rounds),
                    "--evolve-group-size", str(args.evolve_group_size), "--proposer", "rule", "--level", str(args.level)]
    steps: list[tuple[Path, list[str], Path]] = [
        (model, ["train", "--backend", "local", "--model", str(out / "init-model"), "--init-model", "qwen",
                 "--harness", "train-h0", "--warm-start-harness", str(demo_harness(out)),
                 "--warm-start", str(args.warm_epochs), "--warm-start-lr", "6e-3", "--updates", "0",
                 "--instances", *pool, "--no-progress", *MODEL_FLAGS, "--out", str(warm)], out / "warm.log")]
    for s in args.seeds:
        sd = out / f"seed-{s}"
        eval_flags = ["--instances", *args.heldout, "--runs", str(args.eval_runs), "--temperature", "1",
                      "--seed", str(1000 + s), "--workers", str(args.workers), "--no-progress", *MODEL_FLAGS]
        steps.append((sd / "eval-start" / "summary.json",
                      ["eval", "--model", f"hf:{model}", "--tokenizer", str(model), "--harness", "train-h0", *eval_flags,
                       "--out", str(sd / "eval-start")], sd / "eval-start.log"))
        train_eval = ["--instances", *args.train] + eval_flags[1 + len(args.heldout):]
        if args.eval_train:
            steps.append((sd / "eval-start-train" / "summary.json",
                          ["eval", "--model", f"hf:{model}", "--tokenizer", str(model), "--harness", "train-h0",
                           *train_eval, "--out", str(sd / "eval-start-train")], sd / "eval-start-train.log"))
        for arm in ARMS:
            extra = [] if arm == "grpo" else evolve_flags + (["--freeze-policy"] if arm == "evolution" else [])
            ck = sd / arm / "checkpoint"
            steps.append((sd / arm / "training.png",
                          ["train", "--backend", "local", "--model", str(model), "--harness", "train-h0", *train_flags,
                           "--seed", str(s), *extra, "--out", str(sd / arm)], sd / f"{arm}.log"))
            steps.append((sd / f"eval-{arm}" / "summary.json",
                          ["eval", "--model", f"hf:{ck / 'model'}", "--tokenizer", str(ck / "model"),
                           "--harness", str(ck / "harness.yaml"), *eval_flags, "--out", str(sd / f"eval-{arm}")],
                          sd / f"eval-{arm}.log"))
            if args.eval_train:
                steps.append((sd / f"eval-{arm}-train" / "summary.json",
                              ["eval", "--model", f"hf:{ck / 'model'}", "--tokenizer", str(ck / "model"),
                               "--harness", str(ck / "harness.yaml"), *train_eval, "--out", str(sd / f"eval-{arm}-train")],
                              sd / f"eval-{arm}-train.log"))
    for done, cmd, log in steps:
        if args.plan:
            print("$ ha " + " ".join(cmd))
            continue
        if done.exists():
            print(f"# done: {done}")
            continue
        log.parent.mkdir(parents=True, exist_ok=True)
        ha(*cmd, log=log)
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
