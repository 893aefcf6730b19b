"""Python environments for real SWE-bench instances in the local sandbox (no Docker needed).

For a task whose ``environment.extra["specs"]`` come from ``swebench<5`` (or, for SWE-bench Pro,
from Scale's Dockerfiles: ``grading/pro.py``), build once (cached by
content under ``$HA_CACHE_DIR/envs``) an interpreter prefix copied from the matching pyenv one (not a
venv: see ``_copy_prefix``), with the spec's
packages and the repository installed with its dependencies. The spec's packages form a dependency
layer (``dependency_layer``) that the instances of one repository version share, as swebench's
instance images share an environment image; each instance copies it and installs its own commit. The work copy's import roots (found
from the files the repository's distribution installed: ``src/``, ``lib/``, the top level) go first
on ``PYTHONPATH``, so the code under test is always the agent's (or the grader's) copy, never the
installed one, while entry points and metadata stay; this also sidesteps PEP 660 editable installs,
whose import hooks can leave the checkout off ``sys.path``. Pure-Python
repositories only: projects that compile extensions need the Docker images.
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
from .requirements import repo_requirements
from .workcopy import FORMAT_FILE, cache_root, mark_built, prepare_snapshot, touch


ENV_FORMAT = 19
"""Bump when the way environments are built changes (the cache key includes it)."""


def pyenv_python(version: str) -> Path:
    """The newest pyenv interpreter of ``version`` (e.g. ``3.9`` -> ~/.pyenv/versions/3.9.18)."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted((p for p in root.glob(f"{version}.*") if re.fullmatch(rf"{re.escape(version)}\.\d+", p.name)),
                   key=lambda p: int(p.name.rsplit(".", 1)[1]))
    if not found:
        raise SandboxError(f"Python {version} is needed and pyenv has none under {root}")
    return found[-1] / "bin" / "python"


def python_env_dest(task: Any) -> Path | None:
    """Where this machine keeps the task's environment (built or not; the name holds its content
    key, the same on every machine), or None when the task needs none."""
    specs = (task.environment.extra or {}).get("specs") if task is not None else None
    if not specs or task.language != "python" or not specs.get("python"):
        return None
    key = hashlib.sha256(json.dumps([ENV_FORMAT, task.repo, specs, task.base_commit, pypi_cutoff(task, specs)[0]],
                                    sort_keys=True).encode()).hexdigest()[:12]
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", task.repo)
    return cache_root() / "envs" / f"{safe}-{specs['python']}-{key}"


