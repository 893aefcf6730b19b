"""Environment caches across machines: a built environment moved, not rebuilt.

A task's environment (a Python interpreter prefix, ``pyenv.python_env``, or a node env,
``nodeenv.node_env``) is named by its content key, so two machines that need it need the same
entry. ``pack_env`` packs a built one (an uncompressed tar); ``install_env`` installs it on another
machine under that machine's cache, relocated: the paths the build baked in (the Python scripts'
``#!`` lines, a node env's absolute links between its trees) are rewritten from where it was built
to where it now is. The install takes the builders' lock, so a concurrent build or install of the
same entry waits and uses the first one; it is atomic (a temporary directory renamed into place,
the ready marker written last) and records that the entry was copied (``env_origin``).

The archive comes from this library's own builder on another node (never from a sandbox), and is
checked against its packer's digest before anything is written.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from ...task import TaskError
from .nodeenv import node_env, node_env_dest
from .pyenv import _fix_paths, python_env, python_env_dest

ENV_KINDS = ("python-env", "node-env")
READY = ".ha-ready"
ORIGIN_FILE = ".ha-origin"
"""In an environment that was not built here: where it came from (``install_env``)."""


def env_dest(task: Any) -> tuple[str, Path] | None:
    """(kind, where this machine keeps it) for the environment ``task`` needs, built or not; None
    when it needs none (the bundled tasks, or a Docker image that brings its own)."""
    if task is None:
        return None
    py = python_env_dest(task)
    if py is not None:
        return "python-env", py
    node = node_env_dest(task)
    return ("node-env", node) if node is not None else None


def build_env(task: Any) -> None:
    """Build (or find) the task's environment on this machine."""
    kind_dest = env_dest(task)
    if kind_dest is None:
        return
    (python_env if kind_dest[0] == "python-env" else node_env)(task)


def env_ready(path: Path) -> bool:
    return (Path(path) / READY).is_file()


def env_origin(path: Path) -> str:
    """``built`` (here) or ``copied`` (installed from another machine's by ``install_env``)."""
    return "copied" if (Path(path) / ORIGIN_FILE).is_file() else "built"


BASE_FILE = "ha-base-prefix"
"""In a Python environment: the interpreter prefix (pyenv's) it was copied from (``pyenv._build``)."""
LINKED_FILE = ".ha-linked.json"
"""In an archive of a Python environment: the files left out as hard links into that prefix."""


def pack_env(path: Path) -> bytes:
    """A built environment as an uncompressed tar, to move it to a machine that lacks it. A Python
    environment's standard library is a hard link into its pyenv prefix (``pyenv._copy_prefix``):
    those files are left out and listed (``LINKED_FILE``), and ``install_env`` links them again from
    the same prefix on the other machine (about 85% of a small environment's bytes)."""
    path = Path(path)
    if not env_ready(path):
        raise TaskError(f"{path} is not a built environment (no {READY})")
    base = _base_prefix(path)
    linked: list[str] = []

    def leave_linked(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if base is None or not info.isfile():
            return info
        rel = info.name[len("env/"):]
        try:
            here, there = os.lstat(path / rel), os.lstat(base / rel)
        except OSError:
            return info
        if here.st_nlink > 1 and (here.st_ino, here.st_dev) == (there.st_ino, there.st_dev):
            linked.append(rel)
            return None
        return info

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(path, arcname="env", filter=leave_linked)
        listing = json.dumps(linked).encode()
        info = tarfile.TarInfo(f"env/{LINKED_FILE}")
        info.size = len(listing)
        tar.addfile(info, io.BytesIO(listing))
    return buf.getvalue()


def _base_prefix(env: Path) -> Path | None:
    try:
        base = Path((env / BASE_FILE).read_text().strip())
    except OSError:
        return None
    return base if base.is_absolute() and base.is_dir() else None


def _relink(env: Path) -> None:
    """Link the files a packed Python environment left out (``pack_env``) from its pyenv prefix on
    this machine; a prefix that lacks one is an error (the caller builds the environment instead)."""
    listing = env / LINKED_FILE
    if not listing.is_file():
        return
    rels = json.loads(listing.read_text())
    listing.unlink()
    if not rels:
        return
    recorded = (env / BASE_FILE).read_text().strip() if (env / BASE_FILE).is_file() else "?"
    base = _base_prefix(env)
    for rel in rels:
        src, dst = (base / rel if base else None), env / rel
        if src is None or ".." in Path(rel).parts or Path(rel).is_absolute() or not src.is_file():
            raise TaskError(f"the environment needs the interpreter prefix {recorded} on this machine "
                            f"(its {rel} is missing here): install that Python, or let this node build it")
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, dst)
        except OSError:  # another file system: a copy
            shutil.copy2(src, dst)


def install_env(kind: str, dest: Path, data: bytes, sha256: str, built_at: str) -> Path:
    """Install an environment packed elsewhere (``pack_env``; ``sha256``: the packer's digest of
    ``data``; ``built_at``: its path on the packer's machine) as this machine's ``dest``.
    Returns ``dest``; an entry already there (built or installed by another) is kept as it is."""
    if kind not in ENV_KINDS:
        raise ValueError(f"unknown environment kind {kind!r}; one of {', '.join(ENV_KINDS)}")
    dest = Path(dest)
    if env_ready(dest):
        return dest
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise TaskError(f"the environment archive for {dest.name} cannot be installed: {len(data)} bytes with sha256 "
                        f"{got[:16]}, the packer's was {sha256[:16]} (cut short or damaged in transit)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.with_name(dest.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the builders' lock: one entry, one writer
        if env_ready(dest):
            return dest
        tmp = Path(tempfile.mkdtemp(prefix=".copy-", dir=dest.parent))
        try:
            try:
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
                    tar.extractall(tmp, filter="tar")  # no absolute member paths, nothing outside tmp
            except tarfile.TarError as exc:
                raise TaskError(f"the environment archive for {dest.name} ({len(data)} bytes) cannot be installed: "
                                f"{type(exc).__name__}: {exc}") from exc
            if not env_ready(tmp / "env"):
                raise TaskError(f"the environment archive for {dest.name} holds no built environment")
            (tmp / "env" / READY).unlink()  # written last, once the copy is in place and relocated
            _relink(tmp / "env")
            shutil.rmtree(dest, ignore_errors=True)  # a build that did not finish
            os.rename(tmp / "env", dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        relocate_env(kind, dest, built_at)
        (dest / ORIGIN_FILE).write_text(f"copied from {built_at}\n")
        (dest / READY).write_text(dest.name)
    return dest


def relocate_env(kind: str, env: Path, built_at: str) -> None:
    """Rewrite the paths an environment built at ``built_at`` holds to its place ``env``."""
    old = str(built_at).rstrip("/")
    if old == str(env):
        return
    if kind == "python-env":
        _fix_paths(env, Path(old))
        return
    for dirpath, dirnames, filenames in os.walk(env):
        for name in dirnames + filenames:
            link = os.path.join(dirpath, name)
            if not os.path.islink(link):
                continue
            target = os.readlink(link)
            if target == old or target.startswith(old + "/"):
                os.unlink(link)
                os.symlink(str(env) + target[len(old):], link)


__all__ = ["ENV_KINDS", "build_env", "env_dest", "env_origin", "env_ready", "install_env", "pack_env", "relocate_env"]
