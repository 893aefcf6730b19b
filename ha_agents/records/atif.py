"""Episode records as ATIF trajectories (Harbor's Agent Trajectory Interchange Format, RFC 0001) and back.

One record is one ATIF ``Trajectory`` (``schema_version`` ``ATIF-v1.7``), written with the standard
library only; Harbor's own pydantic models accept it (tests/ha_agents/records/test_atif.py checks
that in a Python 3.12 venv with ``harbor`` installed).

What maps to what:

- each message is a step: the model's replies (``source="policy"``) are ``agent`` steps with
  ``llm_call_count`` 1, their tool calls as ATIF tool calls (arguments parsed from their JSON
  string) and the matching ``model_calls`` entry as the step's ``metrics``; an assistant message the
  model did not write is an ``agent`` step with ``llm_call_count`` 0; system messages are ``system``
  steps and every other message (the task, hook and skill messages, format errors) a ``user`` step;
- a tool result (``source="tool"``) that follows the agent step it answers is one of that step's
  ``observation.results`` (``source_call_id`` its tool call's id when it has one);
- every step and result keeps the message's own fields under ``extra`` (``role``, ``source`` such
  as ``hook:<name>`` or ``skill``, ``trainable``, ``error_kind``, ``name``...): what did not come
  from the model says so there (``trainable: false``) as well as by its ATIF source;
- token mode: each agent step's ``metrics.prompt_token_ids`` is the token stream the call was
  given, ``completion_token_ids`` / ``logprobs`` the ids the backend returned (loss mask 1) and
  their logprobs; a stop token the loop appended (the backend dropped it) is
  ``metrics.extra.appended_token_ids``; tokens after the last call are the trajectory's
  ``extra.harnessadapt.token_tail``. The record's flat ``token_ids`` / ``loss_mask`` / ``logprobs``
  are rebuilt from these on reading; a record whose calls do not carry ``prompt_tokens`` (older
  files) keeps its flat arrays under ``extra.harnessadapt.tokens`` instead;
- everything else the record holds (reward, resolved, termination, grade, hooks, skill, patch,
  timings, flags...) is ``extra.harnessadapt.record``; the model is ``agent.model_name``, the
  harness and its hash ``agent.extra``.

``read_atif(path)`` gives back the same ``EpisodeRecord``; an ATIF file from another producer reads
into a record with its steps as messages (``instance_id`` from its session id).
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

from .episode_record import EpisodeRecord, read_episodes

ATIF_VERSION = "ATIF-v1.7"
AGENT_NAME = "harnessadapt"
EXTRA_KEY = "harnessadapt"
_TOKENS = ("token_ids", "loss_mask", "logprobs")
_CARRIED_ELSEWHERE = ("messages", "model_calls", *_TOKENS, "model", "policy", "harness", "harness_hash")


class AtifError(ValueError):
    """A file that is not an ATIF trajectory this reader can use."""


def _version() -> str:
    try:
        return metadata.version("harnessadapt")
    except metadata.PackageNotFoundError:
        return "0"


# ---------------------------------------------------------------- record -> ATIF


def to_atif(record: EpisodeRecord | dict[str, Any]) -> dict[str, Any]:
    """One episode record as an ATIF trajectory (a JSON-ready dict)."""
    rec = EpisodeRecord.from_json(record)
    spans = _call_spans(rec)
    steps = _steps(rec, spans)
    if not steps:
        raise AtifError(f"{rec.instance_id} run {rec.run}: the record has no messages; ATIF needs at least one step")
    ours: dict[str, Any] = {"record": {k: v for k, v in rec.to_json().items() if k not in _CARRIED_ELSEWHERE}}
    if spans is not None:
        end = max((s["end"] for s in spans), default=0)
        ours["token_tail"] = rec.token_ids[end:]
    elif rec.token_ids:
        ours["tokens"] = {k: list(getattr(rec, k)) for k in _TOKENS}
    extra_calls = rec.model_calls[sum(1 for m in rec.messages if _from_model(m)):]
    if extra_calls:  # calls with no reply message of their own (none today): kept, not dropped
        ours["unmatched_model_calls"] = extra_calls
    traj: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "session_id": f"{rec.instance_id}/run{rec.run}",
        "agent": {"name": AGENT_NAME, "version": _version(), "model_name": rec.model,
                  "extra": {"harness": rec.harness, "harness_hash": rec.harness_hash}},
        "steps": steps,
        "final_metrics": _final_metrics(steps),
        "extra": {EXTRA_KEY: ours},
    }
    return traj


def _from_model(m: dict[str, Any]) -> bool:
    return m.get("role") == "assistant" and m.get("source") == "policy"


def _call_spans(rec: EpisodeRecord) -> list[dict[str, Any]] | None:
    """Per model call, where its prompt ends and what it generated in the flat token stream, when the
    record says so (token mode, calls with ``prompt_tokens``) and the stream rebuilds exactly; else None."""
    if not rec.token_ids or not rec.model_calls or any("prompt_tokens" not in c for c in rec.model_calls):
        return None
    spans = []
    for c in rec.model_calls:
        p, n = int(c["prompt_tokens"]), int(c.get("completion_tokens") or 0)
        gen = n if n and all(m == 1 for m in rec.loss_mask[p:p + n]) else 0
        end = p + gen
        while end < len(rec.loss_mask) and rec.loss_mask[end] == 1:
            end += 1  # the stop token the loop appended after the backend's ids (loss mask 1, no logprob)
        spans.append({"prompt": p, "gen": gen, "end": end})
    ids, mask, lps = _rebuild(rec.token_ids, spans, rec.logprobs, rec.token_ids[max(s["end"] for s in spans):])
    return spans if (ids, mask, lps) == (rec.token_ids, rec.loss_mask, rec.logprobs) else None


def _rebuild(ids: list[int], spans: list[dict[str, Any]], lps: list[float | None], tail: list[int]):
    """The flat stream as ``_stream`` will rebuild it from the exported steps (a check before writing)."""
    out_ids: list[int] = []
    mask: list[int] = []
    out_lps: list[float | None] = []
    for s in spans:
        p, g, e = s["prompt"], s["gen"], s["end"]
        if ids[:len(out_ids)] != out_ids or p < len(out_ids):
            return None
        new = ids[len(out_ids):p]
        out_ids += new + ids[p:e]
        mask += [0] * len(new) + [1] * (e - p)
        out_lps += [None] * len(new) + lps[p:p + g] + [None] * (e - p - g)
    return out_ids + tail, mask + [0] * len(tail), out_lps + [None] * len(tail)


def _steps(rec: EpisodeRecord, spans: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    calls = rec.model_calls
    steps: list[dict[str, Any]] = []
    k = 0
    for m in rec.messages:
        last = steps[-1] if steps else None
        if m.get("source") == "tool" and last is not None and _answers(last, m):
            last.setdefault("observation", {"results": []})["results"].append(_result(m))
            continue
        step = {"step_id": len(steps) + 1, **_message_step(m)}
        if _from_model(m):
            step["llm_call_count"] = 1
            if k < len(calls):
                step["metrics"] = _metrics(calls[k], spans[k] if spans else None, rec)
            k += 1
        elif step["source"] == "agent":
            step["llm_call_count"] = 0  # an assistant message the model did not write
        steps.append(step)
    return steps


def _answers(step: dict[str, Any], m: dict[str, Any]) -> bool:
    """Whether tool result ``m`` belongs to ``step``'s observation: it follows a reply of the agent's
    and, when it names a tool call, names one of that step's."""
    if step["source"] != "agent":
        return False
    call_id = m.get("tool_call_id")
    return call_id is None or call_id in {tc["tool_call_id"] for tc in step.get("tool_calls") or []}


