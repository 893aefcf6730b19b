"""The host's strace for a Docker grading container (``grading/ostrace.py`` traces the test run).

A task image need not hold strace: the grading container gets the host's, with its own dynamic
loader and the libraries ``ldd`` names, read-only at ``TRACER_DIR`` (``docker.py``), and runs it as
``TRACER_DIR/ld.so --library-path TRACER_DIR TRACER_DIR/strace``, on the host's libraries whatever
the image's are.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess

TRACER_DIR = "/opt/ha-tracer"
"""Where a Docker grading container finds the host's strace, its loader and its libraries."""


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
    return files if "ld.so" in files.values() else {}
