"""Must-fail twins with a perturbed expectation (grader 17, ``canary_twins_braces.py``): one literal
of an equality check's expected value given another, the check itself kept, so a twin's text differs
from its original's in that one literal token; where no literal can change, a check turned round."""

from __future__ import annotations

import random
import re

import pytest

from ha_envs.grading.canary_twins import NAME
from ha_envs.grading.canary_twins_braces import _go_perturbs, _literal_spots, _perturbed, twins

_TOKEN = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`[^`]*`|\w+|\S""")


def _one_literal_apart(original: str, twin: str, name: str) -> tuple[str, str]:
    """The one token in which ``twin`` (its name put back) differs from ``original``."""
    a, b = _TOKEN.findall(original), _TOKEN.findall(twin.replace(NAME, name))
    assert len(a) == len(b), (original, twin)
    diff = [(x, y) for x, y in zip(a, b) if x != y]
    assert len(diff) == 1, diff
    return diff[0]


def _test_of(text: str, start: str) -> str:
    body = text[text.index(start):]
    return body[:body.index("\n}" if not start.startswith(("test(", "it(")) else "\n});") + 4].rstrip()


@pytest.mark.parametrize("lang,literal,check", [
    ("js", "4", lambda n: n in ("3", "5")),
    ("js", "0", lambda n: n == "1"),
    ("js", "1.5", lambda n: float(n) == 0.5),
    ("js", "'pen=3;'", lambda n: n != "'pen=3;'" and len(n) == 8 and n[0] == n[-1] == "'"),
    ("js", "''", lambda n: n == "'x'"),
    ("js", "'\\n'", lambda n: n == "'\\nx'"),  # an escape is never cut: a character is added
    ("js", "true", lambda n: n == "false"),
    ("js", "false", lambda n: n == "true"),
    ("go", "`raw`", lambda n: n.startswith("`") and n != "`raw`"),
    ("go", "'\\n'", lambda n: n is None),  # a rune of one escaped character: nothing sure to differ
    ("cargo", "255u8", lambda n: n == "254u8"),  # down, never past the type's bounds
    ("cargo", "2.5f32", lambda n: n in ("1.5f32", "3.5f32")),
    ("go", "127", lambda n: n == "126"),  # 128 would overflow an int8
    ("go", "128", lambda n: n == "127"),  # -129 would
    ("go", "0", lambda n: n == "1"),  # never below 0: an unsigned type
    ("js", "9007199254740993", lambda n: n is None),  # past 2**52: a double may not tell them apart
])
def test_each_literal_form_gets_a_value_sure_to_differ(lang, literal, check):
    spots = _literal_spots(lang, literal)
    assert spots and len(spots) == 1, spots
    new = _perturbed(lang, literal, spots[0][2], random.Random(3))
    assert check(new), new


def test_a_number_moves_either_way_as_drawn():
    """Always down (or always up) would tell the original of a pair (the larger one) from its twin."""
    assert {_perturbed("js", "41", "n", random.Random(seed)) for seed in range(20)} == {"40", "42"}


def test_arrays_and_objects_change_one_element_and_computed_values_none():
    for seed in range(20):
        spots = _literal_spots("js", "[1, 'a', { b: true, c: null }]")
        assert [k for *_, k in spots] == ["n", "s", "b"]  # not the key, not null
    assert _literal_spots("js", "[x, 1]") is None and _literal_spots("js", "f(1)") is None
    assert _literal_spots("cargo", 'Some(vec![1, 2])') and _literal_spots("go", "[]int{1}") is None


JS = '''const test = require('node:test');
const assert = require('node:assert');
const { render } = require('../src');

test('renders a list', () => {
  const out = render('{{#xs}}{{.}},{{/xs}}', { xs: [1, 2] });
  assert.deepStrictEqual(out.split(','), ['1', '2', '']);
  assert.ok(out.length > 2);
});

test('renders a flag', () => {
  assert.strictEqual(render('{{b}}', { b: false }), 'false');
});

test('jest style', () => {
  expect(render('{{n}}', { n: 1 })).toBe('1');
  expect(render('', {})).toEqual({ a: 1 });
});

test('nothing to perturb', () => {
  const want = render('x', {});
  assert.strictEqual(render('x', {}), want);
});
'''


