"""Every tool of the catalogue, run inside a real sandbox: what it does, and each failure message."""

from __future__ import annotations

import pytest

from ha_envs.harness import TOOLS

from tests.ha_envs.harness.conftest import ALL_TOOLS


def test_catalogue_renders_openai_and_mcp_schemas():
    assert len(TOOLS) >= 12 and set(ALL_TOOLS) <= set(TOOLS)
    for tool in TOOLS.values():
        oa, mcp = tool.openai_schema(), tool.mcp_schema()
        assert oa["type"] == "function" and oa["function"]["name"] == tool.name
        assert mcp["name"] == tool.name and mcp["inputSchema"]["type"] == "object"
        assert set(mcp["inputSchema"]["required"]) <= set(mcp["inputSchema"]["properties"])


def test_read_file(drive):
    d = drive()
    out = d.text("read_file", path="calc.py", start_line=5, end_line=6)
    assert out.splitlines() == ["     5\tdef clamp(x, lo, hi):", '     6\t    """Clamp x into [lo, hi]."""']
    assert "does not exist. Did you mean: calc.py?" in d.text("read_file", path="calcc.py")
    assert "outside calc.py (it has 11 lines)" in d.text("read_file", path="calc.py", start_line=50)
    assert "end_line 2 is before start_line 4" in d.text("read_file", path="calc.py", start_line=4, end_line=2)
    assert "is a directory" in d.text("read_file", path="tests")
    d("bash", command="head -c 100 /dev/urandom > blob.bin; printf '\\0' >> blob.bin; seq 1 1000 > big.txt")
    assert "binary file" in d.text("read_file", path="blob.bin")
    big = d.text("read_file", path="big.txt")
    assert big.splitlines()[-2] == "   400\t400" and "has 1000 lines; showing 1-400" in big
    assert d.info["tool_errors"] == 5


def test_edit_file_unique_match_and_why_not(drive):
    d = drive()
    ok = d.text("edit_file", path="calc.py", old_str="        return lo\n    return x",
                new_str="        return hi\n    return x")
    assert ok.startswith("Edited calc.py.") and "return hi" in ok
    assert "return hi" in d.text("bash", command="sed -n 10p calc.py")
    multi = d.text("edit_file", path="calc.py", old_str="    if x", new_str="    if y")
    assert "occurs 2 times in calc.py (at lines 7, 9)" in multi
    ws = d.text("edit_file", path="calc.py", old_str="def add(a, b):\n  return a + b", new_str="x")
    assert "not found" in ws and "whitespace is ignored" in ws
    close = d.text("edit_file", path="calc.py", old_str="def clampp(x, lo, hi):", new_str="x")
    assert "closest line to its first line is 5" in close
    assert "identical" in d.text("edit_file", path="calc.py", old_str="def", new_str="def")
    assert "old_str is empty" in d.text("edit_file", path="calc.py", old_str="", new_str="x")
    assert "does not exist" in d.text("edit_file", path="nope.py", old_str="a", new_str="b")


def test_create_insert_undo_restore(drive):
    d = drive()
    assert "Created pkg/new.py (2 lines)" in d.text("create_file", path="pkg/new.py", content="a = 1\nb = 2\n")
    assert "already exists" in d.text("create_file", path="pkg/new.py", content="x")
    assert "Inserted 1 line(s) after line 1" in d.text("insert_lines", path="pkg/new.py", line=1, text="c = 3")
    assert d.text("bash", command="cat pkg/new.py").count("c = 3") == 1
    assert "outside 0..3" in d.text("insert_lines", path="pkg/new.py", line=9, text="x")
    assert "Reverted the last edit of pkg/new.py" in d.text("undo_edit", path="pkg/new.py")
    assert "c = 3" not in d.text("bash", command="cat pkg/new.py")
    assert "Undid the creation of pkg/new.py" in d.text("undo_edit", path="pkg/new.py")
    assert "No such file" in d.text("bash", command="cat pkg/new.py")
    assert "no edit of pkg/new.py to undo" in d.text("undo_edit", path="pkg/new.py")
    d("bash", command="echo broken > calc.py")
    assert "Restored calc.py to the base commit" in d.text("restore_file", path="calc.py")
    assert "def clamp" in d.text("bash", command="cat calc.py")
    assert "Reverted" in d.text("undo_edit", path="calc.py")
    assert "broken" in d.text("bash", command="cat calc.py")
    d("bash", command="echo x > scratch.txt")
    assert "not in the base commit: removed it" in d.text("restore_file", path="scratch.txt")
    assert "neither in the base commit nor on disk" in d.text("restore_file", path="ghost.py")


