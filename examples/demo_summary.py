"""What `make demo` showed, read back from its output folder: the GRPO updates that trained on
samples (with their loss and gradient norm) and the evolution round's decision. Exits 1, saying
why, when no update had a sample or no round could decide: then the demo showed neither.

    python examples/demo_summary.py runs/demo
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise SystemExit(f"demo summary: {path} is missing (did that demo step run?)")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def training_line(train: Path) -> tuple[bool, str]:
    """(an update had samples, one line saying what the GRPO step showed)."""
    rows = _rows(train / "metrics.jsonl")
    used = [r for r in rows if r.get("batch_samples")]
    if not used:
        why = "; ".join(f"update {r['update']}: {r.get('mixed_groups', 0)} mixed groups, dropped {r.get('dropped')}"
                        for r in rows)
        return False, f"GRPO: none of {len(rows)} updates had a sample (no group with a success and a failure): {why}"
    parts = [f"update {r['update']} trained on {r['batch_samples']} samples from {r.get('mixed_groups', 0)} mixed "
             f"group(s), loss {r['loss']:.4f}, gradient norm {r['grad_norm']:.3f}" for r in used]
    rates = ", ".join(f"{r['pass_rate']:.2f}" for r in rows)
    return True, f"GRPO: {len(used)} of {len(rows)} updates changed the policy ({'; '.join(parts)}); pass rate per update {rates}"


def evolution_line(evolve: Path) -> tuple[bool, str]:
    """(a round decided, one line saying what the evolution step showed)."""
    proposals = [r for r in _rows(evolve / "evolution.jsonl") if r.get("kind") == "proposal"]
    decided = [p for p in proposals if p.get("accepted") or "not enough" not in str(p.get("decision_reason", ""))]
    if not decided:
        reasons = "; ".join(str(p.get("decision_reason")) for p in proposals) or "no candidate was proposed"
        return False, f"evolution: no round could decide ({reasons})"
    p = decided[-1]
    before, after = p["current_rates"]["pass_rate"], p["candidate_rates"]["pass_rate"]
    verdict = "ACCEPTED" if p.get("accepted") else "rejected"
    return True, (f"evolution: round {p['round']} {verdict} {p['candidate_name']} ({'; '.join(p['diff'])}): pass rate "
                  f"{before:.2f} -> {after:.2f}, by the {p.get('decided_by')} rule: {p.get('decision_reason')}")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        raise SystemExit("usage: python examples/demo_summary.py OUT (the demo's output folder, e.g. runs/demo)")
    out = Path(argv[0])
    ok = True
    for fn, sub in ((evolution_line, "evolve"), (training_line, "train")):
        good, line = fn(out / sub)
        ok = ok and good
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
