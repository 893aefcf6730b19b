"""Harbor tasks out: `ha tasks export --format harbor` writes the bundled suite and SWE-bench rows as
Harbor task folders that harbor's own pydantic models accept, and that this library reads back and
grades: solve.sh resolves, no change does not."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ha_cli.main import main
from tests.conftest import IN_CI, require_bwrap
from tests.ha_envs.test_swe_datasets import DATA, require_data

ROOT = Path(__file__).resolve().parents[3]

CHECK = """
import json, sys
from pathlib import Path
from harbor.models.task.task import Task
out = {}
for d in sorted(Path(sys.argv[1]).iterdir()):
    assert Task.is_valid_dir(d), d
    t = Task(d)
    c = t.config
    out[t.name] = {"schema": c.schema_version, "verifier_timeout": c.verifier.timeout_sec,
                   "verifier_network": c.verifier.network_mode and c.verifier.network_mode.value,
                   "network": c.environment.network_mode.value, "workdir": c.environment.workdir,
                   "test": t.paths.discovered_test_path.name, "solve": t.paths.discovered_solve_path.name,
                   "instruction": len(t.instruction), "dockerfile": (t.paths.environment_dir / "Dockerfile").is_file()}
print(json.dumps(out))
"""


def harbor_python() -> str:
    exe = os.environ.get("HA_HARBOR_PYTHON") or str(ROOT / ".venv-harbor" / "bin" / "python")
    ok = Path(exe).exists() and subprocess.run([exe, "-c", "import harbor"], check=False, capture_output=True).returncode == 0
    if not ok:
        if IN_CI:
            pytest.fail(f"no Python with harbor at {exe} but CI is set: .ci/run must create .venv-harbor")
        pytest.skip(f"no Python with harbor at {exe} (HA_HARBOR_PYTHON)")
    return exe


def _harbor_reads(out: Path) -> dict:
    res = subprocess.run([harbor_python(), "-c", CHECK, str(out)], check=False, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("harbor-out") / "mini"
    assert main(["tasks", "export", "--format", "harbor", "--suite", "mini", "--out", str(out)]) == 0
    return out


def test_bundled_suite_is_written_as_harbor_tasks(exported, capsys):
    dirs = sorted(p.name for p in exported.iterdir())
    assert len(dirs) == 12 and "mini__ttl_cache" in dirs
    d = exported / "mini__ttl_cache"
    assert os.access(d / "tests" / "test.sh", os.X_OK) and os.access(d / "solution" / "solve.sh", os.X_OK)
    assert (d / "environment" / "testbed" / "ttlcache" / "cache.py").is_file()
    assert not (d / "environment" / "testbed" / "tests" / "test_expiry.py").exists()  # the hidden test file
    assert "FROM harnessadapt/base:bookworm" in (d / "environment" / "Dockerfile").read_text()
    spec = json.loads((d / "tests" / "spec.json").read_text())
    assert spec["log_parser"] == "pytest" and len(spec["fail_to_pass"]) == 11
    # a second export does not overwrite unless told to
    assert main(["tasks", "export", "--format", "harbor", "--suite", "mini", "--out", str(exported),
                 "--filter", "ttl"]) == 2
    assert "exists (pass --overwrite" in capsys.readouterr().err
    assert main(["tasks", "export", "--format", "harbor", "--suite", "mini", "--out", str(exported),
                 "--filter", "ttl", "--overwrite"]) == 0


def test_harbors_own_models_accept_the_bundled_suite(exported):
    got = _harbor_reads(exported)
    assert len(got) == 12
    ttl = got["mini__ttl_cache"]
    assert ttl == {"schema": "1.4", "verifier_timeout": 600.0, "verifier_network": "no-network",
                   "network": "no-network", "workdir": "/testbed", "test": "test.sh", "solve": "solve.sh",
                   "instruction": ttl["instruction"], "dockerfile": True} and ttl["instruction"] > 100


def test_network_mode_public_declares_every_phase_public(tmp_path, capsys):
    """--network-mode public: for a Harbor environment that cannot enforce no-network (its runner keeps the
    network off instead; test_harbor_runner.py); harbor's models read both phases public."""
    out = tmp_path / "pub"
    assert main(["tasks", "export", "--format", "harbor", "--suite", "mini", "--instances", "mini__ttl_cache",
                 "--network-mode", "public", "--out", str(out)]) == 0
    got = _harbor_reads(out)["mini__ttl_cache"]
    assert (got["network"], got["verifier_network"]) == ("public", "public")
    with pytest.raises(SystemExit):
        main(["tasks", "export", "--format", "harbor", "--suite", "mini", "--network-mode", "off", "--out", str(out)])
    assert "invalid choice: 'off'" in capsys.readouterr().err
    from ha_envs.harbor.export import export_harbor
    from ha_envs.task import TaskError

    with pytest.raises(TaskError, match="network mode 'none': expected one of task, public"):
        export_harbor([], out, network="none")


