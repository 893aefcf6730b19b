"""What the cache directory holds, and pruning it (``ha cache list`` / ``ha cache prune``).

``$HA_CACHE_DIR`` (default ``~/.cache/harnessadapt``) grows with every instance a sweep touches:
a snapshot of the repository (``snapshots/``), a Python or Node.js environment (``envs/``) and the
dependency layers Python environments are copied from (``envs/layers/``). A Verified environment is
100 MB to 2 GB, and a change of a builder's format (``pyenv.ENV_FORMAT``, ``nodeenv.NODE_ENV_FORMAT``,
``workcopy.SNAPSHOT_FORMAT``) gives every instance a new entry and leaves the old ones unused.

Every entry built by this version records its kind and format (``workcopy.mark_built``:
``.ha-format``, a snapshot's in its ``.git``), and its directory's modification time is renewed
whenever it is used again (``workcopy.touch``), so prune can tell:
- ``stale``: made by another format of its builder, never used again by this version;
- ``partial``: a build that did not finish (a killed run's ``.tmp`` / ``.build-*`` directory, or an
  entry without its ready marker), once no builder holds its lock;
- unused for a while (``--unused-days``), or the least recently used beyond a size (``--max-gb``).

An entry whose builder holds its lock is never removed (a partial snapshot, which has no lock,
only when it is ``PARTIAL_GRACE_S`` old). Entries used in the last ``RECENT_S``
seconds are kept by the age and size rules (a running sweep may be reading them); stale and
partial ones are not read by anything of this version.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..limits import tree_bytes
from .nodeenv import NODE_ENV_FORMAT
from .pyenv import ENV_FORMAT
from .workcopy import FORMAT_FILE, SNAPSHOT_FORMAT, cache_root

RECENT_S = 600
"""Entries used this recently are never removed by the age or size rules."""
PARTIAL_GRACE_S = 6 * 3600
"""A partial snapshot build (``.build-*``: no lock) is removed only when it is this old."""


def current_formats() -> dict[str, int]:
    """The format each builder of this version writes."""
    return {"python-env": ENV_FORMAT, "python-layer": ENV_FORMAT, "node-env": NODE_ENV_FORMAT,
            "snapshot": SNAPSHOT_FORMAT}


@dataclass
class Entry:
    path: str
    kind: str
    """snapshot, python-env, python-layer, node-env, or unknown (a build that left no record)."""
    bytes: int
    used: float
    """When it was last used (seconds since the epoch)."""
    format: int | None
    status: str
    """ok, stale (another format of its builder), partial (an unfinished build)."""
    why: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def _tree_bytes(root: Path) -> int:
    return tree_bytes(str(root)) + root.lstat().st_blocks * 512


def _record(path: Path, snapshot: bool) -> dict | None:
    f = (path / ".git" / FORMAT_FILE) if snapshot else (path / FORMAT_FILE)
    try:
        rec = json.loads(f.read_text())
        return rec if isinstance(rec, dict) and isinstance(rec.get("format"), int) else None
    except (OSError, ValueError):
        return None


def _lock_file(path: Path) -> Path | None:
    """The builder's lock of an env or layer (``<name>.lock``; ``<name>.tmp`` shares its entry's)."""
    name = path.name[:-4] if path.name.endswith(".tmp") else path.name
    lock = path.with_name(name + ".lock")
    return lock if lock.is_file() else None


def _classify(path: Path, snapshot: bool, formats: dict[str, int]) -> tuple[str, int | None, str, str]:
    """(kind, format, status, why) of one cache directory."""
    name = path.name
    if name.endswith(".tmp") or name.startswith(".build-"):
        return "unknown", None, "partial", "a build that did not finish (its temporary directory)"
    ready = (path / ".git" / "ha-base").is_file() if snapshot else (path / ".ha-ready").is_file()
    rec = _record(path, snapshot)
    kind = rec["kind"] if rec else ("snapshot" if snapshot else
                                    "python-layer" if path.parent.name == "layers" else
                                    "node-env" if (path / "node_modules").is_dir() else "python-env")
    fmt = rec["format"] if rec else None
    if not ready:
        return kind, fmt, "partial", "no ready marker: its build did not finish"
    if rec is None:
        return kind, None, "ok", "format not recorded (built before formats were recorded)"
    if kind in formats and fmt != formats[kind]:
        return kind, fmt, "stale", f"format {fmt}; this version builds format {formats[kind]} and never reads it"
    return kind, fmt, "ok", ""


def scan(root: Path | None = None) -> list[Entry]:
    """Every entry of the cache (``root``: the cache directory, default ``$HA_CACHE_DIR``)."""
    root = Path(root) if root is not None else cache_root()
    formats = current_formats()
    out: list[Entry] = []
    for parent, snapshot in ((root / "snapshots", True), (root / "envs", False), (root / "envs" / "layers", False)):
        try:
            children = sorted(p for p in parent.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError:
            continue
        for path in children:
            if parent.name == "envs" and path.name == "layers":
                continue
            try:
                kind, fmt, status, why = _classify(path, snapshot, formats)
                out.append(Entry(str(path), kind, _tree_bytes(path), path.stat().st_mtime, fmt,
                                 status, why))
            except FileNotFoundError:
                continue  # a build finished (its .tmp renamed) or an entry was removed while we read

    return out


@dataclass
class PruneResult:
    removed: list[Entry]
    kept: list[Entry]
    skipped: list[tuple[Entry, str]]
    """Entries a rule chose that were left: a builder holds their lock, or removing failed."""

    @property
    def freed_bytes(self) -> int:
        return sum(e.bytes for e in self.removed)

    def to_dict(self) -> dict:
        return {"removed": [e.to_dict() for e in self.removed], "freed_bytes": self.freed_bytes,
                "kept": len(self.kept), "kept_bytes": sum(e.bytes for e in self.kept),
                "skipped": [dict(e.to_dict(), reason=why) for e, why in self.skipped]}


def prune(root: Path | None = None, stale: bool = False, partial: bool = False, unused_days: float | None = None,
          max_bytes: int | None = None, dry_run: bool = False, now: float | None = None) -> PruneResult:
    """Remove the entries the rules choose (see the module's text); ``dry_run`` only reports them."""
    if unused_days is not None and unused_days < 0:
        raise ValueError(f"unused_days must be 0 or more, not {unused_days}")
    if max_bytes is not None and max_bytes < 0:
        raise ValueError(f"max_bytes must be 0 or more, not {max_bytes}")
    now = time.time() if now is None else now
    entries = scan(root)
    chosen: dict[str, str] = {}
    for e in entries:
        recent = now - e.used < RECENT_S
        if stale and e.status == "stale":
            chosen[e.path] = "stale"
        elif partial and e.status == "partial" and (_lock_file(Path(e.path)) is not None
                                                     or now - e.used > PARTIAL_GRACE_S):
            chosen[e.path] = "partial"
        elif unused_days is not None and not recent and now - e.used > unused_days * 86400:
            chosen[e.path] = "unused"
    if max_bytes is not None:
        left = sorted((e for e in entries if e.path not in chosen), key=lambda e: e.used)
        total = sum(e.bytes for e in left)
        for e in left:
            if total <= max_bytes:
                break
            if now - e.used < RECENT_S:
                continue
            chosen[e.path] = "size"
            total -= e.bytes
    removed, kept, skipped = [], [], []
    for e in entries:
        if e.path not in chosen:
            kept.append(e)
            continue
        why = _remove(Path(e.path), dry_run)
        if why:
            skipped.append((e, why))
            kept.append(e)
        else:
            removed.append(e)
    return PruneResult(removed, kept, skipped)


def _remove(path: Path, dry_run: bool) -> str:
    """'' when ``path`` is gone (or would be), else why not."""
    lock = _lock_file(path)
    fd = None
    try:
        if lock is not None:
            fd = os.open(lock, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return "a builder holds its lock"
        if dry_run:
            return ""
        shutil.rmtree(path)  # the lock file stays: a builder waiting on it must keep the same one
        return ""
    except FileNotFoundError:
        return ""  # gone already (another prune)
    except OSError as exc:
        return f"cannot remove it: {exc}"
    finally:
        if fd is not None:
            os.close(fd)


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"