def test_a_javascript_twin_differs_from_its_original_in_one_literal_only():
    p2p = ("renders a list", "renders a flag", "jest style", "nothing to perturb")
    seen: dict[str, set[str]] = {}
    for seed in range(60):
        for orig, must_fail, src, _, _, turned in twins("node", JS, (), p2p, random.Random(seed), assert_name="assert"):
            assert must_fail
            original = _test_of(JS, f"test('{orig}'")
            if orig == "nothing to perturb":  # no literal on either side: the check turned round, said so
                assert turned and "assert.notStrictEqual(render('x', {}), want);" in src
                continue
            old, new = _one_literal_apart(original, src, orig)
            assert not turned and new != old and "not" not in src.replace(original, "") and "!(" not in src
            seen.setdefault(orig, set()).add(old)
    assert seen["renders a list"] == {"'1'", "'2'", "''"}  # any element of the expected array
    # a number or boolean rather than a string where a test has both: ``toEqual({ a: 1 })``, not ``'1'``
    assert seen["renders a flag"] == {"'false'"} and seen["jest style"] == {"1"}


GO = '''package money

import "testing"

func TestOwn(t *testing.T) {
	a := Get("USD")
	if a.Own != 700 || a.Total != 1000 {
		t.Fatalf("own=%d", a.Own)
	}
	if a.Name != "cash" {
		t.Errorf("name %s", a.Name)
	}
}

func TestPair(t *testing.T) {
	if x, y := Pair(); x != 1 && y != 2 {
		t.Error("pair")
	}
}
'''


def test_go_twins_perturb_unequal_checks_joined_by_or_and_turn_the_rest():
    seen, turned_seen = set(), set()
    for seed in range(40):
        for orig, _, src, _, _, turned in twins("go", GO, (), ("TestOwn", "TestPair"), random.Random(seed)):
            if turned:  # "&&": a changed literal need not make the block run
                turned_seen.add(orig)
                assert "!(x != 1 && y != 2)" in src
                continue
            seen.add(_one_literal_apart(_test_of(GO, "func TestOwn"), src, "TestOwn"))
    assert turned_seen == {"TestPair"}
    assert {o for o, _ in seen} == {"700", "1000"}  # numbers rather than the string where both are
    body = ["func TestX(t *testing.T) {", '\tif a.Name != "cash" {', '\t\tt.Errorf("name")', "\t}", "}"]
    ((_, _, [line]),) = _go_perturbs(body, random.Random(1))
    assert line.startswith('\tif a.Name != "') and line != body[1] and len(line) == len(body[1])
    assert not _go_perturbs(["func TestX(t *testing.T) {", "\tif a != 1 {", "\t\tlog(a)", "\t}", "}"], random.Random(0))


RUST = '''use calc::area;

#[test]
fn areas() {
    let a = area(2);
    assert_eq!(a, 4, "area {}", a);
    assert_eq!(Some(a), Some(4));
}
'''


def test_rust_twins_perturb_the_expected_side_not_the_message():
    olds = set()
    for seed in range(30):
        ((_, _, src, _, _, turned),) = twins("cargo", RUST, (), ("areas",), random.Random(seed))
        old, new = _one_literal_apart(_test_of(RUST, "#[test]\nfn areas"), src, "areas")
        assert not turned and old == "4" and new in ("3", "5")
        olds.add(src.count('"area {}"'))
    assert olds == {1}


def test_twins_go_before_or_after_their_original_as_the_seed_draws():
    text = GO
    places = set()
    for seed in range(30):
        for orig, _, _, after, _, _ in twins("go", text, (), ("TestOwn",), random.Random(seed)):
            places.add(after)
    lines = text.split("\n")
    assert places == {3, 12} and lines[3] == "" and lines[12] == "}"  # above TestOwn's line, or after its end
