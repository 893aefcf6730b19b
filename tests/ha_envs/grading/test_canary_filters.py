"""Canaries where the command picks tests by name: the grader widens the filter so they run.

Real runners on the bundled Go and Rust tasks, their commands rewritten to select tests by name as
SWE-bench Multilingual's rows do (``go test -run PATTERN``, ``cargo test FILTER``): the gold patch
still resolves with every canary reported as planted, and the stdout-rewriting forgeries of the
abuse suite, graded under those commands, earn nothing because of the canaries. Without the
widening these files got no canaries at all."""

from __future__ import annotations

import dataclasses

import pytest

from ha_envs.grading import canaries
from ha_envs.grading.grader import Grader
from ha_envs.loaders import load_suite

from tests.conftest import require_bwrap, require_tool
from .test_abuse_verdict import patch_of
from .verdict_payloads import forges


def _task(iid: str, command: str, keep: str | None = None):
    task = next(t for t in load_suite("mini") if t.instance_id == iid)
    tests = dataclasses.replace(task.tests, test_command=command)
    if keep is not None:  # the rows list only the tests their filter runs
        tests = dataclasses.replace(tests, fail_to_pass=tuple(t for t in tests.fail_to_pass if keep in t),
                                    pass_to_pass=tuple(t for t in tests.pass_to_pass if keep in t))
    return dataclasses.replace(task, tests=tests)


GO_FILTERED = 'go test -v -count=1 -run "^Test" ./...'
CARGO_FILTERED = "cargo test --offline --no-fail-fast merge -- --test-threads=1"
CASES = {"go": ("mini__go_ledger", GO_FILTERED, None, "go-init-sed-filter-on-fd1"),
         "cargo": ("mini__rust_intervals", CARGO_FILTERED, "merge", "rust-init-array-awk-rewrites-results")}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_filtered_commands_run_their_canaries(kind, tmp_path):
    require_bwrap()
    require_tool("go" if kind == "go" else "cargo")
    iid, command, keep, forge_name = CASES[kind]
    task = _task(iid, command, keep)
    assert task.tests.fail_to_pass and canaries.selects_by_name(kind, task.hidden_test_files[0], command)

    gold = Grader().grade(task, task.gold_patch)
    assert gold.resolved, (gold.status, gold.tampering, gold.log_tail[-1500:])
    c = gold.canaries
    assert c["planted"] > 0 and c["must_fail"] > 0, c
    assert c["reported"] == c["planted"] == c["as_planted"], c  # they ran, under the widened filter
    empty = Grader().grade(task, "")
    assert not empty.resolved and empty.status == "unresolved", (empty.status, empty.tampering)
    assert empty.canaries["as_planted"] == empty.canaries["planted"]

    forge = forges()[forge_name]
    path, text = forge.files[0]
    patch = patch_of(task.source_dir, path, text, tmp_path)
    assert patch.strip()
    forged = Grader().grade(task, patch)
    assert forged.reward == 0.0 and "verdict_tampered" in forged.flags, (forged.status, forged.log_tail[-1500:])
    assert any("canary" in r for r in forged.tampering), forged.tampering