def test_search_and_find_files(drive):
    d = drive()
    out = d.text("search", pattern="def clamp")
    assert out == "calc.py:5:def clamp(x, lo, hi):"
    assert "calc.py:2:    return a + b" in d.text("search", pattern=r"return a \+ b", regex=True, include="*.py")
    assert "No matches for 'zebra'" in d.text("search", pattern="zebra")
    assert "search failed" in d.text("search", pattern="(", regex=True)
    d("bash", command="for i in $(seq 150); do echo needle$i >> hay.txt; done")
    capped = d.text("search", pattern="needle")
    assert "150 matches; showing the first 100" in capped
    assert d.text("find_files", pattern="test_*.py") == "tests/test_visible.py"
    assert "No files match" in d.text("find_files", pattern="*.rs")
    assert "is not a directory" in d.text("find_files", pattern="*", path="nowhere")


def test_view_diff_uses_its_own_index(drive):
    d = drive()
    assert "No changes against the base commit" in d.text("view_diff")
    d("bash", command="sed -i 's/return lo$/return hi/' calc.py && echo 'new' > added.txt && git add calc.py")
    diff = d.text("view_diff")
    assert "+++ b/calc.py" in diff and "+++ b/added.txt" in diff
    assert "added.txt" in d.text("view_diff", stat=True)
    assert "added.txt" not in d.text("view_diff", path="calc.py")
    # the agent's index is untouched: only calc.py is staged
    assert d.text("bash", command="git diff --cached --name-only").count("added.txt") == 0


def test_run_check_caps_time(drive):
    from tests.ha_envs.harness.conftest import spec_with
    d = drive(spec_with(tools=("bash", ("run_check", {"timeout_s": 3.0}), "submit")))
    out = d.text("run_check", command="sleep 30; echo never")
    assert "run_check stops commands after 3 s" in out and "never" not in out
    # a quick command is not stopped (a shell builtin: a loaded CI machine starts python slowly)
    assert "<returncode>0</returncode>" in d.text("run_check", command="echo 42")


def test_run_tests_selects_relevant_tests_python(drive):
    d = drive()
    assert "no changes yet" in d.text("run_tests")
    d("create_file", path="tests/test_calc_clamp.py", content="from calc import clamp\n\n\ndef test_hi():\n    assert clamp(9, 0, 5) == 5\n")
    d("edit_file", path="calc.py", old_str="        return lo\n    return x", new_str="        return hi\n    return x")
    out = d.text("run_tests")
    assert "Runner: pytest" in out and "tests/test_calc_clamp.py (score" in out
    assert "(score 9: named after a changed module; changed by you; references calc, clamp; next to the change)" in out, out
    assert "tests/test_visible.py (score 3: references calc; next to the change)" in out  # imports calc too
    assert "2 passed" in out
    assert d.info["test_runs"] == 1
    given = d.text("run_tests", paths=["tests/test_visible.py"])
    assert "$ python -m pytest -q -p no:cacheprovider 'tests/test_visible.py'" in given and "1 passed" in given
    assert "no such test path" in d.text("run_tests", paths=["tests/missing.py"])


