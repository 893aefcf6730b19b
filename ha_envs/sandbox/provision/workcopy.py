"""Prepared snapshots of a task's base state, and the work copies made from them.

A snapshot is a git repository whose history ends at the base commit: one branch, no other refs,
no reflog, no objects from later commits. It is built once per task (keyed by content) and every
episode's work copy and every grading copy is made from it.

Reset strategies (see benchmarks/bench_sandbox.py for the measurement):
- ``copy``: delete the work copy, copy the snapshot again (``cp -a --reflink=auto``); cost grows
  with the tree, nothing the agent did survives. Default.
- ``git``: restore ``.git`` from the snapshot, then ``git reset --hard`` + ``git clean -ffdx`` in
  place; cost grows with what changed plus the size of ``.git``.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...task import Task, TaskError
from ..base import PatchError, SandboxError
from .setup_steps import apply_steps, pre_install_steps
from ..shell import ansi_c_quote

log = logging.getLogger(__name__)

# Build outputs and caches never count as part of the agent's patch.
EXCLUDES = ("__pycache__/", "*.pyc", ".pytest_cache/", "target/", "node_modules/", "*.egg-info/",
            ".mypy_cache/", ".ruff_cache/", ".hypothesis/")

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "harnessadapt", "GIT_AUTHOR_EMAIL": "harnessadapt@localhost",
    "GIT_COMMITTER_NAME": "harnessadapt", "GIT_COMMITTER_EMAIL": "harnessadapt@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
}


def git(args: list[str], cwd: Path, check: bool = True, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """git on the host with a controlled environment (no user config, fixed identity)."""
    env = {**os.environ, **_GIT_ENV}
    proc = subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=cwd, env=env,
                          input=input, capture_output=True)
    if check and proc.returncode != 0:
        raise TaskError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.decode(errors='replace').strip()}")
    return proc


@dataclass(frozen=True)
class Snapshot:
    path: Path
    base_commit: str


def cache_root() -> Path:
    """``$HA_CACHE_DIR`` (default ``~/.cache/harnessadapt``), made absolute: a relative one is taken
    from this process's working directory (sandboxes bind the cache's paths from elsewhere)."""
    root = Path(os.environ.get("HA_CACHE_DIR") or Path.home() / ".cache" / "harnessadapt").expanduser().absolute()
    root.mkdir(parents=True, exist_ok=True)
    return root


FORMAT_FILE = ".ha-format"
"""What built a cache entry (its kind and its builder's format): ``cache.py`` tells stale entries by it."""


def mark_built(path: Path, kind: str, fmt: int) -> None:
    """Record what built ``path`` (its kind and the builder's format); a snapshot keeps it in ``.git``."""
    where = path / ".git" if kind == "snapshot" else path
    target = where / FORMAT_FILE
    target.unlink(missing_ok=True)  # a copied layer's record may be a hard link into the layer
    target.write_text(json.dumps({"kind": kind, "format": fmt}) + "\n")


def touch(path: Path) -> None:
    """Note that ``path`` was used now (its directory's mtime); a read-only cache is left as it is."""
    try:
        os.utime(path)
    except OSError:
        pass


def prepare_snapshot(task: Task, repos_dir: Path | None = None) -> Snapshot:
    """The task's snapshot, built on first use and reused after (keyed by the task's content)."""
    dest = snapshot_dest(task)
    marker = dest / ".git" / "ha-base"
    if marker.is_file():
        touch(dest)
        return Snapshot(dest, marker.read_text().strip())
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=dest.parent))
    try:
        if task.source_dir is not None:
            base = _snapshot_from_dir(Path(task.source_dir), tmp / "repo")
        else:
            base = _snapshot_from_repo(task, tmp / "repo", repos_dir)
        mark_built(tmp / "repo", "snapshot", SNAPSHOT_FORMAT)
        (tmp / "repo" / ".git" / "ha-base").write_text(base + "\n")
        try:
            os.rename(tmp / "repo", dest)
        except OSError:  # another process won the race; use theirs
            if not marker.is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Snapshot(dest, marker.read_text().strip())


def snapshot_key(task: Task) -> str:
    """The content key of the task's snapshot (the same on every machine that has the task)."""
    return _snapshot_key(task)


def snapshot_dest(task: Task, key: str | None = None) -> Path:
    """Where this machine keeps the task's snapshot (``key``: computed when not given)."""
    return cache_root() / "snapshots" / f"{_safe(task.instance_id)}-{key or _snapshot_key(task)}"