def test_verified_rows_are_written_and_accepted(tmp_path):
    require_data("swebench_verified")
    out = tmp_path / "verified"
    assert main(["tasks", "export", "--format", "harbor", "--benchmark", "verified", "--data",
                 str(DATA / "swebench_verified" / "test.jsonl"), "--limit", "3", "--out", str(out)]) == 0
    got = _harbor_reads(out)
    assert len(got) == 3 and all(v["verifier_network"] == "public" and v["network"] == "no-network"
                                 for v in got.values())
    d = out / min(got)
    assert (d / "environment" / "Dockerfile").read_text().splitlines()[1].startswith("FROM swebench/sweb.eval.x86_64.")
    script = (d / "tests" / "test.sh").read_text()
    assert "conda activate testbed" in script and "grade.py" in script
    from ha_envs.harbor import load_harbor
    from ha_envs.swe_datasets import load_benchmark

    rows = {t.instance_id: t for t in load_benchmark("verified", source=DATA / "swebench_verified" / "test.jsonl")}
    for back in load_harbor(out):  # read back: the row's repository at its base commit, in its image
        row = rows[back.instance_id]
        assert (back.repo, back.base_commit, back.source_dir) == (row.repo, row.base_commit, None)
        assert back.environment.image == row.environment.extra["official_image"]


def test_pro_rows_without_scales_scripts_are_refused_clearly(tmp_path, capsys, monkeypatch):
    require_data("swebench_pro")
    monkeypatch.delenv("HA_PRO_SCRIPTS", raising=False)
    monkeypatch.delenv("HA_REPOS_DIR", raising=False)
    assert main(["tasks", "export", "--format", "harbor", "--benchmark", "pro", "--data",
                 str(DATA / "swebench_pro" / "swe_bench_pro_public_test.jsonl.gz"), "--limit", "1",
                 "--out", str(tmp_path / "pro")]) == 2
    assert "graded by Scale's run scripts, and none were found: pass --pro-scripts" in capsys.readouterr().err


def test_a_pro_task_exports_and_grades_by_scales_rule(tiny_task, tmp_path):
    """A Pro-shaped task (Scale's run script and parser in their shape, as tests/ha_envs/grading's
    Pro tests write them) out and back: its gold resolves, the empty patch does not."""
    require_bwrap()
    from ha_envs.grading.grader import Grader
    from ha_envs.harbor import load_harbor
    from ha_envs.harbor.export import export_harbor
    from ha_envs.harbor.oracle import with_oracle
    from tests.ha_envs.grading.test_pro_grading import pro_version, write_scripts

    task = pro_version(tiny_task, write_scripts(tmp_path / "s", tiny_task.instance_id))
    [d] = export_harbor([task], tmp_path / "out")
    assert json.loads((d / "tests" / "spec.json").read_text())["log_parser"] == "pro"
    back = load_harbor(d)[0]
    assert back.environment.workdir == "/app"
    grader = Grader()
    back = with_oracle(back, grader.sandbox_factory)
    assert grader.grade(back, back.gold_patch).resolved
    empty = grader.grade(back, "")
    assert not empty.resolved and empty.verdict_rules == "harbor (reward 0)"


def test_roundtrip_export_import_oracle_resolves(exported, tmp_path, capsys):
    require_bwrap()
    ids = ["mini__ttl_cache", "mini__url_router"]
    capsys.readouterr()
    assert main(["tasks", "validate", "--benchmark", "harbor", "--data", str(exported), "--instances", *ids,
                 "--json", "--workers", "2"]) == 0
    rows = {r["instance_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert all(rows[i]["ok"] and rows[i]["gold_status"] == "resolved" and rows[i]["empty_status"] == "unresolved"
               for i in ids), rows
    assert main(["eval", "--benchmark", "harbor", "--data", str(exported), "--instances", ids[0],
                 "--model", "oracle", "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    rec = json.loads((tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()[0])
    assert rec["reward"] == 1.0 and rec["grade"]["verdict_rules"] == "harbor (reward 1)"


@pytest.mark.parametrize("parser, log, extra, reward", [
    ("pytest", "PASSED t.py::a\nPASSED t.py::b\n", {}, "1"),
    ("pytest", "PASSED t.py::a\nFAILED t.py::b - x\n", {}, "0"),
    ("pytest", "PASSED t.py::a\nXFAIL t.py::b - why\n", {}, "1"),
    ("pytest", "", {}, "0"),
    ("r2e", "== short test summary info ==\nPASSED t.py::a\nPASSED t.py::b\n",
     {"expected_output": {"a": "PASSED", "b": "PASSED"}}, "1"),
    ("r2e", "== short test summary info ==\nPASSED t.py::a\nFAILED t.py::b\n",
     {"expected_output": {"a": "PASSED", "b": "PASSED"}}, "0"),
    ("pro", 'x\n@@M@@{"tests": [{"name": "t.py::a", "status": "PASSED"}, {"name": "t.py::b", "status": "PASSED"}]}@@E@@',
     {"pro_marks": ["@@M@@", "@@E@@"]}, "1"),
    ("pro", '@@M@@{"tests": [{"name": "t.py::a", "status": "PASSED"}, {"name": "t.py::b", "status": "SKIPPED"}]}@@E@@',
     {"pro_marks": ["@@M@@", "@@E@@"]}, "0"),
])
def test_exported_grade_script_rules(exported, tmp_path, parser, log, extra, reward):
    """tests/grade.py as Harbor's verifier runs it: a plain python3, the log and spec.json."""
    tests = exported / "mini__ttl_cache" / "tests"
    spec = {"instance_id": "x", "log_parser": parser, "fail_to_pass": ["t.py::a"], "pass_to_pass": ["t.py::b"],
            "pro_marks": ["", ""], **extra}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "log").write_text(log)
    res = subprocess.run(["python3", "-I", str(tests / "grade.py"), str(tmp_path / "log"), str(tmp_path / "spec.json")],
                         check=False, capture_output=True, text=True, cwd=tmp_path)
    assert res.stdout.strip() == reward, res.stderr
