"""The ``ha`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

from ha_cli.selection import add_source as _add_source
from ha_cli.selection import select_tasks as _tasks
from ha_envs.sandbox.base import SandboxError
from ha_envs.task import TaskError


def cmd_tasks_list(args: argparse.Namespace) -> int:
    tasks = _tasks(args)
    if args.json:
        print(json.dumps([{"instance_id": t.instance_id, "language": t.language, "difficulty": t.difficulty,
                           "fail_to_pass": len(t.tests.fail_to_pass), "pass_to_pass": len(t.tests.pass_to_pass)}
                          for t in tasks], indent=2))
        return 0
    print(f"{'instance_id':34} {'language':11} {'difficulty':10} {'F2P':>4} {'P2P':>4}")
    for t in tasks:
        print(f"{t.instance_id:34} {t.language:11} {t.difficulty:10} {len(t.tests.fail_to_pass):>4} "
              f"{len(t.tests.pass_to_pass):>4}")
    print(f"{len(tasks)} tasks")
    return 0


def cmd_tasks_validate(args: argparse.Namespace) -> int:
    from ha_envs.grading.grader import Grader, docker_sandbox_factory, local_sandbox_factory, shared_loopback_note
    from ha_envs.validate import read_results, stratified_sample, summary_markdown, validate_tasks

    if args.retries < 0:
        print(f"ha tasks validate: error: --retries must be 0 or more, not {args.retries}", file=sys.stderr)
        return 2
    network = {"official": None, "on": True, "off": False}[args.network]
    factory = docker_sandbox_factory(network=network) if args.sandbox == "docker" else local_sandbox_factory(network=network)
    tasks = _tasks(args)
    if args.sample:
        tasks = stratified_sample(tasks, args.sample, args.seed)
    done = read_results(Path(args.results)) if args.results else {}
    todo = [t for t in tasks if t.instance_id not in done]
    note = shared_loopback_note(args.sandbox, args.workers, todo, network)
    if note:
        print(f"ha tasks validate: {note}", file=sys.stderr)
    if len(todo) < len(tasks):
        print(f"{len(tasks) - len(todo)} of {len(tasks)} already in {args.results}; validating the other {len(todo)}",
              file=sys.stderr)
    sink = None
    if args.results:
        Path(args.results).parent.mkdir(parents=True, exist_ok=True)
        sink = open(args.results, "a")

    finished = [len(tasks) - len(todo)]  # of this selection (the file may hold other instances too)

    def record(r) -> None:
        verdict = "ok  " if r.ok else f"FAIL ({r.cause})"
        finished[0] += 1
        print(f"[{finished[0]}/{len(tasks)}] {verdict} {r.instance_id} {r.seconds:.0f}s", file=sys.stderr, flush=True)
        done[r.instance_id] = r
        if sink is not None:
            sink.write(json.dumps(r.to_dict()) + "\n")
            sink.flush()

    try:
        validate_tasks(todo, workers=args.workers, grader=Grader(factory), on_result=record, retries=args.retries)
    finally:
        if sink is not None:
            sink.close()
    results = [done[t.instance_id] for t in tasks]
    if args.markdown:
        title = f"ha tasks validate ({len(results)} instances, {args.sandbox} sandbox)"
        Path(args.markdown).write_text(summary_markdown(results, title))
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        for r in results:
            verdict = "ok  " if r.ok else "FAIL"
            cause = f" cause={r.cause}" if r.cause else ""
            print(f"{verdict} {r.instance_id:34} gold={r.gold_status:11} empty={r.empty_status:11} {r.seconds:6.1f}s{cause}")
            for p in r.problems + r.environment.get("problems", []):
                print(f"     - {p}")
    from ha_envs.grading.faults import fault_summary
    print(fault_summary(r.to_dict() for r in results), end="", file=sys.stderr)
    bad = [r.instance_id for r in results if not r.ok]
    print(f"{len(results) - len(bad)}/{len(results)} tasks valid" + (f"; invalid: {', '.join(bad)}" if bad else ""),
          file=sys.stderr)
    return 1 if bad else 0


def _spec(ref: str):
    from ha_cli.train_cmd import resolve_harness

    return resolve_harness(ref)


def cmd_harness_list(args: argparse.Namespace) -> int:
    from ha_envs.harness import preset_names

    rows = [_spec(n) for n in preset_names()]
    if args.json:
        print(json.dumps([{"name": s.name, "hash": s.hash, "tools": s.tool_names, "hooks": s.hook_names,
                           "description": s.description} for s in rows], indent=2))
        return 0
    print(f"{'name':10} {'hash':16} {'tools':>5} {'hooks':>5}  description")
    for s in rows:
        print(f"{s.name:10} {s.hash:16} {len(s.tools):>5} {len(s.hooks):>5}  {_clip(s.description, 90)}")
    return 0


def _clip(text: str, n: int) -> str:
    """``text`` on one line, cut to ``n`` characters with an ellipsis when longer."""
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"


def cmd_harness_show(args: argparse.Namespace) -> int:
    from ha_envs.harness.spec import hook_of, tool_of

    spec = _spec(args.harness)
    if args.without:
        spec = spec.without(*args.without)
    tools = [{"name": c.name, "options": opts, "schema": tool.openai_schema(), "kind": "script" if c.define else "catalogue"}
             for c in spec.tools for tool, opts in [tool_of(c)]]
    hooks = [{"name": c.name, "points": list(h.points), "params": c.definition("hook") if c.define else h.params,
              "kind": "rule" if c.define else "catalogue"} for c in spec.hooks for h in [hook_of(c)]]
    if args.json:
        print(json.dumps({"name": spec.name, "hash": spec.hash, "description": spec.description,
                          "parser": spec.to_dict()["parser"], "limits": spec.to_dict()["limits"],
                          "tools": tools, "hooks": hooks, "spec": spec.to_dict()}, indent=2))
        return 0
    print(f"harness {spec.name}  hash {spec.hash}\n{spec.description}\n")
    p = spec.parser
    print(f"parser: {p.format} (multi_call={p.multi_call}, max_format_errors={p.max_format_errors})")
    print("limits: " + ", ".join(f"{k}={v}" for k, v in spec.to_dict()["limits"].items()))
    print(f"\ntools ({len(tools)}):")
    for t in tools:
        fn = t["schema"]["function"]
        params = fn["parameters"].get("properties", {})
        req = set(fn["parameters"].get("required", []))
        sig = ", ".join(f"{k}{'' if k in req else '?'}: {v.get('type', 'any')}" for k, v in params.items())
        opts = f"  options {json.dumps(t['options'])}" if t["options"] else ""
        print(f"  {t['name']}({sig}){opts}\n      {fn['description']}")
    print(f"\nhooks ({len(hooks)}, run in this order at each point):")
    for h in hooks:
        print(f"  {h['name']} [{', '.join(h['points'])}]")
        for k, v in h["params"].items():
            print(f"      {k} = {json.dumps(v)}")
    return 0


def cmd_harness_schema(args: argparse.Namespace) -> int:
    from ha_envs.harness.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def cmd_harness_diff(args: argparse.Namespace) -> int:
    from ha_envs.harness import diff

    a, b = _spec(args.a), _spec(args.b)
    changes = diff(a, b)
    print(f"{a.name} ({a.hash}) -> {b.name} ({b.hash})")
    print("\n".join(changes) if changes else "no behavioural difference")
    return 0


def cmd_images_build(args: argparse.Namespace) -> int:
    from ha_envs.sandbox.docker import docker_client
    from ha_envs.sandbox.images import build_base_image, snapshot_image

    client = docker_client()
    print(f"base image: {build_base_image(client, log=sys.stderr.buffer)}", flush=True)
    if args.base_only:
        return 0
    for task in _tasks(args):
        tag, _ = snapshot_image(client, task)
        print(f"{task.instance_id}: {tag}", flush=True)
    return 0


def _print_images(verb: str, removed: list[dict], kept: list[dict]) -> None:
    """The lines of an image prune (``prune_images``'s removed and kept)."""
    for o in removed:
        print(f"{verb} image {(o['tags'] or [o['id']])[0]}: made from {', '.join(o['gone'])}, gone")
    for o in kept:
        print(f"kept image {(o['tags'] or [o['id']])[0]}: {o['reason']}")


def cmd_images_prune(args: argparse.Namespace) -> int:
    from ha_envs.sandbox.cache import human
    from ha_envs.sandbox.docker import docker_client
    from ha_envs.sandbox.images import prune_images

    removed, kept = prune_images(docker_client(), dry_run=args.dry_run)
    if args.json:
        print(json.dumps({"removed": removed, "kept": kept, "dry_run": args.dry_run}, indent=2))
        return 0
    verb = "would remove" if args.dry_run else "removed"
    _print_images(verb, removed, kept)
    print(f"{verb} {len(removed)} images, {len(kept)} kept (their sizes add to "
          f"{human(sum(o['bytes'] for o in removed))}; layers shared with other images stay)")
    return 0


def cmd_cache_list(args: argparse.Namespace) -> int:
    from ha_envs.sandbox.cache import human, scan

    entries = scan(Path(args.cache_dir) if args.cache_dir else None)
    if args.json:
        print(json.dumps([e.to_dict() for e in entries], indent=2))
        return 0
    now = time.time()
    for e in sorted(entries, key=lambda e: (e.kind, e.path)):
        age = (now - e.used) / 86400
        print(f"{e.kind:<13} {e.status:<8} {human(e.bytes):>9}  used {age:5.1f} d ago  {Path(e.path).name}"
              + (f"  ({e.why})" if e.why else ""))
    by = {}
    for e in entries:
        by.setdefault(e.status, []).append(e)
    print(f"{len(entries)} entries, {human(sum(e.bytes for e in entries))}: "
          + ", ".join(f"{k} {len(v)} ({human(sum(e.bytes for e in v))})" for k, v in sorted(by.items())))
    return 0


def cmd_cache_prune(args: argparse.Namespace) -> int:
    from ha_envs.sandbox.cache import human, prune

    if not (args.stale or args.partial or args.unused_days is not None or args.max_gb is not None):
        raise ValueError("say what to prune: --stale, --partial, --unused-days D and/or --max-gb G")
    client = None
    if args.images:
        from ha_envs.sandbox.docker import docker_client

        client = docker_client()  # before anything is removed: no daemon is an error, not half a prune
    res = prune(Path(args.cache_dir) if args.cache_dir else None, stale=args.stale, partial=args.partial,
                unused_days=args.unused_days,
                max_bytes=None if args.max_gb is None else int(args.max_gb * 1024 ** 3), dry_run=args.dry_run)
    images: tuple[list[dict], list[dict]] = ([], [])
    if client is not None:
        from ha_envs.sandbox.images import prune_images

        images = prune_images(client, dry_run=args.dry_run, gone=tuple(e.path for e in res.removed))
    if args.json:
        out = dict(res.to_dict(), dry_run=args.dry_run)
        if client is not None:
            out["images"] = {"removed": images[0], "kept": images[1]}
        print(json.dumps(out, indent=2))
        return 0
    verb = "would remove" if args.dry_run else "removed"
    for e in res.removed:
        print(f"{verb} {e.kind} {Path(e.path).name} ({human(e.bytes)}, {e.status})")
    for e, why in res.skipped:
        print(f"kept {e.kind} {Path(e.path).name}: {why}")
    print(f"{verb} {len(res.removed)} entries, {human(res.freed_bytes)}; {len(res.kept)} kept "
          f"({human(sum(e.bytes for e in res.kept))})")
    _print_images(verb, *images)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from ha_agents.evaluate import evaluate

    spec = _spec(args.harness)
    if args.without:
        spec = spec.without(*args.without)
    tasks = _tasks(args)
    from ha_agents.episode import TokenMode

    token_mode = None
    if args.tokenizer:
        token_mode = TokenMode(args.template, args.tokenizer, args.context_tokens, args.max_new_tokens)
        template, _ = token_mode.resolve()  # a bad tokenizer or template fails here, before any episode
        print(f"token mode: template {getattr(template, 'name', template)}, tokenizer {args.tokenizer}", file=sys.stderr)
    from ha_agents.llm.options import ModelOptions, load_model_kwargs

    options = ModelOptions(temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens,
                           extra=load_model_kwargs(args.model_kwargs) if args.model_kwargs else {},
                           api_key_env=args.api_key_env)
    from ha_envs.grading.grader import shared_loopback_note

    note = shared_loopback_note(args.sandbox, args.workers, tasks)
    if note:
        print(f"ha eval: {note}", file=sys.stderr)
    model = args.model or args.policy or "oracle"
    if args.runs > 1 and not args.temperature and model.startswith(("openai:", "hf:")):
        print(f"warning: --runs {args.runs} at temperature {args.temperature or 0} (greedy): the runs will be near "
              "copies of each other; pass --temperature (and --seed for reproducible runs)", file=sys.stderr)
    summary = evaluate(tasks, policy=model, harness=spec, runs=args.runs, out_dir=args.out,
                       token_mode=token_mode, model_options=options, seed=args.seed,
                       sandbox=args.sandbox, workers=args.workers, progress_bar=not args.no_progress,
                       executor=args.executor,
                       env_kwargs={"max_turns": args.max_turns})
    print(summary.markdown())
    print(f"\noutputs in {Path(args.out).resolve()}: trajectories.jsonl, predictions.jsonl, summary.json, "
          f"harness.yaml (hash {summary.harness_hash})")
    from ha_envs.grading.faults import fault_summary, records_under
    print(fault_summary(records_under(Path(args.out) / "trajectories.jsonl")), end="", file=sys.stderr)
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    from ha_agents.grade import grade_predictions, load_predictions
    from ha_envs.grading.grader import Grader, shared_loopback_note

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
        from ha_envs.grading.grader import docker_sandbox_factory

        factory = docker_sandbox_factory()
    grader = Grader(factory, verdict_rules=args.verdict_rules)

    def progress(iid: str, body: dict) -> None:
        verdict = body["status"] + (f" (flags: {', '.join(body['flags'])})" if body["flags"] else "")
        print(f"{iid}: {verdict}", file=sys.stderr, flush=True)

    run = grade_predictions(tasks, predictions, args.out, grader=grader, workers=args.workers, progress=progress)
    print(run.markdown())
    if run.skipped:
        print(f"{len(run.skipped)} instance(s) already graded in {args.out} were kept")
    print(f"\nreport: {Path(args.out) / 'report.json'}; per instance: {Path(args.out) / 'logs'}/<id>/")
    return 0


def cmd_evolve_run(args: argparse.Namespace) -> int:
    from ha_evolve.proposers import ProposerOptions, make_proposer
    from ha_evolve.report import figures, table
    from ha_evolve.schedule import EvolveConfig, Evolution

    tasks = _tasks(args)
    proposer = make_proposer(args.proposer, ProposerOptions(teacher=args.teacher or "", command=args.teacher_command or ""))
    config = EvolveConfig(rounds=args.rounds, group_size=args.group_size, candidates=args.candidates,
                          decide_by=args.decide_by, attribute=args.attribute, epoch=args.epoch, sandbox=args.sandbox,
                          workers=args.workers, seed=args.seed)
    out = Path(args.out)
    if out.exists() and any(out.iterdir()) and not args.resume:
        raise ValueError(f"{out} is not empty: pass --resume to continue that run, or another --out")
    evo = Evolution(out, tasks, args.model, _spec(args.harness), proposer, config,
                    progress=lambda text: print(text, file=sys.stderr, flush=True))
    final = evo.run()
    print(table(out))
    paths = figures(out)
    final.save(out / "harness.yaml")
    print(f"\nfrozen harness: {final.name} ({final.hash}) -> {out / 'harness.yaml'}")
    print(f"log: {out / 'evolution.jsonl'}; figures: {', '.join(str(p) for p in paths)}")
    return 0


def cmd_evolve_log(args: argparse.Namespace) -> int:
    from ha_evolve.report import figures, table

    if not (Path(args.dir) / "evolution.jsonl").is_file():
        raise ValueError(f"{args.dir} holds no evolution.jsonl")
    print(table(args.dir))
    if args.figures:
        for p in figures(args.dir):
            print(f"figure: {p}")
    return 0


def cmd_evolve_prompts(args: argparse.Namespace) -> int:
    from ha_evolve.proposers import PROMPTS

    for path in sorted(PROMPTS.glob("*.md")):
        print(f"==> {path.name} ({path})\n{path.read_text()}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ha_agents.compare import compare

    result = compare(args.run_a, args.run_b, samples=args.samples, seed=args.seed)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
        (out / "compare.md").write_text(result.markdown() + "\n")
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.markdown())
    return 0


def cmd_show_trajectory(args: argparse.Namespace) -> int:
    from ha_agents.trajectory import load_trajectory, render_text
    from ha_agents.viewer import render_html

    rec = load_trajectory(args.file, instance_id=args.instance, run=args.run)
    if args.html:
        tokenizer = None
        if args.tokenizer:
            from ha_agents.tokens import load_tokenizer

            tokenizer = load_tokenizer(str(Path(args.tokenizer).resolve()))
        Path(args.html).write_text(render_html(rec, tokenizer=tokenizer))
        print(f"wrote {args.html}")
    else:
        print(render_text(rec))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ha", description="harnessadapt: repair environments, harnesses, evaluation")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    from ha_cli.train_cmd import add_train_parser


    tasks = sub.add_parser("tasks", help="list and validate tasks").add_subparsers(dest="tasks_command", required=True)
    p = tasks.add_parser("list", help="list the tasks of a suite or file")
    _add_source(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_tasks_list)
    p = tasks.add_parser("validate", help="gold patch resolves, empty patch does not")
    _add_source(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--sandbox", choices=["local", "docker"], default="local", help="where the tests run")
    p.add_argument("--sample", type=int, metavar="N",
                   help="N tasks of the selection, spread evenly over repositories (seeded by --seed)")
    p.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    p.add_argument("--network", choices=["official", "on", "off"], default="official",
                   help="tests' network: as the official harness (real benchmarks' tests get it; default), "
                        "always, or never")
    p.add_argument("--results", metavar="FILE.jsonl",
                   help="append each result here as it finishes; a rerun skips the instances already in it")
    p.add_argument("--markdown", metavar="FILE", help="write a Markdown summary (per repository, with causes)")
    p.add_argument("--retries", type=int, default=2, metavar="K",
                   help="grade a disagreeing verdict nothing explains up to K more times; one that changes is "
                        "called flaky (default 2; 0: never)")
    p.set_defaults(func=cmd_tasks_validate)

    images = sub.add_parser("images", help="build Docker images locally (no registry needed)").add_subparsers(
        dest="images_command", required=True)
    p = images.add_parser("build", help="the base image (debootstrap + docker import) and task snapshot images")
    _add_source(p)
    p.add_argument("--base-only", action="store_true", help="only the base image")
    p.set_defaults(func=cmd_images_build)
    p = images.add_parser("prune", help="remove environment and snapshot images whose cache entries are gone "
                          "(after `ha cache prune`, or a test's temporary cache); never the base or an official image")
    p.add_argument("--dry-run", action="store_true", help="say what would go; remove nothing")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_images_prune)

    cache = sub.add_parser("cache", help="what the cache holds (snapshots, environments, layers), and pruning it"
                           ).add_subparsers(dest="cache_command", required=True)
    p = cache.add_parser("list", help="every entry: kind, status (ok, stale, partial), size, last use")
    p.add_argument("--cache-dir", metavar="DIR", help="the cache directory (default $HA_CACHE_DIR, "
                   "~/.cache/harnessadapt)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_cache_list)
    p = cache.add_parser("prune", help="remove stale, partial, unused or least recently used entries (never one a "
                         "builder holds, nor, by age or size, one used in the last 10 minutes)")
    p.add_argument("--cache-dir", metavar="DIR", help="the cache directory (default $HA_CACHE_DIR)")
    p.add_argument("--stale", action="store_true", help="entries another format of their builder made")
    p.add_argument("--partial", action="store_true", help="builds that did not finish (killed runs)")
    p.add_argument("--unused-days", type=float, metavar="D", help="entries not used for D days")
    p.add_argument("--max-gb", type=float, metavar="G", help="the least recently used first, until G GiB are left")
    p.add_argument("--images", action="store_true", help="then the Docker images made from what went (`ha images prune`)")
    p.add_argument("--dry-run", action="store_true", help="say what would go; remove nothing")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_cache_prune)

    add_train_parser(sub, _add_source)
    p = sub.add_parser("eval", help="run a policy under a harness and report pass@1")
    _add_source(p)
    p.add_argument("--model", default=None,
                   help="oracle | null | openai:NAME@URL | replay:TRAJECTORIES.jsonl | hf:PATH (default oracle)")
    p.add_argument("--policy", default=None, help="alias of --model for the scripted policies")
    p.add_argument("--harness", default="h0", help="preset name (see `ha harness list`) or a YAML/JSON spec path")
    p.add_argument("--without", action="append", default=[], metavar="COMPONENT",
                   help="ablation: drop this tool or hook from the harness (repeatable)")
    p.add_argument("--sandbox", default="local")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--workers", type=int, default=1, help="episodes in flight at once")
    p.add_argument("--executor", choices=["threads", "ray"], default="threads",
                   help="threads on this machine, or Ray tasks (RAY_ADDRESS, else a local Ray)")
    p.add_argument("--max-turns", type=int, default=None, help="override the harness's max turns")
    p.add_argument("--tokenizer", default="", help="token mode: tokenizer.json (or a model dir); records ids, "
                   "loss mask and logprobs as the model produced them")
    p.add_argument("--template", default="auto", help="token mode: auto (the model's own chat template when the "
                   "tokenizer dir has one, else chatml), model, chatml, hermes")
    p.add_argument("--context-tokens", type=int, default=65536, help="token mode: context budget")
    p.add_argument("--max-new-tokens", type=int, default=None, help="token mode: cap per model call "
                   "(never more than the context left)")
    m = p.add_argument_group("model options (recorded in summary.json)")
    m.add_argument("--temperature", type=float, default=None, help="sampling temperature (default: the backend's, 0)")
    m.add_argument("--top-p", type=float, default=None)
    m.add_argument("--max-tokens", type=int, default=None, help="cap per model call")
    m.add_argument("--seed", type=int, default=None, help="seed every episode's sampling (per task, run and turn)")
    m.add_argument("--model-kwargs", default=None, metavar="FILE", help="JSON/YAML mapping of further request fields")
    m.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="NAME",
                   help="environment variable holding the API key (default OPENAI_API_KEY)")
    p.add_argument("--out", default="runs/eval", help="output directory (a rerun resumes it)")
    p.add_argument("--no-progress", action="store_true", help="no progress on stderr (by default: a bar redrawn in "
                   "place on a terminal, else one line per finished episode with rate and ETA)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("grade", help="grade a SWE-bench predictions file (any agent's) with hidden tests")
    _add_source(p)
    p.add_argument("--predictions", required=True, help="predictions.jsonl (instance_id, model_name_or_path, model_patch)")
    p.add_argument("--sandbox", choices=["local", "docker"], default="local")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--out", default="runs/grade", help="output directory (a rerun keeps finished instances)")
    p.add_argument("--verdict-rules", choices=["auto", "swebench", "harnessadapt"], default="auto",
                   help="auto (default): the installed swebench's own grading functions for SWE-bench rows, ours "
                   "(stricter: F2P must be PASSED, a missing test fails) for the rest; or one of them for every "
                   "task. Pro and R2E-Gym keep their harness's rule. report.json records the rule and version")
    p.set_defaults(func=cmd_grade)

    evolve = sub.add_parser("evolve", help="evolve the harness against a fixed policy (dual-rate gate)").add_subparsers(
        dest="evolve_command", required=True)
    p = evolve.add_parser("run", help="rounds of propose -> validate -> compare -> gate")
    _add_source(p)
    p.add_argument("--model", default="oracle", help="the fixed policy: a model spec as for `ha eval`")
    p.add_argument("--harness", default="h0", help="the harness to start from (preset or spec path)")
    p.add_argument("--proposer", default="rule", help="rule | llm | cli")
    p.add_argument("--teacher", default=None, help="llm proposer: the teacher model (openai:NAME@URL)")
    p.add_argument("--teacher-command", default=None, help="cli proposer: the command run in the work directory")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--candidates", type=int, default=1, help="proposals per round (they share the current side)")
    p.add_argument("--decide-by", choices=["gate", "stat"], default="gate",
                   help="the paper's dual-rate gate, or the bootstrap version (both are logged)")
    p.add_argument("--attribute", action="store_true", help="leave-one-component-out after an acceptance")
    p.add_argument("--epoch", type=int, default=1)
    p.add_argument("--sandbox", default="local")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/evolve")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.set_defaults(func=cmd_evolve_run)
    p = evolve.add_parser("log", help="the evolution log as a table (the paper's Table 15 layout)")
    p.add_argument("dir")
    p.add_argument("--figures", action="store_true", help="also (re)draw the figures")
    p.set_defaults(func=cmd_evolve_log)
    p = evolve.add_parser("prompts", help="show the teacher prompts")
    p.set_defaults(func=cmd_evolve_prompts)

    p = sub.add_parser("compare", help="paired difference of two eval runs with a 95%% bootstrap CI")
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument("--samples", type=int, default=10000)
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

    harness = sub.add_parser("harness", help="inspect and compare harness specs").add_subparsers(
        dest="harness_command", required=True)
    p = harness.add_parser("list", help="the preset harnesses")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_harness_list)
    p = harness.add_parser("show", help="tools with schemas, hooks with parameters, hash")
    p.add_argument("harness", help="preset name or spec path")
    p.add_argument("--without", action="append", default=[], metavar="COMPONENT")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_harness_show)
    p = harness.add_parser("schema", help="the JSON Schema of a harness spec file (catalogue tools and hooks "
                           "with typed parameters)")
    p.set_defaults(func=cmd_harness_schema)
    p = harness.add_parser("diff", help="what changed from harness A to harness B")
    p.add_argument("a")
    p.add_argument("b")
    p.set_defaults(func=cmd_harness_diff)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except BrokenPipeError:  # `ha ... | head`: the reader left; end quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except (TaskError, SandboxError, ValueError, OSError) as exc:  # SandboxError: no Docker daemon, ...
        print(f"ha: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
