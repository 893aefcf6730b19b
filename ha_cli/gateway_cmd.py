"""``ha gateway serve`` and ``ha gateway eval``: an OpenAI-compatible endpoint in front of a model
server that records token-faithful episodes of a harness the user already has."""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from ha_cli.model_check import positive_int
from ha_cli.sampling import add_max_tokens, model_options
from ha_cli.selection import add_source, select_tasks


def _token_mode(args: argparse.Namespace):
    if not args.tokenizer:
        return None
    from ha_agents.episode import TokenMode

    mode = TokenMode(args.template, args.tokenizer, args.context_tokens)
    template, _ = mode.resolve()  # a bad tokenizer or template fails here, before anything is served
    print(f"token mode: template {getattr(template, 'name', template)}, tokenizer {args.tokenizer}", file=sys.stderr)
    return mode


def _check_model(model: str) -> None:
    from ha_agents.llm.registry import check_model_spec

    check_model_spec(model)


def cmd_serve(args: argparse.Namespace) -> int:
    from ha_agents.gateway.run import make_gateway, session_record
    from ha_agents.records.log import JsonlLog

    _check_model(args.model)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = JsonlLog(out / "trajectories.jsonl")

    def on_end(session) -> None:
        log.append(session_record(session, args.model, args.harness_name).to_json())

    gw = make_gateway(args.model, model_options(args), _token_mode(args), host=args.host, port=args.port, on_end=on_end)
    with gw:
        print(f"ha gateway: serving {args.model} at {gw.url}; open a session with POST {gw.url}/sessions, point the "
              f"harness at its base_url ({gw.url}/s/<session>/v1), end it with POST .../s/<session>/end; records in "
              f"{out / 'trajectories.jsonl'}", flush=True)
        if args.ready_file:
            Path(args.ready_file).write_text(gw.url + "\n")
        threading.Event().wait()  # until SIGINT / SIGTERM
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from ha_agents.gateway.msa import MsaConfig
    from ha_agents.gateway.run import evaluate_harness

    if args.agent != "mini-swe-agent":
        raise ValueError(f"--agent {args.agent}: only mini-swe-agent is supported")
    _check_model(args.model)
    tasks = select_tasks(args)
    from ha_agents.gateway.msa import MSA_VENV

    cfg = MsaConfig(venv=args.msa_venv or MSA_VENV, step_limit=args.step_limit, command_timeout_s=args.command_timeout,
                    episode_timeout_s=args.episode_timeout, sandbox=args.sandbox)

    def progress(r) -> None:
        print(f"{r.instance_id}: {r.termination} ({'resolved' if r.resolved else 'unresolved'}"
              f"{', masked: ' + r.error[:200] if r.mask_sample else ''})", file=sys.stderr, flush=True)

    summary = evaluate_harness(tasks, args.model, cfg, args.out, options=model_options(args),
                               token_mode=_token_mode(args), workers=args.workers, progress=progress)
    print(f"| harness | model | pass@1 |\n|---|---|---|\n| {summary['harness']} ({summary['harness_hash']}) | "
          f"{args.model} | {100 * summary['mean_pass_at_1']:.1f} |\n\n{summary['n_tasks']} tasks; {summary['masked']} "
          f"episodes masked (infrastructure failures, counted unresolved).")
    print(f"\noutputs in {Path(args.out).resolve()}: trajectories.jsonl, predictions.jsonl, summary.json, harness/<id>/")
    return 0


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="the model server behind the gateway: openai:NAME@URL | hf:PATH "
                   "(or a scripted model name)")
    p.add_argument("--tokenizer", default="", help="token mode: tokenizer.json (or a model dir); the gateway renders "
                   "the conversation with --template and records prompt ids, generated ids, logprobs and the loss mask "
                   "(an hf: model uses its own directory by default)")
    p.add_argument("--template", default="auto", help="token mode: auto, model, chatml, hermes")
    p.add_argument("--context-tokens", type=positive_int, default=65536, help="token mode: context budget")
    m = p.add_argument_group("model options")
    m.add_argument("--temperature", type=float, default=None)
    m.add_argument("--top-p", type=float, default=None)
    add_max_tokens(m, None, "cap per model call (the harness's own max_tokens is honoured when smaller)")
    m.add_argument("--model-kwargs", default=None, metavar="FILE", help="JSON/YAML mapping of further request fields")
    m.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="NAME")


def register(sub: argparse._SubParsersAction) -> None:
    gw = sub.add_parser("gateway", help="an OpenAI-compatible endpoint that records a user's own harness "
                        "token-faithfully; evaluate it on tasks").add_subparsers(dest="gateway_command", required=True)
    p = gw.add_parser("serve", help="serve the gateway; each ended session is one record in OUT/trajectories.jsonl")
    _model_args(p)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8100)
    p.add_argument("--out", default="runs/gateway", help="where ended sessions are written (trajectories.jsonl)")
    p.add_argument("--harness-name", default="external", help="the harness field of the records")
    p.add_argument("--ready-file", default=None, help="write the gateway's URL here once it listens")
    p.set_defaults(func=cmd_serve)

    p = gw.add_parser("eval", help="run mini-swe-agent (its own venv) behind the gateway on tasks, in this library's "
                      "sandbox, graded by this library's grader; writes what `ha eval` writes")
    add_source(p)
    _model_args(p)
    p.add_argument("--agent", default="mini-swe-agent", help="the harness (mini-swe-agent 2.4.x)")
    p.add_argument("--msa-venv", default=None, help="mini-swe-agent's venv (default $HA_MSA_VENV, else .venv-msa; "
                   "`make msa-venv` creates it)")
    p.add_argument("--sandbox", choices=["local", "docker"], default="local")
    p.add_argument("--step-limit", type=positive_int, default=60, help="mini-swe-agent's step limit (model calls); "
                   "reaching it ends the episode max_turns (graded as it stands)")
    p.add_argument("--command-timeout", type=float, default=120.0, help="seconds per command in the sandbox")
    p.add_argument("--episode-timeout", type=float, default=1800.0, help="wall-clock seconds per episode "
                   "(agent_timeout, graded as it stands)")
    p.add_argument("--workers", type=positive_int, default=1, help="episodes in flight at once")
    p.add_argument("--out", default="runs/gateway-eval", help="output directory; a rerun skips the tasks already in "
                   "its trajectories.jsonl")
    p.set_defaults(func=cmd_eval)
