"""Rust tests' outcome witnesses (``ha_envs/grading/witness_rust.py``): which tests get a guard and
under what name the log will report them, and, with the real toolchain under the real strace, that
the guarded files compile in every edition under ``#![deny(warnings)]`` and ``#![forbid(unsafe_code)]``
and that each guard names its test's true outcome."""

from __future__ import annotations

import random
import subprocess

import pytest

from ha_envs.grading import witness
from ha_envs.grading.canaries import CanaryPlan
from ha_envs.grading.ostrace import _scan
from ha_envs.grading.witness_rust import module_prefix, witnessed

SRC = '''pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(1, 2), 3);
    }

    #[test]
    fn breaks() {
        assert_eq!(add(1, 2), 4);
    }

    #[test]
    #[should_panic]
    fn panics_as_it_must() {
        let v: Vec<i64> = Vec::new();
        let _ = v[add(0, 1) as usize];
    }

    #[test]
    #[should_panic]
    fn does_not_panic() {
        assert_eq!(add(0, 0), 0);
    }

    #[test]
    #[should_panic(expected = "index out of bounds")]
    fn panics_with_a_message() {
        let v: Vec<i64> = Vec::new();
        let _ = v[add(0, 1) as usize];
    }

    #[test]
    #[ignore]
    fn ignored() {
        assert_eq!(add(1, 1), 3);
    }

    #[test]
    fn returns_err() -> Result<(), String> {
        Err(String::from("no"))
    }

    mod inner {
        // a comment between the attribute and the function
        #[test]
        // here too
        fn nested() {
            assert_eq!(super::super::add(2, 2), 4);
        }
    }
}
'''

NAMES = {"tests::adds", "tests::breaks", "tests::panics_as_it_must", "tests::does_not_panic", "tests::ignored",
         "tests::inner::nested"}
"""What is witnessed in ``SRC`` (``src/lib.rs``): not the ``expected`` message test, not the one returning a value."""


def test_guards_go_into_the_tests_they_can_witness_under_the_logs_names():
    tokens: dict[str, str] = {}
    text = witnessed("src/lib.rs", SRC, random.Random(3), tokens)
    assert set(tokens.values()) == NAMES
    assert text.count("let _haw") == len(NAMES) and len(text.splitlines()) == len(SRC.splitlines()) + len(NAMES)
    for key, name in tokens.items():
        passed, failed = key.split("+")
        assert passed != failed and "w" == passed[0] == failed[0] and len(passed) == len(failed) == 9
        line = next(x for x in text.splitlines() if f'"{passed}P"' in x)
        inverted = name in ("tests::panics_as_it_must", "tests::does_not_panic")
        assert line.rstrip().endswith(f'("{passed}P", "{failed}F", {"true" if inverted else "false"}) }};'), line
    other: dict[str, str] = {}
    witnessed("crates/m/src/money/fmt.rs", SRC, random.Random(3), other)
    assert set(other.values()) == {"money::fmt::" + n for n in NAMES}


@pytest.mark.parametrize("path,prefix", [
    ("tests/set_merge.rs", ""), ("tests/it/main.rs", ""), ("tests/it/parse.rs", "parse::"),
    ("src/lib.rs", ""), ("src/main.rs", ""), ("src/set.rs", "set::"), ("src/a/mod.rs", "a::"),
    ("crates/c/src/a/b.rs", "a::b::"), ("src/bin/tool.rs", ""), ("src/bin/tool/args.rs", "args::"),
    ("src/tests/io.rs", "tests::io::"), ("benches/b.rs", ""),
])
def test_module_prefix_follows_cargos_layout(path, prefix):
    assert module_prefix(path) == prefix


@pytest.mark.parametrize("text", [
    "#[test]\nfn one_line() { assert!(true); }\n",                        # body on the signature's line
    "#[test]\nfn generic<T>() {\n}\n",                                     # not `name()`
    "#[test]\n#[should_panic(\n    expected = \"x\"\n)]\nfn spans() {\n}\n",  # attributes spanning lines
    "fn helper() {\n    #[test]\n    fn inner() {\n    }\n}\n",           # inside a function: no test name
    "#[test]\nfn inner_attrs() {\n    #![allow(unused)]\n}\n",             # inner attributes open the body
    "#[bench]\nfn not_a_test() {\n}\n",
    "#![no_std]\n#[test]\nfn in_a_no_std_crate() {\n}\n",               # the guard names ::std
])
def test_what_is_not_witnessed(text):
    tokens: dict[str, str] = {}
    assert witnessed("tests/t.rs", text, random.Random(1), tokens) == text and tokens == {}


def test_insert_turns_a_rust_hosts_appends_into_a_witnessed_rewrite():
    plan = CanaryPlan(appends={"tests/t.rs": "\n#[test]\nfn canary_like() {\n    assert_eq!(1, 2);\n}\n"})
    witness.insert(plan, {"tests/t.rs": "#[test]\nfn own() {\n}\n"}, random.Random(5))
    assert plan.appends == {"tests/t.rs": ""} and sorted(plan.witnesses.values()) == ["canary_like", "own"]
    assert list(plan.rewrites) == ["tests/t.rs"]  # no helper file: the guard's type is in each test