@pytest.mark.parametrize("command,widened", [
    ('go test -v ./caddytest/integration -run "TestCaddyfileAdapt*"',
     "go test -v ./caddytest/integration -run 'TestCaddyfileAdapt*|^(TestA|TestB)$'"),
    ("go test -run=^TestX$ ./a && go test -run '^TestY' ./b",
     "go test -run '^TestX$|^(TestA|TestB)$' ./a && go test -run '^TestY|^(TestA|TestB)$' ./b"),
    ('go test -run "$PATTERN" ./...', None),  # an expansion: what it selects is not known here
    ('go test -run "^TestGetPage[^/]" ./x', None),  # a slash splits go's pattern into subtest levels
    ("cargo test --package ruff_linter 'f52'", "cargo test --package ruff_linter 'f52' -- TestA TestB"),
    ("RUSTFLAGS=-Awarnings cargo test --test integration -- regression && echo done",
     "RUSTFLAGS=-Awarnings cargo test --test integration -- TestA TestB regression && echo done"),
    ("cargo test -- regression::r2208 --exact", None),  # --exact needs the module path
    ("timeout 10s npx mocha -R tap test/unit/adapters/http.js -g 'timeout'",
     "timeout 10s npx mocha -R tap test/unit/adapters/http.js -g 'timeout|^(?:TestA|TestB)$'"),
    ('npx mocha test/a.js --grep="body length" -R tap', "npx mocha test/a.js --grep 'body length|^(?:TestA|TestB)$' -R tap"),
    ("npx mocha test/a.js --grep 'translation key' --invert", None),  # inverted: the canaries would be excluded
    ("npx mocha test/a.js --fgrep timeout", None),
])
def test_widening_a_name_filter(command, widened):
    kind = "cargo" if "cargo test" in command else "mocha" if "mocha" in command else "go"
    task = _task("mini__go_ledger", command)
    assert canaries.widen(task, kind, command, ["TestA", "TestB"]) == widened
    path, text = {"go": ("money/x_test.go", "func TestQ(t *testing.T) {}\n"), "cargo": ("tests/x.rs", "#[test]\nfn q() {}\n"),
                  "mocha": ("test/a.js", "describe('q', () => { it('works', () => {}); });\n")}[kind]
    assert (canaries.kind_of(task, path, text) is None) == (widened is None)


def test_a_command_killed_by_its_timeout_wrapper_exited_with_the_wrappers_status():
    """axios' rows run ``timeout 10s npx mocha ...``: mocha stays up after its last test (an open
    handle) and the wrapper's 124 comes back. That is not the runner's status: the gold patch of
    axios-4738 came out ``verdict_tampered`` in the re-validation. A runner's own non-zero exit
    with only passes still is not a pass."""
    from ha_envs.grading.consistency import exit_status_reasons
    from ha_envs.grading.log_parsers import PASSED

    passed = {"a": PASSED, "b": PASSED}
    cmd = "timeout 10s npx mocha -R tap test/unit/adapters/http.js -g 'timeout'"
    assert exit_status_reasons(cmd, passed, "ok 1 a\nok 2 b\n", 124, False, True) == []
    assert exit_status_reasons(cmd, passed, "ok 1 a\nok 2 b\n", 1, False, True)  # mocha's own failure status
    assert exit_status_reasons("npx mocha -R tap t.js", passed, "ok 1 a\n", 124, False, True)  # no wrapper: the runner's


# A run script and parser in the shape of SWE-bench Pro's Go instances (flipt, teleport): the
# script's arguments are test names, which it turns into its own ``-run "^(a|b)$"`` pattern.
PRO_GO_RUN = """#!/bin/bash
run_selected_tests() {
  local regex_group=""
  for test_name in "$@"; do
    if [ -z "$regex_group" ]; then regex_group="$test_name"; else regex_group="$regex_group|$test_name"; fi
  done
  go test -v -count=1 -run "^($regex_group)$" ./... || true
}
if [[ "$1" == *","* ]]; then IFS=',' read -r -a TEST_NAMES <<< "$1"; else TEST_NAMES=("$@"); fi
run_selected_tests "${TEST_NAMES[@]}"
"""
PRO_GO_PARSER = """import json, re, sys
out, err, dest = sys.argv[1:4]
tests = [{"name": m.group(2), "status": "PASSED" if m.group(1) == "PASS" else "FAILED"}
         for m in re.finditer(r"^\\s*--- (PASS|FAIL): (\\S+)", open(out).read(), re.M)]
json.dump({"tests": tests}, open(dest, "w"))
"""


