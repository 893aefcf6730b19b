"""DockerSandbox: one container per episode, driven through the docker SDK.

- The container starts from the task's **snapshot image** (the environment image plus the task's
  work copy at ``/testbed``, committed once per task and cached by content; ``images.py``), so every
  episode of a GRPO group starts from the same prepared state. ``reset()`` swaps in a fresh
  container from that image, taken from a warm pool started ahead of time (never a dead one).
- Isolation: no network by default, memory / CPU / pids limits, every Linux capability dropped,
  ``no-new-privileges``, an init process, no bind mounts at all (the Docker socket and the host's
  files are never visible).
- One persistent bash per episode (``docker exec -i``, the same nonce'd protocol as the local
  sandbox), not a fresh exec per command. A command past its timeout is killed with every process
  it started (found by start time inside the container).
- Files move both ways through the SDK's archive API; ``diff()`` runs in a separate exec with a
  throwaway index, so the agent's shell state cannot change it.
- Transient daemon errors (5xx, dropped connections) are retried with tenacity. Containers carry
  labels (``harnessadapt.owner`` = host:pid); the first sandbox of a process removes those whose
  owner process is gone (a crashed run's leftovers).
"""

from __future__ import annotations

import io
import os
import queue
import shutil
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from . import dockertrace, live
from .base import COMMAND_TIMEOUT_S, OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES, PatchError, RunResult, SandboxError, nul_result
from .daemon import LABEL, docker_client, owner, reap_orphans, retrying
from .hosttrace import HostTrace, TraceSpec, TraceUnavailable
from .limits import DiskWatch, now_ticks
from .shell import PersistentShell, ansi_c_quote, tar_bytes, to_result
from .provision.workcopy import DIFF_NO_BASE, PATCH_CAP_BYTES, diff_script, parse_diff_result

T = TypeVar("T")
BASE_IMAGE = "harnessadapt/base:bookworm"
_ENV = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "NO_COLOR": "1",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PIP_NO_INPUT": "1", "GIT_CONFIG_NOSYSTEM": "1",
        "CARGO_NET_OFFLINE": "true", "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local",
        "GOTELEMETRY": "off", "CGO_ENABLED": "0", "NODE_NO_WARNINGS": "1", "HOME": "/root"}
_reaped = False
_reap_lock = threading.Lock()


@dataclass
class DockerSandboxConfig:
    """Knobs of the docker sandbox."""

    image: str | None = None
    """The environment image; default: the task's ``environment.image``, else the bundled base image."""
    network: bool = False
    memory_bytes: int = 4 << 30
    cpus: float = 2.0
    max_pids: int = 512
    disk_bytes: int = 8 << 30
    """Disk quota of the work copy (checked while commands run; no single file may exceed it)."""
    tmp_bytes: int = 2 << 30
    """Size of the container's ``/tmp`` (a tmpfs, so the cap is hard)."""
    patch_bytes: int = PATCH_CAP_BYTES
    """Cap on the total size of the changed files that ``diff()`` turns into a patch."""
    command_timeout_s: float = COMMAND_TIMEOUT_S
    output_head_bytes: int = OUTPUT_HEAD_BYTES
    output_tail_bytes: int = OUTPUT_TAIL_BYTES
    mount_point: str | None = None
    """The work copy's path in the container; None: the task's ``environment.workdir``."""
    warm: int = 1
    """Containers kept started ahead for the next reset (0: start on demand)."""
    docker_timeout_s: float = 120.0


class ContainerPool:
    """(container, shell) pairs of one image, started ahead so a reset only swaps them in;
    ``take()`` never returns a dead container or shell."""

    def __init__(self, client: Any, image: str, create: Callable[[], Any], size: int) -> None:
        self.client, self.image, self.create, self.size = client, image, create, size
        self.ready: queue.Queue[Any] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self.closed = False

    def fill(self) -> None:
        for _ in range(self.size - self.ready.qsize() - sum(t.is_alive() for t in self._threads)):
            t = threading.Thread(target=self._one, daemon=True)
            t.start()
            self._threads.append(t)
        self._threads = [t for t in self._threads if t.is_alive()]

    def _one(self) -> None:
        try:
            item = self.create()
        except Exception:  # noqa: BLE001 - take() starts one itself when the pool is empty
            return
        if self.closed:
            _discard(item)
        else:
            self.ready.put(item)

    def take(self) -> Any:
        while True:
            try:
                item = self.ready.get(timeout=0.01 if not any(t.is_alive() for t in self._threads) else 30)
            except queue.Empty:
                return self.create()
            container, shell = item
            try:
                container.reload()
                if container.status == "running" and shell.alive:
                    return item
            except Exception:  # noqa: BLE001 - it vanished: discard and try the next
                pass
            _discard(item)

    def close(self) -> None:
        self.closed = True
        for t in self._threads:
            t.join(timeout=30)
        while not self.ready.empty():
            _discard(self.ready.get_nowait())


