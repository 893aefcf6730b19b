"""``ha eval``, ``ha grade``, ``ha compare``, ``ha show-trajectory``: running, grading and reading episodes."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ha_cli.selection import add_source as _add_source
from ha_cli.selection import select_tasks as _tasks
from ha_cli.harness_cmd import _spec
from ha_cli.model_check import add_model_fault_args, add_preflight_arg, positive_int, preflight
from ha_cli.sampling import add_max_tokens, model_options


GOLD_POLICIES = ("oracle", "tool_user", "coin", "hasty", "hasty_prompt", "coin_prompt", "tool_coin")
"""Scripted models that play a task's gold patch (``ha_agents/llm/policies.py``)."""


def _harbor_oracles(tasks: list, model: str, sandbox: str) -> list:
    """Harbor tasks with their gold patch made from ``solution/solve.sh`` (``ha_envs/harbor/oracle.py``)
    when the model plays gold patches; every task as it is otherwise."""
    if model.partition(":")[0] not in GOLD_POLICIES or not any(t.benchmark == "harbor" and not t.gold_patch for t in tasks):
        return tasks
    from ha_envs.grading.sandboxes import docker_sandbox_factory, local_sandbox_factory
    from ha_envs.harbor.oracle import with_oracle

    factory = docker_sandbox_factory() if sandbox == "docker" else local_sandbox_factory()
    return [with_oracle(t, factory) for t in tasks]


def cmd_eval(args: argparse.Namespace) -> int:
    from ha_agents.runs.evaluate import evaluate
    from ha_agents.runs.identity import eval_identity

    spec = _spec(args.harness)
    if args.without:
        spec = spec.without(*args.without)
    tasks = _tasks(args)
    from ha_agents.episode import EpisodeConfig, TokenMode

    token_mode = None
    if args.tokenizer:
        token_mode = TokenMode.of_model(args.tokenizer, args.context_tokens, args.template)
        template, _ = token_mode.resolve()
        print(f"token mode: template {getattr(template, 'name', template)}, tokenizer {args.tokenizer}", file=sys.stderr)
    options = model_options(args)
    from ha_envs.grading.sandboxes import shared_loopback_note

    note = shared_loopback_note(args.sandbox, args.workers, tasks)
    if note:
        print(f"ha eval: {note}", file=sys.stderr)
    model = args.model or args.policy or "oracle"
    tasks = _harbor_oracles(tasks, model, args.sandbox)
    if args.runs > 1 and not args.temperature and model.startswith(("openai:", "hf:")):
        print(f"warning: --runs {args.runs} at temperature {args.temperature or 0} (greedy): the runs will be near "
              "copies of each other; pass --temperature (and --seed for reproducible runs)", file=sys.stderr)
    config = EpisodeConfig.create(spec, sandbox=args.sandbox, token_mode=token_mode, model_options=options,
                                  seed=args.seed, max_turns=args.max_turns, env_placement=args.env_placement)
    out = _claim_out(args, eval_identity(tasks, model, config, args.runs))
    preflight(args, [("--model", model)], options, tasks=tasks, token_mode=token_mode)
    before = _masked_and_pass(out, tasks, args.runs) if args.retry_masked else None
    summary = evaluate(tasks, model, config, runs=args.runs, out_dir=out, workers=args.workers,
                       executor=args.executor, progress_bar=not args.no_progress, retry_masked=args.retry_masked,
                       max_model_errors=args.max_model_errors)
    print(summary.markdown())
    if before is not None:
        from ha_agents.runs.retry import HISTORY, change_line

        print(change_line(before[2], (before[0], summary.masked), (before[1], summary.mean_pass_at_1), out / HISTORY))
    print(f"\noutputs in {out.resolve()}: trajectories.jsonl, predictions.jsonl, summary.json, "
          f"harness.yaml (hash {summary.harness_hash}), run-identity.json")
    from ha_envs.grading.faults import fault_summary, network_note, records_under
    records = records_under(out / "trajectories.jsonl")
    print(fault_summary(records) + network_note(records), end="", file=sys.stderr)
    return 0


def _claim_out(args: argparse.Namespace, identity) -> Path:
    """``--out`` when it is free or holds this run; with ``--new-out`` the next free ``OUT-N``."""
    from ha_agents.runs.identity import claim

    if args.retry_masked and args.new_out:
        raise ValueError("--retry-masked continues the run in --out and --new-out starts another: pass one of them")
    out = claim(args.out, identity, new_out=args.new_out)
    if out != Path(args.out):
        print(f"{args.out} holds another run: writing to {out}", file=sys.stderr)
    return out


def _masked_and_pass(out: Path, tasks: list, runs: int) -> tuple[int, float, int]:
    """(masked, mean pass@1, masked episodes to retry) of the run in ``out`` before a retry."""
    from ha_agents.records.episode_record import read_episodes
    from ha_agents.runs.evaluate import summarize
    from ha_agents.runs.retry import masked_episodes

    records = read_episodes(out / "trajectories.jsonl")
    ids = [t.instance_id for t in tasks]
    s = summarize(records, ids, runs, "", "")
    return s.masked, s.mean_pass_at_1, sum(map(masked_episodes(ids, runs), records))


