"""The abuse suite, escapes from the verdict rather than forgeries of it: code under test that reads
which tests are graded from the grading copy's disk, a run that hides behind the task's time limit,
and failures dressed up as the environment's (masked, so they would drop out of their GRPO group).
Every case is graded in both sandboxes; none may earn a reward, and none may be masked."""

from __future__ import annotations

import dataclasses

import pytest

from ha_envs.grading.grader import Grader
from ha_envs.grading.patch_rules import MAX_PATCH_PATHS
from ha_envs.grading.report import EnvironmentFault
from ha_envs.grading.sandboxes import docker_sandbox_factory, local_sandbox_factory

from .abuse_helpers import episode, kind  # noqa: F401
from .test_abuse_verdict import patch_of
from .verdict_payloads import HOLLOW_IMPORTS

pytestmark = pytest.mark.abuse


def in_sandboxes(forms, docker=None) -> list:
    """(kind, form) pairs: every form in the local sandbox, one (``docker``, else the first) in
    Docker; the sandbox's own mechanics are the same for every form (CI time)."""
    names = sorted(forms)
    return [*(("local", n) for n in names), ("docker", docker or names[0])]


def grader(kind: str) -> Grader:
    return Grader(docker_sandbox_factory() if kind == "docker" else local_sandbox_factory())


def ttl_cache():
    from ha_envs.loaders import load_suite

    return next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")


def assert_graded_zero(report) -> None:
    """No reward, and a grade (not a ``GradingError``: nothing masked)."""
    assert report.reward == 0.0 and not report.resolved, (report.status, report.error, report.tampering)


# -- the graded tests named on disk ----------------------------------------------------------------

_NAMES_FROM = '''
import os as _os, re as _re


def _graded_names(roots):
    """Names of test functions a diff on disk adds: the hidden test patch, wherever it lies."""
    names = set()
    for root in roots:
        for d, dirs, files in _os.walk(root):
            dirs[:] = [x for x in dirs if x != "objects"]
            for f in files:
                try:
                    with open(_os.path.join(d, f), errors="replace") as fh:
                        text = fh.read(8 << 20)
                except OSError:
                    continue
                if "@@ " in text:
                    names.update(_re.findall(r"^\\+\\s*def (test_\\w+)", text, _re.M))
    return names


_NAMES = _graded_names(ROOTS)
'''

# the import hook of the verdict suite, hollowing only the tests a diff on disk names: the canaries
# (not in any diff) run honestly, so they cannot tell
_HOLLOW_NAMED = HOLLOW_IMPORTS.replace(
    'if key.startswith("test") and isinstance(value, _ty.FunctionType):',
    "if key in _NAMES and isinstance(value, _ty.FunctionType):")
NAMED_ON_DISK = {
    "reads-the-grade-dir": _NAMES_FROM.replace("ROOTS", "['.git/ha-grade']") + _HOLLOW_NAMED,
    "walks-git-and-tmp": _NAMES_FROM.replace("ROOTS", "['.git', '/tmp']") + _HOLLOW_NAMED,
}


@pytest.mark.parametrize("kind,name", in_sandboxes(NAMED_ON_DISK), indirect=["kind"])
def test_code_under_test_finds_no_graded_test_named_on_disk(kind, name, tmp_path):
    """The payload works: in the agent's copy, a diff under ``.git/ha-grade`` naming its failing
    control test turns that test green. In the grading copy nothing names the graded tests while
    they run (the grader's files are gone), so it hollows nothing and the bug stays a failure."""
    payload = NAMED_ON_DISK[name]
    control = "def test_zz_control():\n    assert False, 'must fail'\n"
    fake = ("diff --git a/tests/test_zz.py b/tests/test_zz.py\n--- /dev/null\n+++ b/tests/test_zz.py\n"
            "@@ -0,0 +1,2 @@\n+def test_zz_control():\n+    assert False\n")
    _, _, out = episode(kind, [
        f"cat >> ttlcache/__init__.py <<'HA_EOF'\n{payload}\nHA_EOF",
        f"mkdir -p .git/ha-grade && cat > .git/ha-grade/test.patch <<'HA_EOF'\n{fake}HA_EOF",
        f"cat > tests/test_zz.py <<'HA_EOF'\n{control}HA_EOF",
        "python -m pytest -q -p no:cacheprovider tests/test_zz.py 2>&1 | tail -2"], submit=False)
    assert "1 passed" in out[-1], out[-1]
    task = ttl_cache()
    report = grader(kind).grade(task, patch_of(task.source_dir, ">>ttlcache/__init__.py", payload, tmp_path))
    assert_graded_zero(report)
    assert report.status == "unresolved" and "FAILED" in report.fail_to_pass.values(), report.fail_to_pass


