"""Loaders of the real benchmarks, on every row of the files in ../shared/data."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ha_envs.swe_datasets import as_list, load_benchmark, unwrap_statement
from ha_envs.task import TaskError, patch_paths

def _data_dir() -> Path:
    """$HA_DATA_DIR, else ../shared/data beside the checkout, else the workspace's copy."""
    for cand in (os.environ.get("HA_DATA_DIR"), Path(__file__).resolve().parents[3] / "shared" / "data",
                 "/work/shared/data"):
        if cand and Path(cand, "MANIFEST.json").is_file():
            return Path(cand)
    return Path("/nonexistent")


DATA = _data_dir()


def require_data(sub: str = "") -> None:
    """The rows in ../shared/data: a failure in CI (they are part of the workspace), a skip elsewhere."""
    if not (DATA / sub).is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"no benchmark rows at {DATA / sub} but CI is set: ../shared/data must be beside the checkout")
        pytest.skip(f"no benchmark rows at {DATA / sub}")


@pytest.fixture(autouse=True)
def _use_data_dir(monkeypatch):
    require_data()
    monkeypatch.setenv("HA_DATA_DIR", str(DATA))


def test_verified_all_rows():
    tasks = load_benchmark("verified")
    assert len(tasks) == 500 and len({t.instance_id for t in tasks}) == 500
    for t in tasks:
        assert t.tests.fail_to_pass and all(isinstance(x, str) for x in t.tests.fail_to_pass)
        assert t.repo and len(t.base_commit) == 40 and t.gold_patch.startswith("diff --git")
        assert t.tests.log_parser == f"swebench:{t.repo}" and t.tests.test_command
        assert t.environment.extra["official_image"].startswith("swebench/sweb.eval.x86_64.")
        assert t.metadata["dataset"].startswith("sha256:")
    django = next(t for t in tasks if t.instance_id == "django__django-11099")
    assert django.tests.test_command.startswith("./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 ")
    assert django.environment.extra["official_image"] == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"


def test_multilingual_all_rows_and_parquet_matches_jsonl():
    tasks = load_benchmark("multilingual")
    assert len(tasks) == 300
    langs = {t.language for t in tasks}
    assert {"javascript", "go", "rust", "java"} <= langs and "python" not in langs
    # upstream ships one row without FAIL_TO_PASS tests; it loads, and stays visible
    assert [t.instance_id for t in tasks if not t.tests.fail_to_pass] == ["tokio-rs__axum-1730"]
    pq = load_benchmark("multilingual", source=DATA / "swebench_multilingual" / "test-00000-of-00001.parquet")
    assert [(t.instance_id, t.tests.fail_to_pass, t.tests.pass_to_pass) for t in pq] == \
        [(t.instance_id, t.tests.fail_to_pass, t.tests.pass_to_pass) for t in tasks]
    vpq = load_benchmark("verified", source=DATA / "swebench_verified" / "test-00000-of-00001.parquet")
    assert len(vpq) == 500


def test_pro_all_rows_quirks():
    tasks = load_benchmark("pro")
    assert len(tasks) == 731
    raw = [json.loads(l) for l in __import__("gzip").open(DATA / "swebench_pro" / "swe_bench_pro_public_test.jsonl.gz")]
    assert sum(r["fail_to_pass"].startswith("['") for r in raw) > 700  # Python-literal strings...
    for t, r in zip(tasks, raw):
        assert t.instance_id == r["instance_id"] and t.tests.fail_to_pass  # ...all decoded
        assert not (t.problem_statement.startswith('"') and t.problem_statement.endswith('"'))
        assert t.metadata["selected_test_files"]
    double = [r for r in raw if r["problem_statement"].strip().startswith('"')]
    assert double and all(not t.problem_statement.startswith('"') for t in tasks)
    removed = json.loads((DATA / "swebench_pro" / "p2p_removed_upstream_2026-02-09.json").read_text())
    hit = [t for t in tasks if t.metadata["p2p_removed_upstream"]]
    assert len(hit) == 6 and all(t.instance_id in removed for t in hit)
    for t in hit:
        assert not set(removed[t.instance_id]) & set(t.tests.pass_to_pass)


