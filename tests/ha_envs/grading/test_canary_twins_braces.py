"""Twin canaries for Go, Rust and JavaScript (``ha_envs/grading/canary_twins_braces.py``): which
tests are copied and how a check is turned, the relative expectation ``canaries.check`` applies,
and the bundled suite's gold patches graded for real with them (none may be flagged)."""

from __future__ import annotations

import random

import pytest

from ha_envs.grading import canaries
from ha_envs.grading.canary_twins import NAME
from ha_envs.grading.canary_twins_braces import twins
from ha_envs.grading.canary_writers import Canary
from ha_envs.grading.log_parsers import FAILED, PASSED

GO = '''package calc

import "testing"

func TestArea(t *testing.T) {
	got := Area(2)
	if got != 4 {
		t.Errorf("got %d", got)
	}
	if n := Area(3); n != 9 {
		t.Fatalf("n = %d", n)
	}
}

func TestEarly(t *testing.T) {
	if Area(1) == 1 {
		return
	}
	t.Fatal("x")
}

func TestNamed(t *testing.T) {
	if Area(1) != 1 {
		t.Error(t.Name())
	}
}

func TestNew(t *testing.T) {
	if Area(5) != 25 {
		t.Error("new")
	}
}
'''

RUST = '''use calc::area;

#[test]
fn area_of_two() {
    let a = area(2);
    assert_eq!(a, 4, "area {}", a);
    assert!(a > 3, "big");
}

#[test]
#[should_panic]
fn panics() {
    area(-1);
}

#[test]
fn area_of_one() {
    assert!(area(1) == 1);
}
'''

JS = '''const test = require('node:test');
const assert = require('node:assert');
const { area } = require('../src');

test('area of two', () => {
  const a = area(2);
  assert.strictEqual(a, 4);
  assert.ok(a > 3, 'big');
});

test('skipped one', (t) => {
  t.skip();
  assert.strictEqual(area(1), 1);
});

test('snapshot', (t) => {
  assert.deepStrictEqual(t.name, 'snapshot');
});
'''


def _all(kind, text, p2p, f2p=(), **kw):
    seen: dict[tuple[str, bool], set[str]] = {}
    for seed in range(40):
        for orig, must_fail, src, *_ in twins(kind, text, p2p, f2p, random.Random(seed), **kw):
            seen.setdefault((orig, must_fail), set()).add(src)
    return seen


def test_go_twins_perturb_a_top_level_check_and_copy_only_what_cannot_end_early():
    seen = _all("go", GO, ("TestArea", "TestEarly", "TestNamed", "TestNew"), ("TestNew",))
    assert set(seen) == {("TestArea", True), ("TestNew", True)}, set(seen)
    # not the early return, nor the one reading its name; the F2P test only a must-fail twin (grader 14), every time
    assert all(any(o == "TestNew" for o, *_ in twins("go", GO, ("TestArea",), ("TestNew",), random.Random(s)))
               for s in range(10))
    assert not twins("go", GO, ("TestArea",), ("TestNew",), random.Random(0), must_fail=False)[1:]
    perturbed = seen[("TestArea", True)]  # the expected literal given another value, the check kept (grader 17)
    assert any("\tif got != 3 {" in s for s in perturbed) and any("\tif n := Area(3); n != 8 {" in s for s in perturbed)
    assert all(s.startswith(f"func {NAME}(t *testing.T) {{") and "!(" not in s for s in perturbed)


def test_rust_twins_perturb_assert_eq_and_negate_assert_where_no_literal_can_change():
    seen = _all("cargo", RUST, ("area_of_two", "panics", "area_of_one"))
    assert {o for o, _ in seen} == {"area_of_two", "area_of_one"}  # not the should_panic test
    both = seen.get(("area_of_two", True), set()) | seen.get(("area_of_one", True), set())
    assert '    assert_eq!(a, 3, "area {}", a);' in "\n".join(both) and "assert_ne" not in "\n".join(both)
    assert "    assert!(!(area(1) == 1));" in "\n".join(both) and "assert!(!(a > 3)" not in "\n".join(both)
    assert all(s.startswith(f"#[test]\nfn {NAME}() {{") for v in seen.values() for s in v)


def test_javascript_twins_use_the_files_assert_and_keep_the_title_apart():
    seen = _all("node", JS, ("area of two", "skipped one", "snapshot"), assert_name="assert")
    assert {o for o, _ in seen} == {"area of two"}  # not the skip, nor the test reading its own name
    turned = "\n".join(seen[("area of two", True)])
    assert "  assert.strictEqual(a, 3);" in turned and "not" not in turned and "!(" not in turned
    verbatim = _all("node", JS, ("area of two",), assert_name="assert", must_fail=False)
    assert verbatim == {("area of two", False): {f"test('{NAME}', () => {{" + JS.split("() => {", 2)[1].split("});")[0] + "});"}}


MOCHA = '''var assert = require('assert');
var area = require('../lib/area');

describe('area', function () {
  var scale = 2;

  beforeEach(function () {
    scale = 2;
  });

  it('squares', function () {
    var a = area(scale);
    assert.strictEqual(a, 4);
  });

  describe('of nothing', function () {
    it('is zero', () => {
      assert.equal(area(0), 0);
    });
  });

  [1, 2].forEach(function (n) {
    it('loops', function () {
      assert.ok(area(n) > 0);
    });
  });
});
'''


