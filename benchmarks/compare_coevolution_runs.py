"""Side by side: two ``bench_coevolution.py`` output folders of the same settings and seed 1 (issue
38: the script's steps as ``ha`` subprocesses before, the library in process after). Compares the
warm start's and every arm's final weights, each update's metrics row, the gate's log, the training
rollouts' and evaluation episodes' outcomes and token ids, each evaluation's summary.json and
run-identity.json and the script's summary.json; timings and the folders' own paths are left out.

    python benchmarks/compare_coevolution_runs.py BEFORE_OUT AFTER_OUT
"""
import hashlib, json, sys
from pathlib import Path

A, B = Path(sys.argv[1]), Path(sys.argv[2])
TIMING = {"seconds", "rollout_s", "grading_s", "update_s", "timings", "elapsed_s", "wall_s", "started", "finished", "time", "ts"}


def jl(p):
    return [json.loads(l) for l in p.read_text().splitlines() if l.strip()] if p.exists() else []


def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in TIMING and not k.endswith("_s") and k not in ("out", "path")}
    if isinstance(x, list):
        return [strip(v) for v in x]
    if isinstance(x, str):
        return x.replace(str(A), "OUT").replace(str(B), "OUT")
    return x


def weights(d):
    return "".join(hashlib.sha256(p.read_bytes()).hexdigest()[:12] for p in sorted(d.glob("*.safetensors")))


rows = []
def row(what, a, b):
    rows.append((what, a, b, "same" if a == b else "DIFFERENT"))

row("warm: weights sha256", weights(A / "warm/checkpoint/model"), weights(B / "warm/checkpoint/model"))
for arm in ("grpo", "evolution", "coevolution"):
    a, b = jl(A / f"seed-1/{arm}/metrics.jsonl"), jl(B / f"seed-1/{arm}/metrics.jsonl")
    for ra, rb in zip(a, b):
        keys = ("pass_rate", "trainable_rate", "reward_mean", "batch_samples", "loss", "grad_norm", "harness_hash")
        row(f"{arm} update {ra['update']}: " + ", ".join(keys), [ra.get(k) for k in keys], [rb.get(k) for k in keys])
        row(f"{arm} update {ra['update']}: whole row but timings", strip(ra) == strip(rb), True)
    row(f"{arm}: final weights sha256", weights(A / f"seed-1/{arm}/checkpoint/model"), weights(B / f"seed-1/{arm}/checkpoint/model"))
    ea, eb = jl(A / f"seed-1/{arm}/evolve/evolution.jsonl"), jl(B / f"seed-1/{arm}/evolve/evolution.jsonl")
    dec = lambda rs: [(r.get("epoch"), r.get("kind"), r.get("candidate_name"), r.get("accepted"), r.get("decision_reason")) for r in rs if r.get("kind") == "proposal"]
    if ea or eb:
        row(f"{arm}: gate decisions (epoch, candidate, accepted, reason)", dec(ea), dec(eb))
        row(f"{arm}: evolution.jsonl, every record but timings", strip(ea) == strip(eb), True)
    ra_, rb_ = [], []
    for u in (1, 2):
        ra_ += jl(A / f"seed-1/{arm}/rollouts/update-{u:04d}/trajectories.jsonl")
        rb_ += jl(B / f"seed-1/{arm}/rollouts/update-{u:04d}/trajectories.jsonl")
    tok = lambda rs: sorted((r["instance_id"], r["run"], r.get("resolved"), r.get("termination"), hashlib.sha256(json.dumps(r.get("token_ids")).encode()).hexdigest()[:10]) for r in rs)
    row(f"{arm}: training rollouts (id, sample, resolved, termination, token ids)", tok(ra_), tok(rb_))
for ev in ("eval-start", "eval-grpo", "eval-evolution", "eval-coevolution"):
    sa, sb = json.loads((A / "seed-1" / ev / "summary.json").read_text()), json.loads((B / "seed-1" / ev / "summary.json").read_text())
    row(f"{ev}: summary.json (pass@1 per run, per instance, masked, options, seed)", strip(sa), strip(sb))
    ta, tb = jl(A / "seed-1" / ev / "trajectories.jsonl"), jl(B / "seed-1" / ev / "trajectories.jsonl")
    tok = lambda rs: sorted((r["instance_id"], r["run"], r.get("resolved"), r.get("termination"), hashlib.sha256(json.dumps(r.get("token_ids")).encode()).hexdigest()[:10]) for r in rs)
    row(f"{ev}: episodes (id, run, resolved, termination, token ids)", tok(ta), tok(tb))
    ia, ib = json.loads((A / "seed-1" / ev / "run-identity.json").read_text()), json.loads((B / "seed-1" / ev / "run-identity.json").read_text())
    row(f"{ev}: run-identity.json", strip(ia), strip(ib))
sa, sb = json.loads((A / "summary.json").read_text()), json.loads((B / "summary.json").read_text())
row("summary.json (arms, compare)", strip({k: sa[k] for k in ("arms", "compare")}), strip({k: sb[k] for k in ("arms", "compare")}))
for what, a, b, verdict in rows:
    short = lambda v: (json.dumps(v)[:90] + ("..." if len(json.dumps(v)) > 90 else ""))
    print(f"| {what} | {short(a)} | {short(b)} | {verdict} |")
print(sum(r[3] == "same" for r in rows), "of", len(rows), "same")
