"""``ha images build | prune`` and ``ha cache list | prune``: what sandboxes start from."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ha_cli.selection import add_source as _add_source
from ha_cli.selection import select_tasks as _tasks


def cmd_images_build(args: argparse.Namespace) -> int:
    from ha_envs.sandbox.docker import docker_client
    from ha_envs.sandbox.provision.images import build_base_image, snapshot_image

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
    from ha_envs.sandbox.provision.cache import human
    from ha_envs.sandbox.docker import docker_client
    from ha_envs.sandbox.provision.images import prune_images

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
    from ha_envs.sandbox.provision.cache import human, scan

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
    from ha_envs.sandbox.provision.cache import human, prune

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
        from ha_envs.sandbox.provision.images import prune_images

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


def register(sub: argparse._SubParsersAction) -> None:
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
