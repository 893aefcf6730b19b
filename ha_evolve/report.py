"""Reading an evolution log: the paper's Table 15 layout (one row per candidate) and its Figure 3
(relative change of pass rate and trainable rate per candidate), plus the rates per round."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ha_agents.records.log import JsonlLog


def proposals(out: Path | str) -> list[dict[str, Any]]:
    return [r for r in JsonlLog(Path(out) / "evolution.jsonl").records if r.get("kind") == "proposal"]


def _rel(new: float, old: float) -> float | None:
    return None if old == 0 else (new - old) / old


def table(out: Path | str) -> str:
    """Markdown: epoch, round, proposer, change, pass and trainable rates (current -> candidate),
    relative changes, the gate's and the statistical gate's decisions, and what was done."""
    rows = ["| epoch | round | proposer | candidate | change | pass | trainable | rel. pass | rel. trainable | point | stat | decision |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in proposals(out):
        cur = r.get("current_rates") or r.get("preparation_rates", {})
        cand = r.get("candidate_rates")
        change = "; ".join(r.get("diff", []))[:80] or "-"
        if cand is None:
            rows.append(f"| {r['epoch']} | {r['round']} | {r['proposer']} | {r.get('candidate_hash') or '-'} | {change} | "
                        f"{cur.get('pass_rate', 0):.3f} | {cur.get('trainable_rate', 0):.3f} | - | - | - | - | "
                        f"invalid ({r['validation']['stage']}): {r['validation']['reason'][:60]} |")
            continue
        rp = _rel(cand["pass_rate"], cur["pass_rate"])
        rt = _rel(cand["trainable_rate"], cur["trainable_rate"])
        fmt = lambda x: "n/a" if x is None else f"{100 * x:+.1f}%"  # noqa: E731
        rows.append(f"| {r['epoch']} | {r['round']} | {r['proposer']} | {r['candidate_hash']} | {change} | "
                    f"{cur['pass_rate']:.3f} -> {cand['pass_rate']:.3f} | {cur['trainable_rate']:.3f} -> "
                    f"{cand['trainable_rate']:.3f} | {fmt(rp)} | {fmt(rt)} | {'accept' if r['gate']['accept'] else 'reject'} | "
                    f"{_stat(r)} | {'ACCEPTED' if r['accepted'] else 'rejected'}"
                    f"{_why(r)} |")
    return "\n".join(rows)


def _stat(r: dict) -> str:
    """The bootstrap rule's decision, when it was computed."""
    return "-" if not r.get("stat") else "accept" if r["stat"]["accept"] else "reject"


def _why(r: dict) -> str:
    """The deciding gate and its reason (logs from before ``decided_by`` have neither)."""
    return f" by {r['decided_by']}: {r['decision_reason'][:80]}" if r.get("decided_by") else ""


def figures(out: Path | str) -> list[Path]:
    """PNG files: the per-candidate relative changes and the rates per round."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    figdir = out / "figures"
    figdir.mkdir(exist_ok=True)
    compared = [r for r in proposals(out) if r.get("candidate_rates")]
    paths = []
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(compared) + 2), 3.5))
    labels = [f"e{r['epoch']}r{r['round']}\n{r['candidate_hash'][:6]}" for r in compared]
    dp = [100 * (_rel(r["candidate_rates"]["pass_rate"], r["current_rates"]["pass_rate"]) or 0) for r in compared]
    dt = [100 * (_rel(r["candidate_rates"]["trainable_rate"], r["current_rates"]["trainable_rate"]) or 0) for r in compared]
    xs = range(len(compared))
    ax.bar([x - 0.2 for x in xs], dp, width=0.4, label="pass rate", color="#4c72b0")
    ax.bar([x + 0.2 for x in xs], dt, width=0.4, label="trainable rate", color="#dd8452")
    for x, r in zip(xs, compared):
        ax.annotate("accepted" if r["accepted"] else "rejected", (x, max(dp[x], dt[x], 0)), ha="center",
                    va="bottom", fontsize=7)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(list(xs), labels, fontsize=7)
    ax.set_ylabel("relative change vs current (%)")
    ax.set_title("candidate harnesses")
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(figdir / "candidates.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    rounds = [r for r in JsonlLog(out / "evolution.jsonl").records if r.get("kind") == "round"]
    first = {}
    for r in proposals(out):
        first.setdefault((r["epoch"], r["round"]), r.get("preparation_rates") or r["current_rates"])
    keys = [(r["epoch"], r["round"]) for r in rounds if (r["epoch"], r["round"]) in first]
    fig, ax = plt.subplots(figsize=(4.5, 3))
    ax.plot(range(len(keys)), [first[k]["pass_rate"] for k in keys], marker="o", label="pass rate")
    ax.plot(range(len(keys)), [first[k]["trainable_rate"] for k in keys], marker="s", label="trainable rate")
    ax.set_xticks(range(len(keys)), [f"e{e}r{r}" for e, r in keys], fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_title("current harness, start of each round")
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(figdir / "rounds.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths
