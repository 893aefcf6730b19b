"""The evolution gate end to end: real ``ha evolve run`` epochs (the library's ``Evolution`` with
the rule proposer, real episodes in real sandboxes, real grading), repeated over seeds, under two
fixture policies (``ha_agents/llm/fixture_policies.py``):

- the null, ``coin_prompt:P``: solves a task on a coin of probability P whatever the harness, the
  coin drawn from the sampling seed and the prompt, so a candidate that changes the prompt (adds a
  tool) draws independently on common seeds: the harness has no effect and every acceptance is
  a false one;
- the planted effect, ``tool_coin:P0,P1``: the same coin with probability P0 where the harness lacks
  ``run_tests`` and P1 where it offers it; the rule proposer's first candidate on ``h0`` adds it.

Per policy: epochs that accepted at least one candidate (false acceptance per epoch under the
null, with an exact Clopper-Pearson 95% interval; power under the planted effect), comparisons and
acceptances, the planted candidate's acceptances, how many paired rollouts came out differently on
the two sides (the null's draws do differ), rollouts run and wall time; and the gate's plan (each
test's level, the tasks it needs, the smallest pass-rate rise it detects with 80% power).

Each epoch runs in its own directory under ``--out`` (``<label>/seed<k>``), so an interrupted run
resumes where it stopped (finished epochs are read back from their logs).

    python benchmarks/bench_gate_e2e.py [--seeds 20] [--planted-seeds N] [--rounds 5] [--group-size 2]
        [--instances ID ...] [--alpha 0.05] [--null coin_prompt:0.5] [--planted tool_coin:0.25,0.75]
        [--workers 2] [--out runs/bench_gate_e2e] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ha_envs.harness import load_spec  # noqa: E402
from ha_envs.loaders import load_suite  # noqa: E402
from ha_evolve.proposers import make_proposer  # noqa: E402
from ha_evolve.schedule import EvolveConfig, Evolution  # noqa: E402

FAST_TASKS = ("mini__order_workflow", "mini__semver_ranges", "mini__ttl_cache", "mini__table_render",
              "mini__jsonpath_lite", "mini__js_template", "mini__url_router", "mini__recurring_events")
"""The bundled suite's tasks whose grading is quickest here (go and rust build for seconds more)."""


@dataclass(frozen=True)
class Settings:
    rounds: int = 5
    group_size: int = 2
    alpha: float = 0.05
    instances: tuple[str, ...] = FAST_TASKS
    workers: int = 2

    def config(self, seed: int) -> EvolveConfig:
        return EvolveConfig(rounds=self.rounds, group_size=self.group_size, alpha=self.alpha, workers=self.workers,
                            seed=seed, bootstrap_samples=0)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact two-sided binomial interval for k successes in n trials (bisection on the CDF)."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    tail = (1 - level) / 2

    def cdf(p: float, upto: int) -> float:  # P(X <= upto)
        return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(upto + 1))

    def solve(f: Any) -> float:  # f rises in p from below 0 to above 0
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        return (lo + hi) / 2

    lower = 0.0 if k == 0 else solve(lambda p: (1 - cdf(p, k - 1)) - tail)  # P(X >= k) = tail
    upper = 1.0 if k == n else solve(lambda p: tail - cdf(p, k))  # P(X <= k) = tail
    return lower, upper


def _outcomes(path: Path) -> dict[tuple[str, Any], bool]:
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            out[(r["instance_id"], r.get("seed"))] = bool(r.get("resolved"))
    return out


def _comparison(out: Path, p: dict[str, Any], epoch: int) -> dict[str, Any]:
    """One logged comparison: its verdict, the planted tool's arrival and the paired outcomes that differ."""
    tag = f"e{epoch}r{p['round']}"
    cur = _outcomes(out / "rollouts" / p["parent_hash"] / tag / "trajectories.jsonl")
    cand = _outcomes(out / "rollouts" / p["candidate_hash"] / tag / "trajectories.jsonl")
    parent, spec = (load_spec(out / "specs" / f"{h}.yaml") for h in (p["parent_hash"], p["candidate_hash"]))
    return {"round": p["round"], "accepted": bool(p["accepted"]), "reason": p["decision_reason"],
            "point_accepted": bool(p["gate"]["accept"]),  # the paper's rule on the very same comparison (logged)
            "adds_run_tests": "run_tests" in spec.tool_names and "run_tests" not in parent.tool_names,
            "tools_changed": spec.tool_names != parent.tool_names,
            "d_pass": p["paired"]["d_pass"], "p_pass": p["paired"]["p_pass"],
            "pairs": len(cur.keys() & cand.keys()), "pairs_differing": sum(cur[k] != cand[k] for k in cur.keys() & cand.keys())}


