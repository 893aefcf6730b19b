"""Node.js dependencies for real JavaScript / TypeScript instances (SWE-bench Multilingual), built
without an official image.

For a task whose ``swebench<5`` specs install with a package manager (``npm install``, ``npm ci``,
``yarn``, ``pnpm``), the install runs once on the host, with network, in a throwaway copy of the
task's snapshot; the resulting ``node_modules`` is kept under ``$HA_CACHE_DIR/envs`` (locked, keyed
by repository, base commit and commands). Sandboxes then see it through a ``node_modules`` symlink
in the work copy (read-only under bubblewrap; copied into the Docker environment image, at the
path it has here, together with this machine's Node.js, npm and corepack). The work copy stays the
agent's: git ignores the link.

Workspaces (pnpm, npm, yarn monorepos) get a ``node_modules`` in packages too: every one is kept,
and links that leave their own tree (to a workspace package, to the root's ``.pnpm``) are made
absolute, into the env or the sandbox's work copy (``_retarget_links``); both sandboxes run them.

C and C++ instances need no install here (their ``build`` steps run at grading: ``TestSpec.
build_command``). Go, Rust, Java, PHP and Ruby fetch their dependencies from registries this machine
cannot reach, so they need the official images.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ..base import SandboxError
from .workcopy import cache_root, make_work_copy, mark_built, prepare_snapshot, touch

NODE_ENV_FORMAT = 2
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


def node_env_dest(task: Any) -> Path | None:
    """Where this machine keeps the task's node env (its ``node_modules`` inside; built or not), or
    None when the task needs none."""
    cmds = install_commands(task)
    if not cmds:
        return None
    key = hashlib.sha256(json.dumps([NODE_ENV_FORMAT, task.repo, task.base_commit, cmds]).encode()).hexdigest()[:12]
    return cache_root() / "envs" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', task.repo)}-node-{key}"


def node_env(task: Any) -> Path | None:
    """The task's ``node_modules`` directory (built on first use), or None when it needs none."""
    env = node_env_dest(task)
    if env is None:
        return None
    cmds = install_commands(task)
    if (env / ".ha-ready").is_file():
        touch(env)
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
    # COREPACK_HOME inside the env: the pnpm / yarn release corepack fetches for the repository's
    # ``packageManager`` stays with the env, for the offline sandbox's test commands.
    run_env = dict(os.environ, CI="1", npm_config_audit="false", npm_config_fund="false",
                   npm_config_update_notifier="false", ADBLOCK="1", DISABLE_OPENCOLLECTIVE="1",
                   COREPACK_HOME=str(tmp / COREPACK_DIR), COREPACK_ENABLE_DOWNLOAD_PROMPT="0",
                   # browsers for end-to-end tests come from hosts this machine cannot reach
                   PUPPETEER_SKIP_DOWNLOAD="1", PUPPETEER_SKIP_CHROMIUM_DOWNLOAD="1",
                   PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")
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
    found = _node_modules_dirs(work)
    _retarget_links(work, found, {rel: _kept_at(env, rel) for rel in found}, task.environment.workdir)
    for rel in found:
        dst = _kept_at(tmp, rel)
        dst.parent.mkdir(parents=True, exist_ok=True)
        (work / rel / "node_modules").rename(dst)
    (tmp / NESTED_LIST).write_text(json.dumps([r for r in found if r]))
    shutil.rmtree(work)
    (tmp / "ha-build.log").write_text("\n".join(log))
    shutil.rmtree(env, ignore_errors=True)
    tmp.rename(env)
    mark_built(env, "node-env", NODE_ENV_FORMAT)
    (env / ".ha-ready").write_text(task.instance_id)


NESTED_LIST = "ha-nested.json"
"""The env's record of the workspace packages (relative directories) that got a node_modules of
their own (pnpm and yarn workspaces: ``packages/*/node_modules``)."""
COREPACK_DIR = "corepack"


def _kept_at(env: Path, rel: str) -> Path:
    """Where the env keeps the node_modules of the repository directory ``rel`` ('' is the root)."""
    return env / "node_modules" if not rel else env / "nested" / rel / "node_modules"


def _node_modules_dirs(work: Path) -> list[str]:
    """Directories (relative, '' for the root) holding a real node_modules, outside other ones."""
    out: list[str] = []
    for dirpath, dirnames, _ in os.walk(work):
        if "node_modules" in dirnames and not os.path.islink(os.path.join(dirpath, "node_modules")):
            out.append(os.path.relpath(dirpath, work) if dirpath != str(work) else "")
        dirnames[:] = [d for d in dirnames if d not in ("node_modules", ".git")]
    return sorted(out, key=lambda r: (r != "", r))


def _retarget_links(work: Path, found: list[str], kept: dict[str, Path], workdir: str) -> None:
    """Symlinks inside the node_modules trees that point out of their own tree (workspace packages,
    a package's node_modules into the root's ``.pnpm``) are relative to where they were made; once
    the trees move into the env they would dangle. They become absolute: into the env where the
    target is another kept tree, else into the sandbox's work copy (``workdir``)."""
    roots = {rel: (work / rel / "node_modules").resolve() for rel in found}
    for rel, root in roots.items():
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                link = Path(dirpath) / name
                if not link.is_symlink():
                    continue
                target = os.readlink(link)
                if os.path.isabs(target):
                    continue
                dest = Path(os.path.normpath(link.parent / target))
                if dest == root or root in dest.parents:
                    continue  # stays inside its own tree: moves with it
                new = None
                for other, oroot in roots.items():
                    if dest == oroot or oroot in dest.parents:
                        new = kept[other] / dest.relative_to(oroot)
                        break
                if new is None:
                    try:
                        new = Path(workdir) / dest.relative_to(work.resolve())
                    except ValueError:
                        continue  # outside the repository: left as it is
                link.unlink()
                link.symlink_to(new)


def nested_node_modules(node_modules: Path) -> list[str]:
    """The workspace directories the env holds a node_modules for (``NESTED_LIST``)."""
    listing = Path(node_modules).parent / NESTED_LIST
    return json.loads(listing.read_text()) if listing.is_file() else []


def link_node_modules(work_copy: Path, node_modules: Path | str) -> None:
    """``work_copy/node_modules`` (and each workspace package's) -> the shared install, ignored by
    git (idempotent)."""
    pairs = _links(Path(node_modules))
    exclude = work_copy / ".git" / "info" / "exclude"
    text = exclude.read_text() if exclude.is_file() else ""
    for rel, target in pairs:
        link = work_copy / rel / "node_modules"
        if not link.parent.is_dir():
            continue  # the agent removed the package
        if not (link.is_symlink() and os.readlink(link) == str(target)):
            if link.is_symlink() or link.is_file():
                link.unlink()
            elif link.is_dir():
                shutil.rmtree(link)
            link.symlink_to(target)
        entry = f"/{rel}/node_modules\n" if rel else "/node_modules\n"
        if entry not in text:
            text += ("" if text.endswith("\n") or not text else "\n") + entry
    if exclude.parent.is_dir():
        exclude.write_text(text)


def _links(node_modules: Path) -> list[tuple[str, Path]]:
    """(repository directory, the env's node_modules for it): the root's, then each workspace package's."""
    return [("", node_modules)] + [(rel, _kept_at(node_modules.parent, rel)) for rel in nested_node_modules(node_modules)]


def link_script(workdir: str, node_modules: Path) -> str:
    """``link_node_modules`` as a shell script, for a work copy at ``workdir`` in an image whose env
    sits where ``node_modules`` sits on this machine (``images._node_env_image``)."""
    lines = []
    for rel, target in _links(node_modules):
        where = f"{workdir.rstrip('/')}/{rel}" if rel else workdir.rstrip("/")
        entry = f"/{rel}/node_modules" if rel else "/node_modules"
        link = shlex.quote(where + "/node_modules")
        lines.append(f"if [ -d {shlex.quote(where)} ]; then rm -rf {link} && ln -s {shlex.quote(str(target))} {link} && echo {shlex.quote(entry)} >> "
                     f"{shlex.quote(workdir.rstrip('/') + '/.git/info/exclude')} || exit 1; fi")
    return "\n".join(lines) + "\n"


def corepack_runtime() -> Path | None:
    """This machine's corepack package directory (copied into Docker env images with Node.js)."""
    corepack = shutil.which("corepack")
    if not corepack:
        return None
    return Path(os.path.realpath(corepack)).parent.parent  # .../corepack/dist/corepack.js -> .../corepack


def node_runtime() -> tuple[Path, Path] | None:
    """This machine's ``node`` binary and npm package directory (copied into Docker env images)."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if not node or not npm:
        return None
    npm_dir = Path(os.path.realpath(npm)).parent.parent  # .../node_modules/npm/bin/npm-cli.js -> .../npm
    return Path(os.path.realpath(node)), npm_dir
