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
    if path.is_dir():
        return _read_hf(str(path), local=True)
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
    return _read_hf(str(source), local=False)


def _read_hf(source: str, local: bool) -> tuple[list[dict[str, Any]], str]:
    """The ``test`` split through ``datasets``: a hub name (``owner/name[@revision]``), a local
    dataset directory (data files, or one written by ``save_to_disk``). Provenance: the hub commit
    when it can be asked for, else the split's fingerprint."""
    unreachable = "" if local else ("HF_HUB_OFFLINE is set" if _offline() else hub_unreachable())
    if unreachable:  # read from the local cache only: never minutes of retries against a hub we cannot reach
        if not _in_hf_cache(source.partition("@")[0]):
            raise TaskError(f"{source}: the Hugging Face hub cannot be reached ({unreachable}) and the dataset is "
                            f"not in its local cache{GIVE_DATA}")
        os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
    try:
        import datasets
    except ImportError:
        raise TaskError(f"{source}: no such file, and the `datasets` package is not installed "
                        "(pip install datasets)" + GIVE_DATA) from None
    _quiet_hub_logs()
    if unreachable and not _hub_offline_in(datasets):
        raise TaskError(f"{source}: the Hugging Face hub cannot be reached ({unreachable}){GIVE_DATA}")
    name, revision = (source, "") if local else source.partition("@")[::2]
    if local and (Path(source) / "dataset_dict.json").is_file():
        ds = datasets.load_from_disk(source)["test"]
    elif local and (Path(source) / "state.json").is_file():
        ds = datasets.load_from_disk(source)
    else:
        try:
            ds = datasets.load_dataset(name, split="test", revision=revision or None)
        except Exception as exc:  # noqa: BLE001 - datasets raises many kinds; say which source failed
            why = f"the hub cannot be reached ({unreachable}) and it is not in the local cache" if unreachable \
                else f"{type(exc).__name__}: {exc}"
            raise TaskError(f"cannot load {source!r} with `datasets`: {why}{GIVE_DATA}") from None
    if not revision and not local and not unreachable:
        try:
            from huggingface_hub import HfApi

            revision = HfApi().dataset_info(name).sha or ""
        except Exception:  # noqa: BLE001 - offline: the fingerprint identifies the data instead
            revision = ""
    return [dict(r) for r in ds], f"hf:{name}@{revision or 'fingerprint:' + ds._fingerprint}"


GIVE_DATA = ("; give the data with --data FILE (parquet, jsonl or jsonl.gz, or a HF dataset directory) or "
             "HA_DATA_DIR=DIR (its layout: " + ", ".join(f"{k}: {v}" for k, v in LOCAL_FILES.items()) + ")")


