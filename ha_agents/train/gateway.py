"""Training a user's harness through the gateway: GRPO groups whose episodes are mini-swe-agent's.

``GatewaySource`` is a rollout source (``driver.RolloutSource``) for the driver's loop: each
update's group of a task is ``group_size`` mini-swe-agent episodes (``gateway.msa.gateway_episode``:
this library's sandbox and grader, mini-swe-agent's own ``mini`` unmodified) behind one gateway
whose every session calls **the trainer's own client** (``trainer.client()``, handed in by the
driver for every update): the in-process weights being trained, so after an update the next group
samples from the updated weights. The gateway runs in token mode with the policy's tokenizer and
chat template (``trainer.token_mode``), so each record holds the policy's own prompt ids,
generated ids, logprobs and loss mask; each episode samples with its own seed (the update's seed,
the task and the sample, as ``collect()`` seeds them). Records go through the same batch policy as
every other (a ``token_error`` or a masked record is dropped).

``gateway_demonstrations`` / ``warm_start_gateway``: the warm start of ``ha train --agent
--warm-start``: demonstrations recorded through the same gateway and harness, a scripted model
playing the gold fix (``git apply`` of the gold patch, then mini-swe-agent's submit command) and a
give-up (the submit command at once), their ids the policy tokenizer's encoding of the scripted text
(marked ``demonstration``, for SFT only), then supervised epochs on them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ha_envs.sandbox import prepare_snapshot
from ha_envs.task import Task

from ..episode import TokenMode, episode_seed
from ..gateway.msa import HarnessId, MsaConfig, gateway_episode
from ..gateway.recorder import TurnRecorder
from ..gateway.server import Gateway
from ..llm.base import Completion
from ..records.log import JsonlLog
from ..runs.interrupt import run_pool
from ..runs.progress import EpisodeProgress, prepare_each
from ..runs.rollouts import group_records
from .sft import TokenizingClient, sft_samples

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
"""mini-swe-agent's own submit command (its ``mini.yaml``)."""
AGENTS = ("mini-swe-agent",)


def policy_gateway(client: Any, token_mode: TokenMode, max_tokens: int | None = None) -> Gateway:
    """A gateway whose every session calls ``client`` (one object, shared: the trainer's in-process
    policy), recording in token mode with ``token_mode``'s template and tokenizer."""
    template, tok = token_mode.resolve()
    name = getattr(client, "name", "policy")
    served = name.split(":", 1)[1] if name.startswith("hf:") else name
    return Gateway(lambda: client, lambda c: TurnRecorder(c, template, tok, max_tokens=max_tokens,
                                                          context_tokens=token_mode.context_tokens),
                   Path(served).name or "policy")


