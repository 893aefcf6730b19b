"""Task records and loaders: the bundled suite and local JSONL."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ha_envs.loaders import load_jsonl, load_suite, resolve_tasks
from ha_envs.task import TaskError, patch_paths


def test_bundled_suite_shape():
    tasks = load_suite("mini")
    assert len(tasks) >= 12
    langs = Counter(t.language for t in tasks)
    assert sum(n for lang, n in langs.items() if lang != "python") >= 3
    assert {"javascript", "go", "rust"} <= set(langs)
    assert {t.difficulty for t in tasks} >= {"easy", "medium", "hard"}
    for t in tasks:
        assert t.instance_id.startswith("mini__") and t.source_dir and t.source_dir.is_dir()
        assert t.gold_patch.startswith("diff --git") and t.tests.test_patch.startswith("diff --git")
        assert len(t.tests.fail_to_pass) >= 2 and t.tests.pass_to_pass
        assert len(t.problem_statement) > 200
        # hidden test files never ship inside the agent-visible repo
        for path in t.hidden_test_files:
            if "new file mode" in t.tests.test_patch.split(f"b/{path}", 1)[1][:80]:
                assert not (t.source_dir / path).exists(), (t.instance_id, path)
        # the gold patch never touches the hidden tests
        assert not set(patch_paths(t.gold_patch)) & set(t.hidden_test_files)


def test_multi_file_fixes_exist():
    assert sum(len(patch_paths(t.gold_patch)) >= 2 for t in load_suite("mini")) >= 3


def test_unknown_suite_and_ids():
    with pytest.raises(TaskError, match="unknown suite"):
        load_suite("nope")
    with pytest.raises(TaskError, match="unknown instance id in suite mini: zzz$"):
        resolve_tasks(suite="mini", ids=["zzz"])
    with pytest.raises(TaskError, match=r"mini__url_routr \(did you mean mini__url_router\?\)"):
        resolve_tasks(suite="mini", ids=["mini__url_router", "mini__url_routr"])


def test_jsonl_rows_with_json_string_lists(tmp_path, tiny_task):
    row = {"instance_id": "j1", "problem_statement": "p", "test_patch": tiny_task.tests.test_patch,
           "patch": tiny_task.gold_patch, "FAIL_TO_PASS": json.dumps(list(tiny_task.tests.fail_to_pass)),
           "PASS_TO_PASS": list(tiny_task.tests.pass_to_pass), "test_command": tiny_task.tests.test_command,
           "log_parser": "pytest", "source_dir": str(tiny_task.source_dir), "extra_field": 3}
    f = tmp_path / "tasks.jsonl"
    f.write_text(json.dumps(row) + "\n\n")
    (task,) = load_jsonl(f)
    assert task.tests.fail_to_pass == tiny_task.tests.fail_to_pass
    assert task.metadata == {"extra_field": 3} and task.tests.protected_paths  # python default
    assert task.fingerprint() == load_jsonl(f)[0].fingerprint()


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r.pop("test_command"), "lacks field 'test_command'"),
    (lambda r: r.update(FAIL_TO_PASS="[not json"), "not a JSON list"),
    (lambda r: r.update(PASS_TO_PASS=r["FAIL_TO_PASS"]), "in both FAIL_TO_PASS and PASS_TO_PASS"),
    (lambda r: r.update(source_dir="/nonexistent/dir"), "not a directory"),
    (lambda r: r.pop("source_dir"), "needs either source_dir or repo"),
])
def test_jsonl_errors_are_specific(tmp_path, mutate, message):
    row = {"instance_id": "j1", "problem_statement": "p", "test_patch": "x", "FAIL_TO_PASS": ["a"],
           "PASS_TO_PASS": ["b"], "test_command": "true", "log_parser": "pytest", "source_dir": str(tmp_path)}
    mutate(row)
    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps(row) + "\n")
    with pytest.raises(TaskError, match=message):
        load_jsonl(f)


def test_jsonl_bad_line_names_the_line(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("{broken\n")
    with pytest.raises(TaskError, match=r"t.jsonl:1: not valid JSON"):
        load_jsonl(f)
