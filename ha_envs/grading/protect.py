"""What of the graded tree comes from the base commit, whatever the agent's patch did.

The agent may change source files; it may not change what decides the verdict. After its patch is
applied to the grading copy, every path of the patch that falls under one of these is deleted and
checked out again from the base (a path new in the patch is just deleted):

- the hidden test files, and the whole test directory each one lives in (the nearest ancestor
  named like a test directory: ``tests``, ``test``, ``testing``, ``__tests__``, ``spec``), so the
  helper modules the tests import are the base's too;
- every repository file the test command names (``bin/test``, ``tests/runtests.py``, a test file);
- for each runner family the task uses, the files that configure the runner, in any directory,
  and the files it treats as tests (below);
- caches and package metadata a runner would load (bytecode, ``*.dist-info`` entry points).

A symlink the patch put in the way of one of these paths is removed, not followed. The lists are
per family (``FAMILIES``); ``families_of(task)`` picks them from the log parser, the test command and
the language.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
import sys
from dataclasses import dataclass

from ..task import Task

TEST_DIR_NAMES = ("tests", "test", "testing", "__tests__", "spec", "specs")


@dataclass(frozen=True)
class RunnerFamily:
    """The paths one kind of test runner reads besides the code under test."""

    name: str
    config: tuple[str, ...]
    """Base names (globs) of files that configure the runner or run before it, in any directory."""
    tests: tuple[str, ...] = ()
    """Base names (globs) of files the runner treats as tests, in any directory."""
    dirs: tuple[str, ...] = ()
    """Base names (globs) of directories restored whole wherever they are (caches, fixtures,
    package metadata)."""
    files: tuple[str, ...] = ()
    """Base names (globs) of generated files removed wherever they are (bytecode)."""
    shadows: frozenset[str] = frozenset()
    """Module names the runner imports: a *new* file or directory of that name at the top of the
    repository (``pytest.py``, ``json/``) would be imported in their place, so it is removed."""


FAMILIES: dict[str, RunnerFamily] = {f.name: f for f in (
    RunnerFamily(
        "python",
        config=("conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
                "sitecustomize.py", "usercustomize.py", "*.pth", "noxfile.py"),
        tests=("test_*.py", "*_test.py", "tests.py"),
        dirs=("__pycache__", "*.dist-info", "*.egg-info", "*.egg-link", ".pytest_cache", ".hypothesis"),
        files=("*.pyc", "*.pyo"),
        shadows=frozenset(sys.stdlib_module_names) | {
            "pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "attr", "attrs", "tomli", "exceptiongroup",
            "more_itertools", "six", "mock", "coverage", "xdist", "execnet", "hypothesis", "pkg_resources",
            "setuptools", "_distutils_hack", "pytest_cov", "pytest_xdist", "pytest_timeout", "typing_extensions"},
    ),
    RunnerFamily(
        "node",
        config=("package.json", ".npmrc", ".yarnrc", ".yarnrc.yml", "jest.config.*", "jest.setup.*",
                "babel.config.*", ".babelrc", ".babelrc.*", ".mocharc*", "karma.conf*", "vitest.config.*",
                "vitest.workspace.*", "ava.config.*", ".nycrc*", ".c8rc*"),
        tests=("*.test.js", "*.test.mjs", "*.test.cjs", "*.test.ts", "*.test.jsx", "*.test.tsx",
               "*.spec.js", "*.spec.mjs", "*.spec.cjs", "*.spec.ts", "*.spec.jsx", "*.spec.tsx"),
        dirs=("__snapshots__",),
    ),
    RunnerFamily("go", config=("go.work", "go.work.sum"), tests=("*_test.go",), dirs=("testdata",)),
    RunnerFamily(
        "cargo",
        config=("Cargo.toml", "build.rs", "rust-toolchain", "rust-toolchain.toml", ".cargo"),
        dirs=(".cargo",),
    ),
)}

_FAMILY_OF_PARSER = {"pytest": "python", "r2e": "python", "node_tap": "node", "go_test": "go",
                     "cargo_test": "cargo"}
_FAMILY_OF_COMMAND = (
    (re.compile(r"\b(py\.?test|python[\d.]*|tox|runtests\.py|bin/test|nosetests|unittest)\b"), "python"),
    (re.compile(r"\b(node|npm|npx|yarn|pnpm|jest|mocha|vitest|karma)\b"), "node"),
    (re.compile(r"\bgo\s+test\b"), "go"),
    (re.compile(r"\bcargo\s+test\b"), "cargo"),
)
_FAMILY_OF_LANGUAGE = {"python": "python", "javascript": "node", "typescript": "node", "go": "go", "rust": "cargo"}


def families_of(task: Task) -> list[RunnerFamily]:
    """The runner families a task's tests use: from its parser, its test command and its language."""
    names: list[str] = []
    parser = task.tests.log_parser
    if parser in _FAMILY_OF_PARSER:
        names.append(_FAMILY_OF_PARSER[parser])
    for pattern, name in _FAMILY_OF_COMMAND:
        if pattern.search(task.tests.test_command):
            names.append(name)
    if task.language in _FAMILY_OF_LANGUAGE:
        names.append(_FAMILY_OF_LANGUAGE[task.language])
    return [FAMILIES[n] for n in dict.fromkeys(names)]


