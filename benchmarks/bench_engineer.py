"""Harness-R1 on CPU, end to end through the CLI: a tiny harness engineer trained with GRPO to patch
the harness of a frozen fixture target, rewarded by re-running it.

Set-up, per seed (every step is an `ha` command a user can run; the script prints them):

1. the target ``hasty`` (``ha_agents.llm.fixture_policies``: careful and successful on a seeded 0.2
   coin, else it submits at once; only a pre-action veto of that submit, or a forced test run,
   turns it careful; reminders are ignored) is run once on the tasks (``ha eval``); its failures on
   the RL partition form the batches (``ha engineer batches``), the rest of the tasks are held out;
2. the warm start: the fixture menu (``ha engineer menu``: a helpful veto, the same advice as a
   pre-decision reminder, a malformed patch, a no-op; ``--teacher-without helpful``: a teacher
   without the answer) is the teacher; ``ha engineer sft-data`` scores every drawn candidate and
   keeps the verified ones (``--sft-keep all``: the whole mixture, as the recorded runs, so the
   engineer starts writing each kind about equally often) and ``ha engineer sft --init-model qwen``
   fine-tunes a tiny engineer on them;
3. GRPO (``ha engineer train``): K patches per batch and update, reward = mean(patched - base)
   over the batch's tasks, m runs per task with common seeds;
4. evaluation (``ha engineer eval``): the trained engineer's and the warm start's patch per batch
   (the training temperature, 0.5: a tiny model copies a patch faithfully there; the same seeds), on the batch and on the held-out tasks, with paired CIs;
5. comparisons (``ha engineer eval``): fixed editors with no training, the rule proposer
   (``--engineer proposer:rule``, over all its rounds: 5) and the teacher (``menu:``, drawing from its four patches); no
   patch is 0 by definition and the warm start is SFT only; and the lifecycle ablation (``ha engineer
   ablate``) of a patch touching two points (the veto at pre-action and the reminder at pre-decision);
6. unseen targets: the same engineers on ``hasty`` with other base harnesses (``--unseen-harnesses``,
   default openhands and h1): the target is run on each (``ha eval``), its failures batched with the
   same partition, and both engineers evaluated there (``ha engineer eval --harness H``).

Reported: per update, the reward and the helpful / wrong-point (neutral) / invalid / no-op rates;
target rollouts split into base and patched, cache hits and rejected patches (which must run
nothing); wall time split into the engineer's generation, the target's runs and the update.

    python benchmarks/bench_engineer.py [--seeds 1 2 3] [--updates 12] [--k 8] [--runs 4] [--lr 3e-4]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ha_cli.main import main as ha  # noqa: E402

TASKS = ["mini__invoice_rounding", "mini__semver_ranges", "mini__ttl_cache", "mini__ini_interpolation",
         "mini__table_render", "mini__url_router"]


def run(argv: list[str]) -> None:
    print("$ ha " + " ".join(shlex.quote(a) for a in argv), flush=True)
    rc = ha(argv)
    if rc != 0:
        raise SystemExit(f"`ha {argv[0]} {argv[1] if len(argv) > 1 else ''}` exited {rc}")


def one_seed(seed: int, args: argparse.Namespace, root: Path) -> dict:
    d = root / f"seed-{seed}"
    src = ["--suite", "mini", "--instances", *args.tasks]
    target = ["--model", "hasty", "--harness", "h0", "--runs", str(args.runs), "--seed", str(seed), "--workers", "2"]
    t0 = time.monotonic()
    done = lambda p: (d / p).exists() and args.resume  # noqa: E731 - a rerun keeps what is on disk
    if not done("target"):
        run(["eval", *src, "--model", "hasty", "--harness", "h0", "--seed", str(seed), "--no-progress",
             "--out", str(d / "target")])
    if not done("batches.json"):
        run(["engineer", "batches", *src, "--run", str(d / "target"), "--n", "2", "--seed", str(seed),
             "--partition", "rl", "--fractions", "0", f"{args.rl_share:.4f}", "0", f"{1 - args.rl_share:.4f}",
             "--partition-seed", str(seed), "--out", str(d / "batches.json")])
    if not json.loads((d / "batches.json").read_text())["batches"]:
        raise SystemExit(f"seed {seed}: the target failed fewer than 2 RL tasks; no batch")
    run(["engineer", "menu", "--out", str(d / "menu.yaml")]
        + (["--without", *args.teacher_without] if args.teacher_without else []))
    if not done("e/sft.jsonl"):
        run(["engineer", "sft-data", *src, "--batches", str(d / "batches.json"), "--teacher", f"menu:{d / 'menu.yaml'}",
             "--samples", "16", "--keep", args.sft_keep, *target, "--engineer-seed", str(seed), "--out", str(d / "e")])
    if not done("sft/model"):
        run(["engineer", "sft", "--data", str(d / "e" / "sft.jsonl"), "--engineer", str(d / "engineer0"),
             "--init-model", "qwen", "--epochs", str(args.sft_epochs), "--lr", "3e-3", "--engineer-seed", str(seed),
             "--max-tokens", "160", "--out", str(d / "sft")])
    teacher = [json.loads(x) for x in (d / "e" / "teacher-scores.jsonl").read_text().splitlines()]
    setup_s = time.monotonic() - t0
    run(["engineer", "train", *src, "--batches", str(d / "batches.json"), "--engineer", str(d / "sft" / "model"),
         "--updates", str(args.updates), "--batches-per-update", "4", "--k", str(args.k), "--lr", str(args.lr),
         "--max-tokens", "160", "--engineer-temperature", str(args.temperature), *target, "--engineer-seed", str(seed),
         "--out", str(d / "e")] + (["--resume"] if args.resume else []))
    metrics = [json.loads(x) for x in (d / "e" / "engineer" / "metrics.jsonl").read_text().splitlines()]
    evals = {}
    for name, model in (("warm", d / "sft" / "model"), ("trained", d / "e" / "engineer" / "checkpoint" / "model")):
        run(["engineer", "eval", *src, "--batches", str(d / "batches.json"), "--engineer", f"hf:{model}",
             "--engineer-temperature", str(args.temperature), "--heldout", "test", "--name", name, *target,
             "--samples", str(args.eval_samples),
             "--engineer-seed", str(seed + 1000), "--out", str(d / "e")])
        evals[name] = json.loads((d / "e" / f"eval-{name}.json").read_text())
    # the comparison rows (item 6): fixed editors, no training: the rule proposer's candidates for each
    # batch over all its rounds (5, the schedule's) written as patches, and the teacher (the fixture
    # menu) drawing its patches at random
    for name, engineer, samples in (("rule", "proposer:rule", 5), ("teacher", f"menu:{d / 'menu.yaml'}", args.eval_samples)):
        run(["engineer", "eval", *src, "--batches", str(d / "batches.json"), "--engineer", engineer,
             "--heldout", "test", "--name", name, *target, "--samples", str(samples),
             "--engineer-seed", str(seed + 1000), "--out", str(d / "e")])
        evals[name] = json.loads((d / "e" / f"eval-{name}.json").read_text())
    # the lifecycle ablation on a patch that touches two points: the teacher's helpful veto (pre-action)
    # and its reminder (pre-decision) together; each point's operations dropped in turn
    import yaml

    menu = {m["kind"]: m["reply"] for m in yaml.safe_load((d / "menu.yaml").read_text())}
    ops = [op for k in ("helpful", "wrong_point") for op in yaml.safe_load(
        menu[k].split("<patch>", 1)[1].split("</patch>", 1)[0])["ops"]]
    (d / "two-point.patch").write_text("<patch>\n" + yaml.safe_dump({"ops": ops}, sort_keys=False) + "</patch>\n")
    run(["engineer", "ablate", *src, "--batches", str(d / "batches.json"), "--patch", str(d / "two-point.patch"),
         *target, "--out", str(d / "e")])
    ablation = json.loads((d / "e" / "ablation.json").read_text())
    unseen = {}
    for h in args.unseen_harnesses:  # the same engineers, targets they never saw: hasty on another base harness
        if not done(f"target-{h}"):
            run(["eval", *src, "--model", "hasty", "--harness", h, "--seed", str(seed), "--no-progress",
                 "--out", str(d / f"target-{h}")])
        run(["engineer", "batches", *src, "--run", str(d / f"target-{h}"), "--n", "2", "--seed", str(seed),
             "--partition", "rl", "--fractions", "0", f"{args.rl_share:.4f}", "0", f"{1 - args.rl_share:.4f}",
             "--partition-seed", str(seed), "--out", str(d / f"batches-{h}.json")])
        if not json.loads((d / f"batches-{h}.json").read_text())["batches"]:
            print(f"seed {seed}: hasty on {h} failed fewer than 2 RL tasks; no unseen-target batch", flush=True)
            continue
        for name, model in (("warm", d / "sft" / "model"), ("trained", d / "e" / "engineer" / "checkpoint" / "model")):
            run(["engineer", "eval", *src, "--batches", str(d / f"batches-{h}.json"), "--engineer", f"hf:{model}",
                 "--engineer-temperature", str(args.temperature), "--heldout", "test", "--name", f"{name}-{h}",
                 "--model", "hasty", "--harness", h, "--runs", str(args.runs), "--seed", str(seed), "--workers", "2",
                 "--samples", str(args.eval_samples), "--engineer-seed", str(seed + 1000), "--out", str(d / "e")])
            unseen[f"{name}@{h}"] = json.loads((d / "e" / f"eval-{name}-{h}.json").read_text())
    return {"seed": seed, "unseen": unseen, "setup_s": round(setup_s, 1), "metrics": metrics, "eval": evals,
            "ablation": ablation,
            "teacher_rollouts": {"base": sum(t["info"].get("base_rollouts", 0) for t in teacher),
                                 "patched": sum(t["info"].get("patched_rollouts", 0) for t in teacher),
                                 "scored": len(teacher),
                                 "rejected_with_rollouts": sum(1 for t in teacher if t["kind"] in ("invalid", "no_op")
                                                               and t["info"].get("rollouts", 0))}}


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for key, ax, title in (("reward_mean", axes[0], "reward (patched - base)"), ("helpful_rate", axes[1], "rates")):
        for i, r in enumerate(results):
            xs = [m["update"] for m in r["metrics"]]
            ax.plot(xs, [m[key] for m in r["metrics"]], marker="o", alpha=0.8, color=f"C{i}",
                    label=f"seed {r['seed']} {key.split('_')[0]}")
            if key == "helpful_rate":
                ax.plot(xs, [m["invalid_rate"] + m["no_op_rate"] for m in r["metrics"]], ls="--", alpha=0.6,
                        color=f"C{i}", label=f"seed {r['seed']} invalid+no-op")
        ax.set_title(title)
        ax.set_xlabel("update")
        ax.grid(alpha=0.3)
    axes[1].set_ylim(-0.02, 1.02)
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def eval_line(e: dict) -> str:
    """One evaluation's rewards with their CIs, held-out pass@1 and the helpful rate."""
    fmt = lambda ci: "[" + ", ".join(f"{x:+.3f}" for x in ci) + "]" if ci else "[]"  # noqa: E731
    held = e["heldout_delta"] if e["heldout_delta"] is not None else float("nan")
    return (f"batches {e['batch_delta']:+.3f} {fmt(e['batch_delta_ci'])}  held-out {held:+.3f} "
            f"{fmt(e['heldout_delta_ci'])}  pass@1 held-out {e.get('heldout_pass_base', float('nan')):.3f} -> "
            f"{e.get('heldout_pass_patched', float('nan')):.3f}  helpful {e['helpful_rate']:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--updates", type=int, default=12)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--runs", type=int, default=4, help="target episodes per task on each side (m)")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--eval-samples", type=int, default=8, help="patches per batch in the evaluation")
    ap.add_argument("--sft-epochs", type=int, default=150)
    ap.add_argument("--sft-keep", choices=["verified", "all"], default="verified",
                    help="the warm start's demonstrations (`ha engineer sft-data --keep`; recorded runs before "
                         "2026-12-07 used all: a mixture)")
    ap.add_argument("--teacher-without", nargs="*", default=[], metavar="KIND",
                    help="menu kinds the teacher lacks (`ha engineer menu --without`; helpful: no answer in its menu)")
    ap.add_argument("--temperature", type=float, default=0.5, help="the engineer's sampling temperature")
    ap.add_argument("--tasks", nargs="+", default=TASKS)
    ap.add_argument("--rl-share", type=float, default=0.67)
    ap.add_argument("--unseen-harnesses", nargs="*", default=["openhands", "h1"],
                    help="evaluate the engineers on the target with these base harnesses too (unseen targets)")
    ap.add_argument("--root", default="runs/bench-engineer")
    ap.add_argument("--resume", action="store_true", help="keep the steps already on disk under --root")
    ap.add_argument("--plot", default=str(Path(__file__).with_name("engineer.png")))
    args = ap.parse_args()
    root = Path(args.root)
    results = [one_seed(s, args, root) for s in args.seeds]
    (root / "results.json").write_text(json.dumps(results, indent=1))
    plot(results, Path(args.plot))
    print("\nseed  reward first->last  helpful first->last  invalid+no-op first->last  target rollouts "
          "(base/patched)  cache hits  rejected-with-rollouts  time gen/target/update s")
    for r in results:
        m = r["metrics"]
        f, last = m[0], m[-1]
        print(f"{r['seed']:>4}  {f['reward_mean']:+.3f} -> {last['reward_mean']:+.3f}   "
              f"{f['helpful_rate']:.2f} -> {last['helpful_rate']:.2f}   "
              f"{f['invalid_rate'] + f['no_op_rate']:.2f} -> {last['invalid_rate'] + last['no_op_rate']:.2f}   "
              f"{sum(x['base_rollouts'] for x in m)}/{sum(x['patched_rollouts'] for x in m)}   "
              f"{sum(x['cache_hits'] for x in m)}   {sum(x['invalid_with_rollouts'] for x in m)}   "
              f"{sum(x['engineer_s'] for x in m):.0f}/{sum(x['scoring_s'] for x in m):.0f}/{sum(x['update_s'] for x in m):.0f}")
    print("(training's target rollouts are 0 where the warm-start scoring already ran every harness the engineer "
          "wrote: the cache is keyed by the applied harness)")
    for r in results:
        t = r["teacher_rollouts"]
        print(f"  seed {r['seed']} warm-start scoring: {t['scored']} patches, target rollouts base {t['base']} / "
              f"patched {t['patched']}, rejected with rollouts {t['rejected_with_rollouts']}")
    print("\nevaluation (the training temperature, unseen engineer seeds): reward on the batches / on held-out tasks "
          "(95% CI over the pooled per-task differences)")
    for r in results:
        for name, e in r["eval"].items():
            print(f"  seed {r['seed']} {name:<8} {eval_line(e)}  "
                  f"overfit gap {e['overfit_gap'] if e['overfit_gap'] is not None else float('nan'):+.3f}")
    from ha_evolve.harness_r1.harness_edit import paired_ci

    if args.unseen_harnesses:
        print("\nunseen targets (hasty on another base harness; the engineers were trained against h0): reward on "
              "that target's batches / held-out tasks")
        for r in results:
            for name, e in r["unseen"].items():
                print(f"  seed {r['seed']} {name:<18} {eval_line(e)}  valid {e['valid_rate']:.2f}")
        for h in args.unseen_harnesses:
            pairs = [(r["unseen"][f"trained@{h}"], r["unseen"][f"warm@{h}"]) for r in results
                     if f"trained@{h}" in r["unseen"] and f"warm@{h}" in r["unseen"]]
            for key in ("batch_delta", "heldout_delta"):
                d = [t[key] - w[key] for t, w in pairs if t[key] is not None and w[key] is not None]
                if d:
                    lo, hi = paired_ci(d)
                    print(f"unseen {h}: trained - warm, {key}: {mean(d):+.3f} [{lo:+.3f}, {hi:+.3f}] (n={len(d)} seeds)")
    print("\nlifecycle ablation of a two-point patch (the veto at pre-action + the reminder at pre-decision): "
          "reward on the batches")
    for r in results:
        print(f"  seed {r['seed']}  " + "  ".join(f"{k} {v['delta']:+.3f} [{v['delta_ci'][0]:+.3f}, {v['delta_ci'][1]:+.3f}]"
                                                for k, v in r["ablation"].items()))
    for key in ("batch_delta", "heldout_delta"):
        for other in ("rule", "teacher"):
            d = [r["eval"]["trained"][key] - r["eval"][other][key] for r in results
                 if r["eval"][other][key] is not None]
            if d:
                lo, hi = paired_ci(d)
                print(f"trained - {other}, {key}: {mean(d):+.3f} [{lo:+.3f}, {hi:+.3f}] (n={len(d)} seeds); "
                      f"{other} {mean(r['eval'][other][key] or 0.0 for r in results):+.3f}")
        d = [r["eval"]["trained"][key] - r["eval"]["warm"][key] for r in results]
        lo, hi = paired_ci(d)
        print(f"trained - warm, {key}: {mean(d):+.3f} [{lo:+.3f}, {hi:+.3f}] (seeds as replicates, n={len(d)}); "
              f"warm {mean(r['eval']['warm'][key] for r in results):+.3f}, "
              f"trained {mean(r['eval']['trained'][key] for r in results):+.3f}")


if __name__ == "__main__":
    main()
