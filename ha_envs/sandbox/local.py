"""The local sandbox: a persistent bash on this machine, under bubblewrap when it is installed.

Under bubblewrap the shell sees the work copy at ``/testbed`` (read-write), the system and the
toolchains read-only, a private ``/tmp``, no network, and none of this package's task data (so gold
patches and hidden tests stay out of reach). Memory and process count are bounded by a cgroup when
one is writable (see ``limits.py``). Without bubblewrap it says so once and runs unisolated.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..task import Task
from . import hosttrace, live, netns
from .base import COMMAND_TIMEOUT_S, OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES, RunResult, SandboxError, nul_result
from .hosttrace import HostTrace, TraceSpec
from .limits import DiskWatch, Limits, now_ticks, tree_bytes
from .netns import UserNet
from .provision.realpaths import hidden_links, interpreter_paths, real_dirs, toolchain_prefixes, venv_paths
from .reaper import owned_prefix, reap_once
from .shell import PersistentShell, ansi_c_quote, tar_bytes, to_result
from .provision.workcopy import (PATCH_CAP_BYTES, Snapshot, diff_script, make_work_copy, parse_diff_result,
                       prepare_snapshot, reset_in_place)

log = logging.getLogger(__name__)
_PACKAGE_ROOT = Path(__file__).resolve().parents[1]
_warned_unisolated = False
_warned_shared_net = False
_TOPS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SNAPSHOT_BYTES: dict[str, int] = {}


@dataclass
class LocalSandboxConfig:
    """Knobs of the local sandbox; the defaults suit the bundled suite."""

    isolation: str = "auto"
    """``bwrap``: require bubblewrap; ``none``: run unisolated; ``auto``: bwrap when installed."""
    network: bool = False
    """Let commands reach the network (only meaningful under bubblewrap)."""
    network_namespace: str = "auto"
    """With ``network``: ``private``, a namespace of the sandbox's own with a user-mode route out
    (slirp4netns, ``netns.py``): its own loopback, no route to the host's, so concurrent sandboxes
    never share ports or reach each other's or the host's listeners; ``host``, the host's namespace
    (``bwrap --share-net``: one loopback for all); ``auto``, private when slirp4netns is installed,
    else host (said once in the log)."""
    command_timeout_s: float = COMMAND_TIMEOUT_S
    """Default per-command wall-clock cap; the whole process tree of a late command is killed."""
    output_head_bytes: int = OUTPUT_HEAD_BYTES
    output_tail_bytes: int = OUTPUT_TAIL_BYTES
    memory_bytes: int = 4 << 30
    max_pids: int = 512
    disk_bytes: int = 8 << 30
    """Disk quota of the work copy (checked while commands run; no single file may exceed it)."""
    tmp_bytes: int = 2 << 30
    """Size of the private ``/tmp`` (a tmpfs under bubblewrap, so the cap is hard)."""
    patch_bytes: int = PATCH_CAP_BYTES
    """Cap on the total size of the changed files that ``diff()`` turns into a patch."""
    reset_strategy: str = "auto"
    """``copy`` (fresh copy of the snapshot), ``git`` (restore in place) or ``auto``: copy for
    trees under ``git_reset_min_files`` files, git above (see workcopy.py and RESULTS.md)."""
    git_reset_min_files: int = 1000
    extra_ro_paths: list[str] = field(default_factory=list)
    """More host paths to show read-only (toolchains outside /usr)."""
    mount_point: str | None = None
    """Where the work copy appears under bubblewrap; None: the task's ``environment.workdir``."""
    binds: tuple[tuple[str, str, bool], ...] = ()
    """More (host path, sandbox path, writable) folders shown under bubblewrap: a Harbor task's
    ``/tests`` in its grading sandbox (``grading/harbor.py``); never in an agent's."""
    tmpfs: tuple[tuple[str, int], ...] = ()
    """More (sandbox path, bytes) private tmpfs folders under bubblewrap, capped like ``/tmp``: a
    Harbor task's ``/logs`` in its grading sandbox."""
    trace: TraceSpec | None = None
    """Start every shell as a child of this host's strace tracing these calls, so that
    ``run_traced`` reads what a command did from outside the sandbox (the grader's sandbox of a
    Go, Rust or JavaScript task: ``grading/ostrace.py``, ``hosttrace.py``)."""
    watch_dir: bool = False
    """Make a host directory of the sandbox's root, shown read-only at ``WATCH_INSIDE`` (``watch_dir``),
    where the grader's collector of the Python watch listens (``grading/watchsock.py``): a grading
    sandbox's; never an agent's."""
    python_env: str | None = None
    """A venv whose ``bin`` goes first on PATH, with the work copy on PYTHONPATH (real SWE-bench
    instances; built by ``pyenv.python_env`` from the task's specs when the task has them)."""


