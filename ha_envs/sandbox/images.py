"""Images without a registry.

- **Base image** (``harnessadapt/base:bookworm``): a Debian root file system made with
  ``debootstrap`` and loaded with ``docker import``, with what the bundled suite needs (Python and
  pytest, git, patch, Go, Node.js, cargo). Its tag carries a hash of the package list.
- **Snapshot images** (``harnessadapt/task:<id>-<key>``): an environment image plus the task's
  prepared work copy at ``/testbed`` (history ending at the base commit), committed once per task
  and keyed by the environment image's id and the snapshot's content. Every episode's container
  starts from one.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

from .base import SandboxError
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


def base_tag(packages: tuple[str, ...] = BASE_PACKAGES) -> str:
    h = hashlib.sha256(("\n".join((BASE_SUITE, MIRROR) + tuple(sorted(packages)))).encode()).hexdigest()[:10]
    return f"{BASE_REPO}:{BASE_SUITE}-{h}"


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


def _tar_dir(src: Path, arcname: str) -> bytes:
    buf = io.BytesIO()

    def owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(src), arcname=arcname, filter=owned_by_root)
    return buf.getvalue()


def env_image(client: Any, task: Any, base: str | None = None) -> str:
    """The environment image of ``task``: ``base`` (the task's image, else the bundled base) plus,
    for real Python instances, the interpreter and venv the local sandbox uses (built on the host by
    ``pyenv.python_env``, copied in at the same paths), with PATH and PYTHONPATH set for /testbed."""
    import docker.errors

    from .docker import LABEL, owner, retrying
    from .pyenv import python_env, source_root

    base = base or (task.environment.image if task is not None else None) or f"{BASE_REPO}:{BASE_SUITE}"
    venv = python_env(task) if task is not None else None
    if venv is None:
        return base
    try:
        base_id = client.images.get(base).id
    except docker.errors.ImageNotFound as exc:
        raise SandboxError(f"image {base} is missing; build it with `ha images build`") from exc
    interp = (venv / "bin" / "python").resolve().parent.parent
    tag = f"harnessadapt/env:{hashlib.sha256(f'{base_id}|{venv}|{interp}'.encode()).hexdigest()[:12]}"
    with _lock(tag):
        if image_exists(client, tag):
            return tag
        c = retrying(lambda: client.containers.create(base, command=["sleep", "infinity"], network_mode="none",
                                                      labels={LABEL: "1", f"{LABEL}.role": "build", f"{LABEL}.owner": owner()}))
        try:
            c.start()
            for d in (interp, venv):
                c.exec_run(["mkdir", "-p", str(d.parent)])
                if not c.put_archive(str(d.parent), _tar_dir(d, d.name)):
                    raise SandboxError(f"could not copy {d} into the image")
            c.stop(timeout=1)
            pythonpath = source_root("/testbed", prepare_snapshot(task).path)
            c.commit(repository="harnessadapt/env", tag=tag.split(":", 1)[1], changes=[
                f"ENV PATH={venv}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                f"ENV VIRTUAL_ENV={venv}", f"ENV PYTHONPATH={pythonpath}"])
        finally:
            c.remove(force=True)
        return tag


def snapshot_image(client: Any, task: Any, env_image_name: str | None = None) -> tuple[str, Snapshot]:
    """The task's snapshot image (built once, cached by content) and its host snapshot."""
    import docker.errors

    from .docker import LABEL, owner, retrying

    env = env_image(client, task, env_image_name)
    snapshot = prepare_snapshot(task)
    try:
        env_id = client.images.get(env).id
    except docker.errors.ImageNotFound as exc:
        raise SandboxError(f"image {env} is missing; build it with `ha images build`") from exc
    key = hashlib.sha256(f"{env_id}\n{snapshot.path.name}".encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in task.instance_id.lower())[:80]
    tag = f"harnessadapt/task:{safe}-{key}"
    with _lock(tag):
        if image_exists(client, tag):
            return tag, snapshot
        c = retrying(lambda: client.containers.create(env, command=["sleep", "infinity"], network_mode="none",
                                                      labels={LABEL: "1", f"{LABEL}.role": "build", f"{LABEL}.owner": owner()}))
        try:
            c.start()
            c.exec_run(["rm", "-rf", "/testbed"])
            if not c.put_archive("/", _tar_dir(snapshot.path, "testbed")):
                raise SandboxError(f"could not copy the work copy of {task.instance_id} into {env}")
            rc, out = c.exec_run(["git", "config", "--system", "--add", "safe.directory", "*"])
            if rc != 0:
                raise SandboxError(f"git is missing or broken in {env}: {out.decode(errors='replace')[:300]}")
            c.stop(timeout=1)
            c.commit(repository="harnessadapt/task", tag=tag.split(":", 1)[1],
                     changes=["WORKDIR /testbed", f"LABEL {LABEL}.snapshot={snapshot.base_commit}"])
        finally:
            c.remove(force=True)
        return tag, snapshot
