"""The pre-install steps of a SWE-bench spec, applied to the task's snapshot.

swebench's official images run the spec's ``pre_install`` commands in ``/testbed`` before installing
the repository: sphinx pins its dependencies by editing ``setup.py`` and adds ``-rA`` to ``tox.ini``,
astropy pins setuptools in ``pyproject.toml``, pytest fixes a typo in ``setup.cfg``. Those edits are
part of the environment the tests were validated in, so they are applied to the snapshot here and
committed on top of the base commit ("environment setup"): the agent starts from them and its diff
does not contain them. Steps that install system packages (``apt-get``, ``locale-gen``) cannot run on
the host or in a sandbox without root; they are reported, not run, and so are steps that fail (the
report lands in the validation result as a named problem, never silently dropped).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

SYSTEM_STEP = re.compile(r"^\s*(sudo\s+)?(apt(-get)?|dpkg|locale-gen|yum|apk|update-locale)\b|>\s*/etc/")
REPORT = "ha-setup.json"
"""Where a snapshot records what happened to its steps (under ``.git/``)."""


@dataclass
class SetupReport:
    applied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """System steps not run (they need root and a package manager)."""
    failed: str = ""
    """The step that failed and why ("" when all ran); steps after it did not run."""

    def problems(self) -> list[str]:
        out = [f"pre-install step needs system packages and was not run: {s[:160]}" for s in self.skipped]
        if self.failed:
            out.append(f"pre-install step failed: {self.failed}")
        return out


def pre_install_steps(task: object) -> list[str]:
    specs = (getattr(getattr(task, "environment", None), "extra", None) or {}).get("specs") or {}
    steps = specs.get("pre_install") or []
    return [steps] if isinstance(steps, str) else [str(s) for s in steps]


def apply_steps(repo: Path, steps: list[str], timeout_s: float = 300.0) -> SetupReport:
    """Run the repository steps of ``steps`` in ``repo`` as one script (so variables carry over, as
    in swebench's setup script), stopping at the first failure; returns what was done."""
    report = SetupReport()
    runnable = []
    for step in steps:
        (report.skipped if SYSTEM_STEP.search(step) else runnable).append(step)
    if runnable:
        script = "set -e\n" + "".join(f"echo '@@ha-step {i}'\n{step}\n" for i, step in enumerate(runnable))
        try:
            proc = subprocess.run(["bash", "-c", script], cwd=repo, capture_output=True, text=True, timeout=timeout_s)
            out, rc = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as exc:
            out, rc = f"{exc.stdout or ''}timed out after {timeout_s:.0f} s", -1
        done = [int(m) for m in re.findall(r"^@@ha-step (\d+)$", out, re.M)]
        last = max(done, default=-1)
        if rc == 0:
            report.applied = runnable
        else:
            report.applied = runnable[:last]
            tail = re.sub(r"^@@ha-step \d+\n?", "", out, flags=re.M).strip()[-300:]
            report.failed = f"{runnable[last][:160] if last >= 0 else '(start)'} (exit {rc}): {tail}"
    (repo / ".git" / REPORT).write_text(json.dumps(asdict(report), indent=1))
    return report


def setup_report(snapshot_path: Path) -> SetupReport | None:
    f = Path(snapshot_path) / ".git" / REPORT
    return SetupReport(**json.loads(f.read_text())) if f.is_file() else None


__all__ = ["SetupReport", "apply_steps", "pre_install_steps", "setup_report"]