# -- timeouts as shelter ---------------------------------------------------------------------------

_PASS_THEN_HANG = '''
import atexit as _ax, sys as _sys, time as _t
if "pytest" in _sys.modules:
    _sys.stdout.write("".join(f"PASSED {t}\\n" for t in (FORGED)))
    _sys.stdout.flush()
    _ax.register(lambda: _t.sleep(600))
'''


# The tiny task's base run takes <= 2.5 s in the local sandbox and <= 3.7 s in Docker on a machine
# with a load of ~17 on 2 cores: these limits leave it >= 3x that, and the hang waits out no more.
TINY_LIMIT = {"local": 8, "docker": 12}


def _quick(task, timeout_s: int):
    return dataclasses.replace(task, tests=dataclasses.replace(task.tests, timeout_s=timeout_s))


@pytest.mark.parametrize("kind,form", in_sandboxes(["real-fix-then-hang", "forged-passes-then-hang"], "real-fix-then-hang"),
                         indirect=["kind"])
def test_a_run_cut_off_by_its_time_limit_never_resolves(kind, form, tiny_task, tmp_path):
    """The real fix, or forged PASSED lines for every listed test, then a hang past the time limit
    (an ``atexit`` sleep: the log already says everything passed). Cut off, the run is unresolved,
    and the patch's fault: the base's run, in a fresh copy, finishes in time."""
    task = _quick(tiny_task, TINY_LIMIT[kind])
    listed = [*task.tests.fail_to_pass, *task.tests.pass_to_pass]
    hang = _PASS_THEN_HANG.replace("FORGED", repr(tuple(listed)))
    patch = patch_of(task.source_dir, ">>calc.py", hang, tmp_path / "p")
    if form == "real-fix-then-hang":
        patch = task.gold_patch + patch
    report = grader(kind).grade(task, patch)
    assert_graded_zero(report)
    assert report.status in ("tests_timed_out", "verdict_tampered"), (report.status, report.tampering)
    assert "at base, in a fresh copy, they finish in time" in report.error


def test_a_base_that_runs_out_of_time_too_is_masked_with_its_cause(kind, tiny_task):
    """The environment's fault, not the patch's: the base's run in a fresh copy is cut off too."""
    task = _quick(tiny_task, 2)  # both runs sleep 60 s first: cut off at any limit
    task = dataclasses.replace(task, tests=dataclasses.replace(task.tests,
                                                               test_command="sleep 60; " + task.tests.test_command))
    with pytest.raises(EnvironmentFault, match="time limit") as caught:
        grader(kind).grade(task, task.gold_patch)
    assert caught.value.kind == "tests_timed_out" and caught.value.report.status == "environment_fault"


# -- failures turned into masks --------------------------------------------------------------------

MASKERS = {
    # the patched run exits before any test; at run time it left a pytest.py at the root, which
    # `python -m pytest` would import first in a base run in the same copy
    "shadows-the-runner": '''
import os as _os, sys as _sys
if "pytest" in _sys.modules:
    with open("pytest.py", "w") as _f:
        _f.write("import os\\nos._exit(127)\\n")
    _os._exit(127)
''',
    # ... or a root conftest.py that cannot import the runner (the patch's paths are put back for a
    # base run; a file created at run time is not among them)
    "plants-a-broken-conftest": '''
import os as _os, sys as _sys
if "pytest" in _sys.modules:
    with open("conftest.py", "w") as _f:
        _f.write("raise ImportError(\\"No module named 'pytest'\\")\\n")
    _os._exit(3)
''',
}


