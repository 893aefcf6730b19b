"""Outcome witnesses for Rust tests (``witness.py`` has the Go ones and the reading of the trace).

A Rust test binary prints its own results (libtest), and code under test runs inside it before
``main``: a process constructor (``.init_array``) can list the test functions from the binary's
symbol table, call each under ``catch_unwind``, print a libtest run of its own and exit, lying
about the tests no canary or twin can tell (``tests/ha_envs/grading/inproc_payloads.py``,
``RS_RUN_THEN_LIE``). The trace's kinds see nothing of it.

So every ``#[test] fn name() {`` of a hidden Rust file that hosts canaries (the task's tests there,
in the file's ``mod`` blocks too, the twins and the canaries) gets, as its first statement, a guard
value of a type declared right there, inside the test's body (no module to place, no path to get
right, whatever the file's edition). Its ``Drop`` runs when the test's body ends, by a return or
by a panic unwinding through it: ``std::thread::panicking()`` then says how the test ended (turned
round for a bare ``#[should_panic]``), and the guard starts a thread named by the test's pass token
and ``P`` or by its failure token (drawn apart) and ``F``, which names itself at its start through
``prctl(PR_SET_NAME)`` (the standard library's own naming; glibc's ``pthread_setname_np`` for the
calling thread), which the trace prints. ``witness.tokens`` reads it; ``witness.check`` holds the
log to it (a failure token with a P is ``forged``: a thread name rewritten on its way out).

Why a thread and not ``prctl`` through an ``extern "C"`` declaration: a declaration needs
``unsafe`` to call, which a crate's ``#![forbid(unsafe_code)]`` (common in ``lib.rs``, which
governs a ``src`` file's ``mod tests``) refuses whatever an ``#[allow]`` says, and edition 2024
needs ``unsafe extern`` where compilers before 1.82 reject it. The guard is safe code in every
edition, adds no dependency, and leaves nothing unused for ``#![deny(warnings)]``.

Not witnessed (the log is believed there, canaries and twins aside): tests that return a value
(``-> Result<(), E>``: an ``Err`` is a failure the guard's ``Drop`` cannot see, and wrapping the
body would change how ``?`` and ``return`` read), ``#[should_panic(expected = ...)]`` (a panic with
another message fails, which the guard cannot tell), tests whose signature is not one line ended
by ``{``, tests whose attributes span lines, tests nested in anything but ``mod`` blocks, a body
that opens with inner attributes, a file that says ``#![no_std]`` (a ``no_std`` crate whose other
files host the canaries and has no ``std`` under test does not build with the guard: all its tests
fail, which costs the gold patch its reward and shows in validation), and builds with
``panic = "abort"`` (a failing test leaves no witness, which counts only against a test the log
says passed, as it should). An ignored test
does not run and leaves none; one the log says ignored is not held to anything.
"""

from __future__ import annotations

import random
import re
from pathlib import PurePosixPath

_FN = re.compile(r"^([ \t]*)(?:pub(?:\([\w ]+\))?\s+)?fn (\w+)\(\)\s*(?:->\s*\(\)\s*)?\{[ \t]*$")
_MOD = re.compile(r"^([ \t]*)(?:pub(?:\([\w ]+\))?\s+)?mod (\w+)\s*\{[ \t]*$")
_ATTR = re.compile(r"^[ \t]*#\[.*\][ \t]*$")

_GUARD = ("let _{var} = {{ struct {ty}(&'static str, &'static str, bool); impl Drop for {ty} {{ fn drop(&mut self) {{ "
          "let n = if ::std::thread::panicking() != self.2 {{ self.1 }} else {{ self.0 }}; "
          "for _ in 0..200 {{ "
          "match ::std::thread::Builder::new().name(::std::string::String::from(n)).spawn(|| {{}}) {{ "
          "Ok(h) => {{ let _ = h.join(); break; }} "
          "Err(_) => ::std::thread::sleep(::std::time::Duration::from_millis(5)), }} }} }} }} "
          "{ty}(\"{passed}P\", \"{failed}F\", {inverted}) }};")
