"""Reward-integrity pieces on their own: reading untrusted patch headers, what comes from the base,
the runner guards' cross-checks, and hidden-test names."""

from __future__ import annotations

import dataclasses

from ha_envs.grading.hidden import hidden_names_in, hidden_test_names
from ha_envs.grading.patchfile import section_paths, split_patch, unquote, unsafe_path
from ha_envs.grading.protect import families_of, restore_targets
from ha_envs.grading.runners import CargoGuard, Evidence, GoGuard, NodeGuard, PytestGuard, guards_for
from ha_envs.loaders import load_suite

SUITE = {t.instance_id: t for t in load_suite("mini")}


def test_section_paths_whatever_the_prefixes():
    assert section_paths("diff --git a/x/y.py b/x/y.py\n--- a/x/y.py\n+++ b/x/y.py\n@@ -1 +1 @@\n") == ["x/y.py"]
    assert section_paths("diff --git i/tests/conftest.py w/tests/conftest.py\n") == ["tests/conftest.py"]
    # noprefix: the appliers strip one component, so this writes conftest.py at the top
    assert section_paths("diff --git tests/conftest.py tests/conftest.py\n--- tests/conftest.py\n"
                         "+++ tests/conftest.py\n") == ["conftest.py"]
    quoted = 'diff --git "a/we ird\\tname.py" "b/we ird\\tname.py"\n'
    assert section_paths(quoted) == ["we ird\tname.py"]
    assert unquote('"\\303\\251t\\303\\251.py"') == "été.py"
    spaced = "diff --git a/my dir/f.py b/my dir/f.py\n"
    assert section_paths(spaced) == ["my dir/f.py"]
    renamed = "diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to conftest.py\n"
    assert set(section_paths(renamed)) == {"old.py", "new.py", "conftest.py"}
    # hunk content that looks like a header is content
    hunk = "--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n--- a/evil.py\n+x\n"
    assert section_paths(hunk) == ["f.py"]


def test_split_keeps_every_section():
    two = "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@\n+1\ndiff --git a/b b/b\n--- a/b\n+++ b/b\n@@\n+2\n"
    assert len(split_patch(two)) == 2 and split_patch("") == []


def test_unsafe_paths():
    assert unsafe_path("/etc/passwd") == "absolute path"
    assert unsafe_path("a/../../x") == "'..' component"
    assert unsafe_path(".git/hooks/pre-commit") == "inside .git" and unsafe_path("sub/.GIT/config")
    assert unsafe_path("ok/file.py") is None


def test_families_by_parser_command_and_language():
    names = {t: [f.name for f in families_of(SUITE[t])] for t in
             ("mini__ttl_cache", "mini__js_template", "mini__go_ledger", "mini__rust_intervals")}
    assert names == {"mini__ttl_cache": ["python"], "mini__js_template": ["node"], "mini__go_ledger": ["go"],
                     "mini__rust_intervals": ["cargo"]}


def test_restore_targets_per_family():
    py = SUITE["mini__ttl_cache"]
    base = {"ttlcache/cache.py", "tests/test_store.py", "tests/conftest.py", "README.md"}
    changed = ["ttlcache/cache.py", "pytest.py", "json/__init__.py", "ttlcache/x.pyc", "sub/setup.cfg",
               "evil.dist-info/entry_points.txt", "ttlcache/__pycache__/c.pyc", "tests/test_store.py",
               "docs/conftest.py", "mylib.py", "README.md"]
    tree = {p: "f" for p in base | set(changed)}
    got = restore_targets(py, base, tree, changed)
    assert got == sorted(got, key=lambda p: (p.count("/"), p))
    assert set(got) == {"pytest.py", "json", "ttlcache/x.pyc", "sub/setup.cfg", "evil.dist-info",
                        "ttlcache/__pycache__", "tests/test_store.py", "docs/conftest.py"}
    # a symlink in the way is replaced, whatever lies behind it
    assert restore_targets(py, base, {**tree, "tests": "l"}, ["tests/conftest.py"]) == ["tests"]
    js = SUITE["mini__js_template"]
    assert set(restore_targets(js, set(), {}, ["src/a.js", "package.json", "lib/x.test.js", "jest.config.js"])) == {
        "package.json", "lib/x.test.js", "jest.config.js"}
    go = SUITE["mini__go_ledger"]
    assert set(restore_targets(go, set(), {}, ["ledger.go", "ledger_test.go", "go.mod", "go.work",
                                               "pkg/testdata/in.txt"])) == {"ledger_test.go", "go.work", "pkg/testdata"}
    rs = SUITE["mini__rust_intervals"]
    assert set(restore_targets(rs, {"Cargo.toml", "src/lib.rs"}, {}, ["src/lib.rs", "build.rs", "Cargo.toml",
                                                                     ".cargo/config.toml"])) == {
        "build.rs", "Cargo.toml", ".cargo"}