ORIGIN_FILE = "ha-origin"
"""In a snapshot's ``.git``: where a snapshot that was not built here came from (``install_snapshot``)."""


def snapshot_origin(path: Path) -> str:
    """``built`` (here, from the task's source) or ``copied`` (installed from another machine's)."""
    return "copied" if (Path(path) / ".git" / ORIGIN_FILE).is_file() else "built"


def pack_snapshot(path: Path) -> bytes:
    """A prepared snapshot as an uncompressed tar (its git objects are compressed already), to move
    it to a machine that lacks it."""
    path = Path(path)
    if not (path / ".git" / "ha-base").is_file():
        raise TaskError(f"{path} is not a prepared snapshot (no .git/ha-base)")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(path, arcname="repo")
    return buf.getvalue()


def install_snapshot(task: Task, key: str, data: bytes, sha256: str, origin: str = "copied") -> Snapshot:
    """Install a snapshot packed elsewhere (``pack_snapshot``; ``sha256``: the packer's digest of
    ``data``, since a tar cut short can read as a smaller complete one) as this machine's copy for
    ``key``, atomically (a concurrent installer's or builder's copy wins; theirs is used). The copy
    records its origin, so a machine can tell the snapshots it built from those it was given."""
    dest = snapshot_dest(task, key)
    marker = dest / ".git" / "ha-base"
    if marker.is_file():
        return Snapshot(dest, marker.read_text().strip())
    got_sha = hashlib.sha256(data).hexdigest()
    if got_sha != sha256:
        raise TaskError(f"the snapshot archive for {task.instance_id} cannot be installed: {len(data)} bytes with "
                        f"sha256 {got_sha[:16]}, the packer's was {sha256[:16]} (cut short or damaged in transit)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".copy-", dir=dest.parent))
    try:
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
                tar.extractall(tmp, filter="tar")  # no absolute paths or paths outside tmp
        except tarfile.TarError as exc:  # truncated, damaged, or a member that would land outside tmp
            raise TaskError(f"the snapshot archive for {task.instance_id} ({len(data)} bytes) cannot be installed: "
                            f"{type(exc).__name__}: {exc}") from exc
        got = tmp / "repo" / ".git" / "ha-base"
        if not got.is_file():
            raise TaskError(f"the snapshot archive for {task.instance_id} ({len(data)} bytes) holds no prepared snapshot")
        (tmp / "repo" / ".git" / ORIGIN_FILE).write_text(origin + "\n")
        try:
            os.rename(tmp / "repo", dest)
        except OSError:
            if not marker.is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Snapshot(dest, marker.read_text().strip())


SNAPSHOT_FORMAT = 2
"""Bump when what a snapshot holds changes (2: no build outputs of an environment's install)."""


def _snapshot_key(task: Task) -> str:
    h = hashlib.sha256()
    h.update(f"{SNAPSHOT_FORMAT}\0{task.repo}\0{task.base_commit}\0".encode())
    steps = pre_install_steps(task)
    if steps:
        h.update(json.dumps(steps).encode())
    if task.source_dir is not None:
        root = Path(task.source_dir)
        for path in sorted(root.rglob("*")):
            if path.is_file():
                h.update(str(path.relative_to(root)).encode() + b"\0")
                h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _snapshot_from_dir(src: Path, dest: Path) -> str:
    shutil.copytree(src, dest, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "target", "node_modules", ".git"))
    git(["init", "-q", "-b", "main"], dest)
    _write_excludes(dest)
    git(["add", "-A"], dest)
    git(["commit", "-q", "--no-gpg-sign", "-m", "base"], dest)
    return _finish(dest)