"""The first statement of a witnessed test (one line, so the test's line numbers move by one):
the type is the test's own, declared in its body; the witness is the thread's name. A thread that
cannot start (a process limit: libtest then runs the test on its own thread) is tried again for up
to a second, since a witness missing from a test the log says passed is an alarm. A pass and a
failure have tokens of their own, drawn apart: a thread name seen on its way out (a
``pthread_setname_np`` or ``prctl`` of the binary's own, which the static link prefers to
glibc's) that says F gives nothing from which to write the P one."""


def module_prefix(path: str) -> str:
    """The module path cargo's test names give a file's top-level tests (``src/set.rs`` ->
    ``set::``), by the standard layout; "" for a crate root or an integration test target. A
    file a ``#[path]`` puts elsewhere gets names the log does not use, so it is not checked."""
    parts = list(PurePosixPath(path).parts)
    roots = [i for i, p in enumerate(parts[:-1]) if p == "src"] or [i for i, p in enumerate(parts[:-1]) if p == "tests"]
    at = roots[-1] if roots else None
    if at is None:
        return ""
    rest = parts[at + 1:]
    if parts[at] == "tests" or rest[0] == "bin":  # a target of its own: tests/x.rs, tests/x/main.rs, src/bin/x.rs
        rest = rest[2:] if parts[at] == "src" else rest[1:]
    if rest and rest[-1] in ("lib.rs", "main.rs", "mod.rs"):
        rest = rest[:-1]
    names = [p.removesuffix(".rs") for p in rest]
    return "".join(n + "::" for n in names)


def _mods(lines: list[str], at: int, ind: str) -> list[str] | None:
    """The ``mod`` blocks around line ``at`` (indented ``ind``), outermost first; None when a block
    around it is anything else (a function, an ``impl``: libtest cannot name a test there)."""
    path: list[str] = []
    for k in range(at - 1, -1, -1):
        text = lines[k]
        if not ind:
            return path
        if not text.strip() or len(text) - len(text.lstrip()) >= len(ind) or text.lstrip().startswith(("#[", "//")):
            continue
        m = _MOD.match(text)
        if m is None:
            return None
        path.insert(0, m.group(2))
        ind = m.group(1)
    return path if not ind else None


def _attributes(lines: list[str], at: int) -> list[str] | None:
    """The one-line attributes right above line ``at`` (comments skipped); None when one spans lines."""
    out = []
    for k in range(at - 1, -1, -1):
        text = lines[k].strip()
        if text.startswith("//"):
            continue
        if _ATTR.match(lines[k]):
            out.append(text.replace(" ", ""))
        elif text.endswith(("]", ")", ",")) or text.startswith(("#[", ")")):
            return None
        else:
            return out
    return out


def _token(rng: random.Random, tokens: dict[str, str]) -> str:
    taken = {t for key in tokens for t in key.split("+")}
    token = f"w{rng.getrandbits(32):08x}"
    while token in taken:
        token = f"w{rng.getrandbits(32):08x}"
    return token


def witnessed(path: str, text: str, rng: random.Random, tokens: dict[str, str]) -> str:
    """``text`` with a guard as the first statement of each test it can witness; ``tokens`` gains
    ``<pass token>+<failure token>`` -> the test's name as the log gives it (``witness.check``)."""
    if re.search(r"^[ \t]*#!\[no_std\]", text, re.M):
        return text  # the guard names ``::std``
    lines = text.split("\n")
    prefix = module_prefix(path)
    out: list[str] = []
    for i, line in enumerate(lines):
        out.append(line)
        m = _FN.match(line)
        attrs = _attributes(lines, i) if m else None
        if not m or not attrs or "#[test]" not in attrs or any(a.startswith("#[should_panic(") for a in attrs):
            continue
        if i + 1 < len(lines) and lines[i + 1].lstrip().startswith("#!"):
            continue  # inner attributes must open the body
        mods = _mods(lines, i, m.group(1))
        if mods is None:
            continue
        passed, failed = _token(rng, tokens), _token(rng, tokens)
        tokens[f"{passed}+{failed}"] = prefix + "".join(n + "::" for n in mods) + m.group(2)
        ty = "HaW" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8))
        inverted = "true" if "#[should_panic]" in attrs or "#[should_panic()]" in attrs else "false"
        out.append(m.group(1) + "    " + _GUARD.format(var=ty.lower(), ty=ty, passed=passed, failed=failed,
                                                      inverted=inverted))
    return "\n".join(out)
