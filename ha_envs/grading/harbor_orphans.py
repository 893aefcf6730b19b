"""Processes orphaned while a Harbor task's ``tests/test.sh`` ran, from an OS trace of its processes.

The code under test runs inside test.sh's own processes, with the verifier's rights: a process it
leaves behind can wait for the verifier's ``echo 0 > /logs/verifier/reward.txt``, write ``1`` over
it and exit, all before test.sh exits. Nothing then outlives test.sh (``harbor.end_survivors`` finds
nothing) and the forged reward is read (reward 1.0 without a fix, 2 of 3 gradings, before this).

But such a process has to outlive the process that started it: test.sh's shell waits for the
commands it runs (the tests among them) before it writes the reward, so whatever is still alive
then was cut loose from them. So test.sh runs under ``strace -f`` tracing only process creation
(``clone``/``fork``/``vfork``) and exits (``-DDD``: strace is no parent of test.sh's, which the
sandbox's shell waits for as before; it goes on while any traced process lives), and ``orphans``
names every process that outlived the process that started it, or the trace's own trouble: the
first traced process (test.sh's shell: the one no traced process started) with no exit, so strace stopped before test.sh did. The
grader then treats them as it treats survivors (``harbor._outlived_only_with_the_patch``): when the
base's verifier, in a fresh copy, shows none, the reward is not believed (``verdict_tampered``).

Limits (``docs/security.md``): the trace is a file in the sandbox, within reach of the test
processes (same user): one rewritten into consistent lines is not seen; without a working strace
nothing is checked (the survivors rule alone).
"""

from __future__ import annotations

import re

from ..sandbox.shell import ansi_c_quote
from .ostrace import _TRACER, _joined

MAX_TRACE = 16 << 20
"""Bytes of the trace read back; a larger one is cut and counts as trouble (``TRACE_CUT``)."""
TRACE_CUT = "trace-cut"
NO_EXIT = "trace-ended-early"
_CLONE = re.compile(r"^(clone3?|fork|vfork)\((.*)\)\s+=\s+(\d+)")
_EXIT = re.compile(r"^\+\+\+ (?:exited with -?\d+|killed by \w+(?: \(core dumped\))?) \+\+\+$")


def wrap(command: str, folder: str) -> str:
    """``command`` under strace writing ``folder``/trace (and the tracer's pid to ``folder``/tracer,
    so that it is not taken for a survivor) when the sandbox has a working strace, else as it is."""
    inner = ansi_c_quote("while read -r k v; do [ \"$k\" = TracerPid: ] && printf '%s' \"$v\" > "
                         f"{folder}/tracer; done < /proc/$$/status; {command}")
    probe = f"{_TRACER}; $HA_ST -f -q -o /dev/null true >/dev/null 2>&1 && mkdir -p -- {folder}"
    return (f"if {probe}; then $HA_ST -DDD -f -q --seccomp-bpf -e status=successful -e signal=none "
            f"-e trace=clone,clone3,fork,vfork -o {folder}/trace -- bash -c {inner}; else bash -c {ansi_c_quote(command)}; fi")


def orphans(text: str, cut: bool = False) -> list[str]:
    """The pids (as text) of traced processes that outlived the process that started them (a process
    with no exit in the trace outlives everything), plus ``NO_EXIT`` when the first traced process
    never exits in it and ``TRACE_CUT`` when it was read in part."""
    group: dict[int, int] = {}  # thread -> the process (thread group) it belongs to
    creator: dict[int, int] = {}  # process -> the process that started it
    last_exit: dict[int, int] = {}  # process -> the index of its last thread's exit
    seen: set[int] = set()
    for i, (pid, rest) in enumerate(_joined(text)):
        if pid < 0:
            continue
        proc = group.get(pid, pid)
        seen.add(proc)
        m = _CLONE.match(rest)
        if m:
            child = int(m.group(3))
            if "CLONE_THREAD" in m.group(2):
                group[child] = proc
            else:
                creator.setdefault(child, proc)
        elif _EXIT.match(rest):
            last_exit[proc] = i
    never = 1 << 62
    out = sorted((str(c) for c, p in creator.items() if last_exit.get(c, never) > last_exit.get(p, never)), key=int)
    if any(p not in creator and p not in last_exit for p in seen - set(group)):  # test.sh's shell, not ended
        out.append(NO_EXIT)
    if cut:
        out.append(TRACE_CUT)
    return out
