"""What a Harbor task's ``tests/test.sh`` run did that could forge its reward, from an OS trace.

The code under test runs inside test.sh's own processes, with the verifier's rights, and the reward
is a file they can all write. Forgeries that leave no process behind (``harbor.end_survivors``
finds nothing) and earned reward 1.0 without a fix before this:

- **the reward race**: a process it starts waits for the verifier's ``echo 0 >
  /logs/verifier/reward.txt``, writes ``1`` over it and exits, before test.sh exits (2 of 3
  gradings). It has to outlive the process that started it: test.sh's shell waits for the commands
  it runs (the tests among them) before it writes the reward, so whatever is alive then was cut loose;
- **the verifier's write made to fail**: it writes ``1`` first, then lowers the open-file limit of
  test.sh's shell (``prlimit`` on its parent: same user, no privilege needed), whose ``echo 0 >``
  then fails (``EMFILE``) and leaves the planted 1 (every grading, root or not); or, on a host
  that runs the sandbox as a user other than root, makes the file and its folder read-only.

So test.sh runs under ``strace -f`` (``-DDD``: strace is no parent of test.sh's, which the sandbox's
shell waits for as before; it goes on while any traced process lives) tracing process creation,
exits, file opens, renames, truncations and ``prlimit64``/``process_vm_writev``, and ``findings``
names what the base's verifier is expected not to do:

- the pid of every process that outlived the process that started it;
- ``REWARD_WRITE_FAILED``: an open for writing, ``creat``, ``truncate`` or rename of a file named
  ``reward.txt``/``reward.json`` that failed (whatever made it fail: limits, modes, a directory in
  its place);
- ``OTHER_LIMITS``: a process set the limits of another (``prlimit64`` on another pid);
- ``OTHER_MEMORY``: a process opened another's memory for writing (``/proc/<pid>/mem``) or wrote it
  (``process_vm_writev``): the verifier's shell's own text can be changed there;
- ``SHELL_KILLED``: test.sh's shell was killed by a signal (it never wrote its verdict);
- ``NO_EXIT``: test.sh's shell has no exit in the trace (strace stopped before test.sh did);
  ``TRACE_CUT``: the trace was read in part.

The grader treats them as it treats survivors (``harbor._outlived_only_with_the_patch``): when the
base's verifier, in a fresh copy, shows none, the reward is not believed (``verdict_tampered``);
when it shows some too, that is the task's verifier (noted, the reward stands).

Limits (``docs/security.md``): the trace is a file in the sandbox, within reach of the test processes
(same user): one rewritten into consistent lines is not seen; without a working strace nothing of
this is checked (the survivors rule alone); what the verifier itself decides from output the code
under test prints (``grep CHECK_OK``) is the task's to get right.
"""

from __future__ import annotations

import re

from ..sandbox.shell import ansi_c_quote
from .ostrace import _TRACER, _joined

MAX_TRACE = 16 << 20
"""Bytes of the trace read back; a larger one is cut and counts as a finding (``TRACE_CUT``)."""
TRACE_CUT = "trace-cut"
NO_EXIT = "trace-ended-early"
REWARD_WRITE_FAILED = "reward-write-failed"
OTHER_LIMITS = "limits-of-another-process"
OTHER_MEMORY = "memory-of-another-process"
SHELL_KILLED = "test.sh-killed"
TRACED = "clone,clone3,fork,vfork,open,openat,creat,truncate,rename,renameat,renameat2,prlimit64,process_vm_writev"
_CLONE = re.compile(r"^(clone3?|fork|vfork)\((.*)\)\s+=\s+(\d+)")
_EXIT = re.compile(r"^\+\+\+ (exited with -?\d+|killed by \w+(?: \(core dumped\))?) \+\+\+$")
_FAILED = re.compile(r"^(open|openat|creat|truncate|rename|renameat|renameat2)\((.*)\)\s+=\s+-1 ")
_REWARD = re.compile(r'"(?:[^"]*/)?reward\.(?:txt|json)"')
_WRITE = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC")
_MEM = re.compile(r'^open(?:at)?\(.*"/proc/(\d+)/mem", (.*)\)\s+=\s+\d+')


def wrap(command: str, folder: str) -> str:
    """``command`` under strace writing ``folder``/trace (and the tracer's pid to ``folder``/tracer,
    so that it is not taken for a survivor) when the sandbox has a working strace, else as it is."""
    inner = ansi_c_quote("while read -r k v; do [ \"$k\" = TracerPid: ] && printf '%s' \"$v\" > "
                         f"{folder}/tracer; done < /proc/$$/status; {command}")
    probe = f"{_TRACER}; $HA_ST -f -q -o /dev/null true >/dev/null 2>&1 && mkdir -p -- {folder}"
    return (f"if {probe}; then $HA_ST -DDD -f -q --seccomp-bpf -s 256 -e signal=none -e trace={TRACED} "
            f"-o {folder}/trace -- bash -c {inner}; else bash -c {ansi_c_quote(command)}; fi")


def _other(pid: int, rest: str) -> str | None:
    """The finding a call names that acts on another process, if any."""
    if rest.startswith("prlimit64("):
        args = rest[len("prlimit64("):].split(", ")
        if len(args) > 2 and args[0].isdigit() and int(args[0]) not in (0, pid) and args[2] != "NULL":
            return OTHER_LIMITS
    if rest.startswith("process_vm_writev(") and not rest.endswith("= -1"):
        return OTHER_MEMORY if re.match(r"^process_vm_writev\((\d+)", rest).group(1) != str(pid) else None
    m = _MEM.match(rest)
    if m and int(m.group(1)) != pid and _WRITE.search(m.group(2)):
        return OTHER_MEMORY
    return None


def findings(text: str, cut: bool = False) -> list[str]:
    """What the trace shows (the module docstring): pids (as text) first, then the other findings."""
    group: dict[int, int] = {}  # thread -> the process (thread group) it belongs to
    creator: dict[int, int] = {}  # process -> the process that started it
    last_exit: dict[int, tuple[int, str]] = {}  # process -> (the index of its last thread's exit, how)
    seen: set[int] = set()
    other: set[str] = set()
    for i, (pid, rest) in enumerate(_joined(text)):
        if pid < 0:
            continue
        proc = group.get(pid, pid)
        seen.add(proc)
        m, ended, failed = _CLONE.match(rest), _EXIT.match(rest), _FAILED.match(rest)
        if m:
            child = int(m.group(3))
            if "CLONE_THREAD" in m.group(2):
                group[child] = proc
            else:
                creator.setdefault(child, proc)
        elif ended:
            last_exit[proc] = (i, ended.group(1))
        elif failed and _REWARD.search(failed.group(2)) and (failed.group(1) not in ("open", "openat")
                                                             or _WRITE.search(failed.group(2))):
            other.add(REWARD_WRITE_FAILED)
        elif _other(pid, rest):
            other.add(_other(pid, rest))
    never = (1 << 62, "")
    out = sorted((str(c) for c, p in creator.items() if last_exit.get(c, never) > last_exit.get(p, never)), key=int)
    for root in seen - set(group) - set(creator):  # test.sh's shell: no traced process started it
        how = last_exit.get(root, never)[1]
        other.add(NO_EXIT if not how else SHELL_KILLED if how.startswith("killed") else "")
    if cut:
        other.add(TRACE_CUT)
    return out + sorted(other - {""})
