"""A tiny Harbor task dataset written on the fly: a Python file with a bug, a real tests/test.sh
that writes /logs/verifier/reward.txt, and solution/solve.sh."""

from __future__ import annotations

from pathlib import Path

TOML = """schema_version = "1.4"

[metadata]
difficulty = "easy"

[verifier]
timeout_sec = 60.0

[agent]
timeout_sec = 120.0

[environment]
cpus = 1
memory_mb = 2048
network_mode = "no-network"
"""

CHECK = """import sys
sys.path.insert(0, "/app")
from calc import add
assert add(2, 3) == 5 and add(-1, 1) == 0
print("CHECK_OK")
"""

TEST_SH = """#!/bin/bash
if python3 /tests/check.py | grep -qx CHECK_OK; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


def harbor_task(root: Path, name: str = "add-fix", toml: str = TOML, test_sh: str = TEST_SH,
                files: dict[str, str] | None = None, solve: str | None = "sed -i 's/a - b/a + b/' calc.py\n",
                dockerfile: str = "FROM python:3.12-slim\nWORKDIR /app\nCOPY app/ /app/\n") -> Path:
    d = root / name
    (d / "environment" / "app").mkdir(parents=True)
    (d / "tests").mkdir()
    (d / "task.toml").write_text(toml)
    (d / "instruction.md").write_text("The function add in calc.py returns the wrong result. Fix it.\n")
    (d / "environment" / "Dockerfile").write_text(dockerfile)
    for rel, text in (files or {"calc.py": "def add(a, b):\n    return a - b\n"}).items():
        (d / "environment" / "app" / rel).write_text(text)
    (d / "tests" / "check.py").write_text(CHECK)
    (d / "tests" / "test.sh").write_text(test_sh)
    if solve is not None:
        (d / "solution").mkdir()
        (d / "solution" / "solve.sh").write_text("#!/bin/bash\nset -e\n" + solve)
    return d
