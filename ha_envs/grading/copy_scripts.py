"""What the grader runs in the grading copy, as shell scripts and their readers: applying the patch,
the hidden tests in and every grader file out (``install_hidden``), hashes of the test sources, the
base's ignore rules over the patch's new paths. Every path is quoted; every answer is a marker line."""

from __future__ import annotations

import re

from ..sandbox.base import Sandbox
from ..sandbox.shell import ansi_c_quote
from ..task import Task
from .patchfile import section_paths, split_patch, unsafe_path
from .protect import test_dir_of
from .report import GradingError


def workdir_command(task: Task, sandbox: Sandbox, command: str) -> str:
    """``command`` with the task's workdir pointed at the sandbox's copy when the sandbox is not
    isolated (the copy is a host path: Pro's run scripts ``cd /app``)."""
    if sandbox.workdir == task.environment.workdir:
        return command
    return re.sub(rf"(?<![\w./-]){re.escape(task.environment.workdir)}(?![\w.-])", sandbox.workdir, command)


GRADE_DIR = ".git/ha-grade"


"""The grader's files in the grading copy, inside its own ``.git``: never part of the tree, and no
patch may write there."""


def applied_paths(output: str, patch: str) -> list[str]:
    """The paths the applied patch touched: git's reading (``--numstat``), GNU patch's (``patching
    file``) and ours (``patchfile.section_paths``), together."""
    paths: dict[str, None] = {}
    for line in output.splitlines():
        if line.startswith("HA_PATH "):
            paths.setdefault(line[8:].strip('"'), None)
        elif line.startswith("patching file "):
            paths.setdefault(line[14:].strip().strip("'\""), None)
    for section in split_patch(patch):
        for p in section_paths(section):
            paths.setdefault(p, None)
    return [p for p in paths if p and not unsafe_path(p)]


_TEST_SOURCES = ("py", "pyi", "js", "mjs", "cjs", "jsx", "ts", "tsx", "go", "rs", "rb", "php", "java",
                 "c", "h", "cc", "cpp", "cxx", "hpp", "tcl")


def test_hashes_script(task: Task) -> str:
    """sha256 of the hidden test files and the test sources of their test directories (run at the
    grading copy's root; ``sha256sum`` lines)."""
    roots = list(dict.fromkeys([*task.hidden_test_files,
                                *(d for d in map(test_dir_of, task.hidden_test_files) if d is not None)]))
    if not roots:
        return "true"
    names = " -o ".join(f"-name '*.{ext}'" for ext in _TEST_SOURCES)
    return (f"find {' '.join(ansi_c_quote(r) for r in roots)} -type f ! -path '*/__pycache__/*' \\( {names} \\) "
            "-print0 2>/dev/null | sort -zu | xargs -0 -r sha256sum -- 2>/dev/null; true")


def parse_hashes(output: str) -> dict[str, str]:
    out = {}
    for line in output.splitlines():
        digest, _, path = line.partition("  ")
        if len(digest) == 64 and path:
            out[path.removeprefix("./")] = digest
    return out


def put_files(sandbox: Sandbox, directory: str, files: dict[str, bytes]) -> None:
    """The grader's files into the grading sandbox: one archive where the sandbox takes one."""
    writer = getattr(sandbox, "write_files", None)
    if writer is not None:
        writer(directory, files)
        return
    for name, data in files.items():
        sandbox.write_file(f"{directory}/{name}", data)


def patch_file_bytes(patch: str) -> bytes:
    if patch and not patch.endswith("\n"):
        patch += "\n"
    return patch.encode("utf-8", errors="surrogateescape")