def _snapshot_from_repo(task: Task, dest: Path, repos_dir: Path | None) -> str:
    """Clone the upstream repo (or a local mirror), check out the base commit and drop the future."""
    assert task.base_commit
    mirror = find_mirror(task.repo, repos_dir)
    source = mirror or f"https://github.com/{task.repo}.git"
    cloned = git(["clone", "-q", "--no-checkout", str(source), str(dest)], dest.parent, check=False)
    if cloned.returncode != 0:
        err = cloned.stderr.decode(errors="replace").strip()[-400:]
        where = os.environ.get("HA_REPOS_DIR") if repos_dir is None else str(repos_dir)
        if mirror is None:  # the machine's doing, not the task's: validation names it so
            raise TaskError(f"{task.repo} cannot be had here: no mirror under {where or '$HA_REPOS_DIR (unset)'} "
                            f"(<owner>+<name>/repo or <owner>/<name>.git) and cloning {source} failed: {err}")
        raise TaskError(f"cloning the mirror {mirror} failed: {err}")
    checkout = git(["checkout", "-q", "-B", "main", task.base_commit], dest, check=False)
    out = checkout.stderr.decode(errors="replace")
    if checkout.returncode != 0 and re.search(r"reference is not a tree|unknown revision|not a commit|invalid reference", out):
        # a mirror of the default branches: the base commit was on a branch or pull request it lacks
        raise TaskError(f"{task.repo} cannot be had here: the mirror {source} lacks the base commit "
                        f"{task.base_commit} ({out.strip().splitlines()[-1][:200] if out.strip() else 'not found'})")
    if checkout.returncode != 0 and "unable to read sha1 file" not in out:
        raise TaskError(f"git checkout -q -B main {task.base_commit} failed in {dest}: {out.strip()[-500:]}")
    missing = re.findall(r"unable to read sha1 file of (.+?) \(", out)
    if missing:  # a mirror without some large blobs (a size-capped copy): the base tree is not all there
        raise TaskError(f"{task.repo} cannot be had here: the mirror {source} lacks {len(missing)} file(s) of the base "
                        f"commit ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})")
    for ref in git(["for-each-ref", "--format=%(refname)"], dest).stdout.decode().split():
        if ref != "refs/heads/main":
            git(["update-ref", "-d", ref], dest)
    git(["remote", "remove", "origin"], dest, check=False)
    _submodules_from_mirrors(dest, repos_dir)
    _write_excludes(dest)
    steps = pre_install_steps(task)
    if steps:
        apply_steps(dest, steps)
        if git(["status", "--porcelain"], dest).stdout.strip():
            git(["add", "-A"], dest)
            git(["-c", "user.name=harnessadapt", "-c", "user.email=harnessadapt@localhost", "commit", "-q",
                 "--no-gpg-sign", "--no-verify", "-m", "environment setup (the benchmark's pre-install steps)"], dest)
    return _finish(dest)


_GITHUB_URL = re.compile(r"^(?:https?://|git://|ssh://git@|git@)github\.com[:/]([^/]+)/([^/]+?)(?:\.git)?/?$")


def _submodules_from_mirrors(dest: Path, repos_dir: Path | None) -> None:
    """Check out the submodules (``.gitmodules``) whose GitHub repository has a local mirror, at the
    commits the base records, as the official images have them: a build step's ``git submodule
    update --init`` (jq's oniguruma) then has nothing to fetch. One without a mirror is left for
    the build to fetch (with network, where there is any)."""
    if not (dest / ".gitmodules").is_file():
        return
    out = git(["config", "-f", ".gitmodules", "--get-regexp", r"^submodule\..*\.url$"], dest, check=False)
    for line in out.stdout.decode(errors="replace").splitlines():
        key, _, url = line.partition(" ")
        name = key[len("submodule."):-len(".url")]
        m = _GITHUB_URL.match(url.strip())
        mirror = find_mirror(f"{m.group(1)}/{m.group(2)}", repos_dir) if m else None
        if mirror is None:
            continue
        path = git(["config", "-f", ".gitmodules", f"submodule.{name}.path"], dest, check=False).stdout.decode().strip()
        got = git(["-c", "protocol.file.allow=always", "-c", f"url.{mirror}.insteadOf={url.strip()}",
                   "submodule", "update", "--init", "--", path or name], dest, check=False)
        if got.returncode != 0:
            log.warning("%s: submodule %s not checked out from %s: %s", dest, name, mirror,
                        got.stderr.decode(errors="replace").strip()[-300:])