def _meta(m: dict[str, Any], drop: tuple[str, ...]) -> dict[str, Any]:
    meta = {k: v for k, v in m.items() if k not in drop}
    if not isinstance(m.get("content"), str):
        meta["content"] = m.get("content")  # None or a list: ATIF's message is a string; the original rides along
    return meta


def _message_step(m: dict[str, Any]) -> dict[str, Any]:
    role = m.get("role")
    source = "agent" if role == "assistant" else "system" if role == "system" else "user"
    step: dict[str, Any] = {"source": source, "message": m["content"] if isinstance(m.get("content"), str) else ""}
    if role == "assistant" and m.get("tool_calls"):
        step["tool_calls"] = [_tool_call(tc, i) for i, tc in enumerate(m["tool_calls"])]
    if role == "assistant" and isinstance(m.get("reasoning_content"), str):
        step["reasoning_content"] = m["reasoning_content"]
    step["extra"] = _meta(m, ("content", "tool_calls", "reasoning_content") if source == "agent" else ("content",))
    return step


def _tool_call(tc: dict[str, Any], i: int) -> dict[str, Any]:
    fn = tc.get("function") or {}
    raw = fn.get("arguments")
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        args = None
    extra = {k: v for k, v in tc.items() if k not in ("id", "function")}
    extra.update({f"function.{k}": v for k, v in fn.items() if k not in ("name", "arguments")})
    if not isinstance(args, dict) or not isinstance(raw, str) or json.dumps(args) != raw:
        extra["arguments"] = raw  # the model's own text, kept as written (not JSON, not an object, or spaced)
    if not isinstance(tc.get("id"), str):
        extra["id"] = tc.get("id")
    out = {"tool_call_id": tc["id"] if isinstance(tc.get("id"), str) else f"call_{i}",
           "function_name": str(fn.get("name") or ""), "arguments": args if isinstance(args, dict) else {}}
    if extra:
        out["extra"] = extra
    return out