def test_r2e_rows():
    tasks = load_benchmark("r2e")
    assert len(tasks) == 5 and all(t.repo == "python-pillow/Pillow" for t in tasks)
    for t in tasks:
        exp = t.metadata["expected_output"]
        assert exp and set(t.tests.fail_to_pass) == {k for k, v in exp.items() if v == "PASSED"}
        assert t.environment.extra["official_image"]
        # The agent starts at the fixing commit's parent; the commit splits into gold and hidden tests.
        assert t.base_commit == t.metadata["fix_commit"] + "^"
        assert t.gold_patch and all(not p.startswith("Tests/") for p in patch_paths(t.gold_patch))
        assert t.hidden_test_files and all(p.startswith("Tests/") for p in t.hidden_test_files)
        assert "cp -r /r2e_tests r2e_tests && bash run_tests.sh" in t.tests.test_command
        assert all(f in t.tests.test_command for f in t.hidden_test_files if f.endswith(".py"))
    font = next(t for t in tasks if t.instance_id == "pillow__6e97dd5cecc074a0d8622e4aa5658b4263324760")
    assert patch_paths(font.gold_patch) == ("src/PIL/FontFile.py",) and font.hidden_test_files == ("Tests/test_fontfile.py",)


def test_quirk_helpers_and_errors(tmp_path):
    assert as_list('["a", "b"]', "x") == ("a", "b") and as_list("['a', 'b']", "x") == ("a", "b")
    assert as_list(["a"], "x") == ("a",) and as_list("", "x") == ()
    with pytest.raises(TaskError, match="must hold strings"):
        as_list("[1]", "x")
    assert unwrap_statement('"Bug: \\"x\\" breaks\\n"') == 'Bug: "x" breaks\n'
    assert unwrap_statement('"quoted" title and more') == '"quoted" title and more'
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "a"}\n{not json\n')
    with pytest.raises(TaskError, match="bad.jsonl:2: not valid JSON"):
        load_benchmark("verified", source=bad)
    with pytest.raises(TaskError, match="unknown benchmark"):
        load_benchmark("swe-smith")


def _report(task, statuses):
    from ha_envs.grading.report import GradeReport, decide
    r = GradeReport(task.instance_id, "", False)
    decide(r, task, statuses)
    return r.resolved


def test_verdict_rules_per_benchmark():
    pro = load_benchmark("pro")[0]
    passing = {t: "PASSED" for t in pro.tests.fail_to_pass + pro.tests.pass_to_pass}
    assert _report(pro, passing)
    if pro.tests.pass_to_pass:
        assert not _report(pro, {**passing, pro.tests.pass_to_pass[0]: "SKIPPED"})  # Scale: PASSED only
    ver = load_benchmark("verified")[0]
    ok = {t: "PASSED" for t in ver.tests.fail_to_pass + ver.tests.pass_to_pass}
    assert _report(ver, ok) and _report(ver, {**ok, ver.tests.pass_to_pass[0]: "SKIPPED"})
    assert not _report(ver, {**ok, ver.tests.fail_to_pass[0]: "SKIPPED"})  # skipped F2P = failed
    r2e = load_benchmark("r2e")[0]
    exp = r2e.metadata["expected_output"]
    assert _report(r2e, dict(exp)) and not _report(r2e, {**exp, "extra_test": "PASSED"})


def test_official_swebench_parsers_are_used():
    from ha_envs.grading.log_parsers import get_parser
    log = "PASSED tests/test_x.py::test_a\nFAILED tests/test_x.py::test_b\n"  # pytest -rA summary lines
    assert get_parser("swebench:pytest-dev/pytest")(log) == {"tests/test_x.py::test_a": "PASSED",
                                                              "tests/test_x.py::test_b": "FAILED"}
    django = "test_a (x.tests.T) ... ok\ntest_b (x.tests.T) ... FAIL\n"
    assert get_parser("swebench:django/django")(django) == {"test_a (x.tests.T)": "PASSED", "test_b (x.tests.T)": "FAILED"}
    with pytest.raises(KeyError, match="no log parser"):
        get_parser("swebench:nobody/nothing")
    # Some official parsers choose by instance id (immutable-js: jest for PR 2006, jest --json for 2005).
    jest = "PASS __tests__/Range.ts\n  Range\n    \u2713 fixed range (3 ms)\n    \u2715 slices (1 ms)\n"
    got = get_parser("swebench:immutable-js/immutable-js", "immutable-js__immutable-js-2006")(jest)
    assert got and set(got.values()) == {"PASSED", "FAILED"}
    with pytest.raises(ValueError, match="Unknown instance id"):
        get_parser("swebench:immutable-js/immutable-js", "immutable-js__immutable-js-1")(jest)


def test_r2e_log_reading_and_exact_match_rule():
    from ha_envs.grading.log_parsers import get_parser
    log = ("collected 3 items\n\x1b[1mtest_a\x1b[0m PASSED\n"
           "=========================== short test summary info ============================\n"
           "PASSED r2e_tests/test_1.py::TestFont::\x1b[1mtest_save\x1b[0m\n"
           "FAILED r2e_tests/test_1.py::test_load - AssertionError: boom\n"
           "ERROR r2e_tests/test_2.py\n========== 1 failed, 1 passed in 0.1s ==========\n")
    assert get_parser("r2e")(log) == {"TestFont.test_save": "PASSED", "test_load": "FAILED",
                                      "r2e_tests/test_2.py": "ERROR"}
    task = load_benchmark("r2e")[0]
    expected = task.metadata["expected_output"]  # keys carry ANSI bold codes, as R2E stores them
    summary = "\n".join(f"{v} r2e_tests/test_x.py::{k}" for k, v in expected.items())
    parsed = get_parser("r2e")("== short test summary info ==\n" + summary)
    assert _report(task, parsed)
    assert not _report(task, {**parsed, "test_extra": "PASSED"})
    assert not _report(task, {k: "FAILED" for k in parsed})


def test_loading_through_datasets_gives_the_same_tasks(tmp_path, monkeypatch):
    """The Hugging Face path (`datasets`), offline: a dataset directory in the hub's layout and one
    written by save_to_disk load the same 300 Multilingual tasks as the jsonl file."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    want = {t.instance_id: t for t in load_benchmark("multilingual")}
    hub_layout = tmp_path / "SWE-bench_Multilingual" / "data"
    hub_layout.mkdir(parents=True)
    (hub_layout / "test-00000-of-00001.parquet").write_bytes((DATA / "swebench_multilingual" / "test-00000-of-00001.parquet").read_bytes())
    saved = tmp_path / "saved"
    datasets.load_dataset(str(hub_layout.parent), split="test").save_to_disk(str(saved))
    for source in (hub_layout.parent, saved):
        tasks = load_benchmark("multilingual", source=source)
        assert {t.instance_id: t for t in tasks} .keys() == want.keys()
        for t in tasks:
            w = want[t.instance_id]
            assert (t.tests, t.gold_patch, t.base_commit, t.problem_statement) == (w.tests, w.gold_patch, w.base_commit, w.problem_statement)
            assert t.metadata["dataset"].startswith("hf:") and "fingerprint:" in t.metadata["dataset"]
    with pytest.raises(TaskError, match=r"no-such-owner/no-such-dataset.*(cannot be reached|cannot load).*--data FILE"):
        load_benchmark("verified", source="no-such-owner/no-such-dataset")


def test_official_image_names():
    from ha_envs.swe_datasets import official_pro_image, official_swebench_image

    assert official_swebench_image("django__django-11099") == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    assert official_pro_image("instance_NodeBB__NodeBB-04998908ba6721d64eba79ae3b65a351dcfbc5b5-vnan", "NodeBB/NodeBB") == \
        "jefzda/sweap-images:nodebb.nodebb-NodeBB__NodeBB-04998908ba6721d64eba79ae3b65a351dcfbc5b5"
    assert official_pro_image("instance_element-hq__element-web-aaa-vnan", "element-hq/element-web") == \
        "jefzda/sweap-images:element-hq.element-element-hq__element-web-aaa"
    keep = "instance_element-hq__element-web-ec0f940ef0e8e3b61078f145f34dc40d1938e6c5-vnan"
    assert official_pro_image(keep, "element-hq/element-web").endswith("element-web-element-hq__element-web-ec0f940ef0e8e3b61078f145f34dc40d1938e6c5-vnan")
    assert len(official_pro_image("instance_a__b-" + "c" * 200, "a/b").split(":", 1)[1]) == 128
    tasks = load_benchmark("pro")
    assert all(t.environment.extra["official_image"].startswith("jefzda/sweap-images:") for t in tasks)
    assert all(t.environment.workdir == "/app" for t in tasks)