def command_paths(command: str, base_files: set[str], base_dirs: set[str]) -> list[str]:
    """Repository files and directories the test command names (``./bin/test``, ``tests/``)."""
    try:
        words = shlex.split(command, comments=False)
    except ValueError:
        words = command.split()
    out: list[str] = []
    for word in words:
        for cand in (word, word.split("::")[0]):
            cand = cand.removeprefix("./").rstrip("/")
            if cand in base_files or cand in base_dirs:
                out.append(cand)
                break
    return list(dict.fromkeys(out))


def test_dir_of(path: str) -> str | None:
    """The nearest ancestor directory of ``path`` named like a test directory, if any."""
    parts = path.split("/")[:-1]
    for i in range(len(parts), 0, -1):
        if parts[i - 1].lower() in TEST_DIR_NAMES:
            return "/".join(parts[:i])
    return None


def _matches(name: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, g) for g in globs)


def restore_targets(task: Task, base_files: set[str], tree: dict[str, str], changed: list[str]) -> list[str]:
    """The paths to delete and take again from the base, outermost first.

    The grading copy is pristine before the patch, so only what the patch touched can differ from
    the base: ``changed`` (the patch's paths as the appliers read them) is checked against the rules,
    and nothing else is rewritten (untracked build outputs and environments stay). ``base_files``:
    every file of the base tree; ``tree``: path -> type letter (``f``, ``d``, ``l``) of the changed
    paths and their ancestors in the grading copy."""
    base_dirs = {p.rsplit("/", 1)[0] for p in base_files if "/" in p}
    base_dirs |= {"/".join(p.split("/")[:i]) for p in base_dirs for i in range(1, p.count("/") + 1)}
    roots: set[str] = set(task.hidden_test_files)
    roots.update(d for d in map(test_dir_of, task.hidden_test_files) if d is not None)
    roots.update(command_paths(task.tests.test_command, base_files, base_dirs))
    families = families_of(task)
    targets: set[str] = set()
    for path in changed:
        parts = path.split("/")
        if any(path == r or path.startswith(r + "/") for r in roots):
            targets.add(path)
        for fam in families:
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                if _matches(part, fam.dirs) and (not last or tree.get(path) == "d" or path in base_dirs):
                    targets.add("/".join(parts[:i + 1]))
                    break
                if last and (_matches(part, fam.config) or _matches(part, fam.tests) or _matches(part, fam.files)):
                    targets.add(path)
            top = parts[0]
            stem = top.split(".")[0]
            if top not in base_files and top not in base_dirs and stem in fam.shadows and \
                    (top == stem or top.endswith((".py", ".pyc", ".so"))):
                targets.add(top)
    # A symlink the patch put in the way of a changed path is what gets replaced (never followed).
    for path in changed:
        parts = path.split("/")
        for i in range(1, len(parts)):
            anc = "/".join(parts[:i])
            if tree.get(anc) == "l":
                targets.add(anc)
                break
    # Outermost first; a target inside another is covered by it.
    out: list[str] = []
    for t in sorted(targets, key=lambda p: (p.count("/"), p)):
        if not any(t.startswith(o + "/") for o in out):
            out.append(t)
    return out


def restore_script(targets: list[str], in_base: list[str], list_file: str) -> str:
    """Shell script (at the grading copy's root) that deletes ``targets`` without following
    symlinks and checks ``in_base`` out of HEAD again (through ``list_file``, which it writes
    NUL-separated). Prints HA_RESTORED."""
    from ..sandbox.shell import ansi_c_quote

    lines = ["set -e"]
    for i in range(0, len(targets), 200):
        lines.append("rm -rf -- " + " ".join(ansi_c_quote(t) for t in targets[i:i + 200]))
    if in_base:
        lines.append(f"mkdir -p -- \"$(dirname -- {ansi_c_quote(list_file)})\" && : > {ansi_c_quote(list_file)}")
        for i in range(0, len(in_base), 200):
            lines.append("printf '%s\\0' " + " ".join(ansi_c_quote(t) for t in in_base[i:i + 200])
                         + f" >> {ansi_c_quote(list_file)}")
        lines.append("GIT_LITERAL_PATHSPECS=1 git -c core.hooksPath=/dev/null -c core.fsmonitor=false "
                     "-c core.symlinks=true checkout -q HEAD --pathspec-from-file=" + ansi_c_quote(list_file)
                     + " --pathspec-file-nul")
    lines.append("echo HA_RESTORED")
    return "\n".join(lines)