def python_env(task: Any) -> Path | None:
    """The environment (an interpreter prefix) for ``task``, built on first use; None when the task needs none."""
    env = python_env_dest(task)
    if env is None:
        return None
    specs = task.environment.extra["specs"]
    if (env / ".ha-ready").is_file():
        touch(env)
        return env
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(env.with_name(env.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # threads and processes building the same env wait for one
        if (env / ".ha-ready").is_file():
            return env
        _build(task, specs, env)
    return env


def _build(task: Any, specs: dict[str, Any], env: Path) -> None:
    """The task's environment: a copy of its dependency layer (``dependency_layer``, shared by every
    instance of the same repository, spec and requirements) with the repository at the task's base
    commit installed on it, as swebench's instance images are its environment image plus the
    instance's install."""
    python = pyenv_python(str(specs["python"]))
    base = python.resolve().parent.parent
    layer = dependency_layer(task, specs)
    tmp = env.with_name(env.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    _copy_prefix(layer, tmp)
    report: dict[str, Any] = json.loads((layer / LAYER_REPORT).read_text())
    report["layer"] = layer.name
    log: list[str] = [(layer / "ha-build.log").read_text() if (layer / "ha-build.log").is_file() else "",
                      f"# the dependency layer {layer}, then the instance {task.instance_id}"]
    for f in ("ha-build.log", LAYER_REPORT, ".ha-ready", FORMAT_FILE, "ha-requirements.txt", "ha-constraints.txt"):
        (tmp / f).unlink(missing_ok=True)  # the layer's own records (hard links into it: never written)
    _fix_paths(tmp, layer, base)

    # setuptools_scm finds no tags in the snapshot (history ends at the base commit): give it the version,
    # for the repository's own build only (a dependency built from source would take it too).
    repo_env = dict(os.environ, SETUPTOOLS_SCM_PRETEND_VERSION=_release(str(task.metadata.get("version", "0"))))
    run = _runner(task, log)
    pip, _ = _installers(tmp, pypi_cutoff(task, specs)[0], specs)
    snapshot = prepare_snapshot(task)
    for rel in specs.get("requirements_files") or ():
        if (snapshot.path / rel).is_file():  # requirement files of the repository at its base commit
            run(pip + ["-r", str(snapshot.path / rel)])
    if specs.get("install_repo", True):
        # The repository's dependencies, with the extras the spec's install names (sphinx's `.[test]`
        # brings its test requirements), and the package itself (its code is shadowed, see below).
        # Built from a copy: pip builds in the source tree (``build/``, generated files), and the
        # snapshot is every work copy's origin.
        extras = re.search(r"(?:^|\s)['\"]?\.\[([^\]]+)\]", str(specs.get("install") or ""))
        source = tmp / "ha-source"
        subprocess.run(["cp", "-a", "--reflink=auto", str(snapshot.path), str(source)], check=True, capture_output=True)
        run(pip + [f"{source}[{extras.group(1)}]" if extras else str(source)], env=repo_env)
    # The repository's own distribution stays installed (entry points, metadata), but the work copy's
    # import roots go first on PYTHONPATH, so its code is what runs. The roots come from the files the
    # distribution installed (``ansible`` lives in ``lib/``, ``flask`` in ``src/``).
    roots: list[str] = []
    built: list[str] = []
    for name in sorted(_dists(tmp)):
        if (_norm(name) == _norm(task.repo.split("/")[-1]) or _installed_from(tmp, name, tmp / "ha-source")
                or _legacy_from(tmp, name, snapshot.path)):
            for top in _top_levels(tmp, name):
                root = _find_root(snapshot.path, top)
                if root is not None:
                    roots += [root] if root not in roots else []
                    built += _keep_built(tmp, top, root, snapshot.path)
                    _drop_installed(tmp, top)
    if built:
        (tmp / INPLACE_LIST).write_text(json.dumps(sorted(built)))
        report["notes"].append(f"{len(built)} built files (what the repository's build generated: version files, "
                               "compiled extensions) go into every work copy, as an in-place build leaves them")
    # The work copy's roots also go in a .pth file, as an editable install would put them: tests that
    # set PYTHONPATH for a subprocess of their own (pylint's) must still import the work copy, never
    # an installed copy of the base (removed above).
    workdir = task.environment.workdir
    for site in tmp.glob("lib/python*/site-packages"):
        (site / "ha-workcopy.pth").write_text("".join(f"{workdir}/{r}\n" if r else f"{workdir}\n" for r in roots))
    if "pytest" in task.tests.test_command and run([str(tmp / "bin" / "python"), "-c", "import pytest"], check=False):
        # Nothing the spec installs brings pytest, yet its test command runs it: pytest 8 removed APIs
        # that conftests of that era use (monkeypatch.notset), so stay below it, and say so.
        run(pip + ["pytest<8"])
        report["notes"].append("pytest<8 added: the test command runs pytest and nothing in the spec installs it")
    shutil.rmtree(tmp / "ha-source", ignore_errors=True)
    (tmp / "ha-build.json").write_text(json.dumps(report, indent=1))
    (tmp / "ha-import-roots.json").write_text(json.dumps(roots))
    (tmp / "ha-base-prefix").write_text(str(base))
    (tmp / "ha-build.log").write_text("\n".join(log))
    shutil.rmtree(env, ignore_errors=True)
    tmp.rename(env)
    _fix_paths(env, tmp, base)
    mark_built(env, "python-env", ENV_FORMAT)
    (env / ".ha-ready").write_text(task.instance_id)


LAYER_REPORT = "ha-layer.json"


def dependency_layer(task: Any, specs: dict[str, Any] | None = None) -> Path:
    """The environment's dependency layer, built on first use and shared (cached by content under
    ``$HA_CACHE_DIR/envs/layers``): the interpreter prefix with the spec's packages (or the
    requirements file it names, read at the environment-setup commit) and its pinned pip packages,
    everything swebench's environment image holds before an instance installs the repository. Its
    key is the spec, the PyPI date and the requirements' content, so the instances of one version
    of a repository share one (SWE-bench Verified: 80 for its 500 instances). ``HA_ENV_LAYERS=instance``
    gives every instance its own (the layout before layers; ``benchmarks/bench_envs.py`` compares)."""
    specs = specs if specs is not None else task.environment.extra["specs"]
    reqs = repo_requirements(task, specs)
    cutoff, why = pypi_cutoff(task, specs)
    content = None if reqs is None else [reqs.requirements, reqs.constraints, reqs.not_pip, reqs.source.split(" @ ")[0]]
    sharing = os.environ.get("HA_ENV_LAYERS", "shared").strip().lower() or "shared"
    if sharing not in ("shared", "instance"):
        raise SandboxError(f"HA_ENV_LAYERS is {sharing!r}: use 'shared' (one dependency layer per repository, spec "
                           "and requirements; the default) or 'instance' (one per instance)")
    own = task.base_commit if sharing == "instance" else None
    key = hashlib.sha256(json.dumps([ENV_FORMAT, task.repo, specs, cutoff, content] + ([own] if own else []),
                                    sort_keys=True).encode()).hexdigest()[:12]
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", task.repo)
    layer = cache_root() / "envs" / "layers" / f"{safe}-{specs['python']}-{key}"
    if (layer / ".ha-ready").is_file():
        touch(layer)
        return layer
    layer.parent.mkdir(parents=True, exist_ok=True)
    with open(layer.with_name(layer.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (layer / ".ha-ready").is_file():
            _build_layer(task, specs, layer, reqs, cutoff, why)
    return layer


def _installers(prefix: Path, cutoff: str | None, specs: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(pip, plain): the install commands for ``prefix``. Under a PyPI date, ``pip`` reads only
    releases uploaded before it (uv does this natively; it drives Python 3.7 and later) and ``plain``
    reads PyPI as of today, for the spec's pinned packages (swebench pinned them when it built its
    images, later than that date), unless the date is the spec's own; else both are pip."""
    plain = [str(prefix / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if not cutoff or str(specs["python"]) in ("2.7", "3.5", "3.6"):
        return plain, plain
    plain = [_uv(), "pip", "install", "-q", "--python", str(prefix / "bin" / "python")]
    pip = plain + cutoff_args(cutoff, specs)
    return pip, pip if specs.get("pypi_cutoff") else plain


def _runner(task: Any, log: list[str]):
    def run(args: list[str], check: bool = True, env: dict[str, str] | None = None) -> str | None:
        """None on success, else the error (raised when ``check``)."""
        proc = subprocess.run(args, capture_output=True, text=True, env=env)
        log.append(f"$ {' '.join(args)}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        if proc.returncode == 0:
            return None
        err = proc.stderr.strip()[-800:]
        if check:
            raise SandboxError(f"building the Python environment of {task.instance_id} failed at "
                               f"`{' '.join(args[:6])}`: {err}")
        return (err.splitlines() or ["failed"])[-1]
    return run


def _build_layer(task: Any, specs: dict[str, Any], layer: Path, reqs: Any, cutoff: str | None, why: str) -> None:
    python = pyenv_python(str(specs["python"]))
    base = python.resolve().parent.parent
    tmp = layer.with_name(layer.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    log: list[str] = []
    run = _runner(task, log)
    _copy_prefix(base, tmp)
    pip, plain = _installers(tmp, cutoff, specs)
    report: dict[str, Any] = {"requirements": None, "notes": [], "problems": []}
    if "--exclude-newer" in pip:
        report["notes"].append(f"PyPI as of {cutoff} ({why})")

    def install_all(lines: list[str], constraints: list[str]) -> None:
        """One install of ``lines``; when it fails, each line alone, and those pip cannot have are
        named problems (the official image would have failed to build, or had them from conda)."""
        if not lines:
            return
        (tmp / "ha-requirements.txt").write_text("\n".join(lines) + "\n")
        extra = []
        if constraints:
            (tmp / "ha-constraints.txt").write_text("\n".join(constraints) + "\n")
            extra = ["-c", str(tmp / "ha-constraints.txt")]
        if run(pip + ["-r", str(tmp / "ha-requirements.txt")] + extra, check=False) is None:
            return
        for line in lines:
            err = run(pip + shlex.split(line) + extra, check=False)
            if err is not None:
                report["problems"].append(f"requirement cannot be installed here: {line} ({err[:200]})")

    # The order of swebench's images: the spec's packages (or the file it names), then its pinned pip
    # packages; the repository (with its pre-install edits already in the snapshot) is the instance's.
    packages = specs.get("packages", "")
    if reqs is not None:
        report["requirements"] = reqs.source
        report["notes"] += reqs.notes
        report["problems"] += [f"a conda package, not on PyPI: {d}" for d in reqs.not_pip]
        install_all(reqs.requirements, reqs.constraints)
    elif packages:
        install_all(shlex.split(packages), [])
    if specs.get("pip_packages"):
        run(plain + list(specs["pip_packages"]))
    (tmp / LAYER_REPORT).write_text(json.dumps(report, indent=1))
    (tmp / "ha-build.log").write_text("\n".join(log))
    shutil.rmtree(layer, ignore_errors=True)
    tmp.rename(layer)
    _fix_paths(layer, tmp, base)
    mark_built(layer, "python-layer", ENV_FORMAT)
    (layer / ".ha-ready").write_text(task.instance_id)


REPO_CUTOFF = {"sphinx-doc/sphinx": "setup-commit"}
"""Repositories whose environments read PyPI as of a date unless ``HA_PYPI_CUTOFF`` says otherwise.
sphinx 3.x-4.x: today's docutils (0.22) dropped the ``roman`` module its tests import, and the
spec pins no docutils; as of the setup commit's day both measured instances validate and neither
does without (benchmarks/VALIDATION.md)."""


TODAY_UNDER_CUTOFF = ("setuptools", "wheel")
"""Read as of today under any cutoff: build backends, as pip's build isolation gets them (an old
setuptools writes versions today's tools reject: sphinx's ``3.5.0.dev-20261201``)."""
RUNNER_UNDER_CUTOFF = ("pytest", "pluggy", "iniconfig", "exceptiongroup", "tomli", "pytest-cov", "coverage")
"""Also as of today under a cutoff of our own (``REPO_CUTOFF``, ``HA_PYPI_CUTOFF``), not a spec's: the
test runner swebench's images got. Its test ids come from that pytest (duplicate parametrize ids
are ``1234_0`` since pytest 7, ``12340`` before: sphinx-8265's FAIL_TO_PASS)."""


def cutoff_args(cutoff: str, specs: dict[str, Any]) -> list[str]:
    """uv's arguments for PyPI as of ``cutoff``, with the packages read as of today."""
    today = TODAY_UNDER_CUTOFF + (() if specs.get("pypi_cutoff") else RUNNER_UNDER_CUTOFF)
    out = ["--exclude-newer", f"{cutoff}T23:59:59Z"]
    for name in today:
        out += ["--exclude-newer-package", f"{name}=2100-01-01T00:00:00Z"]
    return out


def pypi_cutoff(task: Any, specs: dict[str, Any]) -> tuple[str | None, str]:
    """(YYYY-MM-DD or None, why): the date PyPI is read as of. The spec's own (SWE-bench Pro's images
    pin one); else ``HA_PYPI_CUTOFF``: a date, ``setup-commit`` for the day of a SWE-bench row's
    environment-setup commit (from the mirror), so requirements that name no version get what the
    repository was tested with then, or ``off``; unset, the repository's entry in ``REPO_CUTOFF``,
    else none. Not the default for every repository: swebench built its images with the PyPI of
    their build day, and a cutoff older than the spec's Python breaks more than it fixes (requests
    2.4 on Python 3.9 gets a 2014 pytest); measured in benchmarks/VALIDATION.md."""
    if specs.get("pypi_cutoff"):
        return str(specs["pypi_cutoff"]), "the spec's date"
    setting = os.environ.get("HA_PYPI_CUTOFF", "").strip().lower()
    source = "HA_PYPI_CUTOFF"
    if not setting and task.repo in REPO_CUTOFF:
        setting, source = REPO_CUTOFF[task.repo], f"{task.repo}'s default (REPO_CUTOFF)"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", setting):
        return setting, source
    commit = (task.environment.extra or {}).get("environment_setup_commit")
    if setting != "setup-commit" or not str(task.benchmark).startswith("swebench_") or not commit:
        return None, ""
    from .workcopy import find_mirror

    mirror = find_mirror(task.repo, None)
    if mirror is None:
        return None, ""
    proc = subprocess.run(["git", "log", "-1", "--format=%cs", commit], cwd=mirror, capture_output=True, text=True)
    day = proc.stdout.strip()
    why = f"the day of the environment-setup commit {commit[:12]}"
    if source != "HA_PYPI_CUTOFF":
        why += f", {source}"
    return (day, why) if proc.returncode == 0 and day else (None, "")


def _uv() -> str:
    import sys

    for cand in (shutil.which("uv"), str(Path(sys.prefix) / "bin" / "uv")):
        if cand and Path(cand).is_file():
            return cand
    raise SandboxError("this environment pins PyPI to a date, which needs `uv` (pip install uv)")


def _installed_from(env: Path, dist: str, path: Path) -> bool:
    """Whether ``dist`` was installed from the local directory ``path`` (its PEP 610 direct_url.json),
    i.e. it is the repository itself under another name (``ansible-core`` from ansible/ansible)."""
    for info in env.glob("lib/python*/site-packages/*.dist-info"):
        if _norm(info.name.split("-")[0]) != _norm(dist):
            continue
        direct = info / "direct_url.json"
        if direct.is_file():
            url = json.loads(direct.read_text()).get("url", "")
            return url.rstrip("/") == path.resolve().as_uri().rstrip("/")
    return False


def _release(version: str) -> str:
    parts = [p for p in re.split(r"[^0-9]+", version) if p][:3]
    return ".".join(parts + ["0"] * (3 - len(parts))) if parts else "0.0.0"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dists(env: Path) -> set[str]:
    # No -q: pip 23 prints nothing at all for `list -q`.
    out = subprocess.run([str(env / "bin" / "python"), "-m", "pip", "list", "--format=json",
                          "--disable-pip-version-check"], capture_output=True, text=True)
    if out.returncode != 0:
        raise SandboxError(f"pip list failed in {env}: {out.stderr.strip()[-500:]}")
    return {d["name"] for d in json.loads(out.stdout or "[]")}


def _legacy_from(env: Path, dist: str, snapshot: Path) -> bool:
    """A legacy (``setup.py install``) distribution leaves no direct_url.json: it is the repository's
    own when every top-level package it installed is found in the repository. (Never run the
    repository's setup.py to ask its name: setuptools_scm would rewrite generated files in the snapshot.)"""
    infos = [i for i in env.glob("lib/python*/site-packages/*.egg-info") if _norm(i.name.split("-")[0]) == _norm(dist)]
    tops = _top_levels(env, dist) if infos else []
    return bool(tops) and all(_find_root(snapshot, t) is not None for t in tops)


INPLACE_DIR, INPLACE_LIST = "ha-inplace", "ha-inplace.json"
"""Where an environment keeps the files the repository's build made (``<env>/ha-inplace/<path in
the repository>``) and their list."""


def _keep_built(env: Path, top: str, root: str, snapshot: Path) -> list[str]:
    """Keep the files the installed copy of ``top`` has and the repository at its base commit does
    not, at their paths in the repository, before the installed copy is dropped: what the build
    made. For most repositories that is a version file setuptools_scm writes (pytest's
    ``src/_pytest/_version.py``, without which ``import pytest`` fails); for compiled projects also
    the extension modules (astropy's C and Cython modules) and what their build generated. A work
    copy then holds them as an in-place build (``pip install -e .``, the official images) leaves
    them."""
    kept: list[str] = []
    for site in env.glob("lib/python*/site-packages"):
        pkg = site / top
        if not pkg.is_dir():
            continue
        for f in sorted(pkg.rglob("*")):
            rel = f.relative_to(site)
            if f.is_symlink() or not f.is_file() or "__pycache__" in rel.parts or f.suffix == ".pyc":
                continue
            in_repo = Path(root) / rel if root else rel
            if (snapshot / in_repo).exists():
                continue
            dest = env / INPLACE_DIR / in_repo
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)
            kept.append(str(in_repo))
    return kept


def built_files(env: Path | str | None) -> list[str]:
    """Paths (in the repository) of the files ``env`` keeps from the repository's build; [] for most."""
    listing = Path(env) / INPLACE_LIST if env else None
    return json.loads(listing.read_text()) if listing is not None and listing.is_file() else []


def with_built_files(snapshot: Any, env: Path | str | None) -> Any:
    """``snapshot``, or, when ``env`` keeps built files, a snapshot with them in place (cached beside
    it): the files are ignored by git there (``.git/info/exclude``), so they are never part of a
    patch, and every work copy and grading copy starts with the same pristine build."""
    files = built_files(env)
    if not files:
        return snapshot
    from .workcopy import Snapshot

    key = hashlib.sha256(json.dumps([str(env), files]).encode()).hexdigest()[:10]
    dest = snapshot.path.with_name(f"{snapshot.path.name}+built-{key}")
    if (dest / ".git" / "ha-built-ready").is_file():
        return Snapshot(dest, snapshot.base_commit)
    with open(dest.with_name(dest.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (dest / ".git" / "ha-built-ready").is_file():
            tmp = dest.with_name(dest.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            subprocess.run(["cp", "-a", "--reflink=auto", str(snapshot.path), str(tmp)], check=True, capture_output=True)
            for rel in files:
                target = tmp / rel
                if target.exists():
                    raise SandboxError(f"a built file of {env} is tracked by the repository: {rel}")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(Path(env) / INPLACE_DIR / rel, target)
            with open(tmp / ".git" / "info" / "exclude", "a") as ex:
                ex.write("".join(f"/{_glob_escape(rel)}\n" for rel in files))
            (tmp / ".git" / "ha-built.json").write_text(json.dumps(files))
            (tmp / ".git" / "ha-built-ready").write_text(str(env))
            shutil.rmtree(dest, ignore_errors=True)
            tmp.rename(dest)
    return Snapshot(dest, snapshot.base_commit)


def _glob_escape(path: str) -> str:
    return re.sub(r"([*?\[\\!#])", r"\\\1", path)


def _drop_installed(env: Path, top: str) -> None:
    """Remove the installed copy of the repository's module or package ``top`` (its metadata and
    entry points stay): the work copy's, on the path through ``ha-workcopy.pth``, is the one to run."""
    for site in env.glob("lib/python*/site-packages"):
        shutil.rmtree(site / top, ignore_errors=True)
        (site / f"{top}.py").unlink(missing_ok=True)


def _top_levels(env: Path, dist: str) -> list[str]:
    """Top-level modules and packages a distribution installed (its RECORD, or a legacy egg-info's
    top_level.txt)."""
    tops: list[str] = []
    for info in env.glob("lib/python*/site-packages/*.egg-info"):
        if _norm(info.name.split("-")[0]) == _norm(dist) and (info / "top_level.txt").is_file():
            tops += [t.strip() for t in (info / "top_level.txt").read_text().splitlines() if t.strip().isidentifier()]
    for info in env.glob("lib/python*/site-packages/*.dist-info"):
        if _norm(info.name.split("-")[0]) != _norm(dist) or not (info / "RECORD").is_file():
            continue
        for line in (info / "RECORD").read_text().splitlines():
            first = line.split(",", 1)[0].split("/", 1)[0]
            if first.endswith((".dist-info", ".data", ".pth")) or first.startswith(("..", "__pycache__")) or not first:
                continue
            name = first[:-3] if first.endswith(".py") else first
            if name.isidentifier() and name not in tops:
                tops.append(name)
    return tops


def _find_root(snapshot: Path, top: str) -> str | None:
    """The directory (relative to the repository, '' for its top) holding package or module ``top``;
    the shallowest match wins (``lib/ansible`` over a vendored ``test/x/ansible``)."""
    for depth in range(4):
        pattern = "/".join(["*"] * depth)
        for cand in sorted(snapshot.glob(f"{pattern}/{top}" if depth else top)):
            if (cand / "__init__.py").is_file() or (cand.is_dir() and any(cand.glob("*.py"))):
                return "" if cand.parent == snapshot else str(cand.parent.relative_to(snapshot))
        for cand in sorted(snapshot.glob(f"{pattern}/{top}.py" if depth else f"{top}.py")):
            if cand.is_file():
                return "" if cand.parent == snapshot else str(cand.parent.relative_to(snapshot))
    return None


def workcopy_on_path(env: Path, workdir: str) -> bool:
    """Whether ``env``'s ``.pth`` already puts a work copy at ``workdir`` on the path: then no
    ``PYTHONPATH`` is set, as in the official images, where tests that edit ``sys.path`` by position
    (pylint's) expect none."""
    root = workdir.rstrip("/")
    for f in Path(env).glob("lib/python*/site-packages/ha-workcopy.pth"):
        lines = f.read_text().splitlines()
        if lines and all(line == root or line.startswith(root + "/") for line in lines):
            return True
    return False


def build_report(env: Path | None) -> dict[str, Any]:
    """What building ``env`` read and could not install: ``requirements`` (the file and commit),
    ``notes`` (fallbacks taken), ``problems`` (requirements missing from the environment)."""
    f = Path(env) / "ha-build.json" if env is not None else None
    return json.loads(f.read_text()) if f is not None and f.is_file() else {}


def interpreter_dirs(env: Path) -> list[Path]:
    """What ``env``'s python needs at run time: the env, and the pyenv prefix it was copied from
    (a shared-library build's binary loads ``libpython`` from that prefix's ``lib/``)."""
    recorded = Path(env) / "ha-base-prefix"
    return [Path(env)] + ([Path(recorded.read_text().strip())] if recorded.is_file() else [])


def import_roots(snapshot_path: Path, workdir: str, env: Path | None) -> str:
    """PYTHONPATH for a work copy at ``workdir``: the roots recorded when its environment was built,
    else ``src/`` when the repository has that layout, else the work copy itself."""
    roots = None
    if env is not None and (Path(env) / "ha-import-roots.json").is_file():
        roots = json.loads((Path(env) / "ha-import-roots.json").read_text())
    if not roots:
        return source_root(workdir, snapshot_path)
    return ":".join(f"{workdir}/{r}" if r else workdir for r in roots)


def _copy_prefix(base: Path, dest: Path) -> None:
    """A standalone interpreter at ``dest``: a copy of the pyenv prefix ``base``, not a venv.

    A venv's ``python`` is a symlink whose meaning depends on the path it is called by: tox's
    ``--current-env`` (sphinx's test command) links ``.tox/py39/bin/python`` to it, and called
    there it finds no ``pyvenv.cfg`` and runs the bare interpreter, without the packages. A real
    prefix (what conda gives the official images) resolves to itself from any link. The standard
    library is hard-linked (nothing writes into it; ``cp -a`` where links cannot cross devices);
    ``bin/`` and ``site-packages``, which pip and the path fix-up write, are copied. The same copies
    a dependency layer (``dependency_layer``) into an instance's environment."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    linked = subprocess.run(["cp", "-al", str(base), str(dest)], capture_output=True, text=True)
    if linked.returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)
        subprocess.run(["cp", "-a", str(base), str(dest)], check=True, capture_output=True)
        return
    for sub in [dest / "bin", *dest.glob("lib/python*/site-packages")]:
        fresh = sub.with_name(sub.name + ".ha-copy")
        subprocess.run(["cp", "-a", str(sub), str(fresh)], check=True, capture_output=True)
        shutil.rmtree(sub)
        fresh.rename(sub)


def _fix_paths(env: Path, *old: Path) -> None:
    """An environment built at (or copied from) ``old`` paths and now at ``env``: rewrite the
    paths baked into its scripts (files of ``bin/``, copies, never links into the base)."""
    for f in (env / "bin").iterdir():
        if f.is_file() and not f.is_symlink():
            try:
                text = f.read_text()
            except UnicodeDecodeError:
                continue
            fixed = text
            for o in old:
                fixed = fixed.replace(str(o), str(env))
            if fixed != text:
                mode = f.stat().st_mode
                f.unlink()
                f.write_text(fixed)
                f.chmod(mode)


def source_root(workdir: str, snapshot_path: Path) -> str:
    """Where the package lives in the work copy (``src/`` layouts included), for PYTHONPATH."""
    src = snapshot_path / "src"
    return f"{workdir}/src" if src.is_dir() and any(src.glob("*/__init__.py")) else workdir