def _result(m: dict[str, Any]) -> dict[str, Any]:
    r: dict[str, Any] = {"content": m["content"] if isinstance(m.get("content"), str) else None}
    if m.get("tool_call_id") is not None:
        r["source_call_id"] = m["tool_call_id"]
    r["extra"] = _meta(m, ("content", "tool_call_id"))
    return r


def _metrics(call: dict[str, Any], span: dict[str, Any] | None, rec: EpisodeRecord) -> dict[str, Any]:
    """A model call as ATIF metrics: counts, token ids (token mode: the prompt it was given and the
    ids it returned, with logprobs; chat mode: the backend's completion ids where it returned them)."""
    metrics: dict[str, Any] = {"completion_tokens": call.get("completion_tokens")}
    extra: dict[str, Any] = {"call": {k: v for k, v in call.items()
                                      if k not in ("completion_tokens", "prompt_tokens", "token_ids")}}
    if span is not None:
        p, g, e = span["prompt"], span["gen"], span["end"]
        metrics["prompt_tokens"] = p
        metrics["prompt_token_ids"] = rec.token_ids[:p]
        if g:
            metrics["completion_token_ids"] = rec.token_ids[p:p + g]
            lps = rec.logprobs[p:p + g]
            if all(isinstance(x, (int, float)) for x in lps):
                metrics["logprobs"] = lps
            elif any(x is not None for x in lps):
                extra["logprobs"] = lps  # some tokens without one: ATIF's list holds floats only
        if e > p + g:
            extra["appended_token_ids"] = rec.token_ids[p + g:e]
    elif call.get("token_ids") is not None:
        metrics["completion_token_ids"] = list(call["token_ids"])  # chat mode: the backend's ids, no prompt ids
    metrics["extra"] = extra
    return metrics