def run_epoch(model: str, seed: int, settings: Settings, out: Path) -> dict[str, Any]:
    """One real epoch of ``ha evolve run`` (rule proposer, from ``h0``) in ``out``; what it accepted."""
    suite = {t.instance_id: t for t in load_suite("mini")}
    unknown = [i for i in settings.instances if i not in suite]
    if unknown:
        raise ValueError(f"not in the mini suite: {', '.join(unknown)}")
    tasks = [suite[i] for i in settings.instances]
    t0 = time.monotonic()
    evo = Evolution(out, tasks, model, "h0", make_proposer("rule"), settings.config(seed), progress=lambda _: None)
    final = evo.run()
    seconds = time.monotonic() - t0
    props = [r for r in evo.log.records if r.get("kind") == "proposal" and r.get("epoch") == 1]
    comps = [_comparison(out, p, 1) for p in props if "decided_by" in p]
    rounds = [r for r in evo.log.records if r.get("kind") == "round" and r.get("epoch") == 1]
    return {"model": model, "seed": seed, "rounds": len(rounds), "comparisons": comps,
            "accepted": sum(c["accepted"] for c in comps),
            "planted_accepted": sum(c["accepted"] and c["adds_run_tests"] for c in comps),
            "final_has_run_tests": "run_tests" in final.tool_names,
            "rollouts": sum(r["rollouts_run"] for r in rounds), "seconds": round(sum(r["seconds"] for r in rounds), 1),
            "wall_this_call": round(seconds, 1)}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per policy: epochs accepting (with the exact interval), comparisons, planted acceptances, cost."""
    n = len(rows)
    k = sum(r["accepted"] > 0 for r in rows)
    comps = [c for r in rows for c in r["comparisons"]]
    lo, hi = clopper_pearson(k, n)
    return {"epochs": n, "epochs_accepting": k, "per_epoch": k / n, "per_epoch_ci95": [lo, hi],
            "comparisons": len(comps), "accepted": sum(c["accepted"] for c in comps),
            "point_accepted": sum(c["point_accepted"] for c in comps),
            "epochs_point_accepting": sum(any(c["point_accepted"] for c in r["comparisons"]) for r in rows),
            "comparisons_adding_run_tests": sum(c["adds_run_tests"] for c in comps),
            "planted_accepted": sum(r["planted_accepted"] for r in rows),
            "comparisons_tools_changed": sum(c["tools_changed"] for c in comps),
            "pairs": sum(c["pairs"] for c in comps), "pairs_differing": sum(c["pairs_differing"] for c in comps),
            "rollouts": sum(r["rollouts"] for r in rows), "seconds": round(sum(r["seconds"] for r in rows), 1)}


def plan_lines(settings: Settings, base_rates: dict[str, float]) -> list[str]:
    plan = settings.config(0).plan(len(settings.instances)).validate()
    out = [f"plan: {plan.tasks} tasks x {plan.group_size} a side, {plan.rounds} round(s); each test at "
           f"{plan.alpha_test:.3g} (alpha {plan.alpha_epoch:g} per epoch / 2 rates / {plan.comparisons} comparisons), "
           f"needs >= {plan.needed_tasks} tasks; at most {plan.rollouts_per_epoch()} rollouts per epoch"]
    for label, p in base_rates.items():
        mde = plan.mde(base_rate=p)
        out.append(f"plan: {label}: smallest pass-rate rise detected with 80% power from a base of {p:g}: "
                   + ("none (too few tasks)" if mde is None else f"{100 * mde:.1f} points"))
    return out


def _base_rate(model: str) -> float:
    """The pass rate under ``h0`` a fixture spec implies (its first probability)."""
    from ha_agents.llm.policies import PARAMETRIC, POLICIES

    kind, _, arg = model.partition(":")
    policy = PARAMETRIC[kind](arg) if arg else POLICIES[model]()
    return float(getattr(policy, "p", 0.5))


def run_policy(label: str, model: str, seeds: list[int], settings: Settings, out: Path) -> list[dict[str, Any]]:
    """Every seed's epoch of ``model`` (a finished one's row read back), printed as it ends."""
    rows = []
    for seed in seeds:
        d = out / label / f"seed{seed}"
        done = d / "row.json"
        if done.is_file():
            row = json.loads(done.read_text())
        else:
            row = run_epoch(model, seed, settings, d)
            done.write_text(json.dumps(row, indent=1))
        rows.append(row)
        print(f"  {label} seed {seed}: {len(row['comparisons'])} comparison(s), {row['accepted']} accepted "
              f"(run_tests added and accepted: {row['planted_accepted']}); {row['rollouts']} rollouts in "
              f"{row['seconds']:.0f} s; " + ", ".join(f"r{c['round']} d_pass {c['d_pass']:+.3f} p {c['p_pass']:.3g} "
                                                      f"({c['pairs_differing']}/{c['pairs']} pairs differ)"
                                                      for c in row["comparisons"]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20, help="epochs (seeds) under the null policy")
    ap.add_argument("--planted-seeds", type=int, default=None, help="epochs under the planted effect (default: --seeds)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--group-size", type=int, default=2)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--instances", nargs="+", default=list(FAST_TASKS), help="mini tasks (default: the 8 quickest)")
    ap.add_argument("--null", default="coin_prompt:0.5")
    ap.add_argument("--planted", default="tool_coin:0.25,0.75")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="runs/bench_gate_e2e")
    ap.add_argument("--json", default=None, help="also write every row and the summaries here")
    args = ap.parse_args(argv)
    if args.seeds < 0 or (args.planted_seeds is not None and args.planted_seeds < 0):
        raise SystemExit("--seeds and --planted-seeds must be at least 0")
    settings = Settings(args.rounds, args.group_size, args.alpha, tuple(args.instances), args.workers)
    runs = {"null": (args.null, args.seeds),
            "planted": (args.planted, args.seeds if args.planted_seeds is None else args.planted_seeds)}
    print(f"# bench_gate_e2e: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    for line in plan_lines(settings, {f"{k} ({m})": _base_rate(m) for k, (m, _) in runs.items()}):
        print(line, flush=True)
    t0 = time.monotonic()
    result: dict[str, Any] = {"settings": {**vars(args)}, "policies": {}}
    for label, (model, n) in runs.items():
        if n == 0:
            continue
        seeds = list(range(args.first_seed, args.first_seed + n))
        rows = run_policy(label, model, seeds, settings, Path(args.out))
        result["policies"][label] = {"model": model, "rows": rows, "summary": summarise(rows)}
    print("\n| policy | epochs | epochs accepting | per epoch (exact 95% CI) | comparisons | accepted | run_tests "
          "candidates accepted / compared | point rule on the same comparisons: accepted (epochs) | pairs differing | rollouts | "
          "epoch s (mean) |\n|---|---|---|---|---|---|---|---|---|---|---|")
    for label, res in result["policies"].items():
        s = res["summary"]
        lo, hi = s["per_epoch_ci95"]
        print(f"| {label} `{res['model']}` | {s['epochs']} | {s['epochs_accepting']} | {s['per_epoch']:.3f} "
              f"({lo:.3f}-{hi:.3f}) | {s['comparisons']} | {s['accepted']} | {s['planted_accepted']} / "
              f"{s['comparisons_adding_run_tests']} | {s['point_accepted']} ({s['epochs_point_accepting']}) | "
              f"{s['pairs_differing']} / {s['pairs']} | {s['rollouts']} | "
              f"{s['seconds'] / max(1, s['epochs']):.0f} |")
    print(f"\nwall time of this invocation: {time.monotonic() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
