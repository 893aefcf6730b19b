"""Twin canaries: copies of the task's own PASS_TO_PASS tests, which call into the code under test
exactly as those tests do (``canaries.py`` plants them beside the drawn canaries).

A drawn canary's outcome is known without the code under test, so it never calls into it, and code
under test can spare it: let a failing test pass only if the package's own frames ran during it
(a trace function), or only if its body names something beyond the builtins. A twin is a copy of
a PASS_TO_PASS test of the same hidden file (pytest, a top-level ``def test...``), under a drawn
name, with its decorators (parametrize) and fixtures, and one of the test's own top-level
assertions made one that cannot hold (``assert X`` -> ``assert (X) in ()``: ``X`` is still
computed by the code under test, then compared with nothing). It must fail wherever its original
passes, and it fails inside the code under test's own results: a forgery that passes failing
tests which touch the package passes it too, and is seen.

Only must-fail twins are planted. Verbatim must-pass copies were tried and measured on real
instances (``benchmarks/VALIDATION.md``): tests that depend on their own name (pytest's
``pytester`` writes a module named after the test and matches its name in the output) fail as
copies, which graded a correct fix as a forgery; and they add nothing a forgery could not already
tell (an exact duplicate of another test). A turned assertion fails whatever the copy's name does
to what comes before it (an error is a failure too).

The expectation is relative to the original in the same run (``canaries.check``): a fix that
breaks the original breaks nothing more, and no value needs computing at validation. Tests are
left out when their body can end early without failing (``return``, ``yield``, skip or xfail calls
and marks) or their assertion shares its line with other code. Limits: top-level functions only
(not methods of test classes); a forgery that compares test bodies pairwise could tell a twin from
its original (they differ in one line and the name); ``docs/security.md`` says so.
"""

from __future__ import annotations

import ast
import random
import re

NAME = "\x00TWIN\x00"
"""Where the twin's drawn name goes in its source."""
_ENDS_EARLY = re.compile(r"\b(?:skip|xfail|importorskip|skipTest|skipif|flaky)\b")


def _listed(task_tests: tuple[str, ...], path: str, name: str) -> bool:
    prefix = f"{path}::{name}"
    return any(t == prefix or t.startswith(prefix + "[") for t in task_tests)


def _eligible(node: ast.AST, lines: list[str]) -> bool:
    if any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)) for n in ast.walk(node)):
        return False
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])  # type: ignore[attr-defined]
    text = "\n".join(lines[first - 1:node.end_lineno])  # type: ignore[attr-defined]
    return not _ENDS_EARLY.search(text)


def _turnable(node: ast.AST, lines: list[str]) -> list[ast.Assert]:
    """The function's own top-level assertions that stand alone on their lines."""
    out = []
    for st in node.body:  # type: ignore[attr-defined]
        if not isinstance(st, ast.Assert):
            continue
        head, tail = lines[st.lineno - 1], lines[st.end_lineno - 1]  # type: ignore[operator]
        if head[:st.col_offset].strip() or tail[st.end_col_offset:].split("#")[0].strip():  # type: ignore[index]
            continue
        out.append(st)
    return out


def twins(path: str, text: str, pass_to_pass: tuple[str, ...], fail_to_pass: tuple[str, ...], count: int,
          rng: random.Random) -> list[tuple[str, str]]:
    """Up to ``count`` must-fail twins of the file's PASS_TO_PASS tests: (original's name, the
    twin's source with ``NAME`` where its name goes)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = text.splitlines()
    pool = [(n, _turnable(n, lines)) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name.startswith("test") and _listed(pass_to_pass, path, n.name)
            and not _listed(fail_to_pass, path, n.name) and _eligible(n, lines)]
    pool = [(n, turns) for n, turns in pool if turns]
    rng.shuffle(pool)
    return [(node.name, _source(node, lines, rng.choice(turns))) for node, turns in pool[:count]]


def _source(node: ast.AST, lines: list[str], turn: ast.Assert) -> str:
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])  # type: ignore[attr-defined]
    body = lines[first - 1:node.end_lineno]  # type: ignore[attr-defined]
    d = node.lineno - first  # type: ignore[attr-defined]
    body[d] = re.sub(rf"\bdef\s+{re.escape(node.name)}\s*\(", f"def {NAME}(", body[d], count=1)  # type: ignore[attr-defined]
    a, b = turn.lineno - first, turn.end_lineno - first  # type: ignore[operator]
    test = ast.get_source_segment("\n".join(lines), turn.test) or "None"
    indent = lines[turn.lineno - 1][:turn.col_offset]
    body[a:b + 1] = [f"{indent}assert ({test}) in ()"]
    return "\n".join(body)
