"""Building a gateway from a model spec, and evaluating a harness through it on tasks.

``make_gateway(model, options, token_mode)``: a gateway whose sessions call ``model`` (any
``openai:`` or ``hf:`` spec, or a scripted model). With a token mode (a chat template and a
tokenizer, ``ha gateway --tokenizer``; an ``hf:`` model directory brings its own) the sessions are
token-faithful; without, an ``openai:`` client asks the server for ids and logprobs
(``return_token_ids``, ``logprobs``) and records what it returns.

``evaluate_harness(tasks, model, cfg, out_dir)`` writes what ``ha eval`` writes:
``trajectories.jsonl`` (episode records, appended as each ends; a rerun skips the tasks already
there), ``predictions.jsonl``, ``summary.json``; and per task ``harness/<id>/`` (the harness's own
trajectory, log and config).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from ha_envs.task import Task

from ..episode import TokenMode, as_client
from ..llm.options import ModelOptions
from ..records.episode_record import EpisodeRecord, read_episodes
from ..records.log import JsonlLog
from .recorder import TurnRecorder
from .server import Gateway, Session


def _token_mode_for(model: str, token_mode: TokenMode | None) -> TokenMode | None:
    if token_mode is None and isinstance(model, str) and model.startswith("hf:"):
        return TokenMode("auto", model[3:])  # the model directory's own tokenizer and chat template
    return token_mode


def make_gateway(model: Any, options: ModelOptions | None = None, token_mode: TokenMode | None = None,
                 host: str = "127.0.0.1", port: int = 0, on_end: Callable[[Session], None] | None = None) -> Gateway:
    token_mode = _token_mode_for(model, token_mode)
    template, tok = token_mode.resolve() if token_mode is not None else (None, None)
    max_tokens = options.max_tokens if options is not None else None

    def client() -> Any:
        c = as_client(model, options)
        cfg = getattr(c, "config", None)
        if template is None and cfg is not None and hasattr(cfg, "return_token_ids"):
            cfg.return_token_ids = True  # chat mode: keep what the server can say of its tokens
            cfg.logprobs = True
        return c

    name = model if isinstance(model, str) else getattr(model, "name", type(model).__name__)
    served = name.split(":", 1)[1].split("@", 1)[0] if name.startswith(("openai:", "hf:")) else name
    context = token_mode.context_tokens if token_mode is not None else None
    return Gateway(client, lambda c: TurnRecorder(c, template, tok, max_tokens=max_tokens, context_tokens=context),
                   served.strip("/") or name,
                   host=host, port=port, on_end=on_end)


def session_record(session: Session, model: str, harness: str = "external") -> EpisodeRecord:
    """A served session (``ha gateway serve``) as an episode record: no task, no grade; masked when
    the model server failed under it."""
    rec = session.record()
    masked = bool(session.model_error)
    return EpisodeRecord(instance_id=session.id, model=model, harness=harness, termination="model_error" if masked
                         else None, mask_sample=masked, error=session.model_error, turns=len(rec["model_calls"]),
                         messages=rec["messages"], model_calls=rec["model_calls"], token_ids=rec["token_ids"],
                         loss_mask=rec["loss_mask"], logprobs=rec["logprobs"], token_error=rec["token_error"])


def evaluate_harness(tasks: list[Task], model: str, cfg: Any, out_dir: "str | Path", *, options: ModelOptions | None = None,
                     token_mode: TokenMode | None = None, workers: int = 1,
                     progress: Callable[[EpisodeRecord], None] | None = None) -> dict[str, Any]:
    """Every task once through mini-swe-agent behind a gateway (``cfg``: ``msa.MsaConfig``); the summary."""
    from ha_agents.runs.evaluate import summarize, write_predictions

    from .msa import gateway_episode

    version = cfg.check()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    harness = cfg.harness(version)
    log = JsonlLog(out / "trajectories.jsonl")
    done = {iid for iid, _ in log.done()}
    todo = [t for t in tasks if t.instance_id not in done]
    with make_gateway(model, options, token_mode) as gw:
        def one(task: Task) -> EpisodeRecord:
            record = gateway_episode(gw, task, cfg, harness, model, out / "harness" / task.instance_id)
            log.append(record.to_json())
            if progress is not None:
                progress(record)
            return record

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            list(pool.map(one, todo))
    records = [r for r in read_episodes(out / "trajectories.jsonl") if r.instance_id in {t.instance_id for t in tasks}]
    write_predictions(records, out, 1, model)
    summary = summarize(records, [t.instance_id for t in tasks], 1, model, harness.name, harness.hash)
    body = dict(summary.to_json(), gateway={"harness": harness.name, "step_limit": cfg.step_limit,
                                            "sandbox": cfg.sandbox, "token_mode": None if token_mode is None
                                            else vars(token_mode), "model_options": None if options is None
                                            else options.record()})
    (out / "summary.json").write_text(json.dumps(body, indent=2) + "\n")
    return body
