"""The project's own metadata builds without a warning, and the wheel carries what the library
reads at run time (presets, the bundled suite, the grader's guards, the teacher prompts)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_builds_without_warnings_and_carries_the_data(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path),
                           str(ROOT)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    warnings = [line for line in (proc.stdout + proc.stderr).splitlines() if "warning" in line.lower()]
    assert warnings == []
    names = zipfile.ZipFile(next(tmp_path.glob("*.whl"))).namelist()
    for needed in ("ha_envs/harness/presets/train-edit.yaml", "ha_envs/harness/presets/h2.yaml",
                   "ha_envs/suites/mini/ttl_cache/task.json", "ha_evolve/prompts/harness_teacher.md"):
        assert needed in names, needed
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)
