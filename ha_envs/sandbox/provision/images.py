"""Images without a registry.

- **Base image** (``harnessadapt/base:bookworm``): a Debian root file system made with
  ``debootstrap`` and loaded with ``docker import``, with what the bundled suite needs (Python and
  pytest, git, patch, Go, Node.js, cargo). Its tag carries a hash of the package list.
- **Official images** (SWE-bench's ``swebench/sweb.eval.x86_64.*``, Pro's ``jefzda/sweap-images:*``,
  R2E-Gym's): used as the environment when the daemon has them or can pull them
  (``HA_OFFICIAL_IMAGES=auto|never|require``), else the environment is built.
- **Snapshot images** (``harnessadapt/task:<id>-<key>``): an environment image plus the task's
  prepared work copy at ``/testbed`` (history ending at the base commit), committed once per task
  and keyed by the environment image's id and the snapshot's content and path (an image belongs to
  one cache directory). Every episode's container starts from one.
- Environment and snapshot images carry the cache entries they were made from (``FROM_LABEL``);
  ``prune_images`` (``ha images prune``) removes those whose entries are gone.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..base import SandboxError
from ..daemon import LABEL, owner, retrying
from .realpaths import real_dirs, venv_paths
from .workcopy import Snapshot, prepare_snapshot

BASE_REPO = "harnessadapt/base"
BASE_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python-is-python3", "python3-pytest", "git", "patch", "ca-certificates", "procps",
                 "golang-go", "nodejs", "cargo", "gcc", "libc6-dev")
# libc6-dev: debootstrap does not resolve rustc's virtual dependency libc-dev; gcc: cargo links with cc.
MIRROR = os.environ.get("HA_DEBIAN_MIRROR", "http://deb.debian.org/debian")
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


@contextmanager
def _building(client: Any, base: str) -> Iterator[Any]:
    """A started, labelled, network-less container of ``base`` to derive an image from; removed after."""

    c = retrying(lambda: client.containers.create(base, entrypoint=["sleep", "infinity"], network_mode="none",
                                                  labels={LABEL: "1", f"{LABEL}.role": "build", f"{LABEL}.owner": owner()}))
    try:
        c.start()
        yield c
    finally:
        c.remove(force=True)


def _commit(c: Any, tag: str, changes: list[str]) -> None:
    repository, name = tag.rsplit(":", 1)
    c.commit(repository=repository, tag=name, changes=changes)


def _image(client: Any, name: str) -> Any:
    import docker.errors

    try:
        return client.images.get(name)
    except docker.errors.ImageNotFound as exc:
        raise SandboxError(f"image {name} is missing; build it with `ha images build`") from exc


def _task_tag(task: Any, key: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in task.instance_id.lower())[:80]
    return f"harnessadapt/task:{safe}-{key}"


def base_tag(packages: tuple[str, ...] = BASE_PACKAGES) -> str:
    h = hashlib.sha256(("\n".join((BASE_SUITE, MIRROR) + tuple(sorted(packages)))).encode()).hexdigest()[:10]
    return f"{BASE_REPO}:{BASE_SUITE}-{h}"


FROM_LABEL = f"{LABEL}.from"
"""The cache entries (host paths: an environment, a snapshot) an image was made from; an image whose
entries are gone (``ha cache prune``, a test's temporary cache) is an orphan (``prune_images``)."""


def _from_label(paths: list[str]) -> str:
    return f"LABEL {FROM_LABEL}={json.dumps(json.dumps(paths))}"


def _made_from(labels: dict | None) -> list[str]:
    """The paths an image's ``FROM_LABEL`` names ([] without one, or with one that does not parse)."""
    try:
        paths = json.loads((labels or {}).get(FROM_LABEL) or "[]")
    except ValueError:
        return []
    return [str(p) for p in paths] if isinstance(paths, list) else []


def prune_images(client: Any, dry_run: bool = False, gone: tuple[str, ...] = ()) -> tuple[list[dict], list[dict]]:
    """Remove the images built from cache entries that are gone, or in ``gone`` (what a dry run of
    ``cache.prune`` would remove), derived images first; returns (removed, kept with the reason: a
    container uses it, ...). The base image, official images and images made before the label are
    never touched."""
    import docker.errors

    orphans = []
    for image in client.images.list(filters={"label": FROM_LABEL}):
        made_from = _made_from(image.labels)
        missing = [p for p in made_from if p in gone or not Path(p).exists()]
        if missing:
            orphans.append({"id": image.id, "tags": image.tags, "from": made_from, "gone": missing,
                            "bytes": image.attrs.get("Size", 0)})
    orphans.sort(key=lambda o: -len(o["from"]))  # a snapshot image (env + snapshot) before its env image
    removed, kept = [], []
    for o in orphans:
        if dry_run:
            removed.append(o)
            continue
        try:
            for tag in o["tags"][1:]:
                client.images.remove(tag, noprune=False)
            client.images.remove(o["tags"][0] if o["tags"] else o["id"], noprune=False)
            removed.append(o)
        except docker.errors.APIError as exc:
            kept.append(dict(o, reason=str(getattr(exc, "explanation", None) or exc)[:300]))
    return removed, kept


def image_exists(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_base_image(client: Any, packages: tuple[str, ...] = BASE_PACKAGES, log: Any = None) -> str:
    """debootstrap + docker import; a no-op when the image exists. Needs root and debootstrap."""
    tag = base_tag(packages)
    with _lock(tag):
        if image_exists(client, tag):
            return tag
        if shutil.which("debootstrap") is None:
            raise SandboxError("building the base image needs debootstrap (apt-get install debootstrap)")
        root = Path(tempfile.mkdtemp(prefix="ha-rootfs-"))
        try:
            cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", BASE_SUITE, str(root), MIRROR]
            proc = subprocess.run(cmd, stdout=log or subprocess.PIPE, stderr=subprocess.STDOUT)
            if proc.returncode != 0:
                tail = (proc.stdout or b"")[-1500:].decode(errors="replace") if log is None else ""
                raise SandboxError(f"debootstrap failed ({proc.returncode}): {tail}")
            shutil.rmtree(root / "var" / "cache" / "apt" / "archives", ignore_errors=True)
            tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
            imp = subprocess.run(["docker", "import", "--change",
                                  "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                  "--change", "ENV LANG=C.UTF-8", "-", tag], stdin=tar.stdout, capture_output=True)
            tar.wait()
            if imp.returncode != 0:
                raise SandboxError(f"docker import failed: {imp.stderr.decode(errors='replace')[-500:]}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
        client.images.get(tag).tag(BASE_REPO, BASE_SUITE)  # also as the short, stable name
        return tag


def dockerfile_image(client: Any, context: Path) -> str:
    """The image a build context's ``Dockerfile`` makes, built here once and tagged by the context's
    content (``harnessadapt/dockerfile:<hash>``). Nothing is pulled: its ``FROM`` image must be on
    this daemon (``docker build --pull=false``); a failed build is a ``SandboxError`` with its log."""
    h = hashlib.sha256()
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(context)).encode() + b"\0" + path.read_bytes() + b"\0")
    tag = f"harnessadapt/dockerfile:{h.hexdigest()[:12]}"
    with _lock(tag):
        if image_exists(client, tag):
            return tag
        import docker

        try:
            retrying(lambda: client.images.build(path=str(context), tag=tag, pull=False, rm=True, forcerm=True,
                                                 labels={LABEL: "dockerfile", FROM_LABEL: json.dumps([str(context)])}))
        except (docker.errors.BuildError, docker.errors.APIError) as exc:
            log = "".join(str(c.get("stream") or c.get("error") or "") for c in getattr(exc, "build_log", None) or [])
            raise SandboxError(f"building {context}/Dockerfile failed (nothing is pulled here: its FROM image must be "
                               f"on this Docker daemon): {exc}; {log[-800:]}") from exc
        return tag


def _tar_dir(src: Path, arcname: str) -> bytes:
    buf = io.BytesIO()

    def owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(src), arcname=arcname, filter=owned_by_root)
    return buf.getvalue()


OFFICIAL_POLICIES = ("auto", "never", "require")
_pull_failed: dict[str, str] = {}
CONDA_TESTBED = "/opt/miniconda3/envs/testbed/bin"
OFFICIAL_LABEL = "harnessadapt.official"


def official_policy() -> str:
    policy = os.environ.get("HA_OFFICIAL_IMAGES", "auto")
    if policy not in OFFICIAL_POLICIES:
        raise SandboxError(f"HA_OFFICIAL_IMAGES={policy!r}: expected one of {', '.join(OFFICIAL_POLICIES)}")
    return policy


def official_image(client: Any, task: Any, policy: str | None = None) -> str | None:
    """The benchmark's own image for ``task`` when it can be had: present in the daemon, else pulled
    (one attempt per process and name; the failure is remembered). ``policy`` (default
    ``$HA_OFFICIAL_IMAGES``): ``auto`` uses it when it can be had and builds otherwise, ``never``
    always builds, ``require`` fails when it cannot be had."""
    import docker.errors

    policy = policy or official_policy()
    name = (task.environment.extra or {}).get("official_image") if task is not None else None
    if not name or policy == "never":
        return None
    if image_exists(client, name):
        return name
    if name not in _pull_failed:
        repo, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "latest")
        try:
            client.images.pull(repo, tag=tag or "latest")
            return name
        except (docker.errors.APIError, docker.errors.DockerException) as exc:
            _pull_failed[name] = str(exc).splitlines()[0][:300]
    if policy == "require":
        raise SandboxError(f"the official image {name} of {task.instance_id} is not in the daemon and cannot "
                           f"be pulled ({_pull_failed[name]}); load it (`docker load`) or set HA_OFFICIAL_IMAGES=auto")
    return None


# Run inside an official image's work copy: keep it as built (compiled extensions, in-place builds,
# venvs and all), end its history at the base commit (no other refs, remotes, reflog or later
# objects). Changes the image left uncommitted (SWE-bench's pre-install edits, R2E's compatibility
# patches) become one "environment" commit, and its untracked files (.venv, run_tests.sh) are
# excluded, so the agent's diff holds only the agent's changes and applies to the same image.
_SANITIZE = r"""
set -e
cd "$HA_WORKDIR"
head=$(git rev-parse HEAD)
if [ -n "$HA_BASE" ]; then
  want=$(git rev-parse --verify -q "$HA_BASE^{commit}" || true)
  if [ "$want" != "$head" ]; then
    echo "the image's work copy is at $head, the task's base is $HA_BASE (${want:-not in the image})" >&2
    exit 3
  fi
fi
git status --porcelain --untracked-files=normal | sed -n 's/^?? //p' | sed 's#^#/#' >> .git/info/exclude
git -c user.name=harnessadapt -c user.email=env@harnessadapt commit -q -a --no-verify   -m "environment (changes the official image left uncommitted)" >/dev/null 2>&1 || true
git checkout -q -B main
for ref in $(git for-each-ref --format='%(refname)'); do [ "$ref" = refs/heads/main ] || git update-ref -d "$ref"; done
for r in $(git remote); do git remote remove "$r"; done
git config core.logAllRefUpdates false
git reflog expire --expire=now --all
git gc -q --prune=now 2>/dev/null || echo "ha: git gc failed (incomplete history); later objects may remain" >&2
rm -rf .git/logs
git rev-parse HEAD
"""


HIDDEN_IN_IMAGES = ("/r2e_tests",)
"""Hidden tests some official images carry (R2E-Gym): kept for the grader, removed for the agent."""


def _official_snapshot(client: Any, task: Any, env: str, grader: bool = False) -> tuple[str, Snapshot]:
    """The snapshot image of a task whose environment is an official image: its own work copy,
    sanitized in place. The host holds no copy (``Snapshot.path`` names none). When the image carries
    hidden tests, the grader gets a variant that keeps them; the agent's has none."""

    workdir = task.environment.workdir
    tag = _task_tag(task, "o" + hashlib.sha256(f"{_image(client, env).id}\n{workdir}\n{task.base_commit}".encode()).hexdigest()[:12])
    grader_tag = tag + "-grader"

    def result() -> tuple[str, Snapshot]:
        chosen = grader_tag if grader and image_exists(client, grader_tag) else tag
        return chosen, Snapshot(Path("/nonexistent/official-image"), client.images.get(tag).labels[f"{LABEL}.snapshot"])

    with _lock(tag):
        if image_exists(client, tag):
            return result()
        with _building(client, env) as c:
            rc, out = c.exec_run(["bash", "-c", _SANITIZE], environment={"HA_WORKDIR": workdir, "HA_BASE": task.base_commit or ""},
                                 demux=True)
            stdout, stderr = (out[0] or b"").decode(errors="replace"), (out[1] or b"").decode(errors="replace")
            if rc != 0:
                raise SandboxError(f"the official image {env} has no usable git work copy at {workdir}: {stderr.strip()[-500:]}")
            base = stdout.strip().splitlines()[-1]
            changes = [f"WORKDIR {workdir}", f"LABEL {LABEL}.snapshot={base}", 'ENTRYPOINT ["sleep", "infinity"]']
            hidden = [h for h in HIDDEN_IN_IMAGES if c.exec_run(["test", "-e", h]).exit_code == 0]
            if hidden:
                _commit(c, grader_tag, changes)
                rc, out = c.exec_run(["rm", "-rf", *hidden])
                if rc != 0:
                    raise SandboxError(f"cannot remove the hidden tests {hidden} from {env}: {out.decode(errors='replace')[:300]}")
            c.stop(timeout=1)
            _commit(c, tag, changes)
        return result()


def _official_env(client: Any, name: str) -> str:
    """An official image made ready for our containers: SWE-bench's conda ``testbed`` env first on
    PATH (its eval scripts activate it), git's safe.directory open, the image's entrypoint unused."""
    tag = f"harnessadapt/env:official-{client.images.get(name).id.split(':')[-1][:12]}"
    with _lock(tag):
        if image_exists(client, tag):
            return tag
        with _building(client, name) as c:
            conda = c.exec_run(["test", "-x", f"{CONDA_TESTBED}/python"]).exit_code == 0
            path = c.exec_run(["sh", "-c", "echo $PATH"]).output.decode().strip() or "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
            c.exec_run(["git", "config", "--system", "--add", "safe.directory", "*"])
            c.stop(timeout=1)
            changes = [f"LABEL {OFFICIAL_LABEL}={name}"]
            if conda:
                changes += [f"ENV PATH={CONDA_TESTBED}:/opt/miniconda3/bin:{path}", "ENV CONDA_DEFAULT_ENV=testbed"]
            _commit(c, tag, changes)
        return tag


def env_image(client: Any, task: Any, base: str | None = None) -> str:
    """The environment image of ``task``: the benchmark's official image when it can be had (see
    ``official_image``); else ``base`` (the task's image, else the bundled base) plus, for real
    Python instances, the interpreter and venv the local sandbox uses (built on the host by
    ``pyenv.python_env``, copied in at the same paths), with PATH and PYTHONPATH set for the workdir."""
    from .nodeenv import node_env
    from .pyenv import import_roots, interpreter_dirs, python_env, workcopy_on_path

    if base is None and task is not None:
        official = official_image(client, task)
        if official is not None:
            return _official_env(client, official)
        context = (task.environment.extra or {}).get("dockerfile_context")
        if context and not task.environment.image:  # a Harbor task's environment/Dockerfile
            base = dockerfile_image(client, Path(context))
    base = base or (task.environment.image if task is not None else None) or f"{BASE_REPO}:{BASE_SUITE}"
    node_modules = node_env(task) if task is not None else None
    if node_modules is not None:
        return _node_env_image(client, base, node_modules)
    venv = python_env(task) if task is not None else None
    if venv is None:
        return base
    dirs = interpreter_dirs(venv)
    real_venv = os.path.realpath(venv)  # a cache reached through a symlink: copied where it really is
    key = (f"{_image(client, base).id}|{'|'.join(map(str, dirs))}|{'|'.join(real_dirs(list(map(str, dirs))))}|"
           f"{task.environment.workdir}")
    tag = f"harnessadapt/env:{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    with _lock(tag):
        if image_exists(client, tag):
            return tag
        with _building(client, base) as c:
            copy_dirs_into(c, [*reversed([str(d) for d in dirs]), *venv_paths(venv)])  # the prefix first, then the env
            c.stop(timeout=1)
            pythonpath = import_roots(prepare_snapshot(task).path, task.environment.workdir, venv)
            _commit(c, tag, [f"ENV PATH={real_venv}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                             f"ENV VIRTUAL_ENV={real_venv}", _from_label([str(venv)])]
                    + ([] if workcopy_on_path(venv, task.environment.workdir) else [f"ENV PYTHONPATH={pythonpath}"]))
        return tag


_IMAGE_OWN = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/proc", "/dev")


def copy_dirs_into(c: Any, paths: list[str]) -> list[str]:
    """This machine's directories of ``paths`` into the container ``c`` at their real paths (a venv
    or prefix reached through a symlink is copied where it is, not as a dangling link), and the
    symlinks on the way to them made again there (``realpaths.py``), so the paths a venv wrote
    (its ``python`` link, ``pyvenv.cfg``, shebangs) resolve in the image; the image's own system
    directories are left alone. Returns the real directories copied."""
    from .realpaths import hidden_links

    def under(d: str, tops: list[str] | tuple[str, ...]) -> bool:
        return any(d == t or d.startswith(t.rstrip("/") + "/") for t in tops)

    reals: list[str] = []
    for d in real_dirs([p for p in paths if os.path.isdir(os.path.realpath(p))]):
        if not under(d, _IMAGE_OWN) and not under(d, reals):  # a prefix's bin/ comes with the prefix
            reals.append(d)
    for d in reals:
        real = Path(d)
        c.exec_run(["mkdir", "-p", str(real.parent)])
        if not c.put_archive(str(real.parent), _tar_dir(real, real.name)):
            raise SandboxError(f"could not copy {d} into the image")
    for link, target in hidden_links(paths, shown=reals + list(_IMAGE_OWN)):
        code, out = c.exec_run(["sh", "-c", 'mkdir -p "$(dirname "$1")" && ln -sfn "$2" "$1"', "sh", link, target])
        if code != 0:
            raise SandboxError(f"could not link {link} to {target} in the image: {out.decode(errors='replace')[-300:]}")
    return reals


def _node_env_image(client: Any, base: str, node_modules: Path) -> str:
    """``base`` + this machine's Node.js, npm and corepack (/usr/local) + the task's node env, at the
    path it has on this machine: a workspace's package node_modules and the links between them are
    absolute (``nodeenv._retarget_links``), so they resolve in the image as they do in the local
    sandbox. When the env holds the pnpm / yarn release corepack installed it with, the image gets
    corepack's shims and reads that release offline."""
    from .nodeenv import COREPACK_DIR, NESTED_LIST, corepack_runtime, node_runtime

    runtime = node_runtime()
    if runtime is None:
        raise SandboxError("Node.js and npm are needed on this machine to build a JavaScript environment image")
    node, npm_dir = runtime
    env = node_modules.parent
    corepack_home = env / COREPACK_DIR if (env / COREPACK_DIR).is_dir() else None
    corepack = corepack_runtime() if corepack_home is not None else None
    if corepack_home is not None and corepack is None:
        raise SandboxError(f"{env} was installed with a corepack release (pnpm / yarn) and this machine has no corepack "
                           "to copy into the environment image")
    key = f"{_image(client, base).id}|{env}|{node}|{npm_dir}|{corepack}"
    tag = f"harnessadapt/env:node-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    with _lock(tag):
        if image_exists(client, tag):
            return tag
        parts = [("/usr/local/bin", lambda: _tar_file(node, "node")),
                 ("/usr/local/lib/node_modules", lambda: _tar_dir(npm_dir, "npm"))]
        parts += [(str(env), (lambda p=p: _tar_dir(env / p, p))) for p in ("node_modules", "nested", COREPACK_DIR, NESTED_LIST)
                  if (env / p).exists()]
        shims = "ln -sf ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && " \
                "ln -sf ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx && "
        changes = [f"LABEL {LABEL}.node_modules={json.dumps(str(node_modules))}",  # quoted: a cache path may hold spaces
                   _from_label([str(env)])]
        if corepack is not None:
            parts.append(("/usr/local/lib/node_modules", lambda: _tar_dir(corepack, "corepack")))
            shims += "ln -sf ../lib/node_modules/corepack/dist/corepack.js /usr/local/bin/corepack && " \
                     "corepack enable --install-directory /usr/local/bin && "
            changes += [f"ENV COREPACK_HOME={json.dumps(str(corepack_home))}", "ENV COREPACK_ENABLE_DOWNLOAD_PROMPT=0",
                        "ENV COREPACK_ENABLE_NETWORK=0"]
        with _building(client, base) as c:
            c.exec_run(["mkdir", "-p", "/usr/local/bin", "/usr/local/lib/node_modules", str(env)])
            for dest, make in parts:
                if not c.put_archive(dest, make()):
                    raise SandboxError(f"could not copy Node.js files into {dest} of the image")
            rc, out = c.exec_run(["sh", "-c", shims + "node --version"])
            if rc != 0:
                raise SandboxError(f"this machine's Node.js does not run in {base}: {out.decode(errors='replace')[:300]}")
            c.stop(timeout=1)
            _commit(c, tag, changes)
        return tag


def _tar_file(path: Path, arcname: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tar.gettarinfo(str(path), arcname=arcname)
        info.uid = info.gid = 0
        with open(path, "rb") as f:
            tar.addfile(info, f)
    return buf.getvalue()


def snapshot_image(client: Any, task: Any, env_image_name: str | None = None, grader: bool = False) -> tuple[str, Snapshot]:
    """The task's snapshot image (built once, cached by content) and its host snapshot; ``grader``
    picks the variant with the image's hidden tests, where an official image has them."""

    env = env_image(client, task, env_image_name)
    env_img = _image(client, env)
    labels = env_img.labels or {}
    if OFFICIAL_LABEL in labels:
        return _official_snapshot(client, task, env, grader=grader)
    from .pyenv import python_env, with_built_files

    snapshot = with_built_files(prepare_snapshot(task), python_env(task))
    workdir = task.environment.workdir
    # the snapshot's whole path: an image belongs to one cache, as its label says (prune_images)
    tag = _task_tag(task, hashlib.sha256(f"{env_img.id}\n{snapshot.path}\n{workdir}".encode()).hexdigest()[:12])
    with _lock(tag):
        if image_exists(client, tag):
            return tag, snapshot
        with _building(client, env) as c:
            parent, name = workdir.rstrip("/").rsplit("/", 1)
            c.exec_run(["rm", "-rf", workdir])
            c.exec_run(["mkdir", "-p", parent or "/"])
            if not c.put_archive(parent or "/", _tar_dir(snapshot.path, name)):
                raise SandboxError(f"could not copy the work copy of {task.instance_id} into {env}")
            rc, out = c.exec_run(["git", "config", "--system", "--add", "safe.directory", "*"])
            if rc != 0:
                raise SandboxError(f"git is missing or broken in {env}: {out.decode(errors='replace')[:300]}")
            if f"{LABEL}.node_modules" in labels:
                from .nodeenv import link_script

                rc, out = c.exec_run(["sh", "-c", link_script(workdir, Path(labels[f"{LABEL}.node_modules"]))])
                if rc != 0:
                    raise SandboxError(f"could not link the node env into {workdir}: {out.decode(errors='replace')[:300]}")
            c.stop(timeout=1)
            _commit(c, tag, [f"WORKDIR {workdir}", f"LABEL {LABEL}.snapshot={snapshot.base_commit}",
                             _from_label(_made_from(labels) + [str(snapshot.path)])])
        return tag, snapshot


def image_sources(task: Any) -> list[str]:
    """The images a task's Docker environment is derived from, in the order ``env_image`` looks for
    them: the benchmark's official image (unless ``HA_OFFICIAL_IMAGES=never``), then the base (the
    task's own image, else the bundled base). A machine that lacks one can be given it
    (``save_image`` / ``load_image``) instead of pulling or building it; the environment and
    snapshot images are then derived on that machine from its moved caches (a copy, no build)."""
    names = []
    official = (task.environment.extra or {}).get("official_image") if task is not None else None
    if official and official_policy() != "never":
        names.append(str(official))
    names.append((task.environment.image if task is not None else None) or base_tag())
    return names


IMAGE_CHUNK = 64 << 20
"""Bytes per piece of a saved image (``save_image``): moved piece by piece, never whole in memory."""


def save_image(tag: str, chunk: int = IMAGE_CHUNK) -> Iterator[bytes]:
    """``docker save`` of ``tag`` from this machine's daemon (``DOCKER_HOST``), in pieces."""
    proc = subprocess.Popen(["docker", "save", tag], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        while True:
            data = proc.stdout.read(chunk)
            if not data:
                break
            yield data
        err = proc.stderr.read().decode(errors="replace").strip()
        if proc.wait() != 0:
            raise SandboxError(f"docker save {tag} failed: {err[-500:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def load_image(pieces: Iterator[bytes], sha256: str, tag: str) -> None:
    """``docker load`` into this machine's daemon an image saved elsewhere (``save_image``'s pieces;
    ``sha256``: the saver's digest of them all). A stream that does not match is never committed:
    the load is killed before its end, and it fails."""
    proc = subprocess.Popen(["docker", "load", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    digest = hashlib.sha256()
    n = 0
    try:
        for piece in pieces:
            digest.update(piece)
            n += len(piece)
            proc.stdin.write(piece)
        if digest.hexdigest() != sha256:
            proc.kill()
            raise SandboxError(f"the saved image {tag} cannot be loaded: {n} bytes with sha256 {digest.hexdigest()[:16]}, "
                               f"the saver's was {sha256[:16]} (cut short or damaged in transit)")
        _, err = proc.communicate(timeout=1800)  # closes its input: the load ends and commits
        if proc.returncode != 0:
            raise SandboxError(f"docker load of {tag} failed: {err.decode(errors='replace').strip()[-500:]}")
    except BrokenPipeError as exc:
        proc.wait()
        raise SandboxError(f"docker load of {tag} stopped reading: {proc.stderr.read().decode(errors='replace')[-500:]}") \
            from exc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if tag == base_tag():
        subprocess.run(["docker", "tag", tag, f"{BASE_REPO}:{BASE_SUITE}"], capture_output=True)
