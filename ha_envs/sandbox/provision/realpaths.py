"""Host paths as a sandbox must show them: the real directory, and the symlinks that lead to it.

A venv, a pyenv prefix or a toolchain is often reached through a symlink (a cache directory that
links to a build folder, ``/tmp/venv -> /data/venv``, pyenv's ``3.11 -> 3.11.7``). A sandbox that
binds only the real directory leaves every path through the link dangling inside: ``PATH``, a
venv's ``python`` symlink, its ``pyvenv.cfg`` home, a script's shebang. The test command then prints
``python: command not found`` and a correct patch earns 0. So both sandboxes put the real
directories in (``real_dirs``) and make each symlink on the way again where the sandbox would not
show it (``links_to``): PATH and ``VIRTUAL_ENV`` name real paths; old paths still resolve.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

_MAX_HOPS = 40
TOOLCHAIN_COMMANDS = ("python3", "python", "node", "npm", "go", "cargo", "rustc")
"""The commands whose installations the sandbox shows at their real paths (``toolchain_prefixes``)."""


def links_to(path: str | Path) -> list[tuple[str, str]]:
    """(symlink, its real target) for every symlink met while resolving ``path``, in the order
    met, intermediate hops included (``/a -> /b``, ``/b -> /c`` gives both)."""
    found: list[tuple[str, str]] = []
    _resolve(os.path.abspath(str(path)), found, 0)
    return list(dict.fromkeys(found))


def _resolve(path: str, found: list[tuple[str, str]], hops: int) -> str:
    cur = "/"
    for part in Path(path).parts[1:]:
        nxt = os.path.join(cur, part)
        if os.path.islink(nxt) and hops < _MAX_HOPS:
            hops += 1
            target = os.path.join(os.path.dirname(nxt), os.readlink(nxt))
            real = _resolve(os.path.normpath(target), found, hops)
            found.append((nxt, os.path.realpath(nxt)))
            cur = real
        else:
            cur = nxt
    return cur


def venv_paths(env: str | Path) -> list[str]:
    """What a venv's interpreter reads outside the venv: its ``python`` symlinks' targets and the
    ``home`` of its ``pyvenv.cfg`` (the base interpreter's ``bin``), as written (maybe through links)."""
    env = Path(env)
    out: list[str] = []
    for name in ("python", "python3"):
        exe = env / "bin" / name
        if exe.is_symlink():
            out.append(os.path.join(str(exe.parent), os.readlink(exe)))
    cfg = env / "pyvenv.cfg"
    if cfg.is_file():
        for line in cfg.read_text(errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() in ("home", "executable") and value.strip():
                out.append(value.strip())
    return out


def toolchain_prefixes(path_dirs: list[str], commands: tuple[str, ...] = TOOLCHAIN_COMMANDS) -> list[str]:
    """The installation prefixes of ``commands`` found on ``path_dirs`` (the sandbox's PATH, read on
    the host), by the command's real path: ``/opt/go`` for ``/usr/local/bin/go -> /opt/go/bin/go``.
    A prefix that would be ``/`` or a home directory is left out (too much to show)."""
    home = str(Path.home())
    out: list[str] = []
    for command in commands:
        found = shutil.which(command, path=":".join(path_dirs))
        if not found:
            continue
        real = Path(os.path.realpath(found))
        prefix = real.parent.parent if real.parent.name == "bin" else real.parent
        if str(prefix) not in ("/", home, "/home", "/root") and str(prefix) not in out:
            out.append(str(prefix))
    return out


def interpreter_paths() -> list[str]:
    """This process's interpreter: ``sys.prefix`` and ``sys.base_prefix`` (venv and base), as the
    interpreter names them (maybe through links), and what its venv points at."""
    return [sys.prefix, sys.base_prefix, *venv_paths(sys.prefix)]


def real_dirs(paths: list[str]) -> list[str]:
    """The real directories of ``paths`` (a file counts as its directory), existing ones only, in order."""
    out: list[str] = []
    for p in paths:
        real = os.path.realpath(p)
        if os.path.isfile(real):
            real = os.path.dirname(real)
        if os.path.isdir(real) and real not in out:
            out.append(real)
    return out


def hidden_links(paths: list[str], shown: list[str]) -> list[tuple[str, str]]:
    """The symlinks on the way to ``paths`` that a sandbox showing only ``shown`` (directories, at
    their host paths) would not have: (link path, real target) pairs to make inside it."""
    def inside(p: str) -> bool:
        return any(p == s or p.startswith(s.rstrip("/") + "/") for s in shown)

    out: dict[str, str] = {}
    for p in paths:
        for link, target in links_to(p):
            if not inside(link) and link not in out:
                out[link] = target
    return list(out.items())
