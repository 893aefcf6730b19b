"""Harbor task directories (and datasets of them) as this library's :class:`~ha_envs.task.Task`.

What maps to what (``docs/interop.md``): ``instruction.md`` is the problem statement; the
environment's Dockerfile (last stage) gives the work directory (``[environment].workdir``, else its
last ``WORKDIR``) and the work copy (the build-context folder it ``COPY``s / ``ADD``s onto that
directory; none: ``[metadata]`` ``repo`` at ``base_commit`` when both are given, as this library's
exports of SWE-bench rows say, else an empty folder); ``[environment].docker_image`` is the image; ``tests/`` is graded by
``ha_envs.grading.harbor`` (uploaded only into the grading sandbox, after the agent finished);
``solution/solve.sh`` is the oracle (``ha_envs.harbor.oracle``). A multi-step task (``[[steps]]``)
reads each step's ``steps/<name>/instruction.md`` and tests (``ha_envs.harbor.steps`` runs them).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import shlex
from pathlib import Path

from ..sandbox.provision.workcopy import cache_root
from ..task import EnvironmentSpec, Task, TestSpec
from .models import HarborTaskError, TaskConfig, read_task_config
from .steps import staged_files

BENCHMARK = "harbor"
TEST_COMMAND = "bash /tests/test.sh"
LOG_PARSER = "harbor"
PROTECTED = ("conftest.py", "**/conftest.py", "pytest.ini", "tox.ini")
"""Files whose edits by the agent are dropped before grading (test infrastructure a test.sh may run)."""


def is_task_dir(path: Path) -> bool:
    return (Path(path) / "task.toml").is_file()


def load_harbor(path: str | Path) -> list[Task]:
    """One Harbor task (a folder holding ``task.toml``) or a dataset (a folder of such folders)."""
    root = Path(path)
    if not root.is_dir():
        raise HarborTaskError(f"--data {root}: not a directory (give a Harbor task folder or a folder of them)")
    if is_task_dir(root):
        return [load_harbor_task(root)]
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and is_task_dir(d))
    if not dirs:
        raise HarborTaskError(f"{root}: neither a Harbor task (no task.toml) nor a dataset (no sub-folder holds one)")
    tasks = [load_harbor_task(d) for d in dirs]
    seen: dict[str, Path] = {}
    for t, d in zip(tasks, dirs):
        if t.instance_id in seen:
            raise HarborTaskError(f"{d}: task name {t.instance_id!r} is also {seen[t.instance_id]}'s")
        seen[t.instance_id] = d
    return tasks


def load_harbor_task(task_dir: str | Path) -> Task:
    task_dir = Path(task_dir).resolve()
    config = read_task_config(task_dir / "task.toml")
    if config.environment.os != "linux":
        raise HarborTaskError(f"{task_dir}: [environment].os = {config.environment.os!r}; only linux tasks run here")
    steps = _steps(task_dir, config)
    if steps:
        instruction = steps[0]["instruction"]
    else:
        instruction = _instruction(task_dir)
        _required(task_dir / "tests" / "test.sh", "the verifier script (Harbor runs tests/test.sh)")
    workdir, source = _work_copy(task_dir, config)
    name = str((config.task or {}).get("name") or task_dir.name).replace("/", "__")
    meta = config.metadata
    repo, commit = str(meta.get("repo") or ""), str(meta.get("base_commit") or "") or None
    if source is None:  # the work copy is the image's: [metadata] repo and base_commit name it, else empty
        source = None if repo and commit else _empty_dir()
    return Task(
        instance_id=name, benchmark=BENCHMARK, language=str(meta.get("language") or "unknown"),
        problem_statement=instruction,
        tests=TestSpec(test_patch="", fail_to_pass=(), pass_to_pass=(), test_command=TEST_COMMAND,
                       log_parser=LOG_PARSER, protected_paths=PROTECTED,
                       timeout_s=steps[-1]["verifier_timeout_s"] if steps else config.verifier_timeout_s),
        environment=EnvironmentSpec(image=config.environment.docker_image, workdir=workdir, extra=_build(task_dir)),
        source_dir=source, repo=repo, base_commit=commit, difficulty=str(meta.get("difficulty") or ""),
        metadata={"harbor": _harbor_meta(task_dir, config, steps)},
    )


def _instruction(folder: Path) -> str:
    text = _required(folder / "instruction.md", "the task's instruction").read_text()
    if not text.strip():
        raise HarborTaskError(f"{folder / 'instruction.md'}: empty")
    return text


def _steps(task_dir: Path, config: TaskConfig) -> list[dict]:
    """A multi-step task's steps as ``ha_envs.harbor.steps`` runs them: each one's folder
    ``steps/<name>/`` with its instruction.md, and a test.sh (its own ``tests/test.sh``, else the
    task's); timeouts fall back to the task's ``[agent]`` / ``[verifier]``."""
    found = []
    for step in config.steps or []:
        folder = task_dir / "steps" / step.name
        if not folder.is_dir() or not folder.resolve().is_relative_to(task_dir):
            raise HarborTaskError(f"{task_dir}: [[steps]] name = {step.name!r} has no folder steps/{step.name}/ "
                                  "(holding its instruction.md and tests/test.sh)")
        staged = staged_files(task_dir, step.name)  # refuses links out of the task and odd files
        if not (folder / "tests" / "test.sh").is_file() and not (task_dir / "tests" / "test.sh").is_file():
            raise HarborTaskError(f"{task_dir}: step {step.name!r} has no test script: neither "
                                  f"steps/{step.name}/tests/test.sh nor tests/test.sh")
        found.append({"name": step.name, "instruction": _instruction(folder),
                      "agent_timeout_s": step.agent.timeout_sec or config.agent.timeout_sec,
                      "verifier_timeout_s": step.verifier.timeout_sec or config.verifier_timeout_s,
                      "min_reward": step.min_reward,
                      "solution": (folder / "solution" / "solve.sh").is_file(),
                      "workdir": bool(staged)})  # staged before the step (steps.stage); content_sha256 covers them
    return found


def _build(task_dir: Path) -> dict:
    """Where the docker sandbox builds the environment's image from (``images.dockerfile_image``)."""
    context = task_dir / "environment"
    return {"dockerfile_context": str(context)} if (context / "Dockerfile").is_file() else {}


def _required(path: Path, what: str) -> Path:
    if not path.is_file():
        raise HarborTaskError(f"{path.parent}: no {path.name} ({what})")
    return path


def _harbor_meta(task_dir: Path, config: TaskConfig, steps: list[dict]) -> dict:
    env = config.environment
    verifier_net = config.verifier.network_mode or env.network
    return {"task_dir": str(task_dir), "schema_version": config.schema_version,
            "agent_timeout_s": config.agent.timeout_sec, "verifier_timeout_s": config.verifier_timeout_s,
            "build_timeout_s": env.build_timeout_sec, "cpus": env.cpus, "memory_mb": env.memory_mb,
            "storage_mb": env.storage_mb,
            "agent_network": (config.agent.network_mode or env.network).value,
            "verifier_network": verifier_net.value, "verifier_env": dict(config.verifier.env),
            "dockerfile": (task_dir / "environment" / "Dockerfile").is_file(),
            "solution": (task_dir / "solution" / "solve.sh").is_file(),
            "metadata": json.loads(json.dumps(config.metadata, default=str)),
            "content_sha256": folder_digest(task_dir),
            **({"steps": steps, "reward_strategy": config.multi_step_reward_strategy or "mean"} if steps else {})}


def folder_digest(root: Path) -> str:
    """A hash of every file under ``root`` (relative path, mode's executable bit, bytes; a link by
    its target): the task's identity (``Task.fingerprint``) changes with its tests, solution,
    environment or instruction, so a reused ``--out`` never answers for an edited task."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            h.update(f"L {rel} -> {os.readlink(path)}\n".encode())
        elif path.is_file():
            h.update(f"F {rel} {bool(path.stat().st_mode & 0o111):d} {path.stat().st_size}\n".encode())
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def _work_copy(task_dir: Path, config: TaskConfig) -> tuple[str, Path | None]:
    """(work directory in the container, host folder holding its files at the start; None: the
    Dockerfile copies none onto it)."""
    env_dir = task_dir / "environment"
    dockerfile = env_dir / "Dockerfile"
    if not dockerfile.is_file():
        if (env_dir / "docker-compose.yaml").is_file() or (env_dir / "docker-compose.yml").is_file():
            raise HarborTaskError(f"{task_dir}: a docker-compose environment (several services) is not run here; "
                                  "give environment/Dockerfile")
        if not config.environment.docker_image:
            raise HarborTaskError(f"{task_dir}: neither environment/Dockerfile nor [environment].docker_image")
        if not config.environment.workdir:
            raise HarborTaskError(f"{task_dir}: [environment].docker_image without a Dockerfile needs "
                                  "[environment].workdir (where the agent works)")
        return config.environment.workdir, None
    workdir, copies = parse_dockerfile(dockerfile.read_text(), dockerfile)
    workdir = config.environment.workdir or workdir
    if not workdir or workdir == "/":
        raise HarborTaskError(f"{dockerfile}: no WORKDIR (and no [environment].workdir): the agent's work "
                              "directory must be a folder other than /")
    onto = [src for src, dest in copies if dest == workdir]
    if len(onto) > 1:
        raise HarborTaskError(f"{dockerfile}: {len(onto)} COPY/ADD lines fill {workdir} ({', '.join(onto)}); "
                              "one folder of the build context is taken as the work copy")
    if not onto:
        return workdir, None
    source = (env_dir / onto[0]).resolve()
    if not source.is_relative_to(env_dir.resolve()) or not source.is_dir():
        raise HarborTaskError(f"{dockerfile}: COPY {onto[0]} {workdir}: {onto[0]!r} is not a folder of the "
                              "build context (environment/)")
    return workdir, source


def _empty_dir() -> Path:
    path = cache_root() / "harbor" / "empty-workdir"
    path.mkdir(parents=True, exist_ok=True)
    return path


def parse_dockerfile(text: str, where: Path | str = "Dockerfile") -> tuple[str, list[tuple[str, str]]]:
    """(the last stage's final WORKDIR, its (source, destination) COPY/ADD pairs of one build-context
    source each), destinations made absolute against the WORKDIR of their line, without trailing '/'."""
    lines: list[str] = []
    buf = ""
    for raw in text.splitlines():
        if not buf and raw.lstrip().startswith("#"):
            continue
        if raw.rstrip().endswith("\\"):
            buf += raw.rstrip()[:-1] + " "
            continue
        lines.append(buf + raw)
        buf = ""
    if buf:
        lines.append(buf)
    workdir, copies = "/", []
    for line in lines:
        word, _, rest = line.strip().partition(" ")
        word = word.upper()
        if word == "FROM":
            workdir, copies = "/", []
        elif word == "WORKDIR":
            workdir = posixpath.normpath(posixpath.join(workdir, rest.strip().strip('"')))
        elif word in ("COPY", "ADD"):
            args = _copy_args(rest, where)
            if args is None or len(args) != 2:
                continue
            src, dest = args
            copies.append((posixpath.normpath(src), posixpath.normpath(posixpath.join(workdir, dest))))
    return workdir, copies


def _copy_args(rest: str, where: Path | str) -> list[str] | None:
    rest = rest.strip()
    try:
        args = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
    except (ValueError, json.JSONDecodeError) as exc:
        raise HarborTaskError(f"{where}: cannot read the line 'COPY {rest}': {exc}") from None
    if any(a.startswith("--from") for a in args):
        return None  # from another stage or image, not the build context
    return [a for a in args if not a.startswith("--")]