def _finish(dest: Path) -> str:
    """No reflog, no unreachable objects, no packed refs beyond main; returns the base commit."""
    git(["config", "core.logAllRefUpdates", "false"], dest)
    git(["reflog", "expire", "--expire=now", "--all"], dest)
    gc = git(["gc", "-q", "--prune=now"], dest, check=False)
    if gc.returncode != 0:
        err = gc.stderr.decode(errors="replace")
        if "unable to read" not in err and "missing" not in err:
            raise TaskError(f"git gc failed in {dest}: {err.strip()[:500]}")
        # The source lacks objects of the past (an incomplete mirror): keep the base tree as a
        # single commit rather than fail; the agent then sees no history.
        log.warning("%s: the repository's history is incomplete (%s); the snapshot keeps only the base tree",
                    dest, err.strip().splitlines()[0] if err.strip() else "gc failed")
        tree = git(["rev-parse", "HEAD^{tree}"], dest).stdout.decode().strip()
        root = git(["commit-tree", tree, "-m", "base (history unavailable: the source repository is incomplete)"],
                   dest).stdout.decode().strip()
        git(["update-ref", "refs/heads/main", root], dest)
        git(["reflog", "expire", "--expire=now", "--all"], dest)
        git(["gc", "-q", "--prune=now"], dest)
    shutil.rmtree(dest / ".git" / "logs", ignore_errors=True)
    for sample in (dest / ".git" / "hooks").glob("*"):
        sample.unlink()
    return git(["rev-parse", "HEAD"], dest).stdout.decode().strip()


def _write_excludes(repo: Path) -> None:
    info = repo / ".git" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "exclude").write_text("\n".join(EXCLUDES) + "\n")


def find_mirror(repo: str, repos_dir: Path | None) -> Path | None:
    """A local bare mirror of ``owner/name`` in ``DIR/owner+name/repo`` or ``DIR/owner/name.git``."""
    repos_dir = repos_dir or (Path(os.environ["HA_REPOS_DIR"]) if os.environ.get("HA_REPOS_DIR") else None)
    if not repos_dir or not repo:
        return None
    owner, _, name = repo.partition("/")
    for cand in (repos_dir / f"{owner}+{name}" / "repo", repos_dir / owner / f"{name}.git", repos_dir / owner / name):
        if cand.is_dir():
            return cand
    return None


PATCH_CAP_BYTES = 8 << 20
"""Default cap on the agent's patch (bytes); a larger change is graded ``patch_too_large``."""
DIFF_TOO_LARGE, DIFF_NO_BASE = 3, 4
"""Exit codes of :func:`diff_script`: the change exceeds the cap; the base commit is unreadable."""
_DIFF_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding !diff !eol\n"
"""Overrides every ``.gitattributes`` of the work copy (``info/attributes`` wins): no filters, no
end-of-line or encoding conversion, no keyword expansion, git's own binary detection."""


def diff_script(base: str, objects: str, cap: int = PATCH_CAP_BYTES) -> str:
    """Shell script, run at the work copy's root, printing its changes against ``base`` as a git
    patch (new files included, binary hunks too).

    Nothing of the agent's git state is used: a fresh repository in a private temporary directory
    (no config but git's defaults, no hooks, attributes that disable filters and conversions, the
    package's excludes and the environment's, which can only leave files out) reads the base commit from ``objects`` (an object store the grader owns
    where it can, else the work copy's) and indexes the work tree from scratch. The total size of
    the changed files is checked before any patch text is made: above ``cap`` the script prints
    ``HA_PATCH_TOO_LARGE <bytes>`` on stderr and exits 3; an unreadable base exits 4.
    """
    q = ansi_c_quote
    excludes = "\n".join(EXCLUDES) + "\n"
    return (
        "set -e; umask 077; T=\"$(mktemp -d)\"; trap 'rm -rf \"$T\"' EXIT; "
        "unset GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_EXTERNAL_DIFF GIT_DIFF_OPTS "
        "GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_NAMESPACE GIT_ATTR_SOURCE GIT_CEILING_DIRECTORIES; "
        "export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME=\"$T\" XDG_CONFIG_HOME=\"$T\" "
        "GIT_TERMINAL_PROMPT=0; unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE; git init -q --bare \"$T/git\" >/dev/null; "
        "export GIT_DIR=\"$T/git\" GIT_INDEX_FILE=\"$T/index\" GIT_WORK_TREE=\"$PWD\"; "
        f"printf '%s\\n' {q(objects)} > \"$GIT_DIR/objects/info/alternates\"; "
        f"printf {q(_DIFF_ATTRIBUTES)} > \"$GIT_DIR/info/attributes\"; "
        f"printf {q(excludes)} > \"$GIT_DIR/info/exclude\"; "
        # The environment's own excludes (a linked node_modules, an official image's untracked .venv):
        # they can only leave files out of the patch, so reading them from the work copy is safe.
        "if [ -f .git/info/exclude ] && [ ! -L .git/info/exclude ] && [ ! -L .git ] && [ ! -L .git/info ]; then "
        "head -c 1000000 .git/info/exclude >> \"$GIT_DIR/info/exclude\"; echo >> \"$GIT_DIR/info/exclude\"; fi; "
        "G='git -c core.bare=false -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.quotepath=false "
        "-c core.symlinks=true -c core.autocrlf=false -c core.safecrlf=false -c core.excludesFile=/dev/null "
        "-c core.attributesFile=/dev/null -c safe.directory=* -c diff.noprefix=false -c diff.mnemonicPrefix=false "
        "-c diff.relative=false -c diff.renames=false -c diff.external= -c status.showUntrackedFiles=all'; "
        f"$G cat-file -e {base}^{{tree}} 2>/dev/null || exit {DIFF_NO_BASE}; "
        f"$G read-tree {base}; $G add -A >/dev/null 2>&1; "
        # Sizes of the new blobs first: a 150 MB file must not become a 200 MB patch anywhere.
        f"n=$($G diff --cached --raw --no-abbrev --no-renames {base} | awk '{{print $4}}' | grep -v '^0*$' "
        "| $G cat-file --batch-check='%(objectsize)' | awk '{s+=$1} END {print s+0}'); "
        f"if [ \"$n\" -gt {cap} ]; then echo \"HA_PATCH_TOO_LARGE $n\" >&2; exit {DIFF_TOO_LARGE}; fi; "
        f"$G diff --cached --binary --no-color --no-ext-diff --no-textconv --no-renames --src-prefix=a/ "
        f"--dst-prefix=b/ {base} | head -c {4 * cap + 1}"
    )


