"""The watched run for Go, Rust and JavaScript: an OS-level trace of the test processes.

The code under test of a compiled language or of node runs inside the test binary or the node
process, where no guard of ours runs before it. So the test command runs traced by ``strace -f``,
which records, from outside the traced processes, what they do, and the grader reads the trace back
after the run (``record``). Where the sandbox can (``run_traced``: the local sandbox, whose grading
shells start as children of the host's strace, ``host_trace_spec``), the tracer is the host's,
outside the sandbox's namespaces, writing to a host file the sandbox does not hold
(``sandbox/hosttrace.py``): the test processes can neither rewrite the trace nor signal the tracer.
In a Docker grading container the tracer is strace inside the container, in an exec of its own,
writing to the exec's stream, which leaves the container as it is written (``sandbox/dockertrace.py``:
the test processes cannot rewrite it; strace is non-dumpable, so they cannot read or write its pipe;
a killed strace shows in the exec's status). Elsewhere (a host without strace) the command runs under
``strace -f --seccomp-bpf`` inside the sandbox (``wrap``), its trace a file in the grading copy,
within the test processes' reach (said in the log). Kinds:

- ``spawn:<program>``: a program started by a *test process* (a Go ``*.test`` binary, a Rust test
  binary under ``target/*/deps/``, node, and everything they start); ``spawn:test-binary`` when a
  test binary starts a test binary (itself again, to rewrite its output);
- ``fd_redirect:1`` / ``fd_redirect:2``: a test process makes fd 1 or 2 a copy of another
  descriptor (``dup2``/``dup3``: a pipe through a filter), or closes it (``close``/``close_range``:
  the next descriptor it makes, a ``dup`` of a pipe's end, takes the slot);
- ``test_source_read``: a test process opens a test source (a hidden test file, ``*_test.go``,
  ``tests/**.rs``, ``*.test.js``): the compilers do, a test binary has no reason to;
- ``trace_touched`` (a trace inside the sandbox only): any process opens, renames, removes or
  truncates the trace file by its name (a path of its own, a symlink, is not the trace's name);
- ``trace_garbled``: a line of the trace that strace did not write (blanked or zeroed bytes, text
  that is no call): the file was written by someone else. Inside the sandbox a rewrite into
  well-formed lines is not seen; on the host nothing else writes the file;
- ``tracer_lost`` (a trace from the host): the tracer ended by a signal during the run (killed:
  possible from inside only for an unisolated sandbox, whose processes share the host's pid
  namespace).

It also reads the Go and Rust tests' outcome witnesses (``prctl(PR_SET_NAME)`` calls of test
processes: ``witness.py``, ``witness_rust.py``), which ``Grader._judge`` holds the log to.

The record is compared with the gold patch's run of the same task (``Grader._compare_watch``, the
Python watch's comparison): a kind the gold run does not show -> ``verdict_tampered``. Inside a
Docker grading container the tracer is the host's ``strace``, with its own loader and libraries,
read-only at ``TRACER_DIR`` (``sandbox/tracer.py``, ``sandbox/docker.py``), so no image needs it.
Where no strace works, the command runs as it is and the run is unwatched (``watch`` None). Limits
(``docs/security.md``): the fallback's trace is a file in the grading copy, which the code under
test can find and rewrite; system calls not in ``TRACED`` (an ``io_uring`` open, say)
are not seen either way; node's own
runner spawns node processes, wires their fds and reads the test files, so for node only programs
other than node and the files' readers beyond them can differ from the gold run.
"""

from __future__ import annotations

import re
import secrets
from typing import Any, Iterator

from ..sandbox.hosttrace import HostTrace, TraceSpec
from ..sandbox.shell import ansi_c_quote
from ..sandbox.tracer import TRACER_DIR
from ..task import Task
from . import witness
from .runners import Evidence, GuardRun, register_guard

TRACED = ("execve,openat,open,dup2,dup3,clone,clone3,fork,vfork,rename,renameat,renameat2,unlink,unlinkat,truncate,"
          "prctl,close,close_range")
