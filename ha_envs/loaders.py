"""Loaders that turn task sources into :class:`~ha_envs.task.Task` records.

- ``load_suite("mini")``: the bundled suite shipped inside this package.
- ``load_jsonl(path)``: local JSONL rows using SWE-bench's field names (``patch``,
  ``test_patch``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``) plus ``source_dir`` / ``test_command`` /
  ``log_parser``. List fields may be real lists or JSON-encoded strings.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any, Iterable

from .task import EnvironmentSpec, Task, TaskError, TestSpec

SUITES_DIR = Path(__file__).parent / "suites"

# Edits to these are dropped before grading in the bundled suite: they are test infrastructure.
DEFAULT_PROTECTED = {
    "python": ("conftest.py", "**/conftest.py", "pytest.ini", "tox.ini", "setup.cfg"),
    "javascript": (),
    "go": (),
    "rust": (),
}


def available_suites() -> list[str]:
    return sorted(p.name for p in SUITES_DIR.iterdir() if p.is_dir() and not p.name.startswith("_"))


def load_suite(name: str = "mini") -> list[Task]:
    """All tasks of a bundled suite, sorted by instance id."""
    suite_dir = SUITES_DIR / name
    if not suite_dir.is_dir():
        raise TaskError(f"unknown suite {name!r}{did_you_mean(name, available_suites())}; "
                        f"available: {', '.join(available_suites())}")
    tasks = [load_task_dir(d, benchmark=name) for d in sorted(suite_dir.iterdir()) if (d / "task.json").is_file()]
    if not tasks:
        raise TaskError(f"suite {name!r} in {suite_dir} holds no task")
    return sorted(tasks, key=lambda t: t.instance_id)


def load_task_dir(task_dir: Path, benchmark: str = "local") -> Task:
    """One task laid out as in ``suites/mini/FORMAT.md``."""
    task_dir = Path(task_dir)
    meta_path = task_dir / "task.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise TaskError(f"cannot read {meta_path}: {exc}") from exc
    for name in ("gold.patch", "test.patch"):
        if not (task_dir / name).is_file():
            raise TaskError(f"task {task_dir.name}: missing {name}")
    row = dict(meta)
    row["patch"] = (task_dir / "gold.patch").read_text()
    row["test_patch"] = (task_dir / "test.patch").read_text()
    row.setdefault("source_dir", "repo")
    return task_from_row(row, base_dir=task_dir, benchmark=benchmark)


def load_jsonl(path: str | Path, benchmark: str = "local") -> list[Task]:
    """Tasks from a local JSONL file; relative ``source_dir`` values resolve against its folder."""
    path = Path(path)
    tasks: list[Task] = []
    with path.open() as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
            try:
                tasks.append(task_from_row(row, base_dir=path.parent, benchmark=benchmark))
            except TaskError as exc:
                raise TaskError(f"{path}:{lineno}: {exc}") from exc
    return tasks


def task_from_row(row: dict[str, Any], base_dir: Path | None = None, benchmark: str = "local") -> Task:
    """Build a Task from a SWE-bench-style row."""
    for key in ("instance_id", "problem_statement", "test_patch", "test_command", "log_parser"):
        if not row.get(key):
            raise TaskError(f"row {row.get('instance_id', '?')!r} lacks field {key!r}")
    source_dir = row.get("source_dir")
    if source_dir is not None:
        source_dir = Path(source_dir)
        if not source_dir.is_absolute() and base_dir is not None:
            source_dir = base_dir / source_dir
    language = row.get("language", "python")
    tests = TestSpec(
        test_patch=row["test_patch"],
        fail_to_pass=_as_list(row.get("FAIL_TO_PASS", []), "FAIL_TO_PASS"),
        pass_to_pass=_as_list(row.get("PASS_TO_PASS", []), "PASS_TO_PASS"),
        test_command=row["test_command"],
        log_parser=row["log_parser"],
        protected_paths=tuple(row.get("protected_paths", DEFAULT_PROTECTED.get(language, ()))),
        timeout_s=float(row.get("test_timeout_s", 600.0)),
        build_command=str(row.get("build_command") or ""),
    )
    env = EnvironmentSpec(
        image=row.get("image"),
        setup_commands=tuple(row.get("setup_commands", ())),
        python_version=row.get("python_version"),
    )
    known = {"instance_id", "problem_statement", "test_patch", "test_command", "log_parser", "patch",
             "FAIL_TO_PASS", "PASS_TO_PASS", "source_dir", "language", "repo", "base_commit",
             "difficulty", "protected_paths", "test_timeout_s", "image", "setup_commands", "python_version",
             "build_command"}
    return Task(
        instance_id=row["instance_id"],
        benchmark=benchmark,
        language=language,
        problem_statement=row["problem_statement"],
        tests=tests,
        environment=env,
        repo=row.get("repo", ""),
        base_commit=row.get("base_commit"),
        source_dir=source_dir,
        gold_patch=row.get("patch", ""),
        difficulty=row.get("difficulty", ""),
        metadata={k: v for k, v in row.items() if k not in known},
    )


def _as_list(value: Any, name: str) -> tuple[str, ...]:
    """Accept a list or a JSON-encoded list (SWE-bench Verified stores them as strings)."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            raise TaskError(f"{name} is a string but not a JSON list: {value[:80]!r}") from exc
    if not isinstance(value, Iterable) or isinstance(value, (str, bytes, dict)):
        raise TaskError(f"{name} must be a list of test ids, got {type(value).__name__}")
    items = tuple(value)
    if not all(isinstance(v, str) for v in items):
        raise TaskError(f"{name} must hold strings only")
    return items