LIB_HEAD = "#![deny(warnings)]\n#![forbid(unsafe_code)]\n"
INTEGRATION = '''#![deny(warnings)]
#![forbid(unsafe_code)]

#[test]
fn integration_passes() {
    assert_eq!(w::add(2, 3), 5);
}

#[test]
fn integration_fails() {
    assert_eq!(w::add(2, 3), 6);
}
'''


@pytest.mark.parametrize("edition", ["2015", "2018", "2021", "2024"])
def test_witnessed_crates_compile_and_each_test_names_its_outcome(edition, tmp_path):
    """The real cargo under the real strace: the guarded files build (warnings denied, unsafe code
    forbidden), each witnessed test that ran leaves the token of its true outcome (a
    ``should_panic`` test's turned round), and the ignored one leaves none."""
    from tests.conftest import require_tool

    require_tool("cargo")
    require_tool("strace")
    if edition == "2024" and _rustc_minor() < 85:
        pytest.skip("edition 2024 needs rustc 1.85")
    tokens: dict[str, str] = {}
    (tmp_path / "src").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "Cargo.toml").write_text(f'[package]\nname = "w"\nversion = "0.1.0"\nedition = "{edition}"\n')
    (tmp_path / "src/lib.rs").write_text(witnessed("src/lib.rs", LIB_HEAD + SRC, random.Random(9), tokens))
    (tmp_path / "tests/it.rs").write_text(witnessed("tests/it.rs", INTEGRATION, random.Random(10), tokens))
    trace = tmp_path / "t.log"
    run = subprocess.run(["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=execve,clone,clone3,prctl",
                          "-e", "status=successful", "-o", str(trace), "cargo", "test", "--offline", "--no-fail-fast",
                          "--", "--test-threads=1"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert "test result" in run.stdout and "warning" not in run.stderr, run.stderr[-3000:]
    _, seen = _scan(trace.read_text(), (), "t.log")
    got = {name: set().union(*(seen.get(t, set()) for t in key.split("+"))) for key, name in tokens.items()}
    got = {name: o for name, o in got.items() if o}
    assert got == {"tests::adds": {"P"}, "tests::breaks": {"F"}, "tests::panics_as_it_must": {"P"},
                   "tests::does_not_panic": {"F"}, "tests::inner::nested": {"P"},
                   "integration_passes": {"P"}, "integration_fails": {"F"}}, (seen, run.stdout[-2000:])


def _rustc_minor() -> int:
    out = subprocess.run(["rustc", "--version"], capture_output=True, text=True, check=False).stdout
    return int(out.split()[1].split(".")[1]) if out.startswith("rustc ") else 0


@pytest.mark.parametrize("log,seen,flagged", [
    ("PASSED", {"wa": {"P"}}, False),
    ("PASSED", {"wb": {"F"}}, True),
    ("PASSED", {"wb": {"P"}}, True),                 # the failure token renamed to a pass on its way out
    ("PASSED", {"wa": {"P"}, "wb": {"F"}}, True),    # ran twice: once it failed
    ("PASSED", {}, True),                            # printed passed, never ran to its end
    ("FAILED", {"wb": {"F"}}, False),
    ("FAILED", {}, False),                           # a crash, an abort: no witness
    ("FAILED", {"wa": {"P"}}, True),                 # a pass printed as a failure
    ("FAILED", {"wa": {"F"}}, True),                 # a name the guard never writes
])
def test_check_reads_a_rust_witness_by_its_pair_of_tokens(log, seen, flagged):
    plan = CanaryPlan(witnesses={"wa+wb": "set::tests::merges"})
    assert bool(witness.check(plan, {"set::tests::merges": log}, seen)) is flagged


UNTRANSLATED = '''5 execve("/t/target/debug/deps/set_merge-0123456789abcdef", ["set_merge"], 0x1 /* 3 vars */) = 0
5 clone3({flags=CLONE_VM|CLONE_THREAD, exit_signal=0} => {parent_tid=[0]}, 88) = 873
7 prctl(PR_SET_NAME, "w0000000aP") = 0
3 execve("/usr/bin/cargo", ["cargo"], 0x1 /* 3 vars */) = 0
3 clone3({flags=CLONE_VM|CLONE_THREAD, exit_signal=0} => {parent_tid=[4 /* 9 in strace's PID NS */]}, 88) = 4 /* 9 in strace's PID NS */
9 prctl(PR_SET_NAME, "w0000000bP") = 0
'''


def test_a_witness_thread_whose_clone_strace_could_not_translate_is_read():
    """strace gives a clone's return in its own pid namespace only while the child lives; the guard's
    thread lives for one call, and now and then (3 to 18 in 3000) its clone's return is the sandbox's
    number (873), so pid 7 has no known parent: read. A thread of a known non-test process is not."""
    assert _scan(UNTRANSLATED, (), "")[1] == {"w0000000a": {"P"}}
