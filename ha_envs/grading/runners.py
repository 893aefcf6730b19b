"""Runner guards: start a task's test runner with grader-owned configuration, then check that what
its log says agrees with what the runner itself recorded.

A log parser believes text. Code under test runs inside the test process and can print text, so a
verdict read only from the log can be forged. Each guard adds a second, structured record of the
run that does not come from the code under test's output, and cross-checks the two with the runner's
exit status. Disagreement means ``tests_tampered``: reward 0, not masked.

What each guard can and cannot guarantee (README, "What the sandbox and grader guarantee"):

- ``pytest``: a plugin of the grader's (``guards/ha_pytest_guard.py``) loaded with ``-p`` before
  any test module is imported records every outcome from pytest's hooks, checks that pytest's and
  pluggy's central functions were not replaced and no hook was added by a file the patch changed,
  and that no call phase that raised came out "passed"; the grader compares it with the parsed log,
  the final summary line and the exit status. Cannot stop code written against this plugin's own
  internals (it shares the process).
- ``python``: for Python runners other than pytest (django's ``runtests.py``, sympy's ``bin/test``,
  unittest) no record of outcomes, but the watch (``PythonWatchGuard``): a ``sitecustomize`` first
  on ``PYTHONPATH`` starts ``guards/ha_py_watch.py``'s audit hook in every interpreter the command
  starts; its record is compared with the gold patch's run (``Grader._compare_watch``).
- ``node``: a reporter of the grader's (``guards/ha_node_guard.mjs``) runs in ``node --test``'s
  runner process, apart from the test files' processes, whose printed text becomes comments; the
  parsed TAP, its summary and the exit status must agree with it.
- ``go``: the test binary prints its own results; a package that prints forged result lines from
  ``init`` and exits 0 is not detectable from its log (the tests' outcome witnesses in the OS trace
  are: ``witness.py``). Checked here: a passing test has its ``=== RUN`` line, and a zero exit
  status has no failing test.
- ``cargo``: each test binary's section (``running N tests`` ... ``test result``) must be complete
  and its counts must match its result lines; a result line outside a section, a section cut short
  with exit status 0, or a count mismatch is tampering. Direct writes to fd 1 that forge a whole
  consistent section are not detectable.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from ..sandbox.hosttrace import HostTrace, TraceSpec
from ..sandbox.shell import ansi_c_quote
from ..task import Task
from .log_parsers import CARGO_LINE, FAILED, PASSED
from .protect import test_dir_of
from .watchsock import capped, stream_kinds

GUARD_DIR = Path(__file__).parent / "guards"


@dataclass
class GuardRun:
    """How to run the tests under a guard: the command, the grader's files it needs (name in the
    grading directory -> bytes) and where the guard's report will be (None: this guard has none)."""

    command: str
    files: dict[str, bytes] = field(default_factory=dict)
    report: str | None = None
    watch: str | None = None
    """Where the guard writes its watch record as it goes (``ha_pytest_guard.py``), if it keeps one."""
    trace: TraceSpec | None = None
    """An OS-level trace the sandbox should take from outside (``ostrace.py``): then the command
    runs as it was before this guard, through ``sandbox.run_traced``, and ``command`` (the trace
    inside the sandbox) is the fallback for a sandbox or host that cannot."""


