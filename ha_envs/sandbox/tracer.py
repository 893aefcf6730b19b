"""The host's strace for a Docker grading container (``grading/ostrace.py`` traces the test run).

A task image need not hold strace: the grading container gets the host's, with its own dynamic
loader and the libraries ``ldd`` names, read-only at ``TRACER_DIR`` (``docker.py``), and runs it as
``TRACER_DIR/ld.so --library-path TRACER_DIR TRACER_DIR/strace``, on the host's libraries whatever
the image's are.

``nodump.so`` (built here with the host's C compiler, once, into the cache) is preloaded into that
strace (``ld.so --preload``): it makes strace non-dumpable (``PR_SET_DUMPABLE`` 0) and the child
strace forks dumpable again before it execs the command. A non-dumpable process's
``/proc/<pid>/fd`` cannot be opened, and it cannot be ptrace-attached, by a process without
``CAP_SYS_PTRACE``: the traced processes (root in the container, every capability dropped, strace's
uid) can then neither read strace's output pipe (stealing its lines), write to it, nor take strace
over; they can still kill it (``dockertrace.py``: seen). Without a compiler there is no
``nodump.so`` and the trace is within their reach (``NODUMP``)."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess

TRACER_DIR = "/opt/ha-tracer"
"""Where a Docker grading container finds the host's strace, its loader and its libraries."""
NODUMP = "nodump.so"
_NODUMP_C = r"""
#include <pthread.h>
#include <sys/prctl.h>
static void child(void) { prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); }
__attribute__((constructor)) static void nodump(void) {
    pthread_atfork(0, 0, child);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}
"""


def _nodump() -> str | None:
    """The preload library (module docstring), built once per source into the cache; None without
    a compiler or when the build fails."""
    import hashlib
    import tempfile

    from .provision.workcopy import cache_root

    out = cache_root() / "tracer" / f"nodump-{hashlib.sha256(_NODUMP_C.encode()).hexdigest()[:12]}.so"
    if out.is_file():
        return str(out)
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    so = out.with_name(f".{out.name}.{os.getpid()}")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "nodump.c")
        with open(src, "w") as f:
            f.write(_NODUMP_C)
        try:
            subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(so), src], capture_output=True, timeout=120,
                           check=True)
        except (OSError, subprocess.SubprocessError):
            so.unlink(missing_ok=True)
            return None
    os.replace(so, out)  # atomic: a concurrent builder's copy is the same
    return str(out)


@functools.lru_cache(maxsize=1)
def tracer_files() -> dict[str, str]:
    """Host path -> name in ``TRACER_DIR``: strace, its dynamic loader (``ld.so``) and the libraries
    ``ldd`` names, so that it runs on the host's libraries in any image. {} without strace."""
    found = shutil.which("strace")
    if found is None:
        return {}
    try:
        out = subprocess.run(["ldd", found], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    files = {os.path.realpath(found): "strace"}
    for line in out.splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if m:
            name = "ld.so" if "ld-linux" in m.group(1) else m.group(1).rsplit("/", 1)[-1]
            files[os.path.realpath(m.group(1))] = name
    if "ld.so" not in files.values():
        return {}
    nodump = _nodump()
    if nodump is not None:
        files[nodump] = NODUMP
    return files
