"""Training and evaluating the harness engineer (Harness-R1 on SWE repair), on ``HarnessEditEnv``.

Nothing here re-implements a loop: an engineer's rollout is one turn of ``AgentLoop`` on
``HarnessEditEnv`` (the same token bookkeeping as a repair episode: the prompt's ids with mask 0,
the reply's ids and logprobs as generated with mask 1), and training is ``driver.train`` with
``EngineerSource`` as its rollout source, so the batch policy (masked and truncated samples
dropped, group baselines over the rest), the trainer's update, metrics and checkpoints are the
ones repair training uses. Only the engineer's parameters change: the target is a frozen model spec.

- ``EngineerSource``: K patches per failure batch (a GRPO group), each scored by the env; the
  records land in ``rollouts/update-NNNN/trajectories.jsonl`` (resumable) and ``metrics`` reports
  the valid / no-op / invalid / helpful / harmful rates, the masked share, the target rollouts run
  and the cache hits;
- ``propose``: one text reply of any ``LLMClient`` (a teacher, a fixed editor) scored by the env;
- ``sft_data``: cold-start demonstrations: K teacher patches per batch, at most one kept per batch
  (the best with reward > 0 and a CI lower bound above ``-eps``), or every scored candidate with
  ``keep="all"`` (a warm-start mixture); ``sft_samples`` tokenises them as the agent loop would;
- ``evaluate``: per batch the engineer's patch (greedy or seeded), its reward on the batch's own
  tasks and on held-out tasks (pass@1 with and without it, paired bootstrap CI), the overfit gap;
- ``ablate``: a patch with each lifecycle point's operations (and its tools) dropped, each variant
  scored with a CI.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import yaml

from ha_agents.chat.tokens import as_codec
from ha_agents.episode import TokenMode, episode_seed
from ha_agents.llm.base import Completion
from ha_agents.records.log import JsonlLog
from ha_agents.runs.rollouts import group_records
from ha_agents.train.base import Sample

from .harness_edit import EngineerBatch, HarnessEditEnv, paired_ci, run_side
from .patches import Patch, PatchError, apply_patch, delta_ops, parse_patch

FIXTURE_MENU = [
    {"kind": "helpful", "reply": "<think>It submits before it tests: block that submit.</think>\n<patch>\nops:\n"
                                 "- op: add_hook\n  hook: {name: stop_submit, rule: {point: pre_action, trigger: "
                                 "{tool: submit}, veto: true, message: Run the tests first.}}\n</patch>"},
    {"kind": "wrong_point", "reply": "<think>Remind it to test before each decision.</think>\n<patch>\nops:\n"
                                     "- op: add_hook\n  hook: {name: test_reminder, rule: {point: pre_decision, "
                                     "trigger: {min_turn: 0}, message: Run the tests first.}}\n</patch>"},
    {"kind": "malformed", "reply": "<think>Draft a guard.</think>\n<patch>\nops:\n- op: add_hook\n  hook: {name: "
                                   "guard, rule: {point: pre_action, trigger: {tool: submit\n</patch>"},
    {"kind": "no_op", "reply": "<think>Nothing needs to change.</think>\n<patch>\nops:\n- op: set_params\n"
                               "  tool: bash\n  params: {}\n</patch>"},
]
"""Four patches for the fixture target ``hasty`` (the CPU demonstration): a pre-action veto of its
early submit (helpful: the only kind of change that turns it careful, with a forced test run), the
same advice as a pre-decision reminder (the wrong lifecycle point: ignored), a malformed document,
and a no-op. ``ha engineer menu`` writes them as a ``menu:`` file, the warm-start teacher."""


def batch_items(batches: Sequence[Sequence[str]]) -> list[EngineerBatch]:
    """The driver's items: one per failure batch."""
    return [EngineerBatch(k, tuple(b)) for k, b in enumerate(batches)]