@dataclass
class Evidence:
    """What the run left: the log, the command's exit status and the guard reports read back."""

    log: str
    exit_code: int
    timed_out: bool
    reports: dict[str, dict | None] = field(default_factory=dict)
    """guard name -> its parsed report, None when the file is missing or unreadable."""
    workdir: str = ""
    tests_before: dict[str, str] = field(default_factory=dict)
    """Test source file (relative path) -> sha256 just before the run."""
    tests_after: dict[str, str] = field(default_factory=dict)
    """The same files just after it."""
    canaries: Any = None
    """The canary tests planted for this run (``canaries.CanaryPlan``), None when none were."""
    shell_died: bool = False
    """The sandbox's shell died during the run (the sandbox started a new one): the namespace was
    killed from the host, or the code under test killed the shell."""
    watch: list[str] | None = None
    """What the watch saw the code under test do (``watch_record``); None when the run was not
    watched (no guard keeps a watch for its runner, or its Python is older than 3.8)."""
    watch_from: str = ""
    """Where the Python watch's record came from (``GradeReport.watch_from``); empty: no Python watch."""
    host_trace: HostTrace | None = None
    """The OS-level trace the sandbox took from outside (``sandbox/hosttrace.py``), None when the
    trace, if any, was taken inside the sandbox (``ostrace.wrap``)."""
    witnesses: dict[str, set[str]] | None = None
    """Go: outcome witnesses the OS trace holds, token -> outcomes (``witness.py``); None when the
    run was not traced."""


