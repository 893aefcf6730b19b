"""``ha export``, ``ha import``: episode records to and from the field's trajectory formats (ATIF)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _select(records, instance: str | None, run: int | None):
    chosen = [r for r in records if (instance is None or r.instance_id == instance) and (run is None or r.run == run)]
    if not chosen:
        what = " ".join(x for x in (f"instance {instance}" if instance else "", f"run {run}" if run else "") if x)
        raise ValueError(f"no episode record matches {what} ({len(records)} record(s) in the source)")
    return chosen


def cmd_export(args: argparse.Namespace) -> int:
    from ha_agents.records.atif import records_of, write_atif

    records = _select(records_of(args.source), args.instance, args.run)
    written = write_atif(records, args.out)
    where = written[0] if len(written) == 1 else Path(args.out)
    print(f"wrote {len(written)} ATIF trajectory file(s) ({len(records)} episode(s)) to {where}")
    return 0


def atif_files(source: Path) -> list[Path]:
    if source.is_dir():
        files = sorted(source.rglob("*.json"))
        if not files:
            raise ValueError(f"{source}: no .json files here (ATIF trajectories)")
        return files
    if not source.is_file():
        raise ValueError(f"{source}: no such file or directory")
    return [source]


def cmd_import(args: argparse.Namespace) -> int:
    import json

    from ha_agents.records.atif import read_atif

    records = [read_atif(p) for p in atif_files(Path(args.source))]
    out = Path(args.out)
    if out.exists() and not args.force:
        raise ValueError(f"{out} exists; pass --force to overwrite it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    tmp.replace(out)
    print(f"wrote {len(records)} episode record(s) to {out}", file=sys.stdout)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write episode records in another format: ATIF trajectories (Harbor RFC 0001)")
    p.add_argument("source", help="a run directory (its trajectories.jsonl) or a trajectories .jsonl file")
    p.add_argument("--format", choices=["atif"], required=True, help="atif: one ATIF-v1.7 trajectory per episode")
    p.add_argument("--out", required=True, help="a directory (<out>/run<k>/<instance_id>.trajectory.json per "
                   "episode) or, for one episode, a .json file")
    p.add_argument("--instance", default=None, help="only this instance's episodes")
    p.add_argument("--run", type=int, default=None, help="only this sample index (1-based)")
    p.set_defaults(func=cmd_export)
    q = sub.add_parser("import", help="read trajectories in another format back into episode records (trajectories.jsonl)")
    q.add_argument("source", help="an ATIF trajectory .json file, or a directory of them (searched recursively)")
    q.add_argument("--format", choices=["atif"], required=True)
    q.add_argument("--out", required=True, help="the trajectories.jsonl to write")
    q.add_argument("--force", action="store_true", help="overwrite --out when it exists")
    q.set_defaults(func=cmd_import)