def outcome_kind(info: dict[str, Any], reward: float) -> str:
    """``helpful`` / ``neutral`` / ``harmful`` (scored), ``no_op``, ``invalid``, ``masked`` or ``truncated``."""
    stage = info.get("stage")
    if stage == "passed":
        return "helpful" if reward > 0 else "harmful" if reward < 0 else "neutral"
    if stage in ("no_op", "masked", "truncated"):
        return str(stage)
    return "invalid"


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The rates of a set of scored patches (records or score rows: ``reward`` and ``info`` or the
    info's fields at the top level)."""
    n = len(rows)
    infos = [r.get("info", r) for r in rows]
    each = [outcome_kind(i, float(r.get("reward", 0.0))) for r, i in zip(rows, infos)]
    kinds = Counter(each)
    share = (lambda k: kinds[k] / n) if n else (lambda k: 0.0)
    return {"patches": n,
            "valid_rate": sum(kinds[k] for k in ("helpful", "neutral", "harmful", "no_op", "masked")) / n if n else 0.0,
            "invalid_rate": share("invalid"), "no_op_rate": share("no_op"), "helpful_rate": share("helpful"),
            "harmful_rate": share("harmful"), "masked_share": share("masked"),
            "truncated_rate": share("truncated"),
            "comparison_rollouts": int(sum(int(i.get("rollouts", 0)) for i in infos)),
            "base_rollouts": int(sum(int(i.get("base_rollouts", 0)) for i in infos)),
            "patched_rollouts": int(sum(int(i.get("patched_rollouts", 0)) for i in infos)),
            "cache_hits": int(sum(int(i.get("cache_hits", 0)) for i in infos)),
            "engineer_s": round(sum(float((r.get("timings") or {}).get("model_s", 0.0)) for r in rows), 3),
            "scoring_s": round(sum(float((r.get("timings") or {}).get("episode_s", 0.0))
                                   - float((r.get("timings") or {}).get("model_s", 0.0)) for r in rows), 3),
            "invalid_with_rollouts": sum(1 for k, i in zip(each, infos)
                                         if k in ("invalid", "no_op") and int(i.get("rollouts", 0)))}


@dataclass
class EngineerSource:
    """The driver's rollout source for the harness engineer: ``group_size`` patches per batch, each
    one turn of ``AgentLoop`` on ``env`` (its tasks, records and outcome cache loaded once)."""

    env: HarnessEditEnv
    token_mode: TokenMode

    def rollouts(self, items: Sequence[EngineerBatch], group_size: int, client: Any, *, seed: int, out: Path,
                 harness: Any = None, skills: Any = None) -> list[dict[str, Any]]:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        log = JsonlLog(out / "trajectories.jsonl")
        done = log.done()
        loop = self.token_mode.loop(client)
        for item in items:
            for k in range(1, group_size + 1):
                if (item.instance_id, k) in done:
                    continue
                traj = loop.run(self.env, task=item, seed=episode_seed(seed, item.instance_id, k))
                log.append(engineer_record(traj.to_dict(), item, k))
        return group_records(log.records, items, group_size)

    def metrics(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return summarize(records)


def engineer_record(traj: dict[str, Any], item: EngineerBatch, run: int) -> dict[str, Any]:
    info = traj.get("info") or {}
    reply = next((m.get("content") or "" for m in traj.get("messages", []) if m.get("role") == "assistant"), "")
    return {**traj, "instance_id": item.instance_id, "benchmark": item.benchmark, "run": run,
            "tasks": list(item.task_ids), "resolved": float(traj.get("reward", 0.0)) > 0, "reply": reply,
            "kind": outcome_kind(info, float(traj.get("reward", 0.0)))}


# -- text clients: a teacher, a fixed editor ---------------------------------------------------

def propose(client: Any, env: HarnessEditEnv, batch: int, seed: int | None) -> dict[str, Any]:
    """One reply of a text client for ``batch``, scored by the env: a row of ``scores.jsonl``."""
    from ha_agents.llm.base import LLMError

    messages, info0 = env.reset(options={"batch": batch})
    try:
        reply = client.complete(messages, [], seed=seed).text
    except LLMError as exc:
        _, reward, _, _, info = env.abort(str(exc))
        reply = ""
    else:
        _, reward, _, _, info = env.step(reply)
    return {"batch": batch, "tasks": info0["tasks"], "seed": seed, "messages": messages, "reply": reply,
            "reward": float(reward), "kind": outcome_kind(info, float(reward)), "info": info}


def sft_data(teacher: Any, env: HarnessEditEnv, samples: int = 4, seed: int = 0, eps: float = 0.05,
             keep: str = "verified", on_row: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Cold-start demonstrations from ``teacher``: ``samples`` patches per batch, each scored.
    ``keep="verified"``: at most one per batch, the best with reward > 0 and a CI lower bound above
    ``-eps`` (ties: the first drawn); ``"all"``: every scored candidate (a warm-start mixture)."""
    if keep not in ("verified", "all"):
        raise ValueError(f"keep must be 'verified' or 'all', got {keep!r}")
    kept: list[dict[str, Any]] = []
    for b in range(len(env.batches)):
        rows = [propose(teacher, env, b, episode_seed(seed, f"batch-{b:04d}", j)) for j in range(1, samples + 1)]
        for r in rows:
            r["verified"] = r["kind"] == "helpful" and r["info"]["delta_ci"][0] > -eps
            if on_row:
                on_row(r)
        if keep == "all":
            kept += rows
        else:
            good = [r for r in rows if r["verified"]]
            if good:
                kept.append(max(good, key=lambda r: r["reward"]))
    return kept


def sft_samples(rows: Sequence[dict[str, Any]], token_mode: TokenMode) -> list[Sample]:
    """Demonstrations as samples: the prompt as the agent loop renders it (mask 0), then the reply's
    encoding and the end of turn (mask 1); the reply's ids are the tokenizer's, so these are for SFT
    only (GRPO records carry the engineer's own ids)."""
    template, tok = token_mode.resolve()
    codec = as_codec(tok)
    eos = codec.token_to_id(template.eos)
    out = []
    for r in rows:
        if not isinstance(r.get("messages"), list) or not isinstance(r.get("reply"), str):
            raise ValueError("an SFT row needs `messages` (the prompt) and `reply` (from `ha engineer sft-data`)")
        prompt = codec.encode(template.prompt(r["messages"], []))
        reply = codec.encode(r["reply"]) + [eos]
        out.append(Sample(token_ids=prompt + reply, loss_mask=[0] * len(prompt) + [1] * len(reply),
                          logprobs=[None] * (len(prompt) + len(reply)), reward=float(r.get("reward", 0.0)),
                          advantage=1.0, group=f"batch-{int(r.get('batch', 0)):04d}",
                          instance_id=f"batch-{int(r.get('batch', 0)):04d}"))
    return out


# -- evaluation --------------------------------------------------------------------------------

def _diffs(info: dict[str, Any]) -> list[float]:
    """Per-task differences of a scored patch; an invalid, no-op or truncated one earns 0 on every
    task of its batch (it leaves the harness as it was); a masked sample has none."""
    if info.get("stage") not in ("passed", "masked"):
        return [0.0] * len(info.get("tasks", []))
    kept = [i for i in info.get("tasks", []) if i not in set(info.get("masked", []))
            and info.get("base", {}).get(i) is not None and info.get("patched", {}).get(i) is not None]
    return [info["patched"][i] - info["base"][i] for i in kept]


def heldout(env: HarnessEditEnv, reply: str, task_ids: Sequence[str]) -> dict[str, Any]:
    """The reply's patch on other tasks: pass@1 per task with and without it (fresh, cached runs of
    the target, common seeds), their paired differences and CI. An invalid or no-op patch leaves the
    harness as it is: difference 0, no rollout."""
    ids = sorted(task_ids)
    try:
        spec = apply_patch(env.base_spec, parse_patch(reply))
    except PatchError:
        spec = env.base_spec
    base = run_side(env.target, env.base_spec, ids, env.tasks, env.cache, env.out / "runs")
    if spec.hash == env.base_spec.hash:
        patched = base
    else:
        patched = run_side(env.target, spec, ids, env.tasks, env.cache, env.out / "runs")
    kept = [i for i in ids if i in base.rates and i in patched.rates]
    d = [patched.rates[i] - base.rates[i] for i in kept]
    return {"tasks": ids, "masked": sorted(set(ids) - set(kept)), "base": base.rates, "patched": patched.rates,
            "pass_base": float(np.mean([base.rates[i] for i in kept])) if kept else None,
            "pass_patched": float(np.mean([patched.rates[i] for i in kept])) if kept else None,
            "delta": float(np.mean(d)) if d else 0.0, "delta_ci": list(paired_ci(d)), "diffs": d,
            "rollouts": base.rollouts + (0 if patched is base else patched.rollouts)}


def evaluate(client: Any, env: HarnessEditEnv, heldout_ids: Sequence[str] = (), seed: int | None = 0,
             on_row: Callable[[dict[str, Any]], None] | None = None, samples: int = 1) -> dict[str, Any]:
    """Every batch ``samples`` times: the engineer's patch, its reward on the batch (the env's) and,
    with ``heldout_ids``, on those tasks less the batch's. Pooled: mean reward on the batches and on
    held-out tasks with paired bootstrap CIs over the per-task differences, the overfit gap, and
    the patches' rates."""
    rows = []
    for b in range(len(env.batches)):
        for j in range(1, samples + 1):
            row = propose(client, env, b, None if seed is None else episode_seed(seed, f"batch-{b:04d}", j))
            others = [i for i in heldout_ids if i not in set(row["tasks"])]
            if others:
                row["heldout"] = heldout(env, row["reply"], others)
            rows.append(row)
            if on_row:
                on_row(row)
    on_batch = [d for r in rows for d in _diffs(r["info"])]
    off = [d for r in rows for d in (r.get("heldout") or {}).get("diffs", [])]
    summary = {**summarize(rows), "batches": len(rows),
               "batch_delta": float(np.mean(on_batch)) if on_batch else 0.0, "batch_delta_ci": list(paired_ci(on_batch)),
               "heldout_delta": float(np.mean(off)) if off else None, "heldout_delta_ci": list(paired_ci(off)) if off else None}
    hs = [r["heldout"] for r in rows if r.get("heldout") and r["heldout"]["pass_base"] is not None]
    if hs:
        summary["heldout_pass_base"] = float(np.mean([h["pass_base"] for h in hs]))
        summary["heldout_pass_patched"] = float(np.mean([h["pass_patched"] for h in hs]))
    summary["overfit_gap"] = summary["batch_delta"] - summary["heldout_delta"] if off else None
    return {"summary": summary, "rows": rows}


class ProposerEngineer:
    """A whole-spec proposer (``proposers.py``: the rule mutator, or a teacher) as an engineer, the
    comparison row of ``ha engineer eval --engineer proposer:rule``, scored over all its rounds as
    the evolution schedule would run it: the j-th reply for a batch is the proposer's j-th round
    (candidates it proposed for this batch before are ``tried``), proposed from the target's records
    of the batch's tasks and written as a patch (``patches.delta_ops``). No candidate (the proposer
    has run out), or one a patch cannot express, is a reply without a patch (a no-op: reward 0, no
    rollout), as a schedule's round that changes nothing."""

    def __init__(self, proposer: Any, env: HarnessEditEnv) -> None:
        self.proposer, self.env = proposer, env
        self.name = f"proposer:{getattr(proposer, 'name', type(proposer).__name__)}"
        self._tried: dict[int, set[str]] = {}

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **_: Any) -> Completion:
        batch = self.env.task
        if batch is None:
            raise RuntimeError("ProposerEngineer answers inside an episode of its env (reset first)")
        ids = set(batch.task_ids)
        records = [r for r in self.env.records if r.get("instance_id") in ids]
        tried = self._tried.setdefault(batch.index, set())
        proposal = self.proposer.propose(self.env.base_spec, records, set(tried))
        if proposal.candidate is None:
            text = f"no patch: {proposal.error or proposal.diagnosis}"
        else:
            tried.add(proposal.candidate.hash)
            try:
                text = (f"<think>round {len(tried)}: {proposal.diagnosis}</think>\n"
                        + patch_text(delta_ops(self.env.base_spec, proposal.candidate)))
            except PatchError as exc:
                text = f"no patch: {exc}"
        return Completion({"role": "assistant", "content": text}, finish_reason="stop")


def patch_text(ops: Sequence[dict[str, Any]]) -> str:
    return "<patch>\n" + yaml.safe_dump({"ops": list(ops)}, sort_keys=False) + "</patch>"


def ablations(reply: str) -> dict[str, list[dict[str, Any]]]:
    """The patch's variants for the lifecycle ablation: ``full``, and ``-POINT`` for every point
    (or ``tools``) it touches, with the operations touching it dropped (possibly none left)."""
    patch = parse_patch(reply)
    out = {"full": list(patch.ops)}
    for point in patch.points:
        out[f"-{point}"] = [op for op in patch.ops if point not in Patch((op,)).points]
    return out


def ablate(reply: str, env: HarnessEditEnv, on_row: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Each variant of ``ablations`` on every batch of the env: reward pooled over the batches'
    tasks with a paired bootstrap CI. A variant with no operation left is the base harness (0)."""
    out: dict[str, Any] = {}
    for name, ops in ablations(reply).items():
        diffs: list[float] = []
        rollouts = 0
        for b in range(len(env.batches)):
            if not ops:
                continue
            env.reset(options={"batch": b})
            _, _, _, _, info = env.step(patch_text(ops))
            diffs += _diffs(info)
            rollouts += int(info.get("rollouts", 0))
        out[name] = {"ops": len(ops), "delta": float(np.mean(diffs)) if diffs else 0.0,
                     "delta_ci": list(paired_ci(diffs)), "tasks": len(diffs), "rollouts": rollouts}
        if on_row:
            on_row({"variant": name, **out[name]})
    return out


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{path}: no such file")
    rows = []
    for n, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not a JSON line ({exc.msg})") from None
    return rows
