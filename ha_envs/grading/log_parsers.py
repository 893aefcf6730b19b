"""Test-log parsers: a runner's output -> {test id: status}.

Statuses are SWE-bench's: PASSED, FAILED, SKIPPED, ERROR, XFAIL. When a test is reported more than
once (a rerun, a subtest) the worst status wins, so a flaky or partly failing test never counts as
passed.
"""

from __future__ import annotations

import re
from typing import Callable

PASSED, FAILED, SKIPPED, ERROR, XFAIL = "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"
_RANK = {PASSED: 0, XFAIL: 1, SKIPPED: 2, FAILED: 3, ERROR: 4}

Parser = Callable[[str], dict[str, str]]
PARSERS: dict[str, Parser] = {}


def register(name: str) -> Callable[[Parser], Parser]:
    def deco(fn: Parser) -> Parser:
        PARSERS[name] = fn
        return fn
    return deco


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def decolor(name: str) -> str:
    return _ANSI.sub("", name)


def parse_r2e(log: str) -> dict[str, str]:
    """R2E-Gym's reading of a ``pytest -rA`` log: only the ``short test summary info`` section; a
    test's name is the part after the file (``Class::test`` -> ``Class.test``), without colour
    codes and without the `` - reason`` suffix; PASSED, FAILED or ERROR."""
    if "short test summary info" not in log:
        return {}
    out: dict[str, str] = {}
    for line in log.split("short test summary info", 1)[1].splitlines():
        line = decolor(line).strip()
        status, _, ref = line.partition(" ")
        if status not in (PASSED, FAILED, ERROR):
            continue
        parts = ref.split("::")
        name = ".".join(parts[1:]) if len(parts) > 1 else ref
        out[name.split(" - ")[0].strip()] = status
    return out


def get_parser(name: str, instance_id: str = "") -> Parser:
    """A parser by name; ``swebench:<owner/repo>`` is that repo's official parser from ``swebench<5``
    (some of those read the instance id: immutable-js, the Ruby repos)."""
    if name.startswith("swebench:"):
        return swebench_parser(name.split(":", 1)[1], instance_id)
    if name == "r2e":
        return parse_r2e
    if name == "pro":
        from .pro import parse_output

        return parse_output
    try:
        return PARSERS[name]
    except KeyError:
        raise KeyError(f"unknown log parser {name!r}; available: {', '.join(sorted(PARSERS))}, swebench:<repo>") from None


def swebench_parser(repo: str, instance_id: str = "") -> Parser:
    from types import SimpleNamespace

    from swebench.harness.log_parsers import MAP_REPO_TO_PARSER

    if repo not in MAP_REPO_TO_PARSER:
        raise KeyError(f"swebench has no log parser for {repo}")
    official = MAP_REPO_TO_PARSER[repo]
    spec = SimpleNamespace(instance_id=instance_id)  # the only TestSpec field swebench 4.x parsers read

    def parse(log: str) -> dict[str, str]:
        raw = official(log, spec)
        return {test: {"XPASS": PASSED}.get(status, status) for test, status in raw.items()}
    return parse


def _put(out: dict[str, str], test: str, status: str) -> None:
    old = out.get(test)
    if old is None or _RANK[status] > _RANK[old]:
        out[test] = status


_PYTEST_LINE = re.compile(r"^(PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)\s+(\S+?)(?:\s+-\s+.*)?$")


@register("pytest")
def parse_pytest(log: str) -> dict[str, str]:
    """``pytest -rA`` short summary lines: ``PASSED path::test`` / ``FAILED path::test - msg``."""
    out: dict[str, str] = {}
    for line in log.splitlines():
        m = _PYTEST_LINE.match(line.strip())
        if not m:
            continue
        status, test = m.groups()
        if status == "XPASS":  # strict xfail semantics: an unexpected pass is not a pass
            status = FAILED
        if status == SKIPPED and test.startswith("["):  # "SKIPPED [1] path:line: reason"
            continue
        _put(out, test, status)
    return out


_TAP_LINE = re.compile(r"^(\s*)(not ok|ok)\s+\d+\s*(?:-\s*)?(.*?)(\s+#\s*(SKIP|TODO)\b.*)?$", re.I)


@register("node_tap")
def parse_node_tap(log: str) -> dict[str, str]:
    """TAP from ``node --test --test-reporter=tap``; nested subtests are ``parent > child``.

    Node prints a subtest's result before its parent's, indented by four spaces per level, and
    announces each with ``# Subtest: name``; the announcement stack names the parents.
    """
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in log.splitlines():
        sub = re.match(r"^(\s*)# Subtest: (.*)$", line)
        if sub:
            depth = len(sub.group(1))
            while stack and stack[-1][0] >= depth:
                stack.pop()
            stack.append((depth, sub.group(2).strip()))
            continue
        m = _TAP_LINE.match(line)
        if not m:
            continue
        depth = len(m.group(1))
        name = m.group(3).strip()
        parents = [n for d, n in stack if d < depth]
        while stack and stack[-1][0] >= depth:
            stack.pop()
        test = " > ".join([*parents, name]) if parents else name
        if m.group(5):
            status = SKIPPED
        else:
            status = PASSED if m.group(2).lower() == "ok" else FAILED
        _put(out, test, status)
    return out


_GO_LINE = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+) \(")
_GO_PANIC = re.compile(r"^=== RUN\s+(\S+)")


@register("go_test")
def parse_go_test(log: str) -> dict[str, str]:
    """``go test -v``: ``--- PASS: TestName (0.00s)``; a test that started but never reported
    (a panic or a build failure mid-run) is FAILED."""
    out: dict[str, str] = {}
    started: list[str] = []
    for line in log.splitlines():
        run = _GO_PANIC.match(line)
        if run:
            started.append(run.group(1))
            continue
        m = _GO_LINE.match(line)
        if m:
            status = {"PASS": PASSED, "FAIL": FAILED, "SKIP": SKIPPED}[m.group(1)]
            _put(out, m.group(2), status)
    for test in started:
        out.setdefault(test, FAILED)
    return out


CARGO_LINE = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored|failed)\b")
"""One test's result line of ``cargo test`` (the parser's and the runner guard's)."""


@register("cargo_test")
def parse_cargo_test(log: str) -> dict[str, str]:
    """``cargo test``: ``test path::name ... ok``; ignored tests are SKIPPED."""
    out: dict[str, str] = {}
    for line in log.splitlines():
        m = CARGO_LINE.match(line.strip())
        if m:
            status = {"ok": PASSED, "FAILED": FAILED, "failed": FAILED, "ignored": SKIPPED}[m.group(2)]
            _put(out, m.group(1), status)
    return out