MAX_TRACE = 48 << 20
"""Bytes of the trace read back; a larger trace is cut there (and says so: ``trace_cut``)."""
_COMMANDS = re.compile(r"\bgo\s+test\b|\bcargo\s+(?:\+\S+\s+)?test\b|\bnode\s+.*--test\b|\b(?:jest|mocha|vitest)\b")
_TEST_BINARY = re.compile(r"\.test$|/target/(?:[^/]+/)*deps/[^/]+-[0-9a-f]{16}$")
_TEST_SOURCE = re.compile(r"(?:_test\.go|\.(?:test|spec)\.[cm]?[jt]sx?)$|(?:^|/)tests/.*\.rs$")
_LINE = re.compile(r"^(\d+)\s+(.*)$")
_ABANDONED = re.compile(r"^\d+\s+\?\?\?\((\d+\s.*)$")
_FORM = re.compile(r"^(?:\w+\(|<\.\.\. \w+ resumed>|--- |\+\+\+ )")
"""How each line strace writes begins after its pid: a call, a resumed call, a signal, an exit."""
_CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(-?\d+|\?)(?:\s+/\* (\d+) in strace's PID NS \*/)?")
"""A call and what it returned; a pid returned in a pid namespace of its own (a sandbox traced from
the host, ``--pidns-translation``) is read as the tracer's number for it, the one its lines carry."""


_TRACER = (f'if [ -x {TRACER_DIR}/strace ]; then HA_ST="{TRACER_DIR}/ld.so --library-path {TRACER_DIR} '
           f'{TRACER_DIR}/strace"; else HA_ST=strace; fi')


def wrap(command: str, trace: str) -> str:
    """``command`` under strace when the sandbox has a working one (its own, or the host's at
    ``TRACER_DIR``), else as it is."""
    inner = ansi_c_quote(command)
    probe = (f"{_TRACER}; $HA_ST -f -qq -o /dev/null true >/dev/null 2>&1 && "
             f"mkdir -p -- {ansi_c_quote(trace.rsplit('/', 1)[0])}")
    return (f"if {probe}; then $HA_ST -f -qq --seccomp-bpf -e status=successful -s 512 -e trace={TRACED} "
            f"-o {ansi_c_quote(trace)} -- bash -c {inner}; else bash -c {inner}; fi")


def _unglued(raws: list[str]) -> Iterator[str]:
    """The lines, with strace's ``PID ???(`` (a call it began to print and abandoned, its next line
    written straight after it: seen in Go builds) split from the line glued to it."""
    for raw in raws:
        while True:
            m = _ABANDONED.match(raw)
            if m is None:
                break
            raw = m.group(1)
        yield raw


def _joined(text: str) -> list[tuple[int, str]]:
    """(pid, ``call(args) = ret``) with strace's ``<unfinished ...>``/``<... resumed>`` halves joined,
    and a cut call that strace goes on with on the next line, without a pid, joined to it."""
    pending: dict[int, str] = {}
    out = []
    last: int | None = None  # the pid of the line before, when it was cut off
    for raw in _unglued(text.splitlines()):
        m = _LINE.match(raw)
        if not m:
            if last is not None and last in pending:  # strace goes on with the cut call on a line without a pid
                out.append((last, pending.pop(last) + raw))
            else:
                out.append((-1, raw))  # not strace's (it writes no empty line either): ``trace_garbled``
            last = None
            continue
        pid, rest = int(m.group(1)), m.group(2)
        last = None
        if not _FORM.match(rest):
            out.append((-1, raw))  # no form strace writes (text glued onto the front of one of its lines)
            continue
        if rest.endswith("<unfinished ...>"):
            if pid in pending:  # strace resumes a call before it leaves another: one of the two is not its
                out.append((-1, raw))
            pending[pid] = rest[:-len("<unfinished ...>")].rstrip()
            last = pid
            continue
        resumed = re.match(r"^<\.\.\. (\w+) resumed>\s?(.*)$", rest)
        if resumed:
            head = pending.pop(pid, "")
            if head and not head.startswith(resumed.group(1) + "("):  # the resumed call is not the one left
                out.append((-1, raw))
            rest = head + resumed.group(2)
        out.append((pid, rest))
    return out


def _first_string(args: str) -> str | None:
    m = re.search(r'"((?:[^"\\]|\\.)*)"', args)
    return m.group(1) if m else None


def _closed_std(call: str, args: str) -> list[int]:
    """Which of fds 1 and 2 a successful ``close``/``close_range`` closed: the slot is then free for
    the next descriptor made (``dup``, ``pipe``, ``open``), a redirection without ``dup2``."""
    nums = [int(n) for n in re.findall(r"-?\d+", args)[:2]]
    if call == "close":
        return [n for n in nums[:1] if n in (1, 2)]
    if len(nums) < 2:
        return []
    last = nums[1] if nums[1] >= 0 else 1 << 32
    return [fd for fd in (1, 2) if nums[0] <= fd <= last]


def _returned(m: re.Match, translated: bool) -> str:
    """What a call returned, as a pid of the trace's own numbering: in a trace taken across pid
    namespaces (``--pidns-translation``: a sandbox traced from the host) a clone's return printed
    without its translation (a thread that ended before strace could look it up) is a number of the
    sandbox's namespace, which may be another process's number in the trace: ``"?"`` (unknown)."""
    if m.group(4):
        return m.group(4)
    return "?" if translated and m.group(1) in _CLONES else m.group(3)


_CLONES = ("clone", "clone3", "fork", "vfork")
_TRANSLATED = "in strace's PID NS */"


def _parents(lines: list[tuple[int, str]], translated: bool = False) -> dict[int, int]:
    """child pid -> the pid whose clone or fork made it (``translated``: ``_returned``)."""
    out: dict[int, int] = {}
    for pid, rest in lines:
        m = _CALL.match(rest)
        ret = _returned(m, translated) if m else ""
        if m and m.group(1) in _CLONES and ret.isdigit():
            if out.setdefault(int(ret), pid) != pid:
                out[-1] = -1  # a child two processes claim: a line appended to the trace (``_scan``: garbled)
    return out


def record(text: str, hidden: tuple[str, ...], trace: str) -> list[str]:
    """The kinds of behaviour the trace shows (module docstring), sorted."""
    return _scan(text, hidden, trace)[0]


def _scan(text: str, hidden: tuple[str, ...], trace: str) -> tuple[list[str], dict[str, set[str]]]:
    """(the kinds, the outcome witnesses of test processes: ``witness.tokens``)."""
    exe: dict[int, str] = {}
    tester: set[int] = set()
    hidden_names = {h.rsplit("/", 1)[-1] for h in hidden}
    trace_name = trace.rsplit("/", 1)[-1]  # "": a trace on the host, which no traced process can name
    seen: set[str] = set()
    calls: list[tuple[bool, str]] = []
    lines = _joined(text)
    translated = _TRANSLATED in text
    parent = _parents(lines, translated)
    if -1 in parent:
        seen.add("trace_garbled")
    for pid, rest in lines:
        if pid < 0 or "\0" in rest:
            seen.add("trace_garbled")
        m = _CALL.match(rest)
        if not m:
            continue
        if pid not in tester and parent.get(pid) in tester:
            tester.add(pid)  # a thread or child whose first calls strace printed before its parent's clone returned
        call, args, ret = m.group(1), m.group(2), _returned(m, translated)
        path = _first_string(args) or ""
        if trace_name and trace_name in args and call != "execve":
            seen.add("trace_touched")
        if call in _CLONES and ret.isdigit():
            child = int(ret)
            exe[child] = exe.get(pid, "")
            if pid in tester:
                tester.add(child)
        elif call == "execve":
            binary = _TEST_BINARY.search(path) is not None or path.rsplit("/", 1)[-1] == "node"
            if pid in tester:
                seen.add("spawn:test-binary" if binary and _TEST_BINARY.search(path) else
                         f"spawn:{path.rsplit('/', 1)[-1]}")
            exe[pid] = path
            if binary:
                tester.add(pid)
        elif call in ("dup2", "dup3") and pid in tester:
            fds = re.match(r"^\s*(\d+),\s*(\d+)", args)
            if fds and fds.group(2) in ("1", "2") and fds.group(1) != fds.group(2):
                seen.add(f"fd_redirect:{fds.group(2)}")
        elif call in ("close", "close_range") and pid in tester:
            seen.update(f"fd_redirect:{fd}" for fd in _closed_std(call, args))
        elif call in ("open", "openat") and pid in tester and path:
            if path.rsplit("/", 1)[-1] in hidden_names or _TEST_SOURCE.search(path):
                seen.add("test_source_read")
        elif call == "prctl":
            # a thread that ended before strace could give its clone's return in its own pid namespace
            # (``--pidns-translation`` finds no such process: 3 to 18 in 3000 short threads) has no
            # known parent; its witness is read (the guard's thread lives for one call)
            calls.append((pid in tester or (pid not in parent and pid not in exe), rest))
    return sorted(seen), witness.tokens(calls)


def host_trace_spec(task: Task) -> TraceSpec | None:
    """What a grading sandbox of ``task`` traces from the host (``LocalSandboxConfig.trace``): the
    calls of ``TRACED`` when this guard watches the task, else nothing."""
    return TraceSpec(TRACED, 512, MAX_TRACE) if TraceGuard().applies(task) else None


def trace_from(ev: Evidence) -> str:
    """Where the run's OS-level trace was taken (``GradeReport.trace_from``); "" when none was."""
    if ev.host_trace is not None:
        if ev.host_trace.origin != "host":  # "docker stream": out of the container as strace wrote it
            return ev.host_trace.origin + (", within reach" if ev.host_trace.reachable else "")
        return "host, within reach" if ev.host_trace.reachable else "host"
    return "sandbox, within reach" if ev.witnesses is not None else ""


@register_guard("ostrace")
class TraceGuard:
    """The OS-level watch: registered after the runner guards, so it wraps their commands."""

    name = "ostrace"

    def applies(self, task: Task) -> bool:
        return task.language != "python" and task.tests.log_parser != "pro" and \
            bool(_COMMANDS.search(task.tests.test_command))

    def prepare(self, task: Task, command: str, grade_dir: str, changed: list[str]) -> GuardRun:
        trace = f"{grade_dir}/{secrets.token_hex(6)}.log"
        return GuardRun(wrap(command, trace), watch=trace, trace=TraceSpec(TRACED, 512, MAX_TRACE))

    def check(self, task: Task, statuses: dict[str, str], ev: Evidence) -> list[str]:
        return []  # the trace is compared with the gold run's (Grader._compare_watch), not with the log

    def read_trace(self, task: Task, sandbox: Any, path: str,
                   host: HostTrace | None = None) -> tuple[list[str] | None, dict[str, set[str]] | None]:
        """(the trace's kinds, its outcome witnesses); (None, None) when the run was not traced (no
        strace in the sandbox). ``host``: the trace the sandbox took from outside, when it did
        (``path`` then was never written); a tracer that ended before the run did is ``tracer_lost``."""
        if host is not None:
            kinds, tokens = _scan(host.text, task.hidden_test_files, "")
            extra = {"trace_cut"} if host.truncated else set()
            extra |= {"tracer_lost"} if host.lost else set()
            return sorted({*kinds, *extra}), tokens
        got = sandbox.run(f"test -f {ansi_c_quote(path)} && cat -- {ansi_c_quote(path)}", timeout=120,
                          head_bytes=MAX_TRACE, tail_bytes=0)
        if got.exit_code != 0:
            return None, None
        kinds, tokens = _scan(got.output, task.hidden_test_files, path)
        return (sorted({*kinds, "trace_cut"}) if got.truncated else kinds), tokens