def _offline() -> bool:
    return any(os.environ.get(v, "").lower() in ("1", "true", "yes", "on") for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def hub_unreachable(timeout: float = 3.0) -> str:
    """'' when a TCP connection to the hub (``HF_ENDPOINT``, default huggingface.co) opens within
    ``timeout`` seconds, else why not."""
    import socket
    from urllib.parse import urlparse

    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        return f"{host}:{port}: {exc}"
    return ""


def _in_hf_cache(name: str) -> bool:
    """Whether ``datasets`` or the hub may have ``owner/name`` cached on this machine."""
    home = Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface")
    prepared = Path(os.environ.get("HF_DATASETS_CACHE") or home / "datasets")
    key = name.replace("/", "___").lower()
    try:
        if any(e.name.lower().startswith(key) for e in prepared.iterdir()):
            return True
    except OSError:
        pass
    hub = Path(os.environ.get("HF_HUB_CACHE") or home / "hub")
    return (hub / f"datasets--{name.replace('/', '--')}").is_dir()


def _hub_offline_in(datasets: Any) -> bool:
    """Whether the already imported ``datasets`` took the offline switch (it reads it at import)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE) and bool(getattr(datasets.config, "HF_HUB_OFFLINE", True))


def _quiet_hub_logs() -> None:
    """``datasets`` and ``huggingface_hub`` print through handlers of their own; propagating to the
    CLI's root handler as well printed every line twice."""
    import datasets
    import huggingface_hub.utils.logging as hub_logging

    datasets.utils.logging.disable_propagation()
    hub_logging.disable_propagation()


def load_benchmark(name: str, source: str | Path | None = None, removed: str | Path | None = None,
                   pro_scripts: str | Path | None = None) -> list[Task]:
    """Tasks of ``name`` (verified, multilingual, pro, r2e) from ``source`` (file or HF name); by
    default from ``$HA_DATA_DIR`` when set, else from the Hugging Face hub. Pro tasks are gradable
    when Scale's run scripts are found (``pro_scripts``, ``$HA_PRO_SCRIPTS`` or a mirror under
    ``$HA_REPOS_DIR``; see ``grading/pro.py``). ``harbor``: a Harbor task folder or dataset
    (``source``, required; ``ha_envs/harbor``)."""
    if name == "harbor":
        from .harbor import load_harbor

        if source is None:
            raise TaskError("--benchmark harbor needs --data DIR: a Harbor task folder or a folder of them")
        return load_harbor(source)
    if name not in BENCHMARKS:
        raise TaskError(f"unknown benchmark {name!r}; available: {', '.join(BENCHMARKS)}")
    data_dir = os.environ.get("HA_DATA_DIR")
    if source is None:
        source = Path(data_dir) / LOCAL_FILES[name] if data_dir else BENCHMARKS[name]
    rows, provenance = read_rows(source)
    if name == "pro" and removed is None and data_dir and (Path(data_dir) / PRO_REMOVED).exists():
        removed = Path(data_dir) / PRO_REMOVED
    drop = json.loads(Path(removed).read_text()) if removed else {}
    if name == "pro":
        from .grading.pro import find_scripts

        drop = {"removed": drop, "scripts": find_scripts(pro_scripts)}
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


def official_pro_image(instance_id: str, repo: str, user: str = "jefzda") -> str:
    """Scale's Docker Hub name for a Pro instance: ``<user>/sweap-images:<owner>.<name>-<id>``, the
    id without ``instance_`` and without a ``-vnan`` suffix; element-web images are named
    ``element`` except one; tags are cut at 128 characters."""
    owner, name = repo.lower().split("/")
    tag_id = instance_id.removeprefix("instance_")
    if instance_id != _PRO_FULL_NAME:  # the one element-web image that keeps its full name and suffix
        name = "element" if repo.lower() == "element-hq/element-web" else name
        tag_id = tag_id.removesuffix("-vnan")
    return f"{user}/sweap-images:{f'{owner}.{name}-{tag_id}'[:128]}"


_PRO_FULL_NAME = "instance_element-hq__element-web-ec0f940ef0e8e3b61078f145f34dc40d1938e6c5-vnan"


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
                     log_parser=f"swebench:{repo}", timeout_s=1800.0, build_command=build_command(specs, language))
    env = EnvironmentSpec(python_version=specs.get("python"),
                          setup_commands=tuple(_as_cmds(specs.get("pre_install")) + _as_cmds(specs.get("install"))),
                          extra={"official_image": official_swebench_image(row["instance_id"]), "specs": _jsonable(specs),
                                 "environment_setup_commit": row.get("environment_setup_commit")})
    return Task(instance_id=row["instance_id"], benchmark=f"swebench_{bench}", language=language,
                problem_statement=row["problem_statement"], tests=tests, environment=env, repo=repo,
                base_commit=row["base_commit"], gold_patch=row["patch"], difficulty=row.get("difficulty") or "",
                metadata={"version": version, "created_at": str(row.get("created_at", "")), "hints_text": row.get("hints_text", ""),
                          "dataset": provenance})


def pro_task(row: dict[str, Any], bench: str, provenance: str, context: dict[str, Any]) -> Task:
    from .grading.pro import PRO_REPO, grading_command, python_specs

    iid = row["instance_id"]
    p2p = as_list(row["pass_to_pass"], "pass_to_pass")
    removed = set(context["removed"].get(iid, ()))
    files = as_list(row.get("selected_test_files_to_run") or "[]", "selected_test_files_to_run")
    scripts = context["scripts"]
    found = scripts.files(iid) if scripts is not None else None
    # Without Scale's per-instance scripts the task loads (to list, to run agents) but cannot be graded.
    command = grading_command(found, files) if found else ""
    tests = TestSpec(test_patch=row["test_patch"], fail_to_pass=as_list(row["fail_to_pass"], "fail_to_pass"),
                     pass_to_pass=tuple(t for t in p2p if t not in removed),
                     test_command=command, log_parser="pro", timeout_s=3600.0)
    statement = unwrap_statement(row["problem_statement"])
    extra = {k: row.get(k) for k in ("requirements", "interface") if row.get(k)}
    if found:
        extra["pro_scripts"] = f"{PRO_REPO}@{scripts.rev}"
    env_extra: dict[str, Any] = {"official_image": official_pro_image(iid, row["repo"])}
    specs = python_specs(scripts, iid) if found and row.get("repo_language") == "python" else None
    if specs:
        env_extra["specs"] = specs
    return Task(instance_id=iid, benchmark="swebench_pro", language={"js": "javascript", "ts": "typescript"}.get(
                    row.get("repo_language", ""), row.get("repo_language", "")),
                problem_statement=statement, tests=tests,
                environment=EnvironmentSpec(setup_commands=tuple(_as_cmds(row.get("before_repo_set_cmd"))),
                                            python_version=(specs or {}).get("python"), extra=env_extra, workdir="/app"),
                repo=row["repo"], base_commit=row["base_commit"], gold_patch=row["patch"],
                metadata={"dataset": provenance, "p2p_removed_upstream": sorted(removed & set(p2p)),
                          "selected_test_files": list(files), **extra,
                          "issue_specificity": as_list(row.get("issue_specificity") or "[]", "issue_specificity"),
                          "issue_categories": as_list(row.get("issue_categories") or "[]", "issue_categories")})