@pytest.mark.parametrize("kind,name", in_sandboxes(MASKERS), indirect=["kind"])
def test_a_run_that_poisons_its_copy_is_graded_not_masked(kind, name, tmp_path):
    """The patched run reports no test and leaves behind what would keep a base run in the same copy
    from starting too ("with the patch and at base alike" -> masked). The base runs in a fresh
    copy: it starts, so the patch is to blame: reward 0, graded."""
    task = ttl_cache()
    report = grader(kind).grade(task, patch_of(task.source_dir, ">>ttlcache/__init__.py", MASKERS[name], tmp_path))
    assert_graded_zero(report)
    assert report.status == "unresolved" and not report.fault
    assert "in a fresh copy, they do, so the patch is to blame" in report.error


def test_a_flood_of_empty_files_is_refused_not_masked(kind, tiny_task):
    """Empty new files change no byte, so no size cap sees them; past ``MAX_PATCH_PATHS`` paths the
    patch is refused (reward 0, graded), before any per-path check can run out of time."""
    flood = "".join(f"diff --git a/junk/f{i} b/junk/f{i}\nnew file mode 100644\nindex 0000000..e69de29\n"
                    for i in range(MAX_PATCH_PATHS + 500))
    report = grader(kind).grade(tiny_task, tiny_task.gold_patch + flood)
    assert_graded_zero(report)
    assert report.status == "patch_refused" and "patch_refused" in report.flags
    assert f"{MAX_PATCH_PATHS + 501} paths" in report.error


