"""Task selection flags shared by every task-taking command (`ha tasks list` here): --instances,
--filter, --shuffle / --shuffle-seed, --slice, --limit, in that order; errors that say which flag."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from ha_cli.main import main

MINI = ["mini__go_ledger", "mini__ini_interpolation", "mini__invoice_rounding", "mini__js_template",
        "mini__jsonpath_lite", "mini__order_workflow", "mini__recurring_events", "mini__rust_intervals",
        "mini__semver_ranges", "mini__table_render", "mini__ttl_cache", "mini__url_router"]


def ids(capsys, *flags: str) -> list[str]:
    assert main(["tasks", "list", "--suite", "mini", *flags, "--json"]) == 0
    return [row["instance_id"] for row in json.loads(capsys.readouterr().out)]


def error(capsys, *flags: str) -> str:
    """The message of a selection error: argparse's (exit 2) or ours (return 2)."""
    try:
        rc = main(["tasks", "list", "--suite", "mini", *flags, "--json"])
    except SystemExit as exc:
        rc = exc.code
    captured = capsys.readouterr()
    assert rc == 2 and not captured.out
    return captured.err


def test_filter_selects_exactly_the_matching_ids(capsys):
    assert ids(capsys) == MINI
    assert ids(capsys, "--filter", "_(ttl|url)_") == ["mini__ttl_cache", "mini__url_router"]
    assert ids(capsys, "--filter", "^mini__j") == ["mini__js_template", "mini__jsonpath_lite"]
    assert ids(capsys, "--filter", "ing$") == [i for i in MINI if re.search("ing$", i)] == ["mini__invoice_rounding"]
    # with --instances: the filter narrows the given ids, whose order is kept
    assert ids(capsys, "--instances", "mini__url_router", "mini__go_ledger", "mini__ttl_cache", "mini__semver_ranges",
               "--filter", "_(u|t)") == ["mini__url_router", "mini__ttl_cache"]


def test_slice_and_limit_are_python_slices_after_the_filter(capsys):
    assert ids(capsys, "--slice", "0:3") == MINI[0:3]
    assert ids(capsys, "--slice", "10:") == MINI[10:]
    assert ids(capsys, "--slice", "::5") == MINI[::5]
    assert ids(capsys, "--slice=-2:") == MINI[-2:]
    assert ids(capsys, "--slice", "2:8", "--limit", "2") == MINI[2:4]
    py = [i for i in MINI if i in ("mini__ini_interpolation", "mini__invoice_rounding", "mini__jsonpath_lite")]
    assert ids(capsys, "--filter", "^mini__(in|json)", "--slice", "1:") == py[1:]


def test_shuffle_is_seeded_reproducible_and_then_sliced(capsys):
    first = ids(capsys, "--shuffle")
    assert sorted(first) == MINI and first != MINI
    assert ids(capsys, "--shuffle") == first == ids(capsys, "--shuffle-seed", "0")  # default seed 0
    other = ids(capsys, "--shuffle", "--shuffle-seed", "7")
    assert sorted(other) == MINI and other != first
    assert ids(capsys, "--shuffle-seed", "7") == other  # the seed alone implies --shuffle
    assert ids(capsys, "--shuffle", "--slice", "0:4") == first[:4]
    assert ids(capsys, "--shuffle", "--limit", "3") == first[:3]
    # the order depends on the tasks and the seed only, not on how --instances listed them
    some = MINI[:6]
    assert ids(capsys, "--instances", *some, "--shuffle") == ids(capsys, "--instances", *reversed(some), "--shuffle")
    # --filter comes first: the shuffle permutes what it kept (the same set, reproducibly)
    kept = ids(capsys, "--filter", "rust|_t", "--shuffle")
    assert sorted(kept) == [i for i in MINI if re.search("rust|_t", i)]
    assert kept == ids(capsys, "--filter", "rust|_t", "--shuffle")


def test_errors_name_the_flag(capsys):
    err = error(capsys, "--filter", "(unclosed")
    assert "argument --filter" in err and "not a valid regular expression" in err
    for bad in ("3", "a:b", "1:2:3:4"):
        err = error(capsys, "--slice", bad)
        assert "argument --slice" in err and "START:STOP" in err, err
    assert "step cannot be 0" in error(capsys, "--slice", "::0")
    assert "argument --limit" in error(capsys, "--limit", "0")
    assert "--filter 'zzz' matches none of the 12 instance ids of suite mini" in error(capsys, "--filter", "zzz")
    err = error(capsys, "--filter", "ttl", "--slice", "1:")
    assert "--slice 1: selects none of the 1 task left by --filter" in err
    assert "--slice 20:30 selects none of the 12 tasks" in error(capsys, "--slice", "20:30")


def test_unknown_ids_and_suites_suggest_close_names(capsys):
    err = error(capsys, "--instances", "mini__ttl_cach", "ttl_cache", "mini__url_router", "qqqq")
    assert "unknown instance ids in suite mini" in err
    assert "mini__ttl_cach (did you mean mini__ttl_cache?)" in err
    assert "; ttl_cache (did you mean mini__ttl_cache?)" in err
    assert "qqqq" in err and "qqqq (did you mean" not in err and "mini__url_router" not in err
    try:
        rc = main(["tasks", "list", "--suite", "mnii"])
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2 and "unknown suite 'mnii' (did you mean mini?)" in capsys.readouterr().err


def _verified_rows() -> Path:
    beside = Path(__file__).resolve().parents[3] / "shared" / "data"
    for cand in (os.environ.get("HA_DATA_DIR"), beside, "/work/shared/data"):
        if cand and Path(cand, "swebench_verified", "test.jsonl").is_file():
            return Path(cand, "swebench_verified", "test.jsonl")
    if os.environ.get("CI"):
        pytest.fail("no SWE-bench Verified rows in ../shared/data but CI is set")
    pytest.skip("no SWE-bench Verified rows")


def test_benchmark_selection_uses_the_same_flags_and_suggestions(tmp_path, capsys):
    rows = [json.loads(line) for line in _verified_rows().read_text().splitlines()[:6]]
    data = tmp_path / "six.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    names = [r["instance_id"] for r in rows]
    base = ["tasks", "list", "--benchmark", "verified", "--data", str(data), "--json"]
    assert main([*base, "--filter", re.escape(names[1]) + "$"]) == 0
    assert [r["instance_id"] for r in json.loads(capsys.readouterr().out)] == [names[1]]
    assert main([*base, "--slice", "1:3"]) == 0
    assert [r["instance_id"] for r in json.loads(capsys.readouterr().out)] == names[1:3]
    typo = names[0][:-1]  # django__django-1109 for django__django-11099
    assert main([*base, "--instances", typo]) == 2
    err = capsys.readouterr().err
    assert f"unknown instance id in benchmark verified: {typo} (did you mean {names[0]}" in err


def test_the_shuffle_seed_is_not_the_sampling_seed():
    from ha_cli.main import build_parser

    args = build_parser().parse_args(["eval", "--seed", "5", "--shuffle-seed", "3", "--slice", ":2"])
    assert (args.seed, args.shuffle_seed, args.slice) == (5, 3, slice(None, 2))
    args = build_parser().parse_args(["evolve", "run", "--seed", "4", "--shuffle"])
    assert (args.seed, args.shuffle, args.shuffle_seed) == (4, True, None)