def test_mocha_twins_of_tests_inside_describe_blocks_go_right_after_their_original():
    """mocha suites nest every test in ``describe``: a twin of such a test is written into the same
    block (its hooks and closure variables), and its canary is named by its full title, as mocha and
    swebench's parser report it; a test inside anything but ``describe`` (a loop) is never copied."""
    p2p = ("area squares", "area of nothing is zero", "area loops")
    found = {}
    for seed in range(40):
        for orig, must_fail, src, after, prefix, _ in twins("mocha", MOCHA, p2p, (), random.Random(seed),
                                                             assert_name="assert", test_name="it"):
            found.setdefault((orig, must_fail), []).append((src, after, prefix))
    assert {o for o, _ in found} == {"area squares", "area of nothing is zero"}
    # right before or right after its original, drawn (grader 17): after the blank line above it, or its end
    assert {after for _, after, _ in found[("area squares", True)]} == {9, 13}
    src, after, prefix = found[("area squares", True)][0]
    assert prefix == "area" and src.startswith(f"  it('{NAME}', function () {{") and ("    assert.strictEqual(a, 3);" in src or "    assert.strictEqual(a, 5);" in src)
    assert found[("area of nothing is zero", False)][0][2] == "area of nothing"
    # planned for a grading: the file is rewritten with each twin inside its block, the canary named
    # by its full title; drawn canaries are still appended at the end
    task = _mocha_task(p2p)
    for seed in range(6):
        plan = canaries.plan(task, {"test/area.js": MOCHA}, random.Random(seed))
        text = plan.rewrites["test/area.js"]
        for twin in (c for c in plan.canaries if c.twin):
            prefix = {"area squares": "area", "area of nothing is zero": "area of nothing"}[twin.twin]
            drawn = twin.name[len(prefix) + 1:]
            assert twin.name.startswith(prefix + " ") and f"it('{drawn}'," in text
            assert text.index(f"it('{drawn}'") < text.index("[1, 2].forEach")  # in its describe, not at the end
            assert canaries._reported(twin.name, True, twin.name) and not canaries._reported(twin.name, True, drawn)
        # the file's own text is kept around the twins, each beside its original, a blank line between them
        own = iter(text.split("\n"))
        assert all(line in own for line in MOCHA.split("\n")) and text.endswith(MOCHA[MOCHA.index("  [1, 2]"):])
        for twin in (c for c in plan.canaries if c.twin):
            prefix = {"area squares": "area", "area of nothing is zero": "area of nothing"}[twin.twin]
            at = text.index(f"it('{twin.name[len(prefix) + 1:]}'")
            orig = text.index(f"it('{twin.twin[len(prefix) + 1:]}'")
            assert "\n\n" in text[min(at, orig):max(at, orig)] and text[min(at, orig):max(at, orig)].count("it(") == 1
        assert all(f"it('{c.name}'" in plan.appends["test/area.js"] for c in plan.canaries if not c.twin)


def _mocha_task(p2p):
    import dataclasses

    from ha_envs.loaders import load_suite

    task = next(t for t in load_suite("mini") if t.instance_id == "mini__js_template")
    return dataclasses.replace(task, tests=dataclasses.replace(task.tests, test_command="npx mocha test/area.js",
                                                               pass_to_pass=p2p, fail_to_pass=()))


def test_no_must_fail_twin_where_the_runner_stops_at_the_first_failure():
    assert all(not f for _, f in _all("go", GO, ("TestArea",), must_fail=False))


def _plan(twin: str, must_fail: bool) -> canaries.CanaryPlan:
    c = Canary("TestCopy", must_fail, "calc/calc_test.go", twin=twin)
    return canaries.CanaryPlan(canaries=[c], host_tests={"calc/calc_test.go": ["TestArea"]})


@pytest.mark.parametrize("must_fail,original,copy,flagged", [
    (True, PASSED, FAILED, False),   # honest
    (True, PASSED, PASSED, True),    # a forgery passed the turned check
    (True, FAILED, PASSED, False),   # the original fails at the turned check: the copy passes honestly
    (False, PASSED, PASSED, False),  # honest
    (False, PASSED, FAILED, True),   # a copy of a passing test failed: the run is not what it says
    (False, PASSED, "MISSING", True),
    (False, FAILED, FAILED, False),  # the fix broke the original: nothing more is said
])
def test_twins_are_judged_against_their_original_in_the_same_run(must_fail, original, copy, flagged):
    statuses = {"TestArea": original}
    if copy != "MISSING":
        statuses["TestCopy"] = copy
    reasons = canaries.check(_plan("TestArea", must_fail), statuses, 1, False, False)
    assert bool(reasons) == flagged, reasons
    assert not canaries.check(_plan("TestArea", must_fail), statuses, 1, True, False) or copy == PASSED


@pytest.mark.parametrize("iid", ["mini__go_ledger", "mini__js_template", "mini__rust_intervals"])
def test_the_bundled_gold_patches_resolve_with_their_twins(iid):
    """Graded for real (local sandbox): the gold patch resolves, every twin came out as planted, and
    the empty patch is an ordinary failure."""
    from ha_envs.grading.grader import Grader
    from ha_envs.loaders import load_suite

    from tests.conftest import require_bwrap

    require_bwrap()
    task = next(t for t in load_suite("mini") if t.instance_id == iid)
    gold = Grader(watch=False).grade(task, task.gold_patch)
    c = gold.canaries
    assert gold.resolved and gold.reward == 1.0, (gold.status, gold.tampering)
    assert c["twins"] >= 1 and c["planted"] == c["reported"] == c["as_planted"], c