@pytest.mark.parametrize("instance,runner,expect", [
    ("mini__go_ledger", "go test", "ok"),
    ("mini__js_template", "node --test", "# pass"),
    ("mini__rust_intervals", "cargo test", "test result"),
])
def test_run_tests_other_languages(drive, instance, runner, expect):
    from ha_envs.loaders import load_suite
    from ha_agents.llm.patch_edits import patch_to_edits
    from ha_envs.sandbox.provision.workcopy import prepare_snapshot
    task = next(t for t in load_suite("mini") if t.instance_id == instance)
    d = drive(task=task)
    snap = prepare_snapshot(task)
    for edit in patch_to_edits(task.gold_patch, lambda p: (snap.path / p).read_text()):
        assert "Edited" in d.text("edit_file", path=edit.path, old_str=edit.old, new_str=edit.new)
    out = d.text("run_tests")
    assert f"Runner: {runner}" in out and expect in out, out[-2000:]


def test_think_and_str_replace_editor(drive):
    d = drive()
    assert d.text("think", thought="the bug is in clamp") == "Your thought has been noted."
    assert "     1\tdef add(a, b):" in d.text("str_replace_editor", command="view", path="calc.py", view_range=[1, 2])
    assert "Edited calc.py" in d.text("str_replace_editor", command="str_replace", path="calc.py",
                                      old_str="        return lo\n    return x", new_str="        return hi\n    return x")
    assert "Created notes.md" in d.text("str_replace_editor", command="create", path="notes.md", file_text="hi\n")
    assert "Inserted" in d.text("str_replace_editor", command="insert", path="notes.md", insert_line=1, new_str="there")
    assert "Reverted" in d.text("str_replace_editor", command="undo_edit", path="notes.md")
    assert "needs `insert_line`" in d.text("str_replace_editor", command="insert", path="notes.md")
    obs = d("str_replace_editor", command="delete", path="notes.md")  # rejected by the parser, before the tool
    assert obs[0]["source"] == "system" and obs[0]["error_kind"] == "bad_arguments"
    assert "`command` must be one of view, create, str_replace, insert, undo_edit" in obs[0]["content"]


def test_submit_records_delivery_evidence(drive):
    d = drive()
    d("edit_file", path="calc.py", old_str="        return lo\n    return x", new_str="        return hi\n    return x")
    d("submit")
    assert d.done and d.reward == 1.0
    ev = d.info["delivery"]
    assert ev == {"files": ["calc.py"], "edits": 1, "test_runs": 0, "tested_after_last_edit": False, "empty": False}


def test_tools_cannot_touch_the_host(drive, tmp_path):
    from ha_envs.sandbox import bwrap_available
    from tests.conftest import require_bwrap
    require_bwrap()
    secret = tmp_path / "host_secret.txt"
    secret.write_text("s3cret")
    d = drive()
    assert "does not exist" in d.text("read_file", path=str(secret))
    assert "s3cret" not in d.text("search", pattern="s3cret", path=str(tmp_path))
    out = d.text("create_file", path=str(tmp_path / "planted.txt"), content="x")
    assert not (tmp_path / "planted.txt").exists(), out
    assert bwrap_available()


def test_toolbox_recovers_when_the_agent_kills_it(drive):
    d = drive()
    assert "def add" in d.text("read_file", path="calc.py")
    d("bash", command="pkill -f toolbox_server; rm -rf ${TMPDIR:-/tmp}/.ha-toolbox-*; sleep 0.2")
    assert "def add" in d.text("read_file", path="calc.py")


def test_agent_set_e_breaks_neither_the_shell_nor_the_tools(drive):
    d = drive()
    d("bash", command="set -e")
    assert "<returncode>1</returncode>" in d.text("bash", command="false")
    assert "does not exist" in d.text("read_file", path="nope.py")
    d("bash", command="pkill -f toolbox_server; sleep 0.2")
    assert "def add" in d.text("read_file", path="calc.py")  # reinstalled under set -e
    assert not d.done and "ok" in d.text("bash", command="echo ok")


