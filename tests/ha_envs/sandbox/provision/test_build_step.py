"""A task with a build step (swebench's ``build``: C/C++ projects, a package's compile step): the
grader builds the patched copy before the tests run, a failed build is ``build_failed``, and what
the build prints is never read as test results (the patch decides what a build prints).

The project is real C, built by a real ``make`` and ``cc``, graded with swebench's own redis parser
(``[ok]: name`` / ``[err]: name``), as redis and valkey instances of Multilingual are."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ha_envs.swe_datasets import build_command, swebench_task
from ha_envs.grading import EnvironmentFault, Grader
from ha_envs.task import Task, TestSpec
from ha_envs.validate import validate_task
from tests.conftest import _git_diff, require_bwrap, task_row

CLAMP = textwrap.dedent("""\
    #include "clamp.h"
    int add(int a, int b) { return a + b; }
    int clamp(int x, int lo, int hi) {
        if (x < lo) return lo;
        if (x > hi) return lo;
        return x;
    }
    """)

MAKEFILE = textwrap.dedent("""\
    TESTS := $(patsubst tests/%.c,build/%,$(wildcard tests/*.c))
    all: $(TESTS)
    build/%: tests/%.c src/clamp.c src/clamp.h
    \tmkdir -p build
    \t$(CC) -Isrc -o $@ $< src/clamp.c
    """)

# Prints redis's test-line format; a test binary per file, run by ./runtest.
VISIBLE = textwrap.dedent("""\
    #include <stdio.h>
    #include "clamp.h"
    int main(void) {
        printf(add(2, 3) == 5 ? "[ok]: add (1 ms)\\n" : "[err]: add in tests/visible.c\\n");
        return 0;
    }
    """)

HIDDEN = textwrap.dedent("""\
    #include <stdio.h>
    #include "clamp.h"
    int main(void) {
        printf(clamp(9, 0, 5) == 5 ? "[ok]: clamp high (0 ms)\\n" : "[err]: clamp high in tests/hidden.c\\n");
        printf(clamp(-1, 0, 5) == 0 ? "[ok]: clamp low (0 ms)\\n" : "[err]: clamp low in tests/hidden.c\\n");
        return 0;
    }
    """)


@pytest.fixture
def c_task(tmp_path) -> Task:
    require_bwrap()
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src" / "clamp.c").write_text(CLAMP)
    (repo / "src" / "clamp.h").write_text("int add(int a, int b);\nint clamp(int x, int lo, int hi);\n")
    (repo / "tests" / "visible.c").write_text(VISIBLE)
    (repo / "Makefile").write_text(MAKEFILE)
    (repo / "runtest").write_text("#!/bin/sh\nfor t in build/*; do \"$t\"; done\n")
    (repo / "runtest").chmod(0o755)
    (repo / ".gitignore").write_text("build/\n")

    def copy_to(name: str) -> Path:
        subprocess.run(["cp", "-a", str(repo), str(tmp_path / name)], check=True)
        return tmp_path / name

    gold = _git_diff(copy_to("g"), lambda d: (d / "src" / "clamp.c").write_text(CLAMP.replace("return lo;\n    return x", "return hi;\n    return x")))
    test_patch = _git_diff(copy_to("t"), lambda d: (d / "tests" / "hidden.c").write_text(HIDDEN))
    return Task(instance_id="c__clamp", benchmark="test", language="c",
                problem_statement="clamp(9, 0, 5) returns 0; it should return 5.",
                tests=TestSpec(test_patch=test_patch, fail_to_pass=("clamp high",), pass_to_pass=("clamp low", "add"),
                               test_command="./runtest", build_command="make", log_parser="swebench:redis/redis",
                               timeout_s=120),
                source_dir=repo, gold_patch=gold)


def _edit(task: Task, tmp_path: Path, edit) -> str:
    work = tmp_path / "edit"
    subprocess.run(["cp", "-a", str(task.source_dir), str(work)], check=True)
    return _git_diff(work, edit)


def test_the_grader_builds_the_patched_copy_before_the_tests(c_task):
    g = Grader()
    gold = g.grade(c_task, c_task.gold_patch)
    assert gold.resolved and gold.fail_to_pass == {"clamp high": "PASSED"}
    assert gold.pass_to_pass == {"clamp low": "PASSED", "add": "PASSED"}
    empty = g.grade(c_task, "")
    assert not empty.resolved and empty.status == "unresolved" and empty.fail_to_pass == {"clamp high": "FAILED"}
    # without the build step nothing is built, so no test can start, with the fix or at base: the
    # environment's fault (masked), never the fix's zero; the step is what makes it gradable
    unbuilt = dataclasses.replace(c_task, tests=dataclasses.replace(c_task.tests, build_command=""))
    with pytest.raises(EnvironmentFault) as caught:
        g.grade(unbuilt, c_task.gold_patch)
    assert caught.value.kind == "runner_missing" and "build/*: not found" in caught.value.report.error


def test_a_patch_that_breaks_the_build_is_build_failed(c_task, tmp_path):
    broken = _edit(c_task, tmp_path, lambda d: (d / "src" / "clamp.c").write_text(CLAMP.replace("return x;", "return x")))
    report = Grader().grade(c_task, broken)
    assert report.status == "build_failed" and not report.resolved and report.reward == 0.0
    assert "the build exited" in report.error and "clamp.c" in report.error  # the compiler's message
    assert report.fail_to_pass == {} and report.verdict_rules == ""  # no test ran, none was read


def test_what_the_build_prints_is_never_read_as_test_results(c_task, tmp_path):
    """The patch owns the Makefile: one that prints the hidden tests' pass lines and builds nothing
    would resolve the task if build output reached the parser."""
    fake = ("all:\n\t@echo '[ok]: clamp high (0 ms)'\n\t@echo '[ok]: clamp low (0 ms)'\n\t@echo '[ok]: add (0 ms)'\n"
            "\tmkdir -p build\n")
    forged = _edit(c_task, tmp_path, lambda d: (d / "Makefile").write_text(fake))
    report = Grader().grade(c_task, forged)
    assert not report.resolved and report.reward == 0.0 and report.status == "unresolved"
    assert report.fail_to_pass == {"clamp high": "MISSING"}
    # the runner the test command names is the base's, whatever the patch did to it
    runner = _edit(c_task, tmp_path, lambda d: (d / "runtest").write_text(
        "#!/bin/sh\necho '[ok]: clamp high (0 ms)'\necho '[ok]: clamp low (0 ms)'\necho '[ok]: add (0 ms)'\n"))
    report = Grader().grade(c_task, runner)
    assert not report.resolved and "runtest" in report.restored_paths


def test_a_build_that_rewrites_the_hidden_tests_is_caught(c_task, tmp_path):
    """The build runs the patch's Makefile after the hidden tests are in: one that rewrites every
    test source to print passes (and builds it) must not earn reward. The test files are hashed
    before the build, not only around the test run."""
    fake = ("all:\n\tmkdir -p build\n"
            "\tfor t in tests/*.c; do printf '#include <stdio.h>\\nint main(void){puts(\"[ok]: clamp high (0 ms)\");"
            "puts(\"[ok]: clamp low (0 ms)\");puts(\"[ok]: add (0 ms)\");return 0;}\\n' > $$t; done\n"
            "\tfor t in tests/*.c; do $(CC) -o build/$$(basename $$t .c) $$t; done\n")
    forged = _edit(c_task, tmp_path, lambda d: (d / "Makefile").write_text(fake))
    report = Grader().grade(c_task, forged)
    assert not report.resolved and report.reward == 0.0 and report.status == "tests_tampered"
    assert any("tests/hidden.c" in r for r in report.tampering), report.tampering


def test_build_outputs_shipped_in_the_patch_are_dropped(c_task, tmp_path):
    """``./runtest`` runs every binary in ``build/``; a patch that ships one more (git-ignored, so
    forced into the diff) printing the hidden tests' pass lines would win the parser's last word.
    The base ignores ``build/``: such files are build outputs, dropped before the patch applies."""
    work = tmp_path / "forge"
    subprocess.run(["cp", "-a", str(c_task.source_dir), str(work)], check=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], cwd=work, check=True)
    subprocess.run(git + ["add", "-A"], cwd=work, check=True)
    subprocess.run(git + ["commit", "-qm", "b"], cwd=work, check=True)
    (work / "build").mkdir()
    (work / "build" / "zz-extra").write_text("#!/bin/sh\necho '[ok]: clamp high (0 ms)'\n")
    (work / "build" / "zz-extra").chmod(0o755)
    (work / ".gitignore").write_text("")  # the patch's own rules do not count: the base's do
    subprocess.run(git + ["add", "-f", "-A"], cwd=work, check=True)
    forged = subprocess.run(git + ["diff", "--cached"], cwd=work, check=True, capture_output=True, text=True).stdout
    assert "build/zz-extra" in forged and "new file mode 100755" in forged
    report = Grader().grade(c_task, forged)
    assert not report.resolved and report.reward == 0.0 and report.fail_to_pass == {"clamp high": "FAILED"}
    assert "ignored_files_in_patch" in report.flags and "build/zz-extra" in report.dropped_paths
    # with the real fix, the same shipped file is still dropped and the fix alone decides
    both = Grader().grade(c_task, c_task.gold_patch + forged)
    assert both.resolved and "build/zz-extra" in both.dropped_paths


def test_validation_and_the_cli_carry_the_build_step(c_task, tmp_path):
    res = validate_task(c_task)
    assert res.ok and res.gold_status == "resolved" and res.empty_status == "unresolved"
    row = task_row(c_task, build_command="make", language="c")
    f = tmp_path / "c.jsonl"
    f.write_text(json.dumps(row) + "\n")
    proc = subprocess.run([sys.executable, "-m", "ha_cli.main", "tasks", "validate", "--jsonl", str(f), "--json"],
                          capture_output=True, text=True, timeout=600)
    (got,) = json.loads(proc.stdout)
    assert proc.returncode == 0 and got["ok"], proc.stderr[-2000:]
    # the same row without its build step builds nothing: validation says no test can start
    row.pop("build_command")
    f.write_text(json.dumps(row) + "\n")
    proc = subprocess.run([sys.executable, "-m", "ha_cli.main", "tasks", "validate", "--jsonl", str(f), "--json"],
                          capture_output=True, text=True, timeout=600)
    (got,) = json.loads(proc.stdout)
    assert proc.returncode == 1 and not got["ok"] and got["fault"] == "runner_missing"
    assert "environment fault: c__clamp:" in proc.stderr and "environment faults: 1 (runner_missing: 1)" in proc.stderr


def test_swebench_build_steps_become_the_build_command():
    redis = {"build": ["make distclean", "make"], "test_cmd": ["TERM=dumb ./runtest --single unit/acl"]}
    assert build_command(redis, "c") == "make distclean && make"
    # a JavaScript build step that repeats the install (axios 5316) is the offline env's job
    axios = {"install": ["npm install"], "build": ["npm install"], "test_cmd": ["npx mocha test/unit"]}
    assert build_command(axios, "javascript") == ""
    vue = {"install": ["pnpm i"], "build": ["pnpm run build compiler-sfc"], "test_cmd": ["pnpm run test"]}
    assert build_command(vue, "typescript") == "pnpm run build compiler-sfc"
    assert build_command({"test_cmd": "pytest"}, "python") == ""
    row = {"instance_id": "redis__redis-11631", "repo": "redis/redis", "version": "11631", "base_commit": "0" * 40,
           "problem_statement": "p", "patch": "", "test_patch": "", "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]"}
    task = swebench_task(row, "multilingual", "test", {})
    assert task.language == "c" and task.tests.build_command == "make distclean && make"
    assert task.tests.test_command.startswith("TERM=dumb ./runtest --durable --single unit/geo")


def test_an_older_task_keeps_its_fingerprint(c_task):
    """Caches are keyed by the task's fingerprint: a task without a build step hashes as before the
    field existed."""
    plain = dataclasses.replace(c_task, tests=dataclasses.replace(c_task.tests, build_command=""))
    assert plain.fingerprint() != c_task.fingerprint()
    payload = dataclasses.asdict(plain)
    payload["source_dir"] = None
    del payload["tests"]["build_command"]
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    assert plain.fingerprint() == hashlib.sha256(blob).hexdigest()[:16]