def _kill_session(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass


def bwrap_available() -> bool:
    return shutil.which("bwrap") is not None


WATCH_INSIDE = "/.ha-watch"
"""Where a grading sandbox shows its watch directory (``LocalSandboxConfig.watch_dir``)."""


class LocalSandbox:
    """Implements :class:`~ha_envs.sandbox.base.Sandbox` on this machine."""

    def __init__(self, task: Task | None = None, config: LocalSandboxConfig | None = None,
                 snapshot: Snapshot | None = None, work_root: Path | None = None) -> None:
        self.config = config or LocalSandboxConfig()
        self.isolated = self._decide_isolation()
        if snapshot is None:
            if task is None:
                raise ValueError("LocalSandbox needs a task or a prepared snapshot")
            snapshot = prepare_snapshot(task)
        self.snapshot = snapshot
        if self.config.python_env is None and task is not None:
            from .provision.pyenv import python_env

            env = python_env(task)
            if env is not None:
                self.config = dataclasses.replace(self.config, python_env=str(env))
        if self.config.python_env is not None:
            from .provision.pyenv import with_built_files

            self.snapshot = with_built_files(self.snapshot, self.config.python_env)
        from .provision.nodeenv import node_env

        self.node_modules = node_env(task) if task is not None else None
        self._own_root = work_root is None
        reap_once()  # a killed run's directories and cgroups go, once per process
        live.check()
        self.root = Path(work_root or tempfile.mkdtemp(prefix=owned_prefix("ha-sbx")))
        self.host_dir = self.root / "testbed"
        self.mount_point = self.config.mount_point or (task.environment.workdir if task is not None else "/testbed")
        self.workdir = self.mount_point if self.isolated else str(self.host_dir)
        self.shell: PersistentShell | None = None
        self._trace: hosttrace.ShellTrace | None = None
        self.limits: Limits | None = None
        self.net: UserNet | None = None
        self.closed = False
        self._helpers: set[subprocess.Popen[bytes]] = set()
        self.watch_dir = self._make_watch_dir() if self.config.watch_dir else None
        """(host directory, its path inside, isolated) for the Python watch's collector, or None."""
        live.join(self)

    def _make_watch_dir(self) -> tuple[str, str, bool]:
        """``root/watch``: the root is this user's alone (0700); the directory itself is 0755 so any
        uid inside can reach a socket in it, never write to it (bound read-only)."""
        path = self.root / "watch"
        path.mkdir(mode=0o755, exist_ok=True)
        return str(path), WATCH_INSIDE if self.isolated else str(path), self.isolated

    # -- lifecycle ---------------------------------------------------------------------------
    def _decide_isolation(self) -> bool:
        global _warned_unisolated
        mode = self.config.isolation
        if mode == "bwrap" and not bwrap_available():
            raise SandboxError("isolation='bwrap' but bubblewrap is not installed (apt-get install bubblewrap)")
        if mode == "none":
            return False
        if mode == "auto" and not bwrap_available():
            if not _warned_unisolated:
                _warned_unisolated = True
                log.warning("bubblewrap (bwrap) not found: the local sandbox runs WITHOUT isolation "
                            "(commands can reach the network and write anywhere this user can)")
            return False
        return True

    @property
    def private_network(self) -> bool:
        """Network on, in a namespace of the sandbox's own (``LocalSandboxConfig.network_namespace``)."""
        global _warned_shared_net
        mode = self.config.network_namespace
        if mode not in ("auto", "private", "host"):
            raise SandboxError(f"network_namespace must be auto, private or host, not {mode!r}")
        if not (self.config.network and self.isolated) or mode == "host":
            return False
        if mode == "private" and not netns.available():
            raise SandboxError("network_namespace='private' but slirp4netns is not installed (apt-get install slirp4netns)")
        if mode == "auto" and not netns.available():
            if not _warned_shared_net:
                _warned_shared_net = True
                log.warning("slirp4netns not found: local sandboxes with network share the host's network namespace "
                            "(one loopback for all; apt-get install slirp4netns)")
            return False
        return True

    def start(self) -> None:
        if self.closed:
            raise SandboxError("sandbox is closed")
        if self.shell is not None and self.shell.alive:
            return
        fresh = not self.host_dir.exists()
        if fresh:
            make_work_copy(self.snapshot, self.host_dir)
        self._start_shell(fresh=fresh)

    def _link_envs(self) -> None:
        if self.node_modules is not None and self.host_dir.is_dir():
            from .provision.nodeenv import link_node_modules

            link_node_modules(self.host_dir, self.node_modules)

    def _start_shell(self, fresh: bool = False) -> None:
        """A new shell on the work copy (under strace with ``config.trace``); ``fresh``: the copy
        was just made from the snapshot."""
        live.check()
        self._link_envs()  # every work copy (fresh, reset, or the grader's) sees the task's installs
        self.limits = self._new_limits()
        tracer: list[str] = []
        if self.config.trace is not None:
            try:
                self._trace = hosttrace.ShellTrace(self.config.trace)
                tracer = self._trace.prefix(pid_namespace=self.isolated)
            except hosttrace.TraceUnavailable as exc:
                log.warning("the sandbox shell is not traced: %s", exc)
                self._trace.discard()
                self._trace = None
        argv = self.limits.enter_prefix() + tracer + self._argv()
        env = self._env()
        init = f"mkdir -p \"$HOME\"; cd {ansi_c_quote(self.workdir)}; PS1=''; PS2=''; unset HISTFILE"
        self.shell = PersistentShell(argv, env=env, cwd=str(self.host_dir), preexec_fn=self.limits.preexec,
                                     init_script=init)
        try:
            self.shell.start()
            if self.private_network:
                self.net = netns.UserNet(netns.namespace_pid(self.shell.pid or 0))
        except SandboxError:
            self._stop_shell()
            raise
        self._shell_ticks = now_ticks() + 1
        self._ooms_seen = self.limits.oom_kills()
        roots = [str(self.host_dir)] + ([] if self.isolated else [str(self.root / "tmp")])
        key = str(self.snapshot.path)
        if fresh and key not in _SNAPSHOT_BYTES:  # a fresh or reset copy weighs what its snapshot does
            _SNAPSHOT_BYTES[key] = tree_bytes(key)
        self.disk = DiskWatch(str(self.root), lambda: tree_bytes(*roots),
                              self.config.disk_bytes + (0 if self.isolated else self.config.tmp_bytes),
                              used=_SNAPSHOT_BYTES[key] if fresh else None)

    def _new_limits(self) -> Limits:
        """The sandbox's limits, for its shell and for every helper process over its files."""
        return Limits(self.config.memory_bytes, self.config.max_pids,
                      file_bytes=max(self.config.disk_bytes, self.config.tmp_bytes))

    def _argv(self, binds: list[tuple[str, str]] | None = None) -> list[str]:
        """bwrap's argv (or nothing when unisolated) ending in ``--``, then the shell; ``binds``
        are more (host path, sandbox path) pairs shown read-only."""
        shell = ["/bin/bash", "--noprofile", "--norc"]
        if not self.isolated:
            return shell
        args = ["bwrap", "--die-with-parent", "--unshare-all", "--hostname", "sandbox"]
        private_net = self.private_network
        if self.config.network and not private_net:
            args.append("--share-net")
        # Private /proc, /dev and /tmp first, so later binds (a venv under /tmp, say) land on top.
        args += ["--proc", "/proc", "--dev", "/dev", "--size", str(self.config.tmp_bytes), "--tmpfs", "/tmp"]
        for top in _TOPS:
            p = Path(top)
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), top]
            elif p.is_dir():
                args += ["--ro-bind", top, top]
        resolv = netns.resolv_conf() if private_net else None
        if resolv is not None:  # the host's resolver is on its loopback: slirp4netns's instead
            path = self.root / "resolv.conf"
            path.write_text(resolv)
            args += ["--ro-bind", str(path), "/etc/resolv.conf"]
        toolchains = self._toolchain_paths()
        for extra in toolchains:
            args += ["--ro-bind", extra, extra]
        # The links on the way to them (a venv behind a symlink, pyenv's 3.11 -> 3.11.7), where
        # nothing bound shows them, so paths through the links resolve inside too.
        shown = list(_TOPS) + toolchains + [self.mount_point, "/proc", "/dev"]
        for link, target in hidden_links(self._toolchain_candidates(), shown):
            args += ["--symlink", target, link]
        # Hide this package's task data (gold patches, hidden tests) if a mounted path holds it.
        suites = _PACKAGE_ROOT / "suites"
        if any(str(suites).startswith(p.rstrip("/") + "/") for p in toolchains + ["/usr"]):
            args += ["--tmpfs", str(suites)]
        for host, inside in binds or ():
            args += ["--ro-bind", host, inside]
        for host, inside, writable in self.config.binds:
            args += ["--bind" if writable else "--ro-bind", host, inside]
        for inside, size in self.config.tmpfs:
            args += ["--size", str(size), "--tmpfs", inside]
        if self.watch_dir is not None:  # a connect() to a socket there works; nothing in it can be changed
            args += ["--ro-bind", self.watch_dir[0], self.watch_dir[1]]
        args += ["--bind", str(self.host_dir), self.mount_point, "--remount-ro", "/",
                 "--chdir", self.mount_point]
        return args + ["--"] + shell

    def _toolchain_candidates(self) -> list[str]:
        """Every host path the shell's environment leads to: this interpreter, the task's venv and
        its base interpreter, cargo and rustup, the toolchains on PATH, the task's node env; as
        named (maybe through symlinks: ``provision/realpaths.py``)."""
        home = Path.home()
        cands = [*interpreter_paths(), str(home / ".cargo"), str(home / ".rustup"),
                 os.environ.get("RUSTUP_HOME", str(home / ".rustup")), *self.config.extra_ro_paths]
        if self.config.python_env:
            from .provision.pyenv import interpreter_dirs

            cands += [str(d) for d in interpreter_dirs(Path(self.config.python_env))]
            cands += venv_paths(self.config.python_env)
        if self.node_modules is not None:
            cands.append(str(self.node_modules.parent))
        return cands + toolchain_prefixes(self._path_dirs())

    def _toolchain_paths(self) -> list[str]:
        """The real directories to show read-only (those under /usr and /etc are shown anyway)."""
        return [d for d in real_dirs(self._toolchain_candidates())
                if not any(d == t or d.startswith(t + "/") for t in ("/usr", "/etc"))]

    def _path_dirs(self) -> list[str]:
        """The shell's PATH, by real paths (a venv behind a symlink is found where it is bound)."""
        home = Path.home()
        venv = [os.path.realpath(Path(self.config.python_env) / "bin")] if self.config.python_env else []
        return venv + [os.path.realpath(Path(sys.prefix) / "bin"), os.path.realpath(home / ".cargo" / "bin"),
                       "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]

    def _env(self) -> dict[str, str]:
        home = Path.home()
        path = self._path_dirs()
        tmp = "/tmp" if self.isolated else str(self.root / "tmp")
        Path(self.root / "tmp").mkdir(exist_ok=True)
        env = {
            "PATH": ":".join(path), "HOME": f"{tmp}/home", "TMPDIR": tmp, "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "NO_COLOR": "1",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PIP_NO_INPUT": "1",
            "CARGO_HOME": f"{tmp}/cargo",
            "RUSTUP_HOME": os.path.realpath(os.environ.get("RUSTUP_HOME", str(home / ".rustup"))),
            "CARGO_NET_OFFLINE": "true", "GOCACHE": f"{tmp}/gocache", "GOPATH": f"{tmp}/gopath",
            "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local", "GOTELEMETRY": "off",
            "NODE_NO_WARNINGS": "1", "GIT_CONFIG_NOSYSTEM": "1",
        }
        if self.node_modules is not None:
            from .provision.nodeenv import COREPACK_DIR

            corepack = self.node_modules.parent / COREPACK_DIR
            if corepack.is_dir():  # the pnpm / yarn release the env was installed with (nodeenv), offline
                env.update(COREPACK_HOME=str(corepack), COREPACK_ENABLE_DOWNLOAD_PROMPT="0", COREPACK_ENABLE_NETWORK="0")
        if not self.config.python_env:
            # No environment of the task's own: its Python is this library's interpreter, there only
            # as "a Python with pytest" (the bundled tasks use nothing else). The plugins installed
            # beside the library (pytest-asyncio, hypothesis, ...) must not load into the task's tests.
            env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        if self.config.python_env:
            from .provision.pyenv import import_roots, workcopy_on_path

            if not workcopy_on_path(Path(self.config.python_env), self.workdir):
                env["PYTHONPATH"] = import_roots(self.snapshot.path, self.workdir, Path(self.config.python_env))
            env["VIRTUAL_ENV"] = os.path.realpath(self.config.python_env)
        return env

    def _stop_shell(self) -> None:
        if self._trace is not None:
            self._trace.discard()
            self._trace = None
        if self.shell is not None:
            self.shell.close()
            self.shell = None
        if self.net is not None:
            self.net.close()
            self.net = None
        if self.limits is not None:
            self.limits.release()  # kills what is left in the cgroups
            self.limits = None

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        live.leave(self)
        for proc in list(self._helpers):  # a helper still running (the run is stopping): its whole session
            _kill_session(proc)
        self._stop_shell()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def _reset_strategy(self) -> str:
        strategy = self.config.reset_strategy
        if strategy == "auto":
            if not hasattr(self, "_snapshot_files"):
                self._snapshot_files = sum(len(f) for _, _, f in os.walk(self.snapshot.path))
            strategy = "git" if self._snapshot_files >= self.config.git_reset_min_files else "copy"
        if strategy not in ("copy", "git"):
            raise ValueError(f"unknown reset strategy {strategy!r}; use copy, git or auto")
        return strategy

    def reset(self) -> None:
        live.check()
        self._stop_shell()
        if self._reset_strategy() == "git" and self.host_dir.exists():
            reset_in_place(self.snapshot, self.host_dir)
        else:
            make_work_copy(self.snapshot, self.host_dir)
        self.closed = False
        live.join(self)
        self._start_shell(fresh=True)

    # -- commands ----------------------------------------------------------------------------
    def run(self, command: str, timeout: float | None = None, head_bytes: int | None = None,
            tail_bytes: int | None = None) -> RunResult:
        refused = nul_result(command)
        if refused is not None:
            return refused
        if self.closed:
            raise SandboxError("sandbox is closed")
        notes: list[str] = []
        if self.shell is None and self.limits is None:
            self.start()  # first command: the work copy and the shell come up now
        if not self.host_dir.is_dir():
            if self.isolated:  # a mount point cannot be removed from inside: the host did it
                raise SandboxError(f"the work copy {self.host_dir} is gone (removed outside the sandbox)")
            # Unisolated, a command can delete the work copy itself: the agent's doing, graded as
            # it stands (an empty tree), not an infrastructure fault.
            self.host_dir.mkdir(parents=True)
            notes.append(f"the work copy {self.workdir} had been deleted; it was recreated empty")
            self._stop_shell()
        if self.shell is None or not self.shell.alive:
            if self.shell is not None:  # it died between commands
                self._check_shell_death(self.shell.proc.returncode if self.shell.proc else None)
                notes.append(f"the shell had exited; a new shell was started in {self.workdir}")
                self._stop_shell()
            self.start()
        assert self.shell is not None and self.limits is not None
        timeout = self.config.command_timeout_s if timeout is None else timeout
        head = self.config.output_head_bytes if head_bytes is None else head_bytes
        tail = self.config.output_tail_bytes if tail_bytes is None else tail_bytes
        shell, limits = self.shell, self.limits
        t0, ticks = time.monotonic(), now_ticks() - 1
        session = shell.pid
        spare = {shell.pid} if shell.pid else set()

        def kill_command() -> None:
            limits.kill_started_since(ticks, session, spare)

        try:
            cap = shell.execute(command, timeout, head, tail, on_timeout=kill_command, watchdog=self.disk.check)
        except (OSError, ValueError) as exc:  # its pipes closed under it: close() from a stopping run
            if self.closed:
                raise SandboxError(f"the sandbox was closed while a command ran ({exc})") from exc
            raise
        # The OOM killer's victims are noted even when the command's last exit status is 0
        # (`big_alloc; echo done` succeeds). Reading the counter costs ~0.1 ms (cgroup v1), so a
        # command that succeeded within 20 ms, far too quick to fill the memory limit, skips it.
        if cap.exit_code != 0 or time.monotonic() - t0 >= 0.02:
            ooms = limits.oom_kills()
            if ooms > self._ooms_seen:
                notes.append(f"memory limit ({self.config.memory_bytes >> 20} MiB) reached: a process was killed")
            self._ooms_seen = ooms
        if not cap.stopped:  # a command quicker than one poll is still checked once
            over = self.disk.check()
            if over:
                notes.append(over)
        if cap.exit_code is None:
            rc = shell.proc.returncode if shell.proc else None
            if cap.timed_out:
                if limits.at_pid_limit():  # a fork bomb can keep the shell from answering; say so
                    notes.append(f"process limit ({self.config.max_pids}) reached by this command: "
                                 "every process in the shell was killed")
                notes.append("the shell itself was stuck; it was restarted (cwd and environment reset)")
                self._stop_shell()
                self._start_shell()
            elif rc is not None and rc >= 0:
                notes.append(f"the shell exited with status {rc}; a new shell was started in {self.workdir}")
                cap.exit_code = rc
                self._stop_shell()
                self._start_shell()
            else:
                self._check_shell_death(rc)
                # Unisolated, bash itself is the process: `kill -9 $$` is the agent's doing.
                notes.append(f"the shell was killed (signal {-rc if rc else '?'}); a new shell was started in "
                             f"{self.workdir} (cwd and environment reset)")
                cap.exit_code = 128 + (-rc if rc else 9)
                self._stop_shell()
                self._start_shell()
        if self.limits is limits and limits.at_pid_limit():
            notes.append(self._clear_pid_limit(limits, session, spare, "by this command"))
        return to_result(cap, timeout, time.monotonic() - t0, notes)

    def run_traced(self, command: str, spec: TraceSpec, timeout: float | None = None, head_bytes: int | None = None,
                   tail_bytes: int | None = None) -> tuple[RunResult, HostTrace]:
        """``run`` with what the command did read from the trace of its shell: with ``config.trace``
        every shell starts as a child of this host's strace, outside bubblewrap's namespaces, its
        trace a host file (``hosttrace.py``); unisolated, within the command's reach.
        TraceUnavailable (nothing ran) when the shell is not traced (no ``config.trace``, no strace)."""
        if self.shell is None or not self.shell.alive:
            self.run(":", timeout=60)
        trace = self._trace
        if trace is None or self.shell is None or trace.spec.syscalls != spec.syscalls:
            raise hosttrace.TraceUnavailable("this sandbox's shell is not traced from the host")
        tracer, start = self.shell.proc, trace.size()
        trace.reading = True
        try:
            result = self.run(command, timeout, head_bytes, tail_bytes)
            lost = tracer is not None and tracer.poll() is not None and tracer.returncode < 0
            return result, trace.read(start, lost=lost, reachable=not self.isolated)
        finally:
            trace.reading = False
            if trace is not self._trace:  # the shell died during the command: its trace is done with
                trace.discard()

    def _check_shell_death(self, rc: int | None) -> None:
        """Under bubblewrap the shell's own process is bwrap: a command that kills bash inside makes
        bwrap *exit* (status >= 0, the agent's doing), while a signal to bwrap itself came from
        this host (an operator, the host's OOM killer): an infrastructure fault."""
        if self.isolated and rc is not None and rc < 0:
            raise SandboxError(f"the sandbox was killed from outside (signal {-rc})")

    def _clear_pid_limit(self, limits: Limits, session: int | None, spare: set[int], when: str) -> str:
        """A fork bomb (or a runaway pool) filled the process limit: everything the shell started
        goes, servers included, since nothing else can run until it does."""
        n = limits.kill_started_since(self._shell_ticks, session, spare)
        return (f"process limit ({self.config.max_pids}) reached {when}: all {n} processes started "
                f"in this shell were killed")

    # -- files -------------------------------------------------------------------------------
    def _abs(self, path: str) -> str:
        return path if path.startswith("/") else f"{self.workdir}/{path}"

    def _oneoff(self, script: str, timeout: float = 120, stdin: bytes | None = None,
                binds: list[tuple[str, str]] | None = None) -> tuple[int, bytes, bytes]:
        """Run ``script`` in a fresh process with the sandbox's view and under the sandbox's limits
        (not in the agent's shell, so the agent's cwd, variables and shell functions cannot change
        what it does): (exit status, stdout, stderr); 124 when it ran past ``timeout``."""
        if self.closed:
            raise SandboxError("sandbox is closed")
        live.check()
        if not self.host_dir.is_dir():
            if self.isolated:
                raise SandboxError(f"the work copy {self.host_dir} is gone (removed outside the sandbox)")
            self.host_dir.mkdir(parents=True)  # deleted by an unisolated command; see run()
        limits = self._new_limits()
        argv = limits.enter_prefix() + self._argv(binds)[:-3] + ["/bin/bash", "--noprofile", "--norc", "-c", script]
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=self._env(), cwd=str(self.host_dir), preexec_fn=limits.preexec,
                                    start_new_session=True)
            self._helpers.add(proc)
            try:
                out, err = proc.communicate(stdin, timeout=timeout)
                if self.isolated and (proc.returncode < 0 or proc.returncode == 137):
                    # our own helper scripts neither kill themselves nor exit 137, and nothing of the
                    # agent's shares their namespace: bwrap (or its pid 1) was killed from this host
                    raise SandboxError(f"a sandbox helper was killed from outside (status {proc.returncode})")
                if self.isolated and proc.returncode == 1 and err.startswith(b"bwrap: "):
                    # bwrap itself could not set the sandbox up (a bind's source gone, ...): nothing
                    # of the helper ran, so its failure is not the work copy's (a diff that failed
                    # so was graded as the agent's empty patch)
                    raise SandboxError(f"the sandbox could not start a helper: {err.decode(errors='replace').strip()[:500]}")
                return proc.returncode, out, err
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)  # its own session: the helper and all it started
                proc.communicate()
                return 124, b"", f"timed out after {timeout:g}s".encode()
        except OSError as exc:
            raise SandboxError(f"cannot run a sandbox helper command: {exc}") from exc
        finally:
            self._helpers = {p for p in self._helpers if p.poll() is None}
            limits.release()  # kills whatever the helper left behind

    def read_file(self, path: str) -> bytes:
        target = ansi_c_quote(self._abs(path))
        rc, out, _ = self._oneoff(f"test -f {target} && exec cat -- {target}")
        if rc != 0:
            raise FileNotFoundError(path)
        return out

    def write_file(self, path: str, data: bytes) -> None:
        target = ansi_c_quote(self._abs(path))
        rc, _, err = self._oneoff(f"mkdir -p -- \"$(dirname -- {target})\" && exec cat > {target}", stdin=data)
        if rc != 0:
            raise OSError(f"cannot write {path}: {err.decode(errors='replace').strip()}")

    def write_files(self, directory: str, files: dict[str, bytes]) -> None:
        """Several files under ``directory`` in one helper process (names relative, parents made)."""
        rc, _, err = self._oneoff(f"mkdir -p -- {ansi_c_quote(self._abs(directory))} && "
                                  f"exec tar -x --no-same-owner -C {ansi_c_quote(self._abs(directory))}",
                                  stdin=tar_bytes(files))
        if rc != 0:
            raise OSError(f"cannot write files under {directory}: {err.decode(errors='replace').strip()}")

    def diff(self) -> str:
        """The agent's changes against the base commit (see the protocol): the base comes from
        the snapshot's object store (read-only, the grader's), so a destroyed or rewritten
        ``.git`` in the work copy changes nothing but the agent's own tree."""
        objects = str(self.snapshot.path / ".git" / "objects")
        binds = [(objects, "/.ha-base-objects")] if self.isolated else []
        script = diff_script(self.snapshot.base_commit, "/.ha-base-objects" if self.isolated else objects,
                             self.config.patch_bytes)
        rc, out, err = self._oneoff(script, timeout=300, binds=binds)
        return parse_diff_result(rc, out, err, self.config.patch_bytes)
