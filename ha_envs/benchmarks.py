"""Loaders for the real benchmarks: SWE-bench Verified, SWE-bench Multilingual, SWE-bench Pro and
R2E-Gym, from a Hugging Face dataset name (via ``datasets``) or a local parquet / jsonl / jsonl.gz
file, into the Task record.

Quirks normalised here (each tested on every row of the files in ``../shared/data``):
- test lists stored as JSON strings (Verified), as real lists (Multilingual), or as Python-literal
  strings (Pro: ``"['a', 'b']"``);
- problem statements JSON-encoded twice in some Pro rows (``"\\"text\\""``);
- Pro tests removed upstream (a JSON map ``instance_id -> [test ids]``, applied when given);
- R2E-Gym grades by exact equality of the parsed test log with ``expected_output_json``.

Test commands and log parsers of SWE-bench V/M come from the per-repo specs of ``swebench<5``; the
official image name is kept in ``environment.extra["official_image"]``.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable

from .task import EnvironmentSpec, Task, TaskError, TestSpec

BENCHMARKS = {
    "verified": "SWE-bench/SWE-bench_Verified",
    "multilingual": "SWE-bench/SWE-bench_Multilingual",
    "pro": "ScaleAI/SWE-bench_Pro",
    "r2e": "R2E-Gym/R2E-Gym-Lite",
}
LOCAL_FILES = {  # under HA_DATA_DIR (the layout of ../shared/data)
    "verified": "swebench_verified/test.jsonl",
    "multilingual": "swebench_multilingual/test.jsonl",
    "pro": "swebench_pro/swe_bench_pro_public_test.jsonl.gz",
    "r2e": "r2e_gym/r2e_gym_subset_sample5_nemo_gym.jsonl",
}
PRO_REMOVED = "swebench_pro/p2p_removed_upstream_2026-02-09.json"


def read_rows(source: str | Path) -> tuple[list[dict[str, Any]], str]:
    """Rows of a local file (jsonl, jsonl.gz, parquet) or a HF dataset name; and a provenance string
    (file sha256, or dataset name@revision)."""
    path = Path(source)
    if path.exists():
        data = path.read_bytes()
        digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path).to_pylist(), digest
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        rows = []
        for i, line in enumerate(data.decode("utf-8").splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise TaskError(f"{path}:{i}: not valid JSON ({exc.msg})") from None
        return rows, digest
    try:
        import datasets
    except ImportError:
        raise TaskError(f"{source}: no such file, and the `datasets` package is not installed") from None
    name, _, revision = str(source).partition("@")
    ds = datasets.load_dataset(name, split="test", revision=revision or None)
    return [dict(r) for r in ds], f"hf:{name}@{revision or getattr(ds, '_fingerprint', 'latest')}"


def load_benchmark(name: str, source: str | Path | None = None, removed: str | Path | None = None) -> list[Task]:
    """Tasks of ``name`` (verified, multilingual, pro, r2e) from ``source`` (file or HF name); by
    default from ``$HA_DATA_DIR`` when set, else from the Hugging Face hub."""
    if name not in BENCHMARKS:
        raise TaskError(f"unknown benchmark {name!r}; available: {', '.join(BENCHMARKS)}")
    data_dir = os.environ.get("HA_DATA_DIR")
    if source is None:
        source = Path(data_dir) / LOCAL_FILES[name] if data_dir else BENCHMARKS[name]
    rows, provenance = read_rows(source)
    if name == "pro" and removed is None and data_dir and (Path(data_dir) / PRO_REMOVED).exists():
        removed = Path(data_dir) / PRO_REMOVED
    drop = json.loads(Path(removed).read_text()) if removed else {}
    convert = {"verified": swebench_task, "multilingual": swebench_task, "pro": pro_task, "r2e": r2e_task}[name]
    tasks = []
    for i, row in enumerate(rows, 1):
        try:
            tasks.append(convert(row, name, provenance, drop))
        except (TaskError, KeyError, ValueError, SyntaxError) as exc:
            raise TaskError(f"{source} row {i} ({row.get('instance_id', '?')}): {exc}") from None
    return tasks


def as_list(value: Any, field: str) -> tuple[str, ...]:
    """A list of test ids stored as a list, a JSON string or a Python-literal string."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return ()
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = ast.literal_eval(text)
    if not isinstance(value, Iterable) or isinstance(value, (str, bytes, dict)):
        raise TaskError(f"{field} must be a list of test ids, got {type(value).__name__}")
    items = tuple(value)
    if not all(isinstance(v, str) for v in items):
        raise TaskError(f"{field} must hold strings only")
    return items


def unwrap_statement(text: str) -> str:
    """Undo a second JSON encoding (``"\\"Bug: ...\\n\\""`` -> ``Bug: ...``)."""
    t = text.strip()
    if len(t) >= 2 and t[0] == '"' and t[-1] == '"':
        try:
            inner = json.loads(t)
        except json.JSONDecodeError:
            return text
        if isinstance(inner, str):
            return inner
    return text


def official_swebench_image(instance_id: str) -> str:
    return f"swebench/sweb.eval.x86_64.{instance_id.replace('__', '_1776_')}:latest".lower()


