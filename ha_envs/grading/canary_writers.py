"""The canaries' text: names and bodies written as the host file's own tests are (``canaries.py``).

Names are three to five words from the file's own test names (and a few common ones), in the
language's convention; bodies compute a sum, maximum or length of a few random numbers and assert
the true result (must pass) or one off by a few (must fail), with the file's own ``assert`` and
``test`` bindings where it has them.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Canary:
    name: str
    """The name the runner reports it by (a function name, or a JavaScript test's title)."""
    must_fail: bool
    host: str
    """The hidden test file it was appended to."""
    title: bool = False
    """Matched as a whole title (JavaScript), not as an identifier inside the reported name."""
    twin: str = ""
    """A twin's original (``canary_twins.py``): the PASS_TO_PASS test of the same file it copies;
    it must come out as the original does (must pass) or fail where the original passes."""
    turned: bool = False
    """A must-fail twin whose check was turned round (no literal of its expected value to perturb,
    ``canary_twins_braces.py``; pytest's twins always): its text tells it from its original."""

_GENERIC = ("value", "values", "entry", "entries", "total", "result", "list", "order", "range", "empty",
            "single", "merge", "keeps", "returns", "handles", "after", "before", "nested", "default",
            "repeated", "update", "lookup", "count", "limit", "first", "last", "round", "trip")


def _words(names: list[str]) -> list[str]:
    words: list[str] = []
    for n in names:
        n = re.sub(r"^(?:test|Test)_?", "", n)
        for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", n):
            w = w.lower()
            if len(w) >= 3 and w not in words:
                words.append(w)
    return words


def _name(kind: str, existing: list[str], taken: set[str], rng: random.Random) -> str:
    own = _words(existing)
    pool = own + [w for w in _GENERIC if rng.random() < 0.5]
    pool = list(dict.fromkeys(pool)) or list(_GENERIC)
    while True:
        words = [rng.choice(pool) for _ in range(rng.randint(3, 5))]
        if len(set(words)) < len(words):
            continue
        if own and not set(words) & set(own):
            continue  # a name of generic words only would stand out among the file's own tests
        if kind in ("pytest", "unittest"):
            name = "test_" + "_".join(words)
        elif kind == "go":
            name = "Test" + "".join(w.capitalize() for w in words)
        elif kind == "cargo":
            name = "_".join(words)
        else:
            name = " ".join(words)
        if name not in taken and not any(name in t or t in name for t in existing if kind in ("node", "jest", "mocha")):
            return name


def _ident(rng: random.Random, taken: set[str], prefix: str = "") -> str:
    while True:
        name = prefix + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(5, 8)))
        if name not in taken:
            taken.add(name)
            return name


def _data(rng: random.Random, must_fail: bool) -> tuple[list[int], str, int]:
    """(values, what is computed of them, the expected result; wrong by a few when ``must_fail``)."""
    values = [rng.randint(1, 99) for _ in range(rng.randint(3, 6))]
    op = rng.choice(("sum", "max", "len"))
    want = {"sum": sum(values), "max": max(values), "len": len(values)}[op]
    if must_fail:
        want += rng.choice((-3, -2, -1, 1, 2, 3, 7))
    return values, op, want


def _pytest(text: str, canaries: list[Canary], rng: random.Random, taken: set[str]) -> str:
    out = []
    for c in canaries:
        values, op, want = _data(rng, c.must_fail)
        var = rng.choice(("values", "items", "numbers", "data"))
        out.append(f"\n\ndef {c.name}():\n    {var} = {values!r}\n    assert {op}({var}) == {want}\n")
    return "".join(out)


def _testcase_base(text: str) -> str | None:
    """The first base of the file's classes named like a TestCase (the file's tests are classes)."""
    for m in re.finditer(r"^class \w+\(([\w.]+)(?:,[^)]*)?\):", text, re.M):
        if m.group(1).endswith("TestCase"):
            return m.group(1)
    return None


_STANDARD_BASE = re.compile(r"^(?:[\w.]+\.)?(?:Simple|Transaction)?TestCase$")


def _standard_base(text: str) -> str | None:
    """A base of the file's classes that is unittest's or Django's own TestCase: a class of the
    project's (``AdminScriptTestCase``, pylint's ``CheckerTestCase``) may need class attributes a
    canary cannot give."""
    for m in re.finditer(r"^class \w+\(([^)]*)\):", text, re.M):
        for base in (b.strip() for b in m.group(1).split(",")):
            if _STANDARD_BASE.match(base):
                return base
    return None


def _unittest(text: str, canaries: list[Canary], rng: random.Random, taken: set[str]) -> str:
    base = _standard_base(text) or "unittest.TestCase"
    head = "\n\nimport unittest\n" if base.startswith("unittest.") and not re.search(r"^import unittest\b", text, re.M) else ""
    # "Test..." and a plain assert: a base named *TestCase need not be unittest's (pylint's
    # CheckerTestCase is a plain class that pytest collects by its name and that has no assertEqual)
    cls = "Test" + _ident(rng, taken).capitalize()
    body = []
    for c in canaries:
        values, op, want = _data(rng, c.must_fail)
        body.append(f"    def {c.name}(self):\n        values = {values!r}\n"
                    f"        assert {op}(values) == {want}\n")
    return head + f"\n\nclass {cls}({base}):\n" + "\n".join(body)