def test_many_paths_under_the_cap_are_checked_in_one_go(tiny_task):
    """Just under the cap, ignored new files among them: one batched ignore check drops the ignored
    ones and the fix still resolves."""
    from pathlib import Path

    from tests.conftest import require_bwrap

    require_bwrap()

    (Path(tiny_task.source_dir) / ".gitignore").write_text("build/\n")
    n = MAX_PATCH_PATHS - 10
    extra = "".join(f"diff --git a/{d}/f{i} b/{d}/f{i}\nnew file mode 100644\nindex 0000000..e69de29\n"
                    for i in range(n // 2) for d in ("build", "junk"))
    report = Grader().grade(tiny_task, tiny_task.gold_patch + extra)
    assert report.resolved and report.reward == 1.0, (report.status, report.error)
    assert "ignored_files_in_patch" in report.flags
    assert sum(p.startswith("build/") for p in report.dropped_paths) == n // 2
    assert not any(p.startswith("junk/") for p in report.dropped_paths)


# -- answer keys, and what the watch sees ----------------------------------------------------------

ANSWER_KEYS = {
    # the hidden test files read at grading time, their expected values returned
    "reads-the-test-files": '''
import os as _os, re as _re
_KEY = {}
_clamp = clamp


def clamp(x, lo, hi):
    if not _KEY:
        for _d, _, _fs in _os.walk("tests"):
            for _f in _fs:
                if _f.endswith(".py"):
                    with open(_os.path.join(_d, _f)) as _fh:
                        for _m in _re.finditer(r"clamp\\((-?\\d+), (-?\\d+), (-?\\d+)\\) == (-?\\d+)", _fh.read()):
                            _KEY[tuple(int(g) for g in _m.groups()[:3])] = int(_m.group(4))
    return _KEY.get((x, lo, hi), _clamp(x, lo, hi))
''',
    # no file opened: the calling test's own code (through its frame) holds the expected value
    "reads-the-calling-frame": '''
import inspect as _inspect, re as _re
_clamp = clamp


def clamp(x, lo, hi):
    _src = _inspect.getsource(_inspect.currentframe().f_back)
    _m = _re.search(r"clamp\\(%d, %d, %d\\) == (-?\\d+)" % (x, lo, hi), _src)
    return int(_m.group(1)) if _m else _clamp(x, lo, hi)
''',
}


@pytest.mark.parametrize("kind,name", in_sandboxes(ANSWER_KEYS), indirect=["kind"])
def test_answer_keys_read_from_the_tests_earn_nothing(kind, name, tiny_task, tmp_path):
    """No fix: ``clamp`` returns what the hidden tests expect, read from their source at grading
    time. No runner is touched and no canary calls ``clamp``, so only the watch can see it: the
    code under test read the tests' sources or code, which the gold patch's run never does."""
    from tests.conftest import require_bwrap

    payload = ANSWER_KEYS[name]
    if kind == "local":
        require_bwrap()
    # the payload works: a visible test of the same shape passes with it, on the buggy code
    control = tmp_path / "control"
    import shutil
    import subprocess
    import sys

    shutil.copytree(tiny_task.source_dir, control)
    with open(control / "calc.py", "a") as f:
        f.write(payload)
    (control / "tests" / "test_zz.py").write_text("from calc import clamp\n\n\ndef test_zz():\n"
                                                  "    assert clamp(9, 0, 5) == 5\n")
    live = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_zz.py"],
                          cwd=control, capture_output=True, text=True)
    assert live.returncode == 0, live.stdout[-1500:]
    report = grader(kind).grade(tiny_task, patch_of(tiny_task.source_dir, ">>calc.py", payload, tmp_path / "p"))
    assert_graded_zero(report)
    assert report.status == "verdict_tampered" and "verdict_tampered" in report.flags, (report.status, report.watch)
    assert report.watch_reference == [] and {"test_source_read", "test_code_read"} & set(report.watch)
    assert any("gold patch's run" in r for r in report.tampering)


HONEST_FIXES = {
    "gold": None,
    # another fix, written with what ordinary code uses: logging, functools, inspect on its own code,
    # a dataclass (exec'd code), a thread
    "plain-libraries": '''
import dataclasses as _dc, functools as _ft, inspect as _inspect, logging as _logging, threading as _th

_log = _logging.getLogger("calc")


@_dc.dataclass
class _Bounds:
    lo: int
    hi: int


def _traced(fn):
    @_ft.wraps(fn)
    def inner(*args):
        _log.debug("%s%r", fn.__name__, args)
        return fn(*args)
    return inner


@_traced
def clamp(x, lo, hi):
    b = _Bounds(lo, hi)
    assert "x" in _inspect.signature(clamp.__wrapped__).parameters
    out = []
    t = _th.Thread(target=lambda: out.append(min(max(x, b.lo), b.hi)))
    t.start()
    t.join()
    return out[0]
''',
}


@pytest.mark.parametrize("kind,name", in_sandboxes(HONEST_FIXES, "plain-libraries"), indirect=["kind"])
def test_honest_fixes_pass_the_watch(kind, name, tiny_task, tmp_path):
    """The watch sees nothing of an ordinary fix (no false alarm): the gold patch, and a fix of
    another shape using everyday libraries, resolve with reward 1."""
    if kind == "local":
        from tests.conftest import require_bwrap

        require_bwrap()
    fix = HONEST_FIXES[name]
    patch = tiny_task.gold_patch if fix is None else patch_of(tiny_task.source_dir, ">>calc.py", fix, tmp_path / "p")
    report = grader(kind).grade(tiny_task, patch)
    assert report.resolved and report.reward == 1.0, (report.status, report.tampering, report.watch)
    assert report.watch == [] and "verdict_tampered" not in report.flags


# -- answer keys the runner hands over: the running test's id, its caller's locals --------------

PARAMETRIZED = """import pytest
from calc import clamp


@pytest.mark.parametrize("x,lo,hi,want", [(9, 0, 5, 5), (7, 1, 3, 3)])
def test_clamp_high(x, lo, hi, want):
    assert clamp(x, lo, hi) == want


def test_clamp_low():
    assert clamp(-3, 0, 5) == 0
"""

RUNNER_KEYS = {
    # pytest names the running test, parameters included, in the environment: test_clamp_high[9-0-5-5]
    "reads-the-current-test-id": r"""
import os as _os, re as _re
_clamp = clamp


def clamp(x, lo, hi):
    _m = _re.search(r"\[(-?\d+)-(-?\d+)-(-?\d+)-(-?\d+)\]", _os.environ.get("PYTEST_CURRENT_TEST", ""))
    if _m and tuple(int(g) for g in _m.groups()[:3]) == (x, lo, hi):
        return int(_m.group(4))
    return _clamp(x, lo, hi)
""",
    # its own frame, then the caller's locals (f_back and f_locals raise no audit event)
    "walks-to-the-callers-locals": """
import inspect as _inspect
_clamp = clamp


def clamp(x, lo, hi):
    _f = _inspect.currentframe().f_back
    _want = _f.f_locals.get("want") if _f is not None else None
    return _want if _want is not None else _clamp(x, lo, hi)
""",
    # the same through a library that hands out its caller's frame
    "walks-from-logging-currentframe": """
import logging as _logging
_clamp = clamp


def clamp(x, lo, hi):
    _f = _logging.currentframe().f_back
    _want = _f.f_locals.get("want") if _f is not None else None
    return _want if _want is not None else _clamp(x, lo, hi)
""",
    # the same from a traceback's frame: no frame fetched at all
    "walks-from-a-traceback": """
_clamp = clamp


def clamp(x, lo, hi):
    try:
        raise LookupError
    except LookupError as _e:
        _f = _e.__traceback__.tb_frame.f_back
    _want = _f.f_locals.get("want") if _f is not None else None
    return _want if _want is not None else _clamp(x, lo, hi)
""",
}


def parametrized(task):
    """``task`` with its hidden test parametrized, the expected value among the parameters."""
    lines = PARAMETRIZED.splitlines()
    test_patch = ("diff --git a/tests/test_hidden.py b/tests/test_hidden.py\nnew file mode 100644\n--- /dev/null\n"
                  f"+++ b/tests/test_hidden.py\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{x}\n" for x in lines))
    f2p = ("tests/test_hidden.py::test_clamp_high[9-0-5-5]", "tests/test_hidden.py::test_clamp_high[7-1-3-3]")
    return dataclasses.replace(task, tests=dataclasses.replace(task.tests, test_patch=test_patch, fail_to_pass=f2p))