def changed_tests(ev: Evidence) -> list[str]:
    """Why the run's tests were not the ones installed: test sources rewritten or removed while
    the tests ran (by code under test), whatever the runner."""
    changed = sorted(p for p, h in ev.tests_before.items() if ev.tests_after.get(p) != h)
    if not changed:
        return []
    return [f"test files changed while the tests ran: {', '.join(changed[:5])}"
            + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")]


class Guard(Protocol):
    name: str

    def applies(self, task: Task) -> bool:
        """Whether this guard can watch the task's test command."""

    def prepare(self, task: Task, command: str, grade_dir: str, changed: list[str]) -> GuardRun:
        """The command wrapped for this guard. ``changed``: absolute paths (as the tests see them)
        of the files the agent's patch changed."""

    def check(self, task: Task, statuses: dict[str, str], ev: Evidence) -> list[str]:
        """Why the parsed ``statuses`` cannot be believed (empty: consistent)."""


GUARDS: dict[str, Guard] = {}


def register_guard(name: str) -> Callable[[type], type]:
    def deco(cls: type) -> type:
        if name in GUARDS:
            raise ValueError(f"a runner guard named {name!r} is already registered")
        GUARDS[name] = cls()
        GUARDS[name].name = name  # type: ignore[attr-defined]
        return cls
    return deco


def guards_for(task: Task) -> list[Guard]:
    return [g for g in GUARDS.values() if g.applies(task)]


def claimed_passes(task: Task, statuses: dict[str, str]) -> list[str]:
    """The task's graded tests that the log says passed."""
    return [t for t in (*task.tests.fail_to_pass, *task.tests.pass_to_pass) if statuses.get(t) == PASSED]


def _simple(command: str) -> bool:
    """One pipeline-free command whose exit status is the runner's."""
    return not re.search(r";|\|\||(?<!\|)\|(?!\|)|&\s*$", command)


WATCH_HEADER = "ha-watch 1"


def watch_record(text: str | None, report: dict | None, streams: list | None = None) -> list[str] | None:
    """The pytest guard's watch record of a run: the kinds of event sent as they happened (the
    collector's ``streams`` on the host, or where there is none ``text``, the watch file) and those
    in the guard's final report, together. File mode: ``watch_removed`` when the report says the
    run was watched but the file lost its header (truncated or replaced during the run). Socket
    mode: the file holds only a process that could not reach the collector (``watch_unreached``),
    and a run the report calls watched whose collector heard no watched process is ``watch_missing``.
    None when the run was not watched."""
    if streams is not None:
        return _socket_record(text, report, streams)
    if not report or not report.get("watched"):
        return None if text is None or not text.startswith(WATCH_HEADER) else \
            sorted(set(text.splitlines()[1:]) | {"report_missing"})
    lines = (text or "").splitlines()
    seen = set(report.get("watch") or []) | set(lines[1:])
    if not lines or lines[0] != WATCH_HEADER:
        seen.add("watch_removed")
    return capped({x for x in seen if x and len(x) <= 80})


def _file_kinds(text: str | None) -> tuple[set[str], bool]:
    """Socket mode: the kinds a watch file holds (processes that did not reach the collector),
    and whether any did: ``+unreached`` (it could not connect) or ``+watched`` (it was not told of
    the socket: its parent took ``HA_WATCH_SOCKET`` out of its environment)."""
    lines = [x for x in (text or "").splitlines() if x != WATCH_HEADER]  # the pytest guard's may have none
    kinds = {x for x in lines if x and not x.startswith("+") and len(x) <= 80}
    unreached = "+unreached" in lines or "+watched" in lines
    return kinds | ({"watch_unreached"} if unreached else set()), unreached


def _socket_record(text: str | None, report: dict | None, streams: list) -> list[str] | None:
    kinds, watched, _ = stream_kinds(streams)
    more, unreached = _file_kinds(text)
    kinds |= more
    said = bool(report and report.get("watched"))
    if report:
        kinds |= {x for x in report.get("watch") or [] if x and len(x) <= 80}
    if said and not watched and not unreached:
        kinds.add("watch_missing")  # pytest ran watched by its own account; the host heard nothing
    if not report and (watched or unreached):
        kinds.add("report_missing")
    return capped(kinds) if said or watched or unreached else None


def watch_from(sandbox: Any, streams: list | None) -> str:
    """Where a Python watch record came from (``GradeReport.watch_from``)."""
    if streams is None:
        return "sandbox, within reach"
    return "host" if getattr(sandbox, "watch_dir", None) and sandbox.watch_dir[2] else "host, within reach"


_PYTEST_CMD = re.compile(r"(^|[\s/;&|(])(py\.?test)(\s|$)|-m\s+pytest\b")
_SUMMARY = re.compile(r"^=*\s*((?:\d+ [a-z]+(?:, )?)+) in [\d.]+ ?s(?:econds)?\b.*?=*\s*$")


def read_watch(task: Task, sandbox: Any, watch: tuple[str, str], evidence: Evidence,
               streams: list | None = None) -> None:
    """The watch record of a run into ``evidence`` (``watch``, and ``witnesses`` where the guard
    reads them): (guard name, its watch file); ``streams``: what the host's collector heard
    (``watchsock.py``), None where the Python watch wrote only its file. A guard that reads its own
    (``ostrace.TraceGuard``, ``PythonWatchGuard``) does; the pytest guard's file and report are read together."""
    guard = GUARDS[watch[0]]
    if isinstance(guard, PythonWatchGuard):
        evidence.watch = guard.read_streams(sandbox, watch[1], streams)
        evidence.watch_from = watch_from(sandbox, streams)
        return
    if hasattr(guard, "read_trace"):
        evidence.watch, evidence.witnesses = guard.read_trace(task, sandbox, watch[1], evidence.host_trace)
        return
    got = sandbox.run(f"head -c 65536 -- {ansi_c_quote(watch[1])} 2>/dev/null", timeout=60)
    rep = evidence.reports.get(watch[0])
    evidence.watch = watch_record(got.output if got.exit_code == 0 else None, rep if isinstance(rep, dict) else None,
                                  streams)
    evidence.watch_from = watch_from(sandbox, streams)


@register_guard("pytest")
class PytestGuard:
    name = "pytest"

    def applies(self, task: Task) -> bool:
        # SWE-bench Pro runs pytest inside Scale's run scripts and names tests its own way
        return task.tests.log_parser != "pro" and bool(_PYTEST_CMD.search(task.tests.test_command))

    def prepare(self, task: Task, command: str, grade_dir: str, changed: list[str]) -> GuardRun:
        d = f"{grade_dir}/py"
        report = f"{grade_dir}/pytest-report.json"
        watch = f"{grade_dir}/pytest-watch"
        workdir = grade_dir.rsplit("/.git/", 1)[0]
        test_dirs = sorted({t for t in map(test_dir_of, task.hidden_test_files) if t})
        settings = json.dumps({"report": report, "changed": changed, "watch": watch, "workdir": workdir,
                               "hidden": list(task.hidden_test_files), "test_dirs": test_dirs}).encode()
        # The plugin's module name is new for every run, so nothing the patch put on the path can
        # stand in for it, and its directory goes last on PYTHONPATH: tests that edit sys.path by
        # position (pylint's modify_sys_path pops entries by index) see the path they expect.
        module = f"ha_pytest_guard_{secrets.token_hex(6)}"
        watcher = f"ha_py_watch_{secrets.token_hex(6)}"
        settings = json.dumps({**json.loads(settings), "watch_module": watcher}).encode()
        prefix = (f"export PYTHONPATH=${{PYTHONPATH:+$PYTHONPATH:}}{ansi_c_quote(d)} PYTHONDONTWRITEBYTECODE=1 "
                  f"PYTEST_ADDOPTS=\"-p {module} -p no:cacheprovider${{PYTEST_ADDOPTS:+ $PYTEST_ADDOPTS}}\" "
                  f"HA_GUARD_CONFIG={ansi_c_quote(d + '/settings.json')}; ")
        return GuardRun(prefix + command, {f"py/{module}.py": (GUARD_DIR / "ha_pytest_guard.py").read_bytes(),
                                           f"py/{watcher}.py": (GUARD_DIR / "ha_py_watch.py").read_bytes(),
                                           "py/settings.json": settings}, report, watch)

    def check(self, task: Task, statuses: dict[str, str], ev: Evidence) -> list[str]:
        passes = claimed_passes(task, statuses)
        rep = ev.reports.get(self.name)
        if rep is None:
            return ([f"the log reports {len(passes)} graded test(s) passed, but pytest never finished its session "
                     "(no guard report: the process exited early or the report was removed)"] if passes else [])
        reasons = [f"pytest guard: {r}" for r in rep.get("tampered", [])]
        tests: dict[str, str] = rep.get("tests", {})
        by_id = dict(tests)
        by_id.update({cwd: tests[nid] for nid, cwd in rep.get("cwd_ids", {}).items() if nid in tests})
        for t in passes:
            got = by_id.get(t)
            if got is not None and got not in ("PASSED", "XPASS"):
                reasons.append(f"the log says {t} PASSED; pytest recorded {got}")
        prefix = ev.workdir.rstrip("/") + "/"
        for path, digest in (rep.get("collected") or {}).items():
            rel = path[len(prefix):] if path.startswith(prefix) else path
            if rel in ev.tests_before and ev.tests_before[rel] != digest:
                reasons.append(f"pytest collected {rel} with other contents than the grader installed")
        verified = [t for t in passes if t in by_id]
        if passes and not tests:
            reasons.append("the log reports passing tests, but pytest recorded no test at all")
        elif passes and not verified and not any(t in by_id for t in statuses) and \
                (task.tests.log_parser == "pytest" or task.tests.log_parser.startswith("swebench:")):
            reasons.append("none of the tests the log reports could be found in pytest's own record")
        if not ev.timed_out and _simple(task.tests.test_command) and rep.get("exitstatus") != ev.exit_code:
            reasons.append(f"pytest ended with status {rep.get('exitstatus')} but the command exited {ev.exit_code}")
        summary = None
        for line in ev.log.splitlines():
            m = _SUMMARY.match(line.strip())
            if m:
                summary = m.group(1)
        if summary is not None:
            said = {k: int(n) for n, k in re.findall(r"(\d+) ([a-z]+)", summary)}
            counts = rep.get("counts", {})
            for key in ("passed", "failed"):
                if said.get(key, 0) != counts.get(key, 0):
                    reasons.append(f"the last summary line says {said.get(key, 0)} {key}; pytest recorded "
                                   f"{counts.get(key, 0)}")
        return reasons


REPO_RUNNERS = ("sympy/testing/runtests.py", "sympy/utilities/runtests.py", "django/test/")
"""Test runners that live in the repository under test (sympy's, Django's ``django.test``): the
watch counts them as the runner, not as the code under test, unless the patch changes them."""


def command_script(command: str) -> str | None:
    """The repository's script a test command runs (``./tests/runtests.py``, ``bin/test``,
    ``python tests/runtests.py``), relative to the work copy; None for ``python -m``/``-c``, an
    absolute path, a bare program name (``tox``), or a command that cannot be split."""
    try:
        words = shlex.split(re.split(r"&&|;", command)[-1])
    except ValueError:
        return None
    words = [w for w in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
    if words and re.match(r"^python[\d.]*$", words[0].rsplit("/", 1)[-1]):
        words = words[1:]
        while words and words[0].startswith("-") and words[0] not in ("-m", "-c"):
            words = words[2:] if words[0] in ("-W", "-X") else words[1:]
    if not words or words[0] in ("-m", "-c") or words[0].startswith("/"):
        return None
    script = words[0].removeprefix("./")
    return script if "/" in script or script.endswith(".py") else None


def python_watch_settings(task: Task, grade_dir: str, changed: list[str], watch: str) -> dict:
    """What the watch needs to tell the code under test from the tests and the runner (``ha_py_watch.py``)."""
    test_dirs = sorted({t for t in map(test_dir_of, task.hidden_test_files) if t})
    script = command_script(task.tests.test_command)
    return {"changed": changed, "watch": watch, "workdir": grade_dir.rsplit("/.git/", 1)[0],
            "hidden": list(task.hidden_test_files), "test_dirs": test_dirs,
            "runner_paths": sorted({*REPO_RUNNERS, *([script] if script else [])})}


@register_guard("python")
class PythonWatchGuard:
    """The watch for Python runners other than pytest (django's ``runtests.py``, sympy's ``bin/test``,
    ``python -m unittest``, tox): a ``sitecustomize`` first on ``PYTHONPATH`` (``guards/ha_sitecustomize.py``)
    starts the audit hook of ``guards/ha_py_watch.py`` in every Python interpreter the command
    starts, subprocesses included, before the command's own code; it chains to the
    ``sitecustomize`` it shadows. Both modules get new names each run except ``sitecustomize``
    itself, whose directory leaves ``sys.path`` again once it ran. Each process says ``+watched``
    (3.8+) or ``+unwatched python 3.x`` (no audit hooks before 3.8), then the kinds it saw: to the
    grader's collector on the host where the sandbox has one (``watchsock.py``, ``HA_WATCH_SOCKET``),
    else (and for a process that cannot reach it) appended to one watch file the grader wrote with
    its header (``watch_lines``). Unwatched, and said so: interpreters
    started with ``-S``, ``-I`` or ``-E``, and commands that set ``PYTHONPATH`` themselves or through
    a tool that drops it (tox without ``passenv``). Where pytest runs the pytest guard keeps its own
    watch (the same module), so nothing is recorded twice."""

    name = "python"

    def applies(self, task: Task) -> bool:
        return task.language == "python" and task.tests.log_parser != "pro" and not GUARDS["pytest"].applies(task)

    def prepare(self, task: Task, command: str, grade_dir: str, changed: list[str]) -> GuardRun:
        d = f"{grade_dir}/pyw"
        watch = f"{grade_dir}/{secrets.token_hex(6)}.watch"
        module = f"ha_py_watch_{secrets.token_hex(6)}"
        site = (GUARD_DIR / "ha_sitecustomize.py").read_text().replace("__HA_WATCH_MODULE__", module)
        settings = json.dumps(python_watch_settings(task, grade_dir, changed, watch)).encode()
        prefix = (f"export PYTHONPATH={ansi_c_quote(d)}${{PYTHONPATH:+:$PYTHONPATH}} "
                  f"HA_PY_WATCH={ansi_c_quote(d + '/settings.json')}; ")
        files = {"pyw/sitecustomize.py": site.encode(), f"pyw/{module}.py": (GUARD_DIR / "ha_py_watch.py").read_bytes(),
                 "pyw/settings.json": settings, watch.rsplit("/", 1)[1]: (WATCH_HEADER + "\n").encode()}
        return GuardRun(prefix + command, files, watch=watch)

    def check(self, task: Task, statuses: dict[str, str], ev: Evidence) -> list[str]:
        return []  # the watch is compared with the gold run's (Grader._compare_watch), not with the log

    def read_streams(self, sandbox: Any, path: str, streams: list | None) -> list[str] | None:
        """The run's record: what the host's collector heard (``streams``) with the watch file's
        kinds (processes that could not reach it), or the file's alone where there was no collector."""
        q = ansi_c_quote(path)  # the header, then each distinct line once: many processes append to it
        got = sandbox.run(f"test -f {q} && {{ head -n 1 -- {q}; tail -n +2 -- {q} | sort -u | head -c 65536; }}",
                          timeout=120)
        return watch_lines(got.output if got.exit_code == 0 else None, streams)


def watch_lines(text: str | None, streams: list | None = None) -> list[str] | None:
    """The kinds of a ``PythonWatchGuard`` run. File mode (``streams`` None): None when no interpreter
    of the run installed the hook (none started, or all older than 3.8: unwatched); ``watch_removed``
    when the file or its header is gone (the grader wrote it before the run). Socket mode: the
    collector's kinds and the file's (``watch_unreached``: a process wrote there instead); a run from
    which the collector heard nothing at all, not even an unwatched interpreter, is ``watch_missing``
    (the command runs Python: its interpreters were kept from the watch), compared with the gold run's."""
    lines = (text or "").splitlines()
    kinds = {x for x in lines[1:] if x and not x.startswith("+") and len(x) <= 80}
    removed = not lines or lines[0] != WATCH_HEADER
    if streams is not None:
        heard, watched, anything = stream_kinds(streams)
        more, unreached = _file_kinds(text)
        heard |= more | ({"watch_removed"} if removed else set())
        if not anything and not unreached:
            heard.add("watch_missing")
        elif not watched and not unreached and heard <= {"watch_removed"}:
            return None  # only interpreters older than 3.8: unwatched, said so
        return capped(heard)
    if removed:
        return capped(kinds | {"watch_removed"})
    if "+watched" not in lines:
        return None
    return capped(kinds)


@register_guard("node")
class NodeGuard:
    name = "node"

    def applies(self, task: Task) -> bool:
        return bool(re.search(r"\bnode\s+.*--test\b", task.tests.test_command)) and \
            "--test-reporter=tap" in task.tests.test_command

    def prepare(self, task: Task, command: str, grade_dir: str, changed: list[str]) -> GuardRun:
        report = f"{grade_dir}/node-report.json"
        guard = f"{grade_dir}/ha_node_guard.mjs"
        wrapped = command.replace(
            "--test-reporter=tap",
            f"--test-reporter=tap --test-reporter-destination=stdout --test-reporter={ansi_c_quote(guard)} "
            f"--test-reporter-destination={ansi_c_quote(report)}", 1)
        return GuardRun(wrapped, {"ha_node_guard.mjs": (GUARD_DIR / "ha_node_guard.mjs").read_bytes()}, report)

    def check(self, task: Task, statuses: dict[str, str], ev: Evidence) -> list[str]:
        passes = claimed_passes(task, statuses)
        rep = ev.reports.get(self.name)
        if rep is None:
            return ([f"the log reports {len(passes)} graded test(s) passed, but the test runner left no record"]
                    if passes else [])
        tests = rep.get("tests", {})
        reasons = [f"the log says {t} PASSED; the runner recorded {tests.get(t, 'nothing')}"
                   for t in passes if tests.get(t) != PASSED]
        said = dict(re.findall(r"^# (pass|fail) (\d+)\s*$", ev.log, re.M))
        counts = rep.get("counts", {})
        for key in ("pass", "fail"):
            if key in said and key in counts and int(said[key]) != counts[key]:
                reasons.append(f"the TAP summary says {key} {said[key]}; the runner counted {counts[key]}")
        if not ev.timed_out and _simple(task.tests.test_command) and ev.exit_code == 0 and counts.get("fail", 0):
            reasons.append("the runner counted failures but the command exited 0")
        return reasons


@register_guard("go")
class GoGuard:
    name = "go"

    def applies(self, task: Task) -> bool:
        return bool(re.search(r"\bgo\s+test\b", task.tests.test_command))

    def prepare(self, task: Task, command: str, grade_dir: str, changed: list[str]) -> GuardRun:
        return GuardRun(command)

    def check(self, task: Task, statuses: dict[str, str], ev: Evidence) -> list[str]:
        reasons = []
        seen_run: set[str] = set()
        for line in ev.log.splitlines():
            m = re.match(r"^=== RUN\s+(\S+)", line)
            if m:
                seen_run.add(m.group(1))
                continue
            m = re.match(r"^\s*--- PASS: (\S+) \(", line)
            if m and m.group(1) not in seen_run:
                reasons.append(f"'--- PASS: {m.group(1)}' appears before the test was started")
        if not ev.timed_out and _simple(task.tests.test_command) and ev.exit_code == 0 and \
                re.search(r"^\s*--- FAIL: ", ev.log, re.M):
            reasons.append("tests failed but the command exited 0")
        return reasons


_CARGO_RUNNING = re.compile(r"^running (\d+) tests?$")
_CARGO_SUMMARY = re.compile(r"^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored")


@register_guard("cargo")
class CargoGuard:
    name = "cargo"

    def applies(self, task: Task) -> bool:
        return bool(re.search(r"\bcargo\s+test\b", task.tests.test_command))

    def prepare(self, task: Task, command: str, grade_dir: str, changed: list[str]) -> GuardRun:
        return GuardRun(command)

    def check(self, task: Task, statuses: dict[str, str], ev: Evidence) -> list[str]:
        reasons: list[str] = []
        expected: int | None = None
        got = {"ok": 0, "FAILED": 0, "ignored": 0}
        for raw in ev.log.splitlines():
            line = raw.strip()
            m = _CARGO_RUNNING.match(line)
            if m:
                if expected is not None and not ev.timed_out and ev.exit_code == 0:
                    reasons.append("a test binary stopped before its summary, yet the command exited 0")
                expected, got = int(m.group(1)), {"ok": 0, "FAILED": 0, "ignored": 0}
                continue
            m = CARGO_LINE.match(line)
            if m:
                if expected is None:
                    reasons.append(f"result line for {m.group(1)} outside any test binary's run")
                else:
                    got["FAILED" if m.group(2) in ("FAILED", "failed") else m.group(2)] += 1
                continue
            m = _CARGO_SUMMARY.match(line)
            if m and expected is not None:
                p, f, i = int(m.group(2)), int(m.group(3)), int(m.group(4))
                if (p, f, i) != (got["ok"], got["FAILED"], got["ignored"]) or p + f + i != expected:
                    reasons.append(f"a test binary's summary ({p} passed, {f} failed, {i} ignored of {expected}) "
                                   f"does not match its result lines ({got['ok']}, {got['FAILED']}, {got['ignored']})")
                expected = None
        if expected is not None and not ev.timed_out and ev.exit_code == 0:
            reasons.append("a test binary stopped before its summary, yet the command exited 0")
        if not ev.timed_out and _simple(task.tests.test_command) and ev.exit_code == 0 and \
                any(s == FAILED for s in statuses.values()):
            reasons.append("tests failed but the command exited 0")
        return reasons