def resolve_tasks(suite: str | None = None, jsonl: str | None = None, ids: list[str] | None = None) -> list[Task]:
    """Tasks from a suite or a JSONL file, optionally restricted to ``ids`` (unknown ids are an error)."""
    if (suite is None) == (jsonl is None):
        raise TaskError("give exactly one of a suite name or a JSONL path")
    tasks = load_suite(suite) if suite else load_jsonl(jsonl)  # type: ignore[arg-type]
    return pick_ids(tasks, ids, f"suite {suite}" if suite else str(jsonl)) if ids else tasks


def pick_ids(tasks: list[Task], ids: list[str], source: str) -> list[Task]:
    """The tasks named by ``ids``, in that order (a repeated id counts once); an unknown id is an
    error naming ``source`` (``suite mini``, a file, a benchmark) and the closest known ids."""
    by_id = {t.instance_id: t for t in tasks}
    unknown = [i for i in dict.fromkeys(ids) if i not in by_id]
    if unknown:
        names = "; ".join(i + did_you_mean(i, list(by_id)) for i in unknown)
        raise TaskError(f"unknown instance id{'s' if len(unknown) > 1 else ''} in {source}: {names}")
    return [by_id[i] for i in dict.fromkeys(ids)]


def close_matches(word: str, choices: Iterable[str], n: int = 3, cutoff: float = 0.7) -> list[str]:
    """The choices closest to a mistyped ``word``: those containing it first (``ttl_cache`` ->
    ``mini__ttl_cache``), then by similarity. The one lookup behind every "did you mean"."""
    choices = list(choices)
    within = [c for c in choices if word and word in c][:n]
    return (within + [c for c in difflib.get_close_matches(word, choices, n=n, cutoff=cutoff) if c not in within])[:n]


def did_you_mean(word: str, choices: list[str], n: int = 3) -> str:
    """`` (did you mean A or B?)`` for the choices closest to ``word``; an empty string if none is close."""
    close = close_matches(word, choices, n)
    if not close:
        return ""
    named = close[0] if len(close) == 1 else f"{', '.join(close[:-1])} or {close[-1]}"
    return f" (did you mean {named}?)"