def apply_script(path: str, allow_fuzz: bool) -> str:
    """``git apply``, then (SWE-bench's fallback) ``patch --fuzz=5``; prints the paths git reads in
    the patch (``HA_PATH <path>``), GNU patch's ``patching file`` lines and ``HA_APPLIED=<how>``."""
    q = ansi_c_quote(path)
    err = ansi_c_quote(path + ".err")
    g = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.quotepath=false"
    listing = (f"{g} apply --numstat {q} 2>/dev/null | "
               "awk -F'\\t' 'NF>=3 {print \"HA_PATH \" $3}'; ")
    fuzz = (f"elif command -v patch >/dev/null && patch --batch --fuzz=5 -p1 --dry-run -i {q} >/dev/null 2>&1 "
            f"&& patch --batch --fuzz=5 -p1 --no-backup-if-mismatch -i {q} 2>&1; "
            "then echo 'HA_APPLIED=patch --fuzz=5'\n") if allow_fuzz else ""
    return (listing + f"if {g} apply --whitespace=nowarn {q} 2>{err}; then echo 'HA_APPLIED=git apply'\n"
            f"{fuzz}else echo HA_APPLIED=failed; cat {err}; fi")


def apply_error(output: str) -> str:
    text = "\n".join(l for l in output.splitlines() if not l.startswith("HA_APPLIED=")).strip()
    return text or "patch does not apply"


def install_hidden(task: Task, sandbox: Sandbox, gd: str) -> str | None:
    """The hidden tests into the grading copy (``test.patch`` already in ``gd``), then every grader
    file but the guards' taken out of it: nothing the code under test can read during the run names
    the graded tests (the test patch without the canaries) or holds the agent's patch. None when they
    are in; else the script's output."""
    test_patch = f"{gd}/test.patch" if task.tests.test_patch.strip() else None
    res = sandbox.run(hidden_tests_script(task.hidden_test_files, test_patch), timeout=300)
    scrub = sandbox.run(f"rm -rf -- {ansi_c_quote(gd)} && echo HA_SCRUBBED", timeout=120)
    if "HA_SCRUBBED" not in scrub.output:
        raise GradingError(f"cannot remove the grader's files from the grading copy: {scrub.output[-500:]}")
    return None if "HA_TESTS_READY" in res.output else res.output.strip() or "no output"


_GIT_IGNORE = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false check-ignore"


_PRINT_IGNORED = ("if [ ! -e \"$p\" ] && [ ! -L \"$p\" ]{also}; then printf 'HA_IGNORED '; "
                  "printf '%s' \"$p\" | od -An -v -tx1 | tr -d ' \\n'; echo; fi")


"""Prints ``HA_IGNORED <hex of the path's bytes>`` for ``$p`` when the copy lacks it (and ``{also}`` holds)."""


def ignored_script(listing: str) -> str:
    """Of the NUL-separated paths in ``listing``: those the base's ignore rules ignore and the copy
    lacks, each printed as ``HA_IGNORED <hex of its bytes>``; then ``HA_CHECKED``."""
    q = ansi_c_quote(listing)
    return (f"{{ {_GIT_IGNORE} -z --stdin < {q}; rc=$?; [ $rc -le 1 ] || exit $rc; }} | "
            f"while IFS= read -r -d '' p; do {_PRINT_IGNORED.format(also='')}; done; "
            f"[ \"${{PIPESTATUS[0]}}\" = 0 ] && rm -f -- {q} && echo HA_CHECKED")


def ignored_one_by_one(listing: str) -> str:
    """``ignored_script``'s answer, one ``git check-ignore`` per path (a path git cannot check is
    not ignored)."""
    q = ansi_c_quote(listing)
    test = f' && {_GIT_IGNORE} -q -- "$p" 2>/dev/null'
    return f"while IFS= read -r -d '' p; do {_PRINT_IGNORED.format(also=test)}; done < {q}; rm -f -- {q}; echo HA_CHECKED"


def joined(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


def hidden_tests_script(paths: tuple[str, ...], test_patch: str | None) -> str:
    """Hidden test files back to base (removed when new), then the test patch (the file at
    ``test_patch``; None when there is none); prints HA_TESTS_READY."""
    lines = []
    for path in paths:
        q = ansi_c_quote(path)
        lines.append(f"if git cat-file -e HEAD:{q} 2>/dev/null; then git checkout HEAD -- {q}; else rm -rf -- {q}; fi")
    lines.append(f"git apply --whitespace=nowarn {ansi_c_quote(test_patch)} && echo HA_TESTS_READY" if test_patch
                 else "echo HA_TESTS_READY")
    return " && ".join(f"{{ {l}; }}" for l in lines) if len(lines) > 1 else lines[0]

