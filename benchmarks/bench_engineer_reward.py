"""Is Harness-R1's reward unbiased? A neutral patch scored against a target whose draw depends on its
prompt, end to end through the CLI (issue 40 item 3).

The target is the fixture ``hasty_prompt`` (``ha_agents.llm.fixture_policies``): careful, and so
successful, on a coin of probability 0.2 drawn from the episode's seed *and its prompt*, as a seeded
LLM's draw changes with its prompt. The patch adds a tool it never calls (``view_diff``): its
success rate stays 0.2, only the prompt, and so every coin, changes. Its true reward is 0.

Per seed: ``ha eval`` of the target at ``--seed S`` (the selection run), ``ha engineer batches`` of
its failures, then ``ha engineer score`` of the patch on every batch at the same ``--seed S`` (the
scoring runs draw from their own stream). Pooled over seeds and batches: the mean per-task reward
with its paired bootstrap CI and an exact sign-flip p-value; beside it, the same patched runs against
the selection run as the base (what reusing the run that picked the failures would pay: biased by
construction, every selected task failed there).

    python benchmarks/bench_engineer_reward.py [--seeds 1 2 3 4 5] [--runs 2] [--root runs/bench-engineer-reward]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ha_cli.main import main as ha  # noqa: E402
from ha_agents.runs.stats import sign_flip_p_two_sided  # noqa: E402

TASKS = ["mini__invoice_rounding", "mini__semver_ranges", "mini__ttl_cache", "mini__ini_interpolation",
         "mini__table_render", "mini__url_router"]
NEUTRAL = "<patch>ops: [{op: add_tool, tool: view_diff}]</patch>\n"


def run(argv: list[str]) -> None:
    print("$ ha " + " ".join(shlex.quote(a) for a in argv), flush=True)
    if ha(argv) != 0:
        raise SystemExit(f"`ha {' '.join(argv[:2])}` failed")


def one_seed(seed: int, args: argparse.Namespace, root: Path) -> list[dict]:
    d = root / f"seed-{seed}"
    src = ["--suite", "mini", "--instances", *args.tasks]
    if not (d / "target" / "summary.json").is_file():
        run(["eval", *src, "--model", "hasty_prompt", "--seed", str(seed), "--no-progress", "--out", str(d / "target")])
    run(["engineer", "batches", *src, "--run", str(d / "target"), "--n", str(args.n), "--seed", str(seed),
         "--out", str(d / "batches.json")])
    (d / "neutral.patch").write_text(NEUTRAL)
    batches = json.loads((d / "batches.json").read_text())["batches"]
    scores = d / "score" / "scores.jsonl"
    scores.unlink(missing_ok=True)
    for k in range(len(batches)):
        run(["engineer", "score", *src, "--batches", str(d / "batches.json"), "--batch", str(k), "--model",
             "hasty_prompt", "--seed", str(seed), "--runs", str(args.runs), "--patch", str(d / "neutral.patch"),
             "--out", str(d / "score"), "--json"])
    return [json.loads(x) for x in scores.read_text().splitlines()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--runs", type=int, default=2, help="target episodes per task and side (m)")
    ap.add_argument("--n", type=int, default=2, help="tasks per failure batch")
    ap.add_argument("--tasks", nargs="+", default=TASKS)
    ap.add_argument("--root", default="runs/bench-engineer-reward")
    args = ap.parse_args()
    from ha_evolve.harness_r1.harness_edit import paired_ci

    root = Path(args.root)
    t0 = time.time()
    fresh, replay = [], []
    for seed in args.seeds:
        for row in one_seed(seed, args, root):
            kept = [i for i in row["tasks"] if i not in row["masked"]]
            fresh += [row["patched"][i] - row["base"][i] for i in kept]
            replay += [row["patched"][i] - 0.0 for i in kept]  # every selected task failed in the selection run
    wall = time.time() - t0
    result = {"seeds": args.seeds, "runs": args.runs, "tasks": len(fresh), "wall_s": round(wall, 1)}
    for name, d in (("scoring stream", fresh), ("selection run as base", replay)):
        mean = sum(d) / len(d) if d else 0.0
        lo, hi = paired_ci(d)
        result[name] = {"mean": round(mean, 4), "ci": [round(lo, 4), round(hi, 4)], "sign_flip_p": sign_flip_p_two_sided(d)}
        print(f"{name:>22}: neutral patch reward {mean:+.3f} [{lo:+.3f}, {hi:+.3f}] over {len(d)} task units; "
              f"exact sign-flip p = {result[name]['sign_flip_p']:.3f}")
    print(f"wall {wall:.0f} s")
    (root / "result.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