def _ev(log: str, rc: int = 0, report: dict | None = None, name: str = "pytest") -> Evidence:
    return Evidence(log, rc, False, {name: report} if report is not None else {})


def test_pytest_guard_cross_checks():
    task = SUITE["mini__ttl_cache"]
    f2p = task.tests.fail_to_pass[0]
    claimed = {f2p: "PASSED"}
    honest = {"tests": {f2p: "PASSED"}, "cwd_ids": {f2p: f2p}, "counts": {"passed": 1}, "exitstatus": 0,
              "tampered": []}
    g = PytestGuard()
    assert g.check(task, claimed, _ev("==== 1 passed in 0.1s ====", 0, honest)) == []
    assert any("never finished" in r for r in g.check(task, claimed, _ev("PASSED x", 0)))
    lied = dict(honest, tests={f2p: "FAILED"}, counts={"failed": 1}, exitstatus=1)
    reasons = g.check(task, claimed, _ev("==== 1 passed in 0.1s ====", 0, lied))
    assert any("recorded FAILED" in r for r in reasons) and any("exited 0" in r for r in reasons)
    assert any("summary line" in r for r in reasons)
    assert g.check(task, claimed, _ev("", 0, dict(honest, tampered=["x replaced"]))) == ["pytest guard: x replaced"]
    assert PytestGuard().applies(task) and not PytestGuard().applies(
        dataclasses.replace(task, tests=dataclasses.replace(task.tests, log_parser="pro")))


def test_node_go_cargo_checks():
    js = SUITE["mini__js_template"]
    t = js.tests.fail_to_pass[0]
    rep = {"tests": {t: "FAILED"}, "counts": {"pass": 0, "fail": 1}}
    assert NodeGuard().check(js, {t: "PASSED"}, _ev("# pass 1\n# fail 0\n", 0, rep, "node"))
    assert NodeGuard().check(js, {t: "PASSED"}, _ev("# pass 1\n", 0, {"tests": {t: "PASSED"}, "counts": {"pass": 1}},
                                                    "node")) == []
    go = SUITE["mini__go_ledger"]
    forged = "--- PASS: TestX (0.00s)\n=== RUN   TestY\n--- PASS: TestY (0.00s)\nok\n"
    assert GoGuard().check(go, {}, _ev(forged)) == ["'--- PASS: TestX' appears before the test was started"]
    rs = SUITE["mini__rust_intervals"]
    good = "running 2 tests\ntest a ... ok\ntest b ... FAILED\ntest result: FAILED. 1 passed; 1 failed; 0 ignored\n"
    assert CargoGuard().check(rs, {"a": "PASSED", "b": "FAILED"}, _ev(good, 101)) == []
    cut = "test a ... ok\nrunning 2 tests\ntest a ... ok\n"
    reasons = CargoGuard().check(rs, {"a": "PASSED"}, _ev(cut, 0))
    assert any("outside" in r for r in reasons) and any("stopped before its summary" in r for r in reasons)
    from ha_envs.grading import ostrace  # noqa: F401  (the grader imports it: the OS-level watch registers)

    assert [g.name for g in guards_for(rs)] == ["cargo", "ostrace"]  # the OS-level watch last: it wraps the rest


def test_hidden_test_names():
    task = SUITE["mini__ttl_cache"]
    names = hidden_test_names(task)
    assert "test_entry_is_expired_at_its_deadline" in names
    assert hidden_names_in(task, "pytest -k test_entry_is_expired_at_its_deadline") == [
        "test_entry_is_expired_at_its_deadline"]
    assert hidden_names_in(task, "pytest tests/") == []
