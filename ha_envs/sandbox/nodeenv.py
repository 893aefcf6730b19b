"""Node.js dependencies for real JavaScript / TypeScript instances (SWE-bench Multilingual), built
without an official image.

For a task whose ``swebench<5`` specs install with a package manager (``npm install``, ``npm ci``,
``yarn``, ``pnpm``), the install runs once on the host, with network, in a throwaway copy of the
task's snapshot; the resulting ``node_modules`` is kept under ``$HA_CACHE_DIR/envs`` (locked, keyed
by repository, base commit and commands). Sandboxes then see it through a ``node_modules`` symlink
in the work copy (read-only under bubblewrap; copied into the Docker environment image together
with this machine's Node.js and npm). The work copy stays the agent's: git ignores the link.

Other languages of Multilingual (Go, Rust, Java, PHP, Ruby, C) fetch their dependencies from
registries this machine cannot reach, so they need the official images.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .base import SandboxError
from .workcopy import cache_root, make_work_copy, prepare_snapshot

NODE_ENV_FORMAT = 1
_MANAGERS = ("npm", "yarn", "pnpm", "npx")


def install_commands(task: Any) -> list[str]:
    """The package-manager install commands of the task's specs ([] when it needs none)."""
    if task is None or task.language not in ("javascript", "typescript"):
        return []
    return install_commands_of((task.environment.extra or {}).get("specs") or {})


def install_commands_of(specs: dict[str, Any]) -> list[str]:
    """The package-manager commands among a spec's ``install`` steps."""
    cmds = specs.get("install") or []
    cmds = [cmds] if isinstance(cmds, str) else list(cmds)
    return [c for c in cmds if c.split() and c.split()[0] in _MANAGERS]


def node_env(task: Any) -> Path | None:
    """The task's ``node_modules`` directory (built on first use), or None when it needs none."""
    cmds = install_commands(task)
    if not cmds:
        return None
    key = hashlib.sha256(json.dumps([NODE_ENV_FORMAT, task.repo, task.base_commit, cmds]).encode()).hexdigest()[:12]
    env = cache_root() / "envs" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', task.repo)}-node-{key}"
    if (env / ".ha-ready").is_file():
        return env / "node_modules"
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(env.with_name(env.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (env / ".ha-ready").is_file():
            _build(task, cmds, env)
    return env / "node_modules"


def _build(task: Any, cmds: list[str], env: Path) -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise SandboxError(f"{task.instance_id} needs Node.js and npm on this machine to install its dependencies")
    tmp = env.with_name(env.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    work = tmp / "repo"
    make_work_copy(prepare_snapshot(task), work)
    run_env = dict(os.environ, CI="1", npm_config_audit="false", npm_config_fund="false",
                   npm_config_update_notifier="false", ADBLOCK="1", DISABLE_OPENCOLLECTIVE="1")
    log = []
    for cmd in cmds:
        proc = subprocess.run(["bash", "-c", cmd], cwd=work, env=run_env, capture_output=True, text=True, timeout=3600)
        log.append(f"$ {cmd}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        if proc.returncode != 0:
            (tmp / "ha-build.log").write_text("\n".join(log))
            raise SandboxError(f"installing the Node.js dependencies of {task.instance_id} failed at `{cmd}`: "
                               f"{proc.stderr.strip()[-800:]}")
    if not (work / "node_modules").is_dir():
        raise SandboxError(f"`{' && '.join(cmds)}` made no node_modules for {task.instance_id}")
    (work / "node_modules").rename(tmp / "node_modules")
    shutil.rmtree(work)
    (tmp / "ha-build.log").write_text("\n".join(log))
    shutil.rmtree(env, ignore_errors=True)
    tmp.rename(env)
    (env / ".ha-ready").write_text(task.instance_id)


def link_node_modules(work_copy: Path, node_modules: Path | str) -> None:
    """``work_copy/node_modules`` -> the shared install, ignored by git (idempotent)."""
    link = work_copy / "node_modules"
    if link.is_symlink() and os.readlink(link) == str(node_modules):
        return
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.is_dir():
        shutil.rmtree(link)
    link.symlink_to(node_modules)
    exclude = work_copy / ".git" / "info" / "exclude"
    if exclude.parent.is_dir():
        text = exclude.read_text() if exclude.is_file() else ""
        if "/node_modules\n" not in text:
            exclude.write_text(text + ("" if text.endswith("\n") or not text else "\n") + "/node_modules\n")


def node_runtime() -> tuple[Path, Path] | None:
    """This machine's ``node`` binary and npm package directory (copied into Docker env images)."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if not node or not npm:
        return None
    npm_dir = Path(os.path.realpath(npm)).parent.parent  # .../node_modules/npm/bin/npm-cli.js -> .../npm
    return Path(os.path.realpath(node)), npm_dir
