"""Where a grading runs: the sandbox factories (a fresh bubblewrap copy, or a fresh container of the
task's snapshot image) and the network the tests get (the official harnesses' own: ``tests_need_network``)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, Callable

from ..sandbox.base import Sandbox
from ..sandbox.local import LocalSandbox, LocalSandboxConfig
from ..sandbox.netns import available as netns_available
from ..sandbox.provision.workcopy import Snapshot
from ..task import REAL_BENCHMARKS, Task


SandboxFactory = Callable[[Snapshot | None, Path | None, Task], Sandbox]


"""(snapshot, grading root holding the prepared ``testbed`` copy, task) -> a fresh sandbox on it.
A factory marked ``in_place`` (Docker) gets (None, None, task): its sandbox starts from the task's
snapshot image and the grader prepares the copy inside it."""


NETWORK_SIGNS = re.compile(
    r"Temporary failure in name resolution|Name or service not known|Network is unreachable|"
    r"Failed to establish a new connection|Max retries exceeded with url|NewConnectionError|ConnectTimeout|"
    r"socket\.gaierror|getaddrinfo failed|urlopen error|Could not resolve host|nodename nor servname|"
    r"No route to host|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|"
    # requests' connect-timeout tests dial a non-routable address and expect a timeout; without a
    # route out the connection fails at once instead
    r"connect\(\) request should time out")


def network_errors(log: str, limit: int = 5) -> list[str]:
    found: list[str] = []
    for line in log.splitlines():
        if NETWORK_SIGNS.search(line):
            line = line.strip()[:300]
            if line not in found:
                found.append(line)
                if len(found) == limit:
                    break
    return found


def tests_need_network(task: Task | None) -> bool:
    """Real-benchmark tests (a benchmark's row, or a task with a real environment spec) run with
    network, as the official harnesses run them (some PASS_TO_PASS tests open connections); the
    agent's own sandbox stays offline either way."""
    return task is not None and (task.benchmark in REAL_BENCHMARKS or bool((task.environment.extra or {}).get("specs")))


def shared_loopback_note(sandbox: str, workers: int, tasks: list[Task], network: bool | None = None,
                         private_network: bool | None = None) -> str | None:
    """What to tell a user who grades ``tasks`` with network in the local sandbox, ``workers`` at a
    time, where the local sandbox has to grade in the host's network namespace (no slirp4netns:
    ``sandbox/netns.py``; ``private_network`` None reads whether it is installed). None when that
    is not so. There concurrent gradings share one loopback and test suites that bind a fixed port
    collide (redis, ``benchmarks/VALIDATION.md``)."""
    if sandbox != "local" or workers < 2 or network is False or not any(network or tests_need_network(t) for t in tasks):
        return None
    if private_network if private_network is not None else netns_available():
        return None
    return (f"note: slirp4netns is not installed, so the local sandbox grades with network in the host's network "
            f"namespace and {workers} concurrent gradings share one loopback: test suites that bind a fixed port "
            "collide (their failures come out flaky; redis in benchmarks/VALIDATION.md). Install slirp4netns, or "
            "use --workers 1, --network off or --sandbox docker for such suites")


def local_sandbox_factory(config: LocalSandboxConfig | None = None, network: bool | None = None) -> SandboxFactory:
    """``network``: None gives the tests network as the official harnesses do (``tests_need_network``);
    True or False, always or never."""
    def make(snapshot: Snapshot, root: Path, task: Task | None = None,
             binds: tuple[tuple[str, str, bool], ...] = (), tmpfs: tuple[tuple[str, int], ...] = ()) -> Sandbox:
        cfg = config or LocalSandboxConfig()
        if binds or tmpfs:  # a Harbor task's /tests (host, path, writable) and /logs (path, bytes): grading/harbor.py
            cfg = dataclasses.replace(cfg, binds=tuple(cfg.binds) + tuple(binds), tmpfs=tuple(cfg.tmpfs) + tuple(tmpfs))
        if network if network is not None else tests_need_network(task):
            cfg = dataclasses.replace(cfg, network=True)
        if task is not None and task.language == "python" and not cfg.watch_dir:  # the watch's collector
            cfg = dataclasses.replace(cfg, watch_dir=True)
        if task is not None and cfg.trace is None:  # a Go/Rust/JS run traced from the host (ostrace.py)
            from .ostrace import host_trace_spec

            cfg = dataclasses.replace(cfg, trace=host_trace_spec(task))
        # Given the task, the sandbox also finds the task's Python environment (real instances).
        return LocalSandbox(task, config=cfg, snapshot=snapshot, work_root=root)
    return make


def docker_sandbox_factory(config: Any = None, network: bool | None = None) -> SandboxFactory:
    """Grades in a fresh container of the task's snapshot image (never the agent's container): the
    patch and the hidden tests are applied inside it (``Grader._run``), so an official image's work
    copy is graded as built."""
    def make(snapshot: Snapshot | None, root: Path | None, task: Task | None = None, binds: Any = (),
             tmpfs: Any = ()) -> Sandbox:
        # binds and tmpfs are the local sandbox's; a container gets such files through the archive API
        from ..sandbox.docker import DockerSandbox, DockerSandboxConfig

        cfg = config or DockerSandboxConfig()
        return DockerSandbox(task, DockerSandboxConfig(**{**cfg.__dict__, "warm": 0,
                                                          "network": network if network is not None else
                                                          cfg.network or tests_need_network(task)}),
                             role="grader")
    make.in_place = True  # type: ignore[attr-defined]
    return make