def _final_metrics(steps: list[dict[str, Any]]) -> dict[str, Any]:
    ms = [s["metrics"] for s in steps if s.get("metrics")]
    out: dict[str, Any] = {"total_steps": len(steps)}
    if ms and all(m.get("prompt_tokens") is not None for m in ms):
        out["total_prompt_tokens"] = sum(m["prompt_tokens"] for m in ms)
    if ms and all(m.get("completion_tokens") is not None for m in ms):
        out["total_completion_tokens"] = sum(m["completion_tokens"] for m in ms)
    return out


# ---------------------------------------------------------------- ATIF -> record


def from_atif(traj: dict[str, Any], name: str = "") -> EpisodeRecord:
    """The episode record an ATIF trajectory holds (``name``: where it came from, for errors)."""
    where = name or "ATIF trajectory"
    if not isinstance(traj, dict) or not isinstance(traj.get("steps"), list) or "agent" not in traj:
        raise AtifError(f"{where}: not an ATIF trajectory (needs 'schema_version', 'agent' and 'steps')")
    if not str(traj.get("schema_version", "")).startswith("ATIF-v1."):
        raise AtifError(f"{where}: schema_version {traj.get('schema_version')!r} is not ATIF v1.x")
    ours = (traj.get("extra") or {}).get(EXTRA_KEY) or {}
    messages: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for step in traj["steps"]:
        messages.append(_message(step))
        if step.get("source") == "agent" and step.get("llm_call_count", 1) != 0:
            calls.append(_model_call(step.get("metrics") or {}))
        messages.extend(_observation_message(r) for r in (step.get("observation") or {}).get("results") or [])
    calls += ours.get("unmatched_model_calls") or []
    agent = traj["agent"]
    rec = dict(ours.get("record") or {})
    rec.setdefault("instance_id", traj.get("session_id") or traj.get("trajectory_id") or Path(name).stem or "atif")
    rec.update(model=agent.get("model_name") or "", messages=messages, model_calls=calls,
               harness=(agent.get("extra") or {}).get("harness", agent.get("name", "")),
               harness_hash=(agent.get("extra") or {}).get("harness_hash", ""))
    rec.update(ours["tokens"] if "tokens" in ours else _stream(traj["steps"], ours.get("token_tail") or [], where))
    return EpisodeRecord.from_json(rec)


def _message(step: dict[str, Any]) -> dict[str, Any]:
    meta = dict(step.get("extra") or {})
    role = meta.pop("role", None) or {"agent": "assistant", "system": "system"}.get(step.get("source"), "user")
    m: dict[str, Any] = {"role": role, "content": meta.pop("content") if "content" in meta else _text(step.get("message"))}
    if step.get("tool_calls"):
        m["tool_calls"] = [_openai_call(tc) for tc in step["tool_calls"]]
    if step.get("reasoning_content") is not None:
        m["reasoning_content"] = step["reasoning_content"]
    if "source" not in meta and step.get("source") == "agent" and step.get("llm_call_count", 1) != 0:
        meta.update(source="policy", trainable=True)  # another producer's agent step: the model's reply
    m.update(meta)
    return m


def _text(content: Any) -> str:
    if isinstance(content, list):  # multimodal parts: the text ones
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return content or ""


def _openai_call(tc: dict[str, Any]) -> dict[str, Any]:
    extra = dict(tc.get("extra") or {})
    fn = {"name": tc["function_name"],
          "arguments": extra.pop("arguments") if "arguments" in extra else json.dumps(tc.get("arguments") or {})}
    fn.update({k[len("function."):]: extra.pop(k) for k in list(extra) if k.startswith("function.")})
    out = {"id": extra.pop("id") if "id" in extra else tc["tool_call_id"], "type": extra.pop("type", "function")}
    out["function"] = fn
    out.update(extra)
    return out


def _observation_message(r: dict[str, Any]) -> dict[str, Any]:
    meta = dict(r.get("extra") or {})
    m: dict[str, Any] = {"role": meta.pop("role", "tool"),
                         "content": meta.pop("content") if "content" in meta else _text(r.get("content"))}
    if r.get("source_call_id") is not None:
        m["tool_call_id"] = r["source_call_id"]
    m.update(meta)
    m.setdefault("source", "tool")
    return m