R2E_REPOS = {"pillow": "python-pillow/Pillow", "numpy": "numpy/numpy", "pandas": "pandas-dev/pandas",
             "aiohttp": "aio-libs/aiohttp", "tornado": "tornadoweb/tornado", "datalad": "datalad/datalad",
             "scrapy": "scrapy/scrapy", "pyramid": "Pylons/pyramid", "coveragepy": "nedbat/coveragepy",
             "orange3": "biolab/orange3", "sympy": "sympy/sympy"}
"""R2E-Gym's short repository names -> GitHub ``owner/name`` (for mirrors and clones)."""
R2E_RUN = ("if [ -d /r2e_tests ]; then rm -rf r2e_tests && cp -r /r2e_tests r2e_tests && bash run_tests.sh; "
           "else python -W ignore -m pytest -rA -p no:cacheprovider {files}; fi")


def _is_test_path(path: str) -> bool:
    parts = path.lower().split("/")
    name = parts[-1]
    return any(p in ("test", "tests", "testing") for p in parts[:-1]) or name.startswith("test_") or name.endswith(
        ("_test.py", "_tests.py")) or name == "conftest.py"


def r2e_task(row: dict[str, Any], bench: str, provenance: str, drop: dict[str, Any]) -> Task:
    """An R2E-Gym row. ``commit_hash`` is the fixing commit: the agent starts at its parent; the
    row's patch (the whole commit) splits into the gold patch (non-test files) and the hidden tests
    (test files). Graded as R2E-Gym grades: in its image, ``/r2e_tests`` copied to ``r2e_tests`` and
    ``run_tests.sh`` run; elsewhere pytest on the commit's test files; then exact equality of the
    parsed log with ``expected_output_json``."""
    from .grading.patchfile import split_patch
    from .task import patch_paths

    expected = json.loads(row["expected_output_json"])
    if not isinstance(expected, dict) or not expected:
        raise TaskError("expected_output_json must be a non-empty JSON object")
    modified = list(row.get("modified_files") or [])
    gold, hidden, files = [], [], []
    for section in split_patch(row.get("patch", "")):
        paths = [p for p in patch_paths(section) if p != "dev/null"]
        if paths and all(_is_test_path(p) for p in paths):
            hidden.append(section)
            files += [p for p in paths if p.endswith(".py") and p not in files]
        else:
            gold.append(section)
    tests = TestSpec(test_patch="".join(hidden), fail_to_pass=tuple(k for k, v in expected.items() if v == "PASSED"),
                     pass_to_pass=(), test_command=R2E_RUN.format(files=" ".join(files)), log_parser="r2e",
                     timeout_s=600.0)
    commit = row.get("commit_hash")
    return Task(instance_id=row["instance_id"], benchmark="r2e_gym", language=row.get("language", "python"),
                problem_statement=row["problem_statement"], tests=tests,
                environment=EnvironmentSpec(image=None, extra={"official_image": row.get("docker_image") or row.get("image_name")}),
                repo=R2E_REPOS.get(row.get("repo_name", ""), row.get("repo_name", "")),
                base_commit=f"{commit}^" if commit else None, gold_patch="".join(gold),
                metadata={"dataset": provenance, "expected_output": expected, "modified_files": modified,
                          "fix_commit": commit, "source": row.get("dataset_name", "")})


def build_command(specs: dict[str, Any], language: str) -> str:
    """swebench's ``build`` steps (run before the tests in its eval script), joined with ``&&``. A
    JavaScript step that only repeats a package-manager install is left out: the dependencies are
    installed once, with network, outside the sandbox (``nodeenv``), and grading runs offline."""
    from .sandbox.provision.nodeenv import install_commands_of

    steps = _as_cmds(specs.get("build"))
    if language in ("javascript", "typescript"):
        installs = set(install_commands_of(specs))
        steps = [s for s in steps if s not in installs]
    return " && ".join(steps)


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