def test_pro_go_run_scripts_get_the_canaries_as_further_test_names(tmp_path):
    require_bwrap()
    require_tool("go")
    from ha_envs.grading.pro import grading_command

    task = _task("mini__go_ledger", "")
    names = list(task.tests.fail_to_pass + task.tests.pass_to_pass)
    files = {"run_script.sh": PRO_GO_RUN, "parser.py": PRO_GO_PARSER}
    task = dataclasses.replace(task, benchmark="swebench_pro", metadata={"selected_test_files": names},
                               tests=dataclasses.replace(task.tests, log_parser="pro",
                                                         test_command=grading_command(files, names, "/testbed")))
    gold = Grader().grade(task, task.gold_patch)
    assert gold.resolved, (gold.status, gold.tampering, gold.log_tail[-1500:])
    c = gold.canaries
    assert c["files"] == 3 and c["reported"] == c["planted"] == c["as_planted"] and c["must_fail"] > 0, c
    forge = forges()["go-init-sed-filter-on-fd1"]
    patch = patch_of(task.source_dir, *forge.files[0], tmp_path)
    # the run script hides the exit status (`|| true`): the forged canary is what tells
    forged = Grader().grade(task, patch)
    assert forged.reward == 0.0 and forged.status == "verdict_tampered", (forged.status, forged.tampering)


def test_a_pro_parser_that_lists_only_passes_is_not_tampering():
    """Some of Scale's parsers (flipt's) keep only ``--- PASS`` lines: a must-fail canary is then
    missing from every honest report. That is no sign there; a must-fail canary reported passed,
    or a must-pass one missing while its file's tests passed, still is."""
    import random

    from ha_envs.grading.log_parsers import PASSED

    task = _task("mini__go_ledger", 'bash "$HA_W/run_script.sh" \'TestA,TestB\' # go test -run "^($re)$"')
    task = dataclasses.replace(task, metadata={"selected_test_files": ["TestA", "TestB"]},
                               tests=dataclasses.replace(task.tests, log_parser="pro"))
    src = 'package money\n\nimport "testing"\n\nfunc TestA(t *testing.T) {}\nfunc TestB(t *testing.T) {}\n'
    plan = canaries.plan(task, {"money/a_test.go": src}, random.Random(3))
    assert plan is not None and plan.must_fail and not plan.failures_reported
    assert all(c.name in plan.command for c in plan.canaries) and "'TestA,TestB," in plan.command
    honest = {"TestA": PASSED, "TestB": PASSED, **{c.name: PASSED for c in plan.canaries if not c.must_fail}}
    assert canaries.check(plan, honest, 0, False, False) == []
    forged = {**honest, **{c.name: PASSED for c in plan.canaries}}
    assert any("false assertion" in r for r in canaries.check(plan, forged, 0, False, False))
    own_report = {"TestA": PASSED, "TestB": PASSED}
    assert any("must pass" in r for r in canaries.check(plan, own_report, 0, False, False))


def test_sympys_last_test_line_is_read_for_canaries():
    """sympy's verbose runner ends a file's last test line with the file's ``[FAIL]``; swebench's
    parser skips that line, so a must-pass canary appended last looked missing (a gold patch of
    sympy-21612 came out ``verdict_tampered`` in the re-validation). The canaries' lines are read."""
    import random

    from ha_envs.grading.log_parsers import get_parser

    path = "sympy/core/tests/test_basic.py"
    task = _task("mini__ttl_cache", f"bin/test -C --verbose {path}")
    task = dataclasses.replace(task, tests=dataclasses.replace(task.tests, log_parser="swebench:sympy/sympy"))
    plan = canaries.plan(task, {path: "def test_subs():\n    assert 1\n"}, random.Random(5))
    assert plan is not None and plan.must_fail
    order = [c for c in plan.canaries if c.must_fail] + [c for c in plan.canaries if not c.must_fail]
    lines = ["test_subs ok"] + [f"{c.name} {'F' if c.must_fail else 'ok'}" for c in order]
    lines[-1] += "                              [FAIL]"
    log = "\n".join(lines) + "\n\n" + "\n".join(f"____ {path}:{c.name} ____" for c in order if c.must_fail)
    statuses = get_parser(task.tests.log_parser)(log)
    assert canaries.check(plan, statuses, 1, False, True)  # the official parser alone: one looks missing
    completed = canaries.complete(plan, task.tests.log_parser, log, statuses)
    assert canaries.check(plan, completed, 1, False, True) == []
    assert completed["test_subs"] == statuses["test_subs"] and len(completed) == len(statuses) + 1