def _kilobytes(du_output: bytes) -> int | None:
    """Bytes from the last line of ``du -skc ... | tail -1 | cut -f1``; None when unreadable."""
    try:
        return int(du_output.split()[-1]) * 1024
    except (ValueError, IndexError):
        return None


def _discard(item: tuple[Any, PersistentShell | None]) -> None:
    if item[1] is not None:
        item[1].close()
    _remove(item[0])


def _remove(container: Any) -> None:
    try:
        container.remove(force=True)
    except Exception:  # noqa: BLE001 - already gone
        pass


class DockerSandbox:
    """Implements :class:`~ha_envs.sandbox.base.Sandbox` in Docker containers."""

    def __init__(self, task: Any = None, config: DockerSandboxConfig | None = None, image: str | None = None,
                 role: str = "agent", mounts: dict[str, str] | None = None, snapshot: Any = None) -> None:
        """``image`` and ``mounts`` (host dir -> container dir) are for the grader's containers;
        the agent's container uses the task's snapshot image and mounts nothing."""
        global _reaped
        self.config = config or DockerSandboxConfig()
        self.task = task
        self.workdir = self.config.mount_point or (task.environment.workdir if task is not None else "/testbed")
        self.client = docker_client(self.config.docker_timeout_s)
        with _reap_lock:
            if not _reaped:
                reap_orphans(self.client)
                _reaped = True
        self._image = image
        self.role = role
        self.container: Any = None
        self.shell: PersistentShell | None = None
        self.pool: ContainerPool | None = None
        self.mounts = dict(mounts or {})
        self.snapshot = snapshot
        self.closed = False
        self._fill_pending = False
        self._disk: DiskWatch | None = None
        self._disk_container: Any = None
        self._watch_root: str | None = None
        self.watch_dir = self._make_watch_dir() if role == "grader" else None
        """(host directory, its path in the container, True) for the Python watch's collector
        (``grading/watchsock.py``), bound read-only; None where the daemon is not on this host."""
        live.join(self)

    def _make_watch_dir(self) -> tuple[str, str, bool] | None:
        """A host directory (0755, in a 0700 one of this user's) that the grading container sees
        read-only at ``/.ha-watch``: only where the daemon runs on this host (a unix socket), else a
        bind would name a directory of another machine."""
        url = str(getattr(getattr(self.client, "api", None), "base_url", ""))
        if not (url.startswith("http+docker://localhost") or url.startswith("http+docker://localunixsocket")):
            return None
        from .reaper import owned_prefix

        self._watch_root = tempfile.mkdtemp(prefix=owned_prefix("ha-watch"))
        inner = os.path.join(self._watch_root, "watch")
        os.mkdir(inner, 0o755)
        os.chmod(inner, 0o755)
        return inner, "/.ha-watch", True

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def image(self) -> str:
        if self._image is None:
            from .provision.images import snapshot_image

            self._image, self.snapshot = snapshot_image(self.client, self.task, self.config.image,
                                                        grader=self.role == "grader")
        return self._image

    def _create(self) -> Any:
        import docker.errors
        import docker.types

        live.check()
        c = self.config
        kwargs = dict(
            # The main process runs as nobody: the agent (root, but with every capability dropped, so
            # no CAP_KILL) cannot signal it, and `kill -9 -1` cannot stop the container. A stopped
            # container is then always the host's doing: an infrastructure fault.
            entrypoint=["sleep", "infinity"], user="65534:65534", detach=True, init=True, working_dir=self.workdir,
            network_mode="bridge" if c.network else "none", mem_limit=c.memory_bytes, memswap_limit=c.memory_bytes,
            pids_limit=c.max_pids, nano_cpus=int(c.cpus * 1e9), cap_drop=["ALL"],
            security_opt=["no-new-privileges"], environment=_ENV,
            tmpfs={} if self._image_uses_tmp() else {"/tmp": f"rw,exec,size={c.tmp_bytes}"},
            ulimits=[docker.types.Ulimit(name="fsize", soft=c.disk_bytes, hard=c.disk_bytes)],
            labels={LABEL: "1", f"{LABEL}.owner": owner(), f"{LABEL}.role": self.role,
                    f"{LABEL}.instance": getattr(self.task, "instance_id", "") or ""},
            volumes={**{host: {"bind": inside, "mode": "rw"} for host, inside in self.mounts.items()},
                     **(_tracer_volumes() if self.role == "grader" else {}),
                     **({self.watch_dir[0]: {"bind": self.watch_dir[1], "mode": "ro"}} if self.watch_dir else {})},
        )
        try:
            container = retrying(lambda: self.client.containers.run(self.image, **kwargs))
        except docker.errors.ImageNotFound as exc:
            raise SandboxError(f"image {self.image} is missing; build it with `ha images build`") from exc
        except Exception as exc:  # noqa: BLE001
            raise SandboxError(f"cannot start a container from {self.image}: {exc}") from exc
        return container

    @staticmethod
    def _image_uses_tmp() -> bool:
        """Environments copied into images keep their host path (venvs are not relocatable): when the
        cache lives under /tmp, a tmpfs there would hide them, so /tmp stays in the container's layer
        and the disk quota's measure covers it instead."""
        from .provision.workcopy import cache_root

        return str(cache_root().resolve()).startswith("/tmp/")

    def _create_ready(self) -> tuple[Any, PersistentShell]:
        container = self._create()
        try:
            return container, self._new_shell(container)
        except Exception:
            _remove(container)
            raise

    def start(self) -> None:
        if self.shell is not None and self.shell.alive:
            return
        live.check()
        if self.container is None:
            if self.pool is None:
                self.pool = ContainerPool(self.client, self.image, self._create_ready, self.config.warm)
            self.container, self.shell = self.pool.take()
            # The spare starts once this episode's first command has answered (``_fill_later``), not
            # now: started alongside, it would compete with that command for the daemon and the CPU,
            # making a cold first episode slower than a plain ``docker run``.
            self._fill_pending = True
            return
        self._start_shell()

    def _new_shell(self, container: Any) -> PersistentShell:
        argv = ["docker", "exec", "-i", "-u", "0", "-w", self.workdir, container.id, "bash", "--noprofile", "--norc"]
        # `docker exec` carries stdout and stderr as two streams whose relative order is lost; one
        # stream (as the local sandbox's single pipe) keeps a command's output in the order it was written.
        # The disk quota's first measure of the work copy rides along (one exec fewer on the first command).
        shell = PersistentShell(argv, init_script=f"exec 2>&1; echo $$ > /tmp/.ha-shell-pid; {self._du_script()}")
        shell.start()
        return shell

    def _du_script(self) -> str:
        tmp = " /tmp" if self._image_uses_tmp() else ""
        return f"du -skc {ansi_c_quote(self.workdir)}{tmp} 2>/dev/null | tail -1 | cut -f1"

    def _start_shell(self) -> None:
        self.shell = self._new_shell(self.container)

    def _fill_later(self) -> None:
        if self._fill_pending and self.pool is not None:
            self._fill_pending = False
            self.pool.fill()

    def reset(self) -> None:
        self._fill_later()  # an episode that ran no command still leaves a spare for the next
        old, old_shell = self.container, self.shell
        self.container = self.shell = None
        if old is not None:
            threading.Thread(target=_discard, args=((old, old_shell),), daemon=True).start()
        self.start()

    def close(self) -> None:
        live.leave(self)
        self._stop_shell()
        if self.container is not None:
            _remove(self.container)
            self.container = None
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self._watch_root is not None:
            shutil.rmtree(self._watch_root, ignore_errors=True)
            self._watch_root = None
        self.closed = True

    def _stop_shell(self) -> None:
        if self.shell is not None:
            self.shell.close()
            self.shell = None

    def _check_container(self) -> None:
        try:
            retrying(self.container.reload)
        except Exception as exc:  # noqa: BLE001
            raise SandboxError(f"the container is gone: {exc}") from exc
        if self.container.status != "running":
            raise SandboxError(f"the container stopped (status {self.container.status})")

    def _check_killed(self, rc: int | None) -> None:
        """After a helper exec failed: was the container killed while it ran? Then SandboxError
        (the container's fault, not the script's result). A SIGKILLed exec (137, or no status) may
        return before the daemon marks the container exited: look again for up to a second."""
        self._check_container()
        for _ in range(10 if rc in (137, None, -1) else 0):
            time.sleep(0.1)
            self._check_container()

    # -- commands ----------------------------------------------------------------------------
    def run(self, command: str, timeout: float | None = None, head_bytes: int | None = None,
            tail_bytes: int | None = None) -> RunResult:
        refused = nul_result(command)
        if refused is not None:
            return refused
        if self.closed:
            raise SandboxError("sandbox is closed")
        if self.shell is None:
            self.start()
        assert self.shell is not None
        notes: list[str] = []
        if not self.shell.alive:  # killed between commands by something the agent started
            notes.append(f"the shell had exited; a new shell was started in {self.workdir}")
            self._restart_shell(notes)
        timeout = self.config.command_timeout_s if timeout is None else timeout
        head = self.config.output_head_bytes if head_bytes is None else head_bytes
        tail = self.config.output_tail_bytes if tail_bytes is None else tail_bytes
        t0, ticks = time.monotonic(), now_ticks() - 1
        disk = self._disk_watch()
        cap = self.shell.execute(command, timeout, head, tail, on_timeout=lambda: self._kill_since(ticks),
                                 watchdog=disk.check if disk else None)
        self._fill_later()
        if disk is not None and not cap.stopped:
            over = disk.check()
            if over:
                notes.append(over)
        if cap.exit_code is None:
            if cap.timed_out:
                notes.append("the shell itself was stuck; it was restarted (cwd and environment reset)")
            else:
                rc = self.shell.proc.returncode if self.shell.proc else None
                notes.append(f"the shell exited (status {rc}); a new shell was started in {self.workdir}")
                cap.exit_code = rc if rc is not None and rc >= 0 else -1
            self._restart_shell(notes)
        return to_result(cap, timeout, time.monotonic() - t0, notes)

    def run_traced(self, command: str, spec: TraceSpec, timeout: float | None = None, head_bytes: int | None = None,
                   tail_bytes: int | None = None) -> tuple[RunResult, HostTrace]:
        """``command`` in an exec of its own whose process is the host's strace, its trace read from
        the exec's stderr stream as it is written (``dockertrace.py``), never a file in the container.
        TraceUnavailable (nothing ran) without the tracer (a host without strace, not a grading
        container) or when strace cannot trace here."""
        from .tracer import NODUMP, TRACER_DIR, tracer_files

        nodump = NODUMP in tracer_files().values()
        if self.role != "grader" or not tracer_files():
            raise TraceUnavailable("this container has no tracer mounted (a grading container on a host with strace)")
        if self.closed:
            raise SandboxError("sandbox is closed")
        if self.shell is None:
            self.start()
        self._check_container()
        timeout = self.config.command_timeout_s if timeout is None else timeout
        read = dockertrace.StreamRead(spec, self.config.output_head_bytes if head_bytes is None else head_bytes,
                                      self.config.output_tail_bytes if tail_bytes is None else tail_bytes)
        t0, ticks = time.monotonic(), now_ticks() - 1
        api = self.client.api
        try:
            exec_id = retrying(lambda: api.exec_create(
                self.container.id, dockertrace.traced_argv(TRACER_DIR, spec, command, ticks, nodump), stdout=True,
                stderr=True, stdin=False, tty=False, user="0", workdir=self.workdir, environment=_ENV))["Id"]
            reader = read.start(api.exec_start(exec_id, stream=True, demux=True))
        except Exception as exc:  # noqa: BLE001
            raise SandboxError(f"docker exec failed: {exc}") from exc
        disk = self._disk_watch()
        read.out.stopped = self._watch_traced(reader, timeout, disk)
        timed_out = reader.is_alive() and not read.out.stopped
        if reader.is_alive() or read.out.stopped:  # strace and all it traces started after ``ticks``
            self._kill_since(ticks)
            reader.join(30)
        if read.error is not None:
            raise SandboxError(f"the traced run's stream broke: {read.error}")
        status, trace = dockertrace.finish(read, self._exec_exit_code(exec_id), timed_out or bool(read.out.stopped),
                                           nodump)  # ended by this host (time, disk): not the tracer's loss
        read.out.exit_code, read.out.timed_out = status, timed_out
        notes = ["the tracer ended before the command did (its exec exited "
                 f"{status})"] if trace.lost else []
        over = disk.check() if disk is not None and not read.out.stopped else None
        notes += [over] if over else []  # over the quota by the end, as ``run`` says it
        return to_result(read.out, timeout, time.monotonic() - t0, notes), trace

    @staticmethod
    def _watch_traced(reader: threading.Thread, timeout: float, disk: DiskWatch | None) -> str:
        """Wait for the traced exec's stream to end, up to ``timeout``, polling the disk quota as
        ``run`` does: the reason it was exceeded, '' when it was not."""
        deadline = time.monotonic() + timeout
        while reader.is_alive() and time.monotonic() < deadline:
            reader.join(min(0.5, max(deadline - time.monotonic(), 0)))
            over = disk.check() if disk is not None and reader.is_alive() else None
            if over:
                return over
        return ""

    def _exec_exit_code(self, exec_id: str) -> int | None:
        """The exec's exit status as the daemon tells it (the stream can end a moment before)."""
        for _ in range(50):
            info = retrying(lambda: self.client.api.exec_inspect(exec_id))
            if not info.get("Running"):
                return info.get("ExitCode")
            time.sleep(0.1)
        return None

    def _restart_shell(self, notes: list[str]) -> None:
        """A new shell after the old one died by the agent's doing; a container that is no longer
        running is an infrastructure fault (its main process is out of the agent's reach)."""
        self._stop_shell()
        self._check_container()
        self._start_shell()

    def _disk_watch(self) -> DiskWatch | None:
        """The work copy's quota, triggered by the free space of the daemon's storage when this
        process can see it (a local daemon), measured with ``du`` inside the container."""
        if self._disk is None or self._disk_container is not self.container:
            root = "/var/lib/docker"
            if not os.path.isdir(root):
                return None
            self._disk_container = self.container
            measured = _kilobytes(self.shell.init_output) if self.shell is not None else None
            self._disk = DiskWatch(root, self._work_bytes, self.config.disk_bytes, used=measured)
        return self._disk

    def _work_bytes(self) -> int:
        return _kilobytes(self._exec(self._du_script())[1]) or 0

    def _kill_since(self, ticks: int) -> None:
        """SIGKILL every process in the container started at or after ``ticks`` (boot-clock ticks,
        shared with the host kernel), except init, the agent's shell and this script itself."""
        script = (f"read -r sh < /tmp/.ha-shell-pid; for d in /proc/[0-9]*; do p=${{d#/proc/}}; "
                  f"[ \"$p\" = 1 ] || [ \"$p\" = \"$$\" ] || [ \"$p\" = \"$sh\" ] && continue; "
                  f"read -r s < \"$d/stat\" 2>/dev/null || continue; s=${{s##*) }}; set -- $s; "
                  f"[ \"${{20}}\" -ge {ticks} ] 2>/dev/null && kill -9 \"$p\" 2>/dev/null; done; true")
        for _ in range(3):
            self._exec(script)

    def _exec(self, script: str) -> tuple[int, bytes]:
        """A separate process in the container (not the agent's shell)."""
        self._check_container()
        try:
            rc, out = retrying(lambda: self.container.exec_run(["bash", "-c", script], workdir=self.workdir,
                                                                environment=_ENV, demux=False, user="0"))
        except Exception as exc:  # noqa: BLE001
            raise SandboxError(f"docker exec failed: {exc}") from exc
        if rc != 0:
            self._check_killed(rc)
        return rc, out or b""

    # -- files -------------------------------------------------------------------------------
    def _abs(self, path: str) -> str:
        return path if path.startswith("/") else f"{self.workdir}/{path}"

    def read_file(self, path: str) -> bytes:
        self._check_container()
        import docker.errors

        try:
            stream, _ = retrying(lambda: self.container.get_archive(self._abs(path)))
            raw = b"".join(stream)
        except docker.errors.NotFound:
            raise FileNotFoundError(path) from None
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                raise FileNotFoundError(path)
            f = tar.extractfile(member)
            return f.read() if f else b""

    def write_file(self, path: str, data: bytes) -> None:
        target = self._abs(path)
        parent, name = os.path.split(target)
        rc, out = self._exec(f"mkdir -p -- {ansi_c_quote(parent)}")
        if rc != 0:
            raise OSError(f"cannot write {path}: {out.decode(errors='replace').strip()}")
        ok = retrying(lambda: self.container.put_archive(parent, tar_bytes({name: data})))
        if not ok:
            raise OSError(f"cannot write {path}: the daemon refused the archive")

    def write_files(self, directory: str, files: dict[str, bytes]) -> None:
        """Several files under ``directory`` in one archive (names relative, parents made)."""
        target = self._abs(directory)
        rc, out = self._exec(f"mkdir -p -- {ansi_c_quote(target)}")
        if rc != 0:
            raise OSError(f"cannot write under {directory}: {out.decode(errors='replace').strip()}")
        if not retrying(lambda: self.container.put_archive(target, tar_bytes(files))):
            raise OSError(f"cannot write under {directory}: the daemon refused the archive")

    def _exec_split(self, script: str, timeout: float = 300) -> tuple[int, bytes, bytes]:
        """Like ``_exec`` with stdout and stderr apart, under ``timeout`` (124 when it runs past)."""
        self._check_container()
        try:
            rc, (out, err) = retrying(lambda: self.container.exec_run(
                ["timeout", "-s", "KILL", str(int(timeout)), "bash", "-c", script], workdir=self.workdir,
                environment=_ENV, demux=True, user="0"))
        except Exception as exc:  # noqa: BLE001
            raise SandboxError(f"docker exec failed: {exc}") from exc
        if rc != 0:
            self._check_killed(rc)
        return (124 if rc == 137 else rc), out or b"", err or b""

    @property
    def base_commit(self) -> str:
        if self.snapshot is None:
            _ = self.image  # resolving the image finds the snapshot
        return self.snapshot.base_commit

    def diff(self) -> str:
        """The agent's changes against the base commit (see the protocol), computed in the
        container under its limits. The base is read from the work copy's object store; when the
        agent destroyed it, the work tree is copied into a fresh container of the same image and
        diffed there against the pristine one."""
        cap = self.config.patch_bytes
        rc, out, err = self._exec_split(diff_script(self.base_commit, f"{self.workdir}/.git/objects", cap))
        if rc == DIFF_NO_BASE:
            return self._diff_in_fresh_container()
        return parse_diff_result(rc, out, err, cap)

    def _diff_in_fresh_container(self) -> str:
        fresh = DockerSandbox(self.task, DockerSandboxConfig(**{**self.config.__dict__, "warm": 0}),
                              image=self.image, snapshot=self.snapshot)
        try:
            fresh.start()
            rc, out = fresh._exec(f"find {ansi_c_quote(self.workdir)} -mindepth 1 -maxdepth 1 ! -name .git "
                                  "-exec rm -rf {} +")
            if rc != 0:
                raise SandboxError(f"cannot empty the fresh work copy: {out.decode(errors='replace')[-300:]}")
            with tempfile.TemporaryFile() as tar:
                self._export_tree(tar)
                tar.seek(0)
                if not retrying(lambda: fresh.container.put_archive(os.path.dirname(self.workdir) or "/", tar)):
                    raise SandboxError("the daemon refused the work tree's archive")
            cap = self.config.patch_bytes
            rc, out, err = fresh._exec_split(diff_script(self.base_commit, f"{self.workdir}/.git/objects", cap))
            if rc == DIFF_NO_BASE:
                raise SandboxError("the base commit is missing from the snapshot image itself")
            return parse_diff_result(rc, out, err, cap)
        finally:
            fresh.close()

    def _export_tree(self, dest: Any) -> None:
        """The work tree (its ``.git`` left out) as a tar in ``dest``; over the disk quota it is
        the agent's doing (``diff_failed``)."""
        stream, _ = retrying(lambda: self.container.get_archive(self.workdir))
        raw = tempfile.SpooledTemporaryFile(max_size=64 << 20)
        total = 0
        for chunk in stream:
            total += len(chunk)
            if total > self.config.disk_bytes + (64 << 20):
                raise PatchError("diff_failed", "the work copy is larger than the disk quota; it cannot be diffed")
            raw.write(chunk)
        raw.seek(0)
        top = os.path.basename(self.workdir.rstrip("/"))
        with tarfile.open(fileobj=raw, mode="r|") as src, tarfile.open(fileobj=dest, mode="w|") as out:
            for member in src:
                parts = member.name.split("/")
                if len(parts) > 1 and parts[1] == ".git":
                    continue
                if parts[0] != top:
                    continue
                out.addfile(member, src.extractfile(member) if member.isfile() else None)



def docker_available() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        docker_client(timeout=5)
        return True
    except SandboxError:
        return False


def _tracer_volumes() -> dict[str, dict[str, str]]:
    """The host's strace with its own loader and libraries, read-only at ``tracer.TRACER_DIR``: the
    grading container's test run is traced whatever its image holds (``grading/ostrace.py``)."""
    from .tracer import TRACER_DIR, tracer_files

    return {host: {"bind": f"{TRACER_DIR}/{name}", "mode": "ro"} for host, name in tracer_files().items()}