_JS_OP = {"sum": "{v}.reduce((a, b) => a + b, 0)", "max": "Math.max(...{v})", "len": "{v}.length"}


def _js_binding(text: str, module: str) -> str | None:
    """The name the file binds ``module`` (``node:test``, ``node:assert``) to, if it binds one."""
    mod = rf"['\"](?:node:)?{module}(?:/strict)?['\"]"
    for pat in (rf"(?:const|let|var)\s+(\w+)\s*=\s*require\(\s*{mod}\s*\)",
                rf"^import\s+(\w+)\s+from\s+{mod}", rf"^import\s+\*\s+as\s+(\w+)\s+from\s+{mod}"):
        m = re.search(pat, text, re.M)
        if m:
            return m.group(1)
    if module == "test":
        m = re.search(rf"(?:const|let|var)\s*\{{([^}}]*)\}}\s*=\s*require\(\s*{mod}\s*\)|^import\s*\{{([^}}]*)\}}\s*from\s+{mod}",
                      text, re.M)
        if m:
            names = [n.strip() for n in (m.group(1) or m.group(2)).split(",")]
            for n in names:
                parts = re.split(r"\s*(?::|\bas\b)\s*", n)
                if parts[0] in ("test", "it"):
                    return parts[-1]
    return None


def _esm(text: str) -> bool:
    return bool(re.search(r"^\s*(?:import\s[^(]|export\s)", text, re.M))


def _js(kind: str):
    def write(text: str, canaries: list[Canary], rng: random.Random, taken: set[str]) -> str:
        esm = _esm(text)
        head = []
        if kind == "jest":
            test, check = ("it" if re.search(r"\bit\s*\(", text) and not re.search(r"\btest\s*\(", text) else "test"), None
        else:
            test = _js_binding(text, "test") if kind == "node" else "it"
            if test is None:
                test = _ident(rng, taken)
                head.append(f"import {{ test as {test} }} from 'node:test';" if esm
                            else f"const {{ test: {test} }} = require('node:test');")
            check = _js_binding(text, "assert")
            if check is None:
                check = _ident(rng, taken)
                head.append(f"import {check} from 'node:assert';" if esm else f"const {check} = require('node:assert');")
        out = ["\n" + "\n".join(head)] if head else []
        for c in canaries:
            values, op, want = _data(rng, c.must_fail)
            var = rng.choice(("values", "items", "list", "input"))
            got = _JS_OP[op].format(v=var)
            assertion = f"expect({got}).toBe({want});" if check is None else f"{check}.strictEqual({got}, {want});"
            out.append(f"\n{test}('{c.name}', () => {{\n  const {var} = {values!r};\n  {assertion}\n}});\n")
        return "".join(out)
    return write


_GO_OP = {"sum": "total := 0\n\tfor _, v := range {v} {{\n\t\ttotal += v\n\t}}",
          "max": "total := {v}[0]\n\tfor _, v := range {v} {{\n\t\tif v > total {{\n\t\t\ttotal = v\n\t\t}}\n\t}}",
          "len": "total := len({v})"}


def _go(text: str, canaries: list[Canary], rng: random.Random, taken: set[str]) -> str:
    out = []
    for c in canaries:
        values, op, want = _data(rng, c.must_fail)
        var = rng.choice(("values", "amounts", "items"))
        out.append(f"\nfunc {c.name}(t *testing.T) {{\n\t{var} := []int{{{', '.join(map(str, values))}}}\n\t"
                   f"{_GO_OP[op].format(v=var)}\n\tif total != {want} {{\n\t\tt.Errorf(\"got %d, want %d\", total, {want})\n\t}}\n}}\n")
    return "".join(out)


def go_imports_testing(text: str) -> bool:
    """The file imports ``testing`` under its own name (appended tests can use it)."""
    return bool(re.search(r'^import\s+"testing"|^import\s*\((?:[^)]*\n)?\s*"testing"\s*$', text, re.M))


_RS_OP = {"sum": "{v}.iter().sum::<i64>()", "max": "*{v}.iter().max().unwrap()", "len": "{v}.len() as i64"}


def _cargo(text: str, canaries: list[Canary], rng: random.Random, taken: set[str]) -> str:
    out = []
    for c in canaries:
        values, op, want = _data(rng, c.must_fail)
        var = rng.choice(("values", "items", "bounds"))
        out.append(f"\n#[test]\nfn {c.name}() {{\n    let {var}: Vec<i64> = vec!{values!r};\n"
                   f"    assert_eq!({_RS_OP[op].format(v=var)}, {want});\n}}\n")
    return "".join(out)


Writer = Callable[[str, list[Canary], random.Random, set[str]], str]
"""(the host file's text, its canaries, the grader's RNG, names already taken) -> the text to append."""

WRITERS: dict[str, Writer] = {"pytest": _pytest, "unittest": _unittest, "node": _js("node"), "jest": _js("jest"),
           "mocha": _js("mocha"), "go": _go, "cargo": _cargo}