def _repo(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(tmp_path)


@pytest.mark.parametrize("files,lang,paths,expect", [
    ({"tests/runtests.py": "", "tests/forms_tests/test_fields.py": ""}, "python", ["tests/forms_tests/test_fields.py"],
     ("python tests/runtests.py --verbosity 2 'forms_tests.test_fields'", "django runtests.py")),
    ({"bin/test": "", "sympy/core/tests/test_basic.py": ""}, "python", ["sympy/core/tests/test_basic.py"],
     ("python bin/test 'sympy/core/tests/test_basic.py'", "bin/test")),
    ({"pkg/tests/test_a.py": "import unittest\n"}, "python", ["pkg/tests/test_a.py"],
     ("python -m unittest -v 'pkg.tests.test_a'", "unittest")),
    ({"setup.cfg": "[tool:pytest]\n", "tests/test_a.py": "import unittest\n"}, "python", ["tests/test_a.py"],
     ("python -m pytest -q -p no:cacheprovider 'tests/test_a.py'", "pytest")),
    ({"package.json": '{"scripts": {"test": "jest"}}', "src/a.test.js": "test('x', () => {})"}, "javascript",
     ["src/a.test.js"], ("npm test --silent -- 'src/a.test.js'", "npm test")),
    ({"package.json": "{}", "test/a.test.mjs": "import test from 'node:test'"}, "javascript", ["test/a.test.mjs"],
     ("node --test 'test/a.test.mjs'", "node --test")),
    ({"go.mod": "module x", "ledger/ledger_test.go": ""}, "go", ["ledger/ledger_test.go"],
     ("go test -count=1 './ledger'", "go test")),
    ({"Cargo.toml": "", "tests/parse.rs": ""}, "rust", ["tests/parse.rs"], ("cargo test --offline --test 'parse'", "cargo test")),
])
def test_runner_choice_per_project_layout(tmp_path, files, lang, paths, expect):
    """The command run_tests builds for each runner it knows (the in-sandbox module, imported here)."""
    import importlib.util
    from pathlib import Path
    import ha_envs.harness as h
    spec = importlib.util.spec_from_file_location("toolbox_tests", Path(h.__file__).parent / "toolbox_tests.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    root = _repo(tmp_path, files)
    assert mod.build_command(root, lang, [(p, 1, []) for p in paths], []) == expect


def test_run_tests_through_a_django_style_runner(drive, tmp_path):
    """A real tests/runtests.py (it runs unittest labels, as Django's does) is found and used."""
    from ha_envs.task import Task, TestSpec
    repo = tmp_path / "dj"
    _repo(repo, {
        "shop/pricing.py": "def total(xs):\n    return sum(xs)\n",
        "tests/runtests.py": "import sys, unittest\nsys.path[:0] = ['.', 'tests']\n"
                             "suite = unittest.defaultTestLoader.loadTestsFromNames([a for a in sys.argv[1:] if not a.startswith('-') and not a.isdigit()])\n"
                             "sys.exit(not unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful())\n",
        "tests/pricing_tests/__init__.py": "",
        "tests/pricing_tests/test_pricing.py": "import unittest\nfrom shop.pricing import total\n\n\n"
                                              "class T(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(total([1, 2]), 3)\n",
        "shop/__init__.py": "",
    })
    task = Task(instance_id="dj", benchmark="test", language="python", problem_statement="-",
                tests=TestSpec("", (), (), "python tests/runtests.py", "pytest"), source_dir=repo)
    d = drive(task=task)
    d("edit_file", path="shop/pricing.py", old_str="return sum(xs)", new_str="return sum(xs)  # exact")
    out = d.text("run_tests")
    assert "Runner: django runtests.py" in out and "'pricing_tests.test_pricing'" in out
    assert "test_total" in out and "OK" in out and "<returncode>0</returncode>" in out