def parse_diff_result(rc: int, out: bytes, err: bytes, cap: int) -> str:
    """The patch text of a :func:`diff_script` run, or the typed reason there is none."""
    text = err.decode(errors="replace").strip()
    if rc == DIFF_TOO_LARGE or len(out) > 4 * cap:
        size = text.split()[-1] if rc == DIFF_TOO_LARGE and text else str(len(out))
        raise PatchError("patch_too_large", f"the change is too large to grade ({size} bytes of changed files; "
                                            f"the cap is {cap} bytes)")
    if rc == DIFF_NO_BASE:
        raise SandboxError("the base commit is not readable in the grader's object store")
    if rc == 124:
        raise PatchError("diff_failed", "computing the patch timed out (too many or too large files in the work copy)")
    if rc != 0:
        raise PatchError("diff_failed", f"git could not diff the work copy: {text[-500:]}")
    return out.decode("utf-8", errors="surrogateescape")


def make_work_copy(snapshot: Snapshot, dest: Path) -> None:
    """A fresh, independent copy of the snapshot at ``dest`` (replaced if present)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["cp", "-a", "--reflink=auto", str(snapshot.path), str(dest)], capture_output=True)
    if proc.returncode != 0:
        raise OSError(f"cannot copy snapshot to {dest}: {proc.stderr.decode(errors='replace').strip()}")


def reset_in_place(snapshot: Snapshot, dest: Path) -> None:
    """The ``git`` strategy: restore .git from the snapshot, then reset and clean the tree.

    The agent may have replaced ``.git`` with a symlink or a ``gitdir:`` file pointing at a host
    directory: whatever it is, it is removed without being followed, and git then works only with
    the snapshot's own, freshly copied repository (git neither writes through nor deletes through
    symlinks in the tree)."""
    git_entry = dest / ".git"
    if git_entry.is_symlink() or (git_entry.exists() and not git_entry.is_dir()):
        git_entry.unlink()
    elif git_entry.exists():
        shutil.rmtree(git_entry)
    if os.path.lexists(git_entry):
        raise OSError(f"cannot remove {git_entry} for an in-place reset")
    subprocess.run(["cp", "-a", "--reflink=auto", str(snapshot.path / ".git"), str(git_entry)], check=True)
    git(["reset", "-q", "--hard", snapshot.base_commit], dest)
    git(["clean", "-q", "-ffdx"], dest)
    built = snapshot.path / ".git" / "ha-built.json"  # an in-place build's files (pyenv.with_built_files)
    for rel in json.loads(built.read_text()) if built.is_file() else []:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(snapshot.path / rel, dest / rel)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80]