@dataclass
class GatewaySource:
    """Groups of mini-swe-agent episodes through a gateway in front of the trainer's policy."""

    msa: MsaConfig
    token_mode: TokenMode
    max_tokens: int | None = None
    workers: int = 2
    progress: bool = True
    uses_harness = False
    """The episodes run the user's harness, not this library's wrapper stack: the driver keeps no
    harness spec in the checkpoint (``driver._harness_state``)."""
    _harness: HarnessId | None = field(default=None, repr=False)

    def harness(self) -> HarnessId:
        if self._harness is None:
            self._harness = self.msa.harness(self.msa.check())
        return self._harness

    def rollouts(self, items: Sequence[Task], group_size: int, client: Any, *, seed: int, out: Path,
                 harness: Any = None, skills: dict[str, str] | None = None) -> list[dict[str, Any]]:
        if skills:
            raise ValueError("skills are shown by this library's wrapper stack; a gateway harness cannot show them")
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        log = JsonlLog(out / "trajectories.jsonl")
        done = log.done()
        todo = [(t, k) for t in items for k in range(1, group_size + 1) if (t.instance_id, k) not in done]
        prepare_each(list({t.instance_id: t for t, _ in todo}.values()), prepare_snapshot, "snapshots",
                     show=self.progress)
        bar = None
        if self.progress:
            earlier = group_records(log.records, items, group_size)
            bar = EpisodeProgress(len(items) * group_size, done=len(earlier),
                                  resolved=sum(bool(r.get("resolved")) for r in earlier))
        hid, model = self.harness(), getattr(client, "name", "policy")

        def one(tk: tuple[Task, int]) -> dict[str, Any]:
            t, k = tk
            work = out / "harness" / f"{t.instance_id}-{k}"
            record = gateway_episode(gw, t, self.msa, hid, model, work, seed=episode_seed(seed, t.instance_id, k))
            return record.with_fields(run=k)

        def write(rec: dict[str, Any]) -> None:
            log.append(rec)
            if bar is not None:
                bar.update(rec)

        try:
            with policy_gateway(client, self.token_mode, self.max_tokens) as gw:
                run_pool(one, todo, self.workers, write)
        finally:
            if bar is not None:
                bar.close()
        return group_records(log.records, items, group_size)

    def metrics(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        hid = self.harness()  # the row names the harness the episodes ran (the driver's spec is unused)
        return {"harness": hid.name, "harness_hash": hid.hash, "agent": "mini-swe-agent",
                "token_errors": sum(1 for r in records if r.get("token_error"))}


class ScriptedMsa:
    """A scripted model for mini-swe-agent's conversation: ``fix`` applies the task's gold patch in
    its first command and submits in the next; ``give-up`` submits at once. Replies are OpenAI
    messages with one ``bash`` tool call (``TokenizingClient`` writes it as Hermes text)."""

    def __init__(self, task: Task, kind: str) -> None:
        if kind not in ("fix", "give-up"):
            raise ValueError(f"unknown demonstration {kind!r}")
        if kind == "fix" and not task.gold_patch.strip():
            raise ValueError(f"{task.instance_id}: no gold patch to demonstrate a fix with")
        self.task, self.kind, self.name = task, kind, f"scripted-{kind}"

    def command(self, step: int) -> str:
        if self.kind == "fix" and step == 0:
            patch = self.task.gold_patch if self.task.gold_patch.endswith("\n") else self.task.gold_patch + "\n"
            return f"git apply --whitespace=nowarn - <<'HA_EOF'\n{patch}HA_EOF"
        return SUBMIT

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **_: Any) -> Completion:
        step = sum(1 for m in messages if m["role"] == "assistant")
        call = {"id": f"call_{step}", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": self.command(step)})}}
        return Completion(message={"role": "assistant", "content": "", "tool_calls": [call]}, finish_reason="stop")


def gateway_demonstrations(tasks: list[Task], token_mode: TokenMode, msa: MsaConfig, out: str | Path,
                           kinds: tuple[str, ...] = ("fix", "give-up"), workers: int = 2) -> list[dict[str, Any]]:
    """One mini-swe-agent episode per task and kind through a gateway in front of ``ScriptedMsa``, in
    token mode with the policy's tokenizer (the ids: the encoding of the scripted text; SFT only)."""
    out = Path(out)
    template, tok = token_mode.resolve()
    hid = msa.harness(msa.check())
    log = JsonlLog(out / "trajectories.jsonl")
    done = log.done()
    todo = [(t, i, kind) for i, kind in enumerate(kinds, 1) for t in tasks if (t.instance_id, i) not in done]
    prepare_each(list({t.instance_id: t for t, _, _ in todo}.values()), prepare_snapshot, "snapshots")

    def one(item: tuple[Task, int, str]) -> dict[str, Any]:
        t, i, kind = item
        client = TokenizingClient(ScriptedMsa(t, kind), tok, template.eos)  # its own: a script keeps no state
        with policy_gateway(client, token_mode) as gw:
            rec = gateway_episode(gw, t, msa, hid, client.name, out / "harness" / f"{t.instance_id}-{kind}")
        return rec.with_fields(run=i, demonstration=True, demonstration_kind=kind)

    run_pool(one, todo, workers, log.append)
    return [dict(r) for r in log.records if r["instance_id"] in {t.instance_id for t in tasks}]


def warm_start_gateway(trainer: Any, tasks: list[Task], msa: MsaConfig, out: str | Path, epochs: int, lr: float,
                       progress: Callable[[str, int, int, float], None] | None = None, workers: int = 2
                       ) -> dict[str, Any]:
    """``ha train --agent ... --warm-start EPOCHS``: the demonstrations above, then ``epochs`` SFT
    epochs on them (the same ``trainer.sft`` as the wrapper stack's warm start)."""
    records = gateway_demonstrations(tasks, trainer.token_mode, msa, Path(out) / "demonstrations" / "gateway",
                                     workers=workers)
    if progress:
        progress("demonstrations", 1, 1, len(records))
    unusable = [f"{r['instance_id']} ({r.get('demonstration_kind')}): {r.get('termination')} "
                f"{r.get('token_error') or r.get('error') or ''}".strip() for r in records
                if r.get("mask_sample") or r.get("token_error")]
    if unusable:
        raise ValueError("a demonstration through the gateway failed: " + "; ".join(unusable)[:1500])
    if not any(r["resolved"] for r in records):
        raise ValueError("no demonstration resolved its task: nothing worth warm-starting on")
    samples = sft_samples(records, resolved_only=False)
    losses: list[float] = []
    for epoch in range(1, epochs + 1):
        losses += trainer.sft(samples, epochs=1, lr=lr)
        if progress:
            progress("sft", epoch, epochs, losses[-1])
    return {"demonstrations": len(records), "resolved": sum(bool(r["resolved"]) for r in records),
            "sft_loss_first": losses[0] if losses else float("nan"),
            "sft_loss_last": losses[-1] if losses else float("nan"), "tokens": sum(s.n_trainable for s in samples)}
