"""``ha tasks list | validate``: the tasks a selection names, and whether their gold patch resolves."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ha_cli.model_check import positive_int
from ha_cli.selection import add_source as _add_source
from ha_cli.selection import select_tasks as _tasks


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
    from ha_envs.grading.grader import Grader
    from ha_envs.grading.sandboxes import docker_sandbox_factory, local_sandbox_factory, shared_loopback_note
    from ha_envs.validate import read_results, stratified_sample, summary_markdown, validate_tasks

    if args.retries < 0:
        print(f"ha tasks validate: error: --retries must be 0 or more, not {args.retries}", file=sys.stderr)
        return 2
    if args.gold_twice and args.executor == "ray":
        print("ha tasks validate: error: --gold-twice runs with --executor threads only", file=sys.stderr)
        return 2
    network = {"official": None, "on": True, "off": False}[args.network]
    factory = docker_sandbox_factory(network=network) if args.sandbox == "docker" else local_sandbox_factory(network=network)
    tasks = _tasks(args)
    if args.sample:
        tasks = stratified_sample(tasks, args.sample, args.seed)
    before = _retry_masked(args, tasks) if args.retry_masked else None
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
        if args.executor == "ray":
            from ha_agents.cluster.validate import validate_on_ray

            validate_on_ray(todo, Grader(factory), workers=args.workers, retries=args.retries, on_result=record)
        else:
            validate_tasks(todo, workers=args.workers, grader=Grader(factory), on_result=record, retries=args.retries,
                           gold_twice=args.gold_twice)
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
            if r.gold_twice:
                print(_gold_again_line(r.gold_twice))
    from ha_envs.grading.faults import fault_summary
    print(fault_summary(r.to_dict() for r in results), end="", file=sys.stderr)
    bad = [r.instance_id for r in results if not r.ok]
    if before is not None:
        from ha_agents.runs.retry import change_line

        print(change_line(before[2], (before[0], sum(map(_masked, (r.to_dict() for r in results)))),
                          (before[1], (len(results) - len(bad)) / max(1, len(results))), _history(args.results),
                          what="infrastructure fault(s)", rate_name="valid %"), file=sys.stderr)
    print(f"{len(results) - len(bad)}/{len(results)} tasks valid" + (f"; invalid: {', '.join(bad)}" if bad else ""),
          file=sys.stderr)
    return 1 if bad else 0


def _gold_again_line(g: dict) -> str:
    """``--gold-twice``: how the second gold grading came out, as printed under its instance."""
    if not g.get("graded"):
        return f"     gold again: not graded ({g.get('why')})"
    return (f"     gold again: {'false alarm' if g.get('false_alarm') else 'no alarm'} "
            f"({g.get('status')}{': ' + g['why'] if g.get('why') else ''}; watch {g.get('watch')})")


def cmd_tasks_export(args: argparse.Namespace) -> int:
    from ha_envs.harbor.export import export_harbor

    tasks = _tasks(args)
    images: dict[str, str] = {}
    if args.build_images:  # this library's snapshot image per task: its environment and work copy
        from ha_envs.sandbox.daemon import docker_client
        from ha_envs.sandbox.provision.images import snapshot_image

        client = docker_client()
        for t in tasks:
            images[t.instance_id] = snapshot_image(client, t)[0]
            print(f"image {images[t.instance_id]} for {t.instance_id}", file=sys.stderr)
    written = export_harbor(tasks, Path(args.out), images=images, overwrite=args.overwrite, network=args.network_mode)
    for path in written:
        print(path)
    print(f"{len(written)} tasks written as Harbor tasks under {args.out}", file=sys.stderr)
    return 0


def _masked(row: dict) -> bool:
    """A result that says nothing of the task: its tests could not start (an environment fault) or
    this machine lacks something (cause ``machine``)."""
    return not row.get("ok") and (bool(row.get("fault")) or row.get("cause") == "machine")


def _history(results: str) -> Path:
    path = Path(results)
    return path.with_name(path.name.removesuffix(".jsonl") + ".masked-history.jsonl")


def _retry_masked(args: argparse.Namespace, tasks: list) -> tuple[int, float, int]:
    """Move the selection's masked results out of ``--results`` (to its masked history), so they run
    again; (masked, valid fraction, moved) before."""
    from ha_agents.records.log import read_jsonl
    from ha_agents.runs.retry import set_aside_rows

    if not args.results:
        raise ValueError("--retry-masked runs again the masked results of a --results file: pass --results")
    ids = {t.instance_id for t in tasks}
    latest = {r["instance_id"]: r for r in read_jsonl(Path(args.results)) if r.get("instance_id") in ids}
    rows = read_jsonl(Path(args.results))
    _, moved = set_aside_rows(Path(args.results), rows, lambda r: r.get("instance_id") in ids and _masked(r),
                              _history(args.results))
    valid = sum(bool(r.get("ok")) for r in latest.values()) / max(1, len(ids))
    return sum(map(_masked, latest.values())), valid, len({r["instance_id"] for r in moved})


def register(sub: argparse._SubParsersAction) -> None:
    tasks = sub.add_parser("tasks", help="list and validate tasks").add_subparsers(dest="tasks_command", required=True)
    p = tasks.add_parser("list", help="list the tasks of a suite or file")
    _add_source(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_tasks_list)
    p = tasks.add_parser("validate", help="gold patch resolves, empty patch does not")
    _add_source(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--workers", type=positive_int, default=2)
    p.add_argument("--sandbox", choices=["local", "docker"], default="local", help="where the tests run")
    p.add_argument("--executor", choices=["threads", "ray"], default="threads",
                   help="threads here, or a Ray task per instance on a node with sandbox slots (RAY_ADDRESS, else a "
                        "local Ray); each result names its node")
    p.add_argument("--sample", type=int, metavar="N",
                   help="N tasks of the selection, spread evenly over repositories (seeded by --seed)")
    p.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    p.add_argument("--network", choices=["official", "on", "off"], default="official",
                   help="tests' network: as the official harness (real benchmarks' tests get it; default), "
                        "always, or never")
    p.add_argument("--results", metavar="FILE.jsonl",
                   help="append each result here as it finishes; a rerun skips the instances already in it")
    p.add_argument("--retry-masked", action="store_true", help="with --results: validate again the instances whose "
                   "result was an infrastructure fault (tests that could not start, cause machine); their old rows go "
                   "to FILE.masked-history.jsonl; prints faults and valid %% before -> after")
    p.add_argument("--markdown", metavar="FILE", help="write a Markdown summary (per repository, with causes)")
    p.add_argument("--gold-twice", action="store_true",
                   help="grade the gold patch a second time where its run was watched and resolves, and compare its "
                        "watch with the first gold run's: a verdict against it is a false alarm (counted in the "
                        "summary, kept under gold_twice in --results)")
    p.add_argument("--retries", type=int, default=2, metavar="K",
                   help="grade a disagreeing verdict nothing explains up to K more times; one that changes is "
                        "called flaky (default 2; 0: never)")
    p.set_defaults(func=cmd_tasks_validate)
    p = tasks.add_parser("export", help="write the tasks in another format (Harbor task folders; docs/interop.md)")
    _add_source(p)
    p.add_argument("--format", choices=["harbor"], required=True, help="harbor: task.toml, instruction.md, "
                   "environment/Dockerfile, tests/test.sh (writes reward.txt), solution/solve.sh (the gold patch)")
    p.add_argument("--out", required=True, metavar="DIR", help="one folder per task is written here")
    p.add_argument("--overwrite", action="store_true", help="replace a task folder that exists")
    p.add_argument("--build-images", action="store_true", help="build each task's snapshot image here (Docker) and "
                   "start its Dockerfile FROM it (default: the bundled base image, or a SWE-bench row's official one)")
    p.add_argument("--network-mode", choices=["task", "public"], default="task",
                   help="task.toml's network_mode: task (default: the agent's environment no-network, the verifier "
                   "public only where the tests need it) or public (every phase: for a Harbor environment that cannot "
                   "enforce no-network, such as Harbor's docker environment without its egress-control images; "
                   "the runner then keeps the network off, e.g. harbor run --extra-docker-compose with "
                   "network_mode: none; docs/interop.md)")
    p.set_defaults(func=cmd_tasks_export)