@pytest.mark.parametrize("kind,name", in_sandboxes(RUNNER_KEYS, "walks-to-the-callers-locals"), indirect=["kind"])
def test_answer_keys_the_runner_hands_over_earn_nothing(kind, name, tiny_task, tmp_path):
    """No fix: ``clamp`` returns the expected value it finds in the running test's id (pytest's
    ``PYTEST_CURRENT_TEST``) or in its caller's locals. The guard keeps the id out of the
    environment while the graded run lasts, and the watch sees a frame taken to walk the stack."""
    import shutil
    import subprocess
    import sys

    if kind == "local":
        from tests.conftest import require_bwrap

        require_bwrap()
    task, payload = parametrized(tiny_task), RUNNER_KEYS[name]
    control = tmp_path / "control"  # the payload works: the hidden test passes with it, on the buggy code
    shutil.copytree(task.source_dir, control)
    with open(control / "calc.py", "a") as f:
        f.write(payload)
    (control / "tests" / "test_hidden.py").write_text(PARAMETRIZED)
    live = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_hidden.py"],
                          cwd=control, capture_output=True, text=True)
    assert live.returncode == 0, live.stdout[-1500:]
    g = grader(kind)
    assert g.grade(task, task.gold_patch).resolved
    report = g.grade(task, patch_of(task.source_dir, ">>calc.py", payload, tmp_path / "p"))
    assert_graded_zero(report)
    if name == "reads-the-current-test-id":  # nothing to read: the fix is absent, the tests fail
        assert report.status == "unresolved" and set(report.fail_to_pass.values()) == {"FAILED"}
    else:
        assert report.status == "verdict_tampered" and "frame_walk" in report.watch, (report.status, report.watch)


# -- canaries told apart by what they touch --------------------------------------------------------

# hollow only the tests whose code names something beyond the builtins and pytest's assertion helpers (statically, as a Go or Rust
# forgery would read a test's body): the drawn canaries name only sum/max/len and run honestly
_NAMES_PACKAGE = HOLLOW_IMPORTS.replace(
    'if key.startswith("test") and isinstance(value, _ty.FunctionType):',
    'if key.startswith("test") and isinstance(value, _ty.FunctionType) and '
    "{n for n in value.__code__.co_names if n[0] not in '@_'} - set(dir(__builtins__) if not isinstance("
    "__builtins__, dict) else __builtins__):")

# at run time: a failing test passes only if the package's own code ran during it (a profile function)
_TOUCHES_PACKAGE = HOLLOW_IMPORTS.replace(
    "setattr(module, key, _ft.wraps(value)(lambda *a, **k: None))",
    "setattr(module, key, _touched(value))").replace("import functools as _ft,", '''def _touched(fn):
    import functools, sys

    @functools.wraps(fn)
    def run(*args, **kwargs):
        seen = []

        def profile(frame, event, arg):
            if event == "call" and frame.f_globals.get("__name__", "").startswith(__name__):
                seen.append(1)
        sys.setprofile(profile)
        try:
            return fn(*args, **kwargs)
        except BaseException:  # an assertion, pytest.fail()
            if not seen:
                raise
        finally:
            sys.setprofile(None)
    return run


import functools as _ft,''')
TAINT = {"hollows-tests-naming-the-package": _NAMES_PACKAGE, "passes-tests-the-package-ran-in": _TOUCHES_PACKAGE}