def _graded(out: Path, tasks: list, predictions: dict) -> tuple[int, float]:
    """(failed gradings, resolved fraction) of the predicted instances already graded in ``out``."""
    from ha_agents.runs.grade import _safe

    bodies = [json.loads(p.read_text())[t.instance_id] for t in tasks if t.instance_id in predictions
              for p in [out / "logs" / _safe(t.instance_id) / "report.json"] if p.is_file()]
    return sum(b["status"] == "error" for b in bodies), sum(bool(b["resolved"]) for b in bodies) / max(1, len(bodies))


def cmd_grade(args: argparse.Namespace) -> int:
    from ha_agents.runs.grade import grade_predictions, load_predictions
    from ha_envs.grading.grader import Grader
    from ha_envs.grading.sandboxes import shared_loopback_note

    predictions = load_predictions(args.predictions)
    tasks = _tasks(args)
    unknown = sorted(set(predictions) - {t.instance_id for t in tasks})
    if unknown and not args.instances:
        print(f"note: {len(unknown)} predicted instance(s) are not in the chosen tasks (listed in report.json)",
              file=sys.stderr)
    note = shared_loopback_note(args.sandbox, args.workers, [t for t in tasks if t.instance_id in predictions])
    if note:
        print(f"ha grade: {note}", file=sys.stderr)
    factory = None
    if args.sandbox == "docker":
        from ha_envs.grading.sandboxes import docker_sandbox_factory

        factory = docker_sandbox_factory()
    grader = Grader(factory, verdict_rules=args.verdict_rules)

    def progress(iid: str, body: dict) -> None:
        verdict = body["status"] + (f" (flags: {', '.join(body['flags'])})" if body["flags"] else "")
        if body["status"] in ("patch_failed", "patch_too_large", "patch_refused", "error") and body.get("error"):
            verdict += ": " + " / ".join(body["error"].strip().splitlines()[:3])
        if body.get("network_excluded"):
            verdict += (f" ({len(body['network_excluded'])} PASS_TO_PASS test(s) left out: they need a network this "
                        "machine lacks)")
        print(f"{iid}: {verdict}", file=sys.stderr, flush=True)

    from ha_agents.runs.identity import grade_identity

    out = _claim_out(args, grade_identity(tasks, predictions, sandbox=args.sandbox, verdict_rules=args.verdict_rules))
    before = _graded(out, tasks, predictions) if args.retry_masked else None
    retried = 0
    if args.retry_masked:
        from ha_agents.runs.retry import set_aside_gradings

        retried = set_aside_gradings(out, [t.instance_id for t in tasks if t.instance_id in predictions])
    run = grade_predictions(tasks, predictions, out, grader=grader, workers=args.workers, progress=progress)
    print(run.markdown())
    if before is not None:
        from ha_agents.runs.retry import HISTORY, change_line

        total = max(1, len(run.resolved) + len(run.unresolved) + len(run.empty) + len(run.errors))
        print(change_line(retried, (before[0], len(run.errors)), (before[1], len(run.resolved) / total), out / HISTORY,
                          what="failed grading(s)"))
    if run.skipped:
        print(f"{len(run.skipped)} instance(s) already graded in {out} were kept")
    print(f"\nreport: {out / 'report.json'}; per instance: {out / 'logs'}/<id>/")
    return 0

def cmd_compare(args: argparse.Namespace) -> int:
    from ha_agents.runs.compare import compare

    result = compare(args.run_a, args.run_b, samples=args.samples, seed=args.seed)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
        (out / "compare.md").write_text(result.markdown() + "\n")
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.markdown())
    return 0


def cmd_show_trajectory(args: argparse.Namespace) -> int:
    from ha_agents.records.export import load_trajectory, render_text
    from ha_agents.records.viewer import render_html

    rec = load_trajectory(args.file, instance_id=args.instance, run=args.run)
    if args.html:
        tokenizer = None
        if args.tokenizer:
            from ha_agents.chat.tokens import load_tokenizer

            tokenizer = load_tokenizer(str(Path(args.tokenizer).resolve()))
        Path(args.html).write_text(render_html(rec, tokenizer=tokenizer))
        print(f"wrote {args.html}")
    else:
        print(render_text(rec))
    return 0


