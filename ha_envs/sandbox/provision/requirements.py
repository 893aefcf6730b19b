"""The requirements a SWE-bench spec names (``packages: requirements.txt`` or ``environment.yml``), read
from the repository itself, as swebench's image builder reads them, but without the network.

swebench fetches the file from GitHub at the instance's ``environment_setup_commit`` (paths from
``MAP_REPO_TO_REQS_PATHS`` / ``MAP_REPO_TO_ENV_YML_PATHS``) and inlines its ``-r`` includes; here the
same file is read from the local mirror at that commit (else, said so, at the base commit of the
snapshot), ``-r`` and ``-c`` includes are followed recursively, and swebench's own
``clean_requirements`` is applied. An ``environment.yml`` is a conda file: its conda packages are
turned into pip requirements (``name=1.2`` -> ``name==1.2.*``, a few renames); those pip cannot have
are named by the installer (``pyenv.py``), never dropped in silence.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..base import SandboxError
from .workcopy import find_mirror, prepare_snapshot

EXCLUDED = ("-e .", "#", ".[test")
"""Lines swebench leaves out of a requirements file (the repository itself is installed after)."""
CONDA_TO_PIP = {"matplotlib-base": "matplotlib", "pytables": "tables", "iris": "scitools-iris",
                "python-graphviz": "graphviz", "pyqt": "PyQt5", "msgpack-python": "msgpack",
                "dask-core": "dask"}
"""Conda package names whose PyPI name differs."""
CONDA_ONLY = {"python", "pip", "hdf5", "libnetcdf", "gdal", "geos", "proj", "cdms2", "pynio", "esmpy",
              "compilers", "c-compiler", "cxx-compiler", "make", "cmake", "nodejs"}
"""Conda packages that are not Python distributions (libraries, compilers, the interpreter): not pip's."""


@dataclass
class RepoRequirements:
    requirements: list[str]
    """pip requirement lines, includes inlined."""
    constraints: list[str] = field(default_factory=list)
    """Lines of ``-c`` files (version limits that install nothing by themselves)."""
    source: str = ""
    """Which files at which commit, e.g. ``requirements_test.txt (+ 2 includes) @ e907020``."""
    notes: list[str] = field(default_factory=list)
    """Fallbacks taken (another commit than the spec's)."""
    not_pip: list[str] = field(default_factory=list)
    """Conda packages that are no Python distribution (reported: the environment lacks them)."""


def repo_requirements(task: Any, specs: dict[str, Any]) -> RepoRequirements | None:
    """The requirements the spec names for ``task``, or None when it names no file."""
    kind = specs.get("packages")
    if kind not in ("requirements.txt", "environment.yml"):
        return None
    from swebench.harness.constants import MAP_REPO_TO_ENV_YML_PATHS, MAP_REPO_TO_REQS_PATHS

    read, commit, notes = _reader(task)
    paths = (MAP_REPO_TO_REQS_PATHS if kind == "requirements.txt" else MAP_REPO_TO_ENV_YML_PATHS).get(task.repo)
    if not paths:
        raise SandboxError(f"the spec of {task.instance_id} names a {kind}, but swebench knows no path of it in {task.repo}")
    for path in paths:
        text = read(path)
        if text is not None:
            break
    else:
        raise SandboxError(f"no {kind} of {task.repo} at {commit[:12]} (looked for {', '.join(paths)})")
    if kind == "environment.yml":
        reqs = _from_environment_yml(text, path)
    else:
        reqs = RepoRequirements([])
        included: list[str] = []
        _follow(path, text, read, reqs, included, seen={path})
        from swebench.harness.test_spec.python import clean_requirements

        reqs.requirements = clean_requirements("\n".join(reqs.requirements)).splitlines()
        path += f" (+ {', '.join(included)})" if included else ""
    reqs.source = f"{path} @ {commit[:12]}"
    reqs.notes = notes + reqs.notes
    return reqs


def _reader(task: Any) -> tuple[Callable[[str], str | None], str, list[str]]:
    """(read path -> text or None, the commit read, notes): the mirror at the spec's environment
    setup commit when it has it, else the task's snapshot (its base commit)."""
    wanted = (task.environment.extra or {}).get("environment_setup_commit")
    mirror = find_mirror(task.repo, None)
    if wanted and mirror is not None and _has_commit(mirror, wanted):
        def from_mirror(path: str) -> str | None:
            proc = subprocess.run(["git", "show", f"{wanted}:{path}"], cwd=mirror, capture_output=True)
            return proc.stdout.decode(errors="replace") if proc.returncode == 0 else None

        return from_mirror, wanted, []
    snapshot = prepare_snapshot(task)
    why = ("the dataset names no environment_setup_commit" if not wanted else
           f"environment_setup_commit {wanted[:12]} is not in {'the mirror' if mirror else 'any local mirror'}")
    root = snapshot.path.resolve()

    def from_snapshot(path: str) -> str | None:
        f = (root / path).resolve()
        return f.read_text(errors="replace") if f.is_relative_to(root) and f.is_file() else None

    return from_snapshot, task.base_commit or snapshot.base_commit, [f"requirements read at the base commit: {why}"]


def _has_commit(repo: Path, commit: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=repo, capture_output=True).returncode == 0


def _follow(path: str, text: str, read: Callable[[str], str | None], reqs: RepoRequirements,
            included: list[str], seen: set[str], constraint: bool = False) -> None:
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(EXCLUDED):
            continue
        m = re.match(r"^(-r|--requirement|-c|--constraint)\s*=?\s*(\S+)", line)
        if m is None:
            (reqs.constraints if constraint else reqs.requirements).append(line)
            continue
        inner = posixpath.normpath(posixpath.join(posixpath.dirname(path), m.group(2)))
        if inner in seen:
            continue
        seen.add(inner)
        body = read(inner)
        if body is None:
            reqs.notes.append(f"{path} includes {inner}, which is not in the repository at that commit")
            continue
        included.append(inner)
        _follow(inner, body, read, reqs, included, seen, constraint or m.group(1) in ("-c", "--constraint"))


def _from_environment_yml(text: str, path: str) -> RepoRequirements:
    import yaml

    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise SandboxError(f"{path}: not valid YAML ({exc})") from exc
    reqs = RepoRequirements([])
    for dep in doc.get("dependencies") or []:
        if isinstance(dep, dict):
            reqs.requirements += [str(p) for p in dep.get("pip") or [] if not str(p).startswith(EXCLUDED)]
            continue
        name, spec = conda_to_pip(str(dep))
        if name in CONDA_ONLY:
            if name not in ("python", "pip"):
                reqs.not_pip.append(str(dep))
            continue
        reqs.requirements.append(name + spec)
    return reqs


def conda_to_pip(dep: str) -> tuple[str, str]:
    """A conda match spec as (pip name, pip version spec): ``conda-forge::numpy=1.2=py39_0`` ->
    ``("numpy", "==1.2.*")``, ``cftime >=1.5`` -> ``("cftime", ">=1.5")``."""
    dep = dep.split("::")[-1].split("#")[0].strip()
    m = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", dep)
    if m is None:
        return dep, ""
    name, rest = m.group(1).lower(), m.group(2).strip()
    name = CONDA_TO_PIP.get(name, name)
    if not rest:
        return name, ""
    if rest[0] in "<>!~" or rest.startswith("=="):
        return name, rest.replace(" ", "")
    version = rest.lstrip("=").split("=")[0].split()[0]
    return name, f"=={version}" if version.endswith("*") else f"=={version}.*"


__all__ = ["RepoRequirements", "conda_to_pip", "repo_requirements"]