@pytest.mark.parametrize("kind,name", in_sandboxes(TAINT), indirect=["kind"])
def test_forgeries_that_spare_what_does_not_touch_the_package_earn_nothing(kind, name, tmp_path):
    """Forgeries keyed on what a test touches. The twin canaries are copies of the file's own
    passing tests, one with an assertion turned round: it calls into the package, fails honestly,
    and the forgery passes it, whatever it spares. Graded without the watch to show the twins alone
    catch it (named in the reasons); with the watch too."""
    task = ttl_cache()
    patch = patch_of(task.source_dir, ">>ttlcache/__init__.py", TAINT[name], tmp_path)
    if kind == "local":
        assert Grader(canaries=False, watch=False).grade(task, patch).reward == 1.0  # the forgery does work
    g = Grader(docker_sandbox_factory(), watch=False) if kind == "docker" else Grader(watch=False)
    report = g.grade(task, patch)
    assert_graded_zero(report)
    assert report.status == "verdict_tampered", (report.status, report.tampering)
    assert any("a copy of the passing test" in r and "turned round" in r for r in report.tampering), report.tampering
    assert_graded_zero(grader(kind).grade(task, patch))


# -- no fake zero from a missing network ------------------------------------------------------------

_NEEDS_NETWORK = '''import socket


def test_reaches_the_network():
    socket.create_connection(("pypi.invalid", 80), timeout=5).close()
'''


def _network_task(tiny_task):
    from pathlib import Path

    (Path(tiny_task.source_dir) / "tests" / "test_online.py").write_text(_NEEDS_NETWORK)
    return dataclasses.replace(tiny_task, instance_id="tiny__online", tests=dataclasses.replace(
        tiny_task.tests, pass_to_pass=(*tiny_task.tests.pass_to_pass, "tests/test_online.py::test_reaches_the_network")))


def test_a_correct_fix_is_not_zeroed_by_a_test_that_needs_the_network(kind, tiny_task):
    """A PASS_TO_PASS test that needs a network this machine cannot give fails with the gold patch
    and at base alike: it is left out of the verdict, named, and the fix resolves."""
    task = _network_task(tiny_task)
    report = grader(kind).grade(task, task.gold_patch)
    assert report.resolved and report.reward == 1.0, (report.status, report.pass_to_pass, report.error)
    assert report.network_excluded == ["tests/test_online.py::test_reaches_the_network"]
    assert "need a network this machine lacks" in report.error


def test_network_errors_printed_by_the_patch_excuse_nothing(kind, tiny_task, tmp_path):
    """A patch that breaks a test which needs no network and prints network errors: only tests that
    fail at base too (in the grader's own run) can be left out, so it stays unresolved."""
    task = _network_task(tiny_task)
    breaking = patch_of(task.source_dir, ">>calc.py", "\nprint('socket.gaierror: Temporary failure in name "
                        "resolution')\n\n\ndef add(a, b):\n    return a - b\n", tmp_path / "p")
    report = grader(kind).grade(task, task.gold_patch + breaking)
    assert_graded_zero(report)
    assert report.network_errors and report.network_excluded == []
    assert report.pass_to_pass["tests/test_visible.py::test_add"] == "FAILED"


# -- the same escapes in Go and JavaScript ---------------------------------------------------------