def _model_call(metrics: dict[str, Any]) -> dict[str, Any]:
    call = dict((metrics.get("extra") or {}).get("call") or {})
    call["completion_tokens"] = metrics.get("completion_tokens") or 0
    token_mode = metrics.get("prompt_token_ids") is not None
    call["token_ids"] = None if token_mode else metrics.get("completion_token_ids")
    if token_mode:
        call["prompt_tokens"] = metrics.get("prompt_tokens", len(metrics["prompt_token_ids"]))
    return call


def _stream(steps: list[dict[str, Any]], tail: list[int], where: str) -> dict[str, list]:
    """The flat token stream, loss mask and logprobs from the agent steps' token ids: each prompt
    extends the stream so far (loss mask 0), the ids the model returned follow (mask 1, logprobs)."""
    ids: list[int] = []
    mask: list[int] = []
    lps: list[float | None] = []
    for step in steps:
        metrics = step.get("metrics") or {}
        prompt = metrics.get("prompt_token_ids")
        if prompt is None:
            continue
        if prompt[:len(ids)] != ids:
            raise AtifError(f"{where}: step {step.get('step_id')}'s prompt_token_ids do not extend the earlier "
                            "steps' tokens; the token stream cannot be rebuilt as one sequence")
        gen = metrics.get("completion_token_ids") or []
        extra = metrics.get("extra") or {}
        appended = extra.get("appended_token_ids") or []
        step_lps = metrics.get("logprobs") or extra.get("logprobs") or [None] * len(gen)
        new = prompt[len(ids):]
        ids += new + gen + appended
        mask += [0] * len(new) + [1] * (len(gen) + len(appended))
        lps += [None] * len(new) + list(step_lps) + [None] * len(appended)
    if not ids:
        return {k: [] for k in _TOKENS} if not tail else {"token_ids": tail, "loss_mask": [0] * len(tail),
                                                          "logprobs": [None] * len(tail)}
    return {"token_ids": ids + tail, "loss_mask": mask + [0] * len(tail), "logprobs": lps + [None] * len(tail)}


def read_atif(path: str | Path) -> EpisodeRecord:
    """The episode record of one ATIF trajectory file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise AtifError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise AtifError(f"{path}: not JSON ({exc})") from None
    return from_atif(data, str(path))


def atif_path(out: Path, record: EpisodeRecord) -> Path:
    return out / f"run{record.run}" / f"{record.instance_id}.trajectory.json"


def write_atif(records: Iterable[EpisodeRecord | dict[str, Any]], out: str | Path) -> list[Path]:
    """One ATIF file per record: ``out`` itself when it ends in ``.json`` (one record only), else
    ``<out>/run<k>/<instance_id>.trajectory.json``."""
    recs = [EpisodeRecord.from_json(r) for r in records]
    out = Path(out)
    if not recs:
        raise AtifError("no episode records to export")
    if out.suffix == ".json" and len(recs) > 1:
        raise AtifError(f"--out {out} names one file but there are {len(recs)} episodes; give a directory")
    written = []
    for rec in recs:
        p = out if out.suffix == ".json" else atif_path(out, rec)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(to_atif(rec), indent=1))
        tmp.replace(p)
        written.append(p)
    return written


def records_of(source: str | Path) -> list[EpisodeRecord]:
    """The records of a run directory (its ``trajectories.jsonl``) or of a trajectories file."""
    source = Path(source)
    path = source / "trajectories.jsonl" if source.is_dir() else source
    if not path.is_file():
        raise AtifError(f"{source}: no trajectories.jsonl here" if source.is_dir() else f"{source}: no such file")
    return read_episodes(path)


__all__ = ["ATIF_VERSION", "AtifError", "from_atif", "read_atif", "records_of", "to_atif", "write_atif"]