def swebench_task(row: dict[str, Any], bench: str, provenance: str, drop: dict[str, Any]) -> Task:
    from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS

    repo, version = row["repo"], str(row["version"])
    specs = MAP_REPO_VERSION_TO_SPECS.get(repo, {}).get(version)
    if specs is None:
        raise TaskError(f"swebench has no spec for {repo} {version}")
    test_cmd = specs["test_cmd"]
    if isinstance(test_cmd, list):
        command = " && ".join(test_cmd)
    else:
        from swebench.harness.test_spec.python import get_test_directives

        command = f"{test_cmd} {' '.join(get_test_directives(row))}".strip()
    language = "python" if bench == "verified" else _language(repo)
    tests = TestSpec(test_patch=row["test_patch"], fail_to_pass=as_list(row["FAIL_TO_PASS"], "FAIL_TO_PASS"),
                     pass_to_pass=as_list(row["PASS_TO_PASS"], "PASS_TO_PASS"), test_command=command,
                     log_parser=f"swebench:{repo}", timeout_s=1800.0)
    env = EnvironmentSpec(python_version=specs.get("python"),
                          setup_commands=tuple(_as_cmds(specs.get("pre_install")) + _as_cmds(specs.get("install"))),
                          extra={"official_image": official_swebench_image(row["instance_id"]), "specs": _jsonable(specs),
                                 "environment_setup_commit": row.get("environment_setup_commit")})
    return Task(instance_id=row["instance_id"], benchmark=f"swebench_{bench}", language=language,
                problem_statement=row["problem_statement"], tests=tests, environment=env, repo=repo,
                base_commit=row["base_commit"], gold_patch=row["patch"], difficulty=row.get("difficulty") or "",
                metadata={"version": version, "created_at": str(row.get("created_at", "")), "hints_text": row.get("hints_text", ""),
                          "dataset": provenance})


def pro_task(row: dict[str, Any], bench: str, provenance: str, drop: dict[str, Any]) -> Task:
    iid = row["instance_id"]
    p2p = as_list(row["pass_to_pass"], "pass_to_pass")
    removed = set(drop.get(iid, ()))
    files = as_list(row.get("selected_test_files_to_run") or "[]", "selected_test_files_to_run")
    tests = TestSpec(test_patch=row["test_patch"], fail_to_pass=as_list(row["fail_to_pass"], "fail_to_pass"),
                     pass_to_pass=tuple(t for t in p2p if t not in removed),
                     test_command=f"bash /run_script.sh {','.join(files)}", log_parser="pro", timeout_s=3600.0)
    statement = unwrap_statement(row["problem_statement"])
    extra = {k: row.get(k) for k in ("requirements", "interface") if row.get(k)}
    return Task(instance_id=iid, benchmark="swebench_pro", language={"js": "javascript", "ts": "typescript"}.get(
                    row.get("repo_language", ""), row.get("repo_language", "")),
                problem_statement=statement, tests=tests,
                environment=EnvironmentSpec(setup_commands=tuple(_as_cmds(row.get("before_repo_set_cmd"))),
                                            extra={"official_image_repo": "jefzda/sweap-images"}),
                repo=row["repo"], base_commit=row["base_commit"], gold_patch=row["patch"],
                metadata={"dataset": provenance, "p2p_removed_upstream": sorted(removed & set(p2p)),
                          "selected_test_files": list(files), **extra,
                          "issue_specificity": as_list(row.get("issue_specificity") or "[]", "issue_specificity"),
                          "issue_categories": as_list(row.get("issue_categories") or "[]", "issue_categories")})


def r2e_task(row: dict[str, Any], bench: str, provenance: str, drop: dict[str, Any]) -> Task:
    expected = json.loads(row["expected_output_json"])
    if not isinstance(expected, dict) or not expected:
        raise TaskError("expected_output_json must be a non-empty JSON object")
    modified = list(row.get("modified_files") or [])
    tests = TestSpec(test_patch="", fail_to_pass=tuple(k for k, v in expected.items() if v == "PASSED"),
                     pass_to_pass=(), test_command="bash run_tests.sh", log_parser="r2e", timeout_s=600.0)
    return Task(instance_id=row["instance_id"], benchmark="r2e_gym", language=row.get("language", "python"),
                problem_statement=row["problem_statement"], tests=tests,
                environment=EnvironmentSpec(image=None, extra={"official_image": row.get("docker_image") or row.get("image_name")}),
                repo=row.get("repo_name", ""), base_commit=row.get("commit_hash"), gold_patch=row.get("patch", ""),
                metadata={"dataset": provenance, "expected_output": expected, "modified_files": modified,
                          "source": row.get("dataset_name", "")})


def _language(repo: str) -> str:
    from swebench.harness.constants import MAP_REPO_TO_EXT

    ext = MAP_REPO_TO_EXT.get(repo, "py")
    return {"py": "python", "js": "javascript", "ts": "typescript", "go": "go", "rs": "rust", "java": "java",
            "c": "c", "cpp": "cpp", "rb": "ruby", "php": "php"}.get(ext, ext)


def _as_cmds(value: Any) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        return [line for line in value.splitlines() if line.strip()]
    return [str(v) for v in value]


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