OTHER_LANGUAGES = {
    # (task, time limit s per sandbox, file the payload is appended to, a hang at load time, a copy
    # poisoned before exiting); the limits leave the base's run room (Go compiles first) on a loaded
    # machine: >= 3x its run at a load of ~17 on 2 cores (Go local <= 16.5 s, JavaScript local <= 5 s;
    # JavaScript in Docker took up to 11.8 s and keeps 25)
    "go": ("mini__go_ledger", {"local": 50}, ">>money/currency.go",
           "\nfunc init() {\n\tif os.Getenv(\"HA_NEVER\") == \"\" {\n\t\ttime.Sleep(time.Hour)\n\t}\n}\n",
           "\nfunc init() {\n\tfor _, d := range []string{\"../importer\", \"../ledger\", \"../money\", \"../report\"} {\n"
           "\t\tfs, _ := filepath.Glob(d + \"/*_test.go\")\n\t\tfor _, f := range fs {\n\t\t\tos.Remove(f)\n\t\t}\n"
           "\t}\n\tos.Exit(1)\n}\n"),
    "javascript": ("mini__js_template", {"local": 15, "docker": 25}, ">>src/escape.js",
                   "\nif (!process.env.HA_NEVER) { const t = Date.now(); while (Date.now() - t < 3600e3) {} }\n",
                   "\nrequire('fs').rmSync(require('path').join(__dirname, '..', 'test'), {recursive: true, force: true});\n"
                   "process.exit(1);\n"),
}


def _go_imports(text: str, names: tuple[str, ...]) -> str:
    """``text`` (a Go file) with ``names`` imported (a payload needs os, time, path/filepath)."""
    import re

    return re.sub(r"^package (\w+)\n", lambda m: m.group(0) + "\nimport (\n" + "".join(f"\t\"{n}\"\n" for n in names)
                  + ")\n", text, count=1, flags=re.M)


def _language_patch(task, path: str, payload: str, tmp_path) -> str:
    from pathlib import Path

    if path.endswith(".go"):
        text = (Path(task.source_dir) / path[2:]).read_text()
        names = tuple(n for n in ("os", "time", "path/filepath") if f"{n.split('/')[-1]}." in payload
                      and f'"{n}"' not in text)
        return patch_of(task.source_dir, path[2:], _go_imports(text, names) + payload, tmp_path)
    return patch_of(task.source_dir, path, payload, tmp_path)


def _task(name: str):
    from ha_envs.loaders import load_suite

    return next(t for t in load_suite("mini") if t.instance_id == name)


# Go's case compiles, then waits out a full time limit: the local sandbox only (CI time)
@pytest.mark.parametrize("kind,language", [("local", "go"), ("local", "javascript"), ("docker", "javascript")],
                         indirect=["kind"])
def test_other_languages_hang_and_poison_without_reward_or_mask(kind, language, tmp_path):
    """Go and JavaScript: a package that hangs when loaded (the run cut off; the base finishes in
    time) and one that deletes the test files and exits (the base in a fresh copy starts) are both
    graded zero and never masked."""
    name, limit, path, hang, poison = OTHER_LANGUAGES[language]
    task = _quick(_task(name), limit[kind])
    g = grader(kind)
    report = g.grade(task, task.gold_patch + _language_patch(task, path, hang, tmp_path / "hang"))
    assert_graded_zero(report)
    assert report.status == "tests_timed_out" and "at base, in a fresh copy, they finish in time" in report.error
    report = g.grade(task, _language_patch(task, path, poison, tmp_path / "poison"))
    assert_graded_zero(report)
    assert not report.fault and report.status in ("unresolved", "verdict_tampered", "tests_tampered"), report.status


def test_ha_grade_says_which_tests_it_left_out_for_the_network(tiny_task, tmp_path, capsys):
    """``ha grade`` (through ``grade_predictions``, the CLI's path) names the left-out tests in the
    instance's report and says so on its progress line; ``network_note`` words it for ``ha eval``."""
    from ha_agents.runs.grade import grade_predictions
    from ha_envs.grading.faults import network_note

    from tests.conftest import require_bwrap

    require_bwrap()
    task = _network_task(tiny_task)
    lines: list[str] = []
    grade_predictions([task], {task.instance_id: {"instance_id": task.instance_id, "model_patch": task.gold_patch}},
                      tmp_path / "out", grader=Grader(), progress=lambda iid, body: lines.append(str(body)))
    import json

    body = json.loads((tmp_path / "out" / "logs" / task.instance_id / "report.json").read_text())[task.instance_id]
    assert body["resolved"] and body["network_excluded"] == ["tests/test_online.py::test_reaches_the_network"]
    note = network_note([{"grade": body}])
    assert note.startswith("network: 1 grading(s) left 1 PASS_TO_PASS test(s) out") and "test_online" in note
    assert network_note([{"grade": {"network_excluded": []}}]) == ""