def _add_out_args(p: argparse.ArgumentParser, default: str, retry_help: str) -> None:
    p.add_argument("--out", default=default, help="output directory; a rerun of the same run resumes it (more --runs "
                   "or tasks extend it), any other run there is refused with the differences named (run-identity.json)")
    p.add_argument("--new-out", action="store_true", help="when --out holds another run, write to the first of "
                   "OUT-2, OUT-3, ... that is free or holds this run, instead of refusing")
    p.add_argument("--retry-masked", action="store_true", help=retry_help + "; their old records go to "
                   "masked-history.jsonl in --out; prints the masked count and pass@1 before -> after")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="run a model under a harness and report pass@1")
    _add_source(p)
    p.add_argument("--model", default=None,
                   help="oracle | null | openai:NAME@URL | replay:TRAJECTORIES.jsonl | hf:PATH (default oracle)")
    p.add_argument("--policy", default=None, help="old name of --model (kept as an alias)")
    p.add_argument("--harness", default="h0", help="preset name (see `ha harness list`) or a YAML/JSON spec path")
    p.add_argument("--without", action="append", default=[], metavar="COMPONENT",
                   help="ablation: drop this tool or hook from the harness (repeatable)")
    p.add_argument("--sandbox", default="local")
    p.add_argument("--runs", type=positive_int, default=1)
    p.add_argument("--workers", type=positive_int, default=1, help="episodes in flight at once")
    p.add_argument("--executor", choices=["threads", "ray"], default="threads",
                   help="threads on this machine, or Ray tasks (RAY_ADDRESS, else a local Ray)")
    p.add_argument("--env-placement", choices=["local", "ray"], default="local",
                   help="where each episode's env and sandbox run: here, or a Ray actor on a node with sandbox slots "
                        "(RAY_ADDRESS, else a local Ray); the model is called from here")
    p.add_argument("--max-turns", type=positive_int, default=None, help="override the harness's max turns")
    p.add_argument("--tokenizer", default="", help="token mode: tokenizer.json (or a model dir); records ids, "
                   "loss mask and logprobs as the model produced them")
    p.add_argument("--template", default="auto", help="token mode: auto (the model's own chat template when the "
                   "tokenizer dir has one, else chatml), model, chatml, hermes")
    p.add_argument("--context-tokens", type=positive_int, default=None,
                   help="token mode: context budget (default: the tokenizer directory's model positions, at most "
                   "65536; more than the model's positions is refused)")
    m = p.add_argument_group("model options (recorded in summary.json)")
    m.add_argument("--temperature", type=float, default=None, help="sampling temperature (default: the backend's, 0)")
    m.add_argument("--top-p", type=float, default=None)
    add_max_tokens(m, None, "cap per model call (token mode: never more than the context left)")
    m.add_argument("--seed", type=int, default=None, help="seed every episode's sampling (per task, run and turn)")
    m.add_argument("--model-kwargs", default=None, metavar="FILE", help="JSON/YAML mapping of further request fields")
    m.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="NAME",
                   help="environment variable holding the API key (default OPENAI_API_KEY)")
    add_model_fault_args(m)
    add_preflight_arg(m)
    _add_out_args(p, "runs/eval", "run the masked episodes (model, sandbox or grading faults) of the run in --out "
                  "again, with the seeds they had")
    p.add_argument("--no-progress", action="store_true", help="no progress on stderr (by default: a bar redrawn in "
                   "place on a terminal, else one line per finished episode with rate and ETA)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("grade", help="grade a SWE-bench predictions file (any agent's) with hidden tests")
    _add_source(p)
    p.add_argument("--predictions", required=True, help="predictions.jsonl (instance_id, model_name_or_path, model_patch)")
    p.add_argument("--sandbox", choices=["local", "docker"], default="local")
    p.add_argument("--workers", type=positive_int, default=1)
    _add_out_args(p, "runs/grade", "grade again the instances whose grading failed (status error) in --out")
    p.add_argument("--verdict-rules", choices=["auto", "swebench", "harnessadapt"], default="auto",
                   help="auto (default): the installed swebench's own grading functions for SWE-bench rows, ours "
                   "(stricter: F2P must be PASSED, a missing test fails) for the rest; or one of them for every "
                   "task. Pro and R2E-Gym keep their harness's rule. report.json records the rule and version")
    p.set_defaults(func=cmd_grade)
    p = sub.add_parser("compare", help="paired difference of two eval runs with a 95%% bootstrap CI")
    p.add_argument("run_a", help="an ha eval output directory, or replicates DIR1,DIR2,... (one per seed)")
    p.add_argument("run_b", help="the same for B; replicates pair by position with A's")
    p.add_argument("--samples", type=positive_int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", help="also write compare.json and compare.md here")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("show-trajectory", help="render one episode (text, or --html OUT)")
    p.add_argument("file", help="trajectories.jsonl (or a traj.json)")
    p.add_argument("--instance", help="which episode (default: the first)")
    p.add_argument("--run", type=int, default=None)
    p.add_argument("--html", metavar="OUT")
    p.add_argument("--tokenizer", default="", help="with --html: decode the token view of a token-mode record with this "
                   "tokenizer.json or model dir (the one `ha eval --tokenizer` used); without it, token ids")
    p.set_defaults(func=cmd_show_trajectory)
