"""The commands the README and the CLI reference show are real: each parses with `ha`'s own parser,
and the README's cheap tour commands print what the README says they print."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ha_cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _shown(text: str, console_only: bool) -> list[str]:
    """`ha ...` command lines in the fenced blocks of a Markdown text (a `$ ` prompt in console blocks)."""
    out = []
    for block in re.findall(r"```(?:bash|console)\n(.*?)```", text, re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():  # join continued lines
            line = line.strip()
            if console_only:
                if not line.startswith("$ ha "):
                    continue
                line = line[2:]
            elif not line.startswith("ha "):
                continue
            line = re.sub(r"\s+#.*$", "", line)  # a comment after the command
            line = re.sub(r"\s*\[[^\]]*\]", "", line)  # optional parts, [--json]
            if "..." in line or "$(" in line or "|" in shlex.split(line):  # elided, or a shell pipeline
                continue
            out.append(line)
    return out


def _parses(command: str) -> None:
    argv = shlex.split(command)[1:]
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"does not parse: {command}") from exc


README_COMMANDS = _shown(README, console_only=True)
CLI_COMMANDS = _shown((ROOT / "docs" / "cli.md").read_text(), console_only=False)


def test_the_docs_show_commands():
    assert len(README_COMMANDS) >= 6 and len(CLI_COMMANDS) >= 30


@pytest.mark.parametrize("command", README_COMMANDS + CLI_COMMANDS)
def test_every_shown_command_parses(command):
    _parses(command)


@pytest.mark.parametrize("command", ["ha tasks list --suite mini", "ha harness list", "ha harness diff h0 h1"])
def test_the_tour_prints_what_the_readme_shows(command):
    proc = subprocess.run([sys.executable, "-m", "ha_cli.main", *shlex.split(command)[1:]], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    block = README.split(f"$ {command}\n", 1)[1]
    shown = [line for line in block.split("\n$ ")[0].split("```")[0].splitlines() if line and line != "..."]
    printed = proc.stdout.splitlines()
    assert shown and all(line in printed for line in shown), (shown, printed)


def test_the_python_tour_runs_as_written(tmp_path):
    """README's Python block, run as a user would (a fresh interpreter, in an empty folder): the env
    episode ends graded and the oracle's evaluation resolves every episode."""
    code = re.findall(r"```python\n(.*?)```", README, re.S)
    assert code
    for block in code:
        compile(block, "README.md", "exec")
    check = ('\nassert info["termination"] == "submitted" and info["grade"]["resolved"] is False\n'
             'assert summary.mean_pass_at_1 == 1.0 and summary.masked == 0\n')
    run = subprocess.run([sys.executable, "-c", code[0] + check], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "runs" / "api" / "summary.json").is_file()


def test_every_doc_link_resolves():
    for doc in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#]+)\)", doc.read_text()):
            if "://" not in target:
                assert (doc.parent / target).exists(), f"{doc.name} links to a missing {target}"
