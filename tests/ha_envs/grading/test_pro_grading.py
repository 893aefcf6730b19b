"""SWE-bench Pro grading as Scale's harness does it: per-instance run_script.sh + parser.py found in a
checkout (or bare clone) of scaleapi/SWE-bench_Pro-os, the repository at /app, binary hunks stripped,
every F2P and P2P test PASSED.

Scale's files are not shipped and CI cannot fetch them, so these tests write files in the same
layout and with the same contract (run_script.sh <files joined by ','> writes the runner's output;
parser.py stdout stderr output.json writes {"tests": [{name, status}]}); the real instances are
validated in the closing note (`ha tasks validate --benchmark pro ...`).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from ha_envs.swe_datasets import load_benchmark
from ha_envs.grading import Grader
from ha_envs.grading.report import GradingError
from ha_envs.grading.sandboxes import docker_sandbox_factory, local_sandbox_factory
from ha_envs.grading.pro import ProScripts, find_scripts, grading_command, parse_output, python_specs, strip_binary_hunks
from ha_envs.sandbox.local import LocalSandboxConfig
from ha_envs.task import EnvironmentSpec

from tests.conftest import _git_diff, require_bwrap
from tests.ha_envs.test_swe_datasets import DATA, require_data


IID = "instance_ansible__ansible-0ea40e09d1b35bcb69ff4d9cecf3d0defa4b36e8-v30a923fb5c164d6cd18280c02422f75e611e8fb2"

# A run script in Scale's shape: it must be run from /app and takes the test files comma-joined.
RUN_SCRIPT = textwrap.dedent("""\
    #!/bin/bash
    set -e
    run_selected_tests() {
      cd /app
      export PYTHONPATH=/app:$PYTHONPATH
      python -m pytest -v -p no:cacheprovider "$@" || true
      echo "SELECTED: $*"  # after the run: the log tail keeps it however long pytest's header grows
    }
    if [[ "$1" == *","* ]]; then IFS=',' read -r -a TEST_FILES <<< "$1"; else TEST_FILES=("$@"); fi
    run_selected_tests "${TEST_FILES[@]}"
    echo "to stderr: $PRO_MARKER" >&2
    """)
PARSER = textwrap.dedent("""\
    import json, re, sys
    out, err, dest = sys.argv[1:4]
    text = open(out).read() + "\\n" + open(err).read()
    tests = [{"name": m.group(1), "status": m.group(2)}
             for m in re.finditer(r"^(\\S+::\\S+) (PASSED|FAILED|SKIPPED|ERROR)", text, re.M)]
    if "to stderr: set-by-dockerfile" in text:
        tests.append({"name": "env::exported", "status": "PASSED"})
    json.dump({"tests": tests}, open(dest, "w"))
    """)
BASE_DOCKERFILE = "FROM python:3.11-slim\nRUN mkdir /app\nWORKDIR /app\nENV PRO_MARKER=set-by-dockerfile\n"
INSTANCE_DOCKERFILE = textwrap.dedent("""\
    FROM base_x
    ENV PYTEST_ADDOPTS="-p no:randomly"
    RUN cat <<'EOFBUILD' > /build.sh
    pip install setuptools || true
    pip install pypi-timemachine
    pypi-timemachine 2023-09-19 --port 9876 &
    pip install --upgrade pip wheel setuptools
    if [ -f requirements.txt ]; then
        pip install -r requirements.txt
    fi
    python -m pip install --default-timeout=100 -r test/requirements.txt
    pip install pytest pytest-xdist mock pyyaml
    pip install -e .
    EOFBUILD
    """)


def write_scripts(root: Path, iid: str) -> Path:
    (root / "run_scripts" / iid).mkdir(parents=True)
    (root / "run_scripts" / iid / "run_script.sh").write_text(RUN_SCRIPT)
    (root / "run_scripts" / iid / "parser.py").write_text(PARSER)
    for kind, text in (("base_dockerfile", BASE_DOCKERFILE), ("instance_dockerfile", INSTANCE_DOCKERFILE)):
        (root / "dockerfiles" / kind / iid).mkdir(parents=True)
        (root / "dockerfiles" / kind / iid / "Dockerfile").write_text(text)
    return root


def pro_version(task, scripts_root: Path, p2p_extra: tuple[str, ...] = ()):
    files = ProScripts(scripts_root).files(task.instance_id)
    tests = dataclasses.replace(task.tests, test_command=grading_command(files, ["tests/test_hidden.py", "tests/test_visible.py"]),
                                log_parser="pro", pass_to_pass=task.tests.pass_to_pass + ("env::exported",) + p2p_extra)
    return dataclasses.replace(task, benchmark="swebench_pro", tests=tests,
                               environment=EnvironmentSpec(workdir="/app"),
                               metadata={**task.metadata, "selected_test_files": ["tests/test_hidden.py",
                                                                                  "tests/test_visible.py"]})


def test_scripts_from_a_checkout_a_run_scripts_dir_and_a_bare_clone(tmp_path, monkeypatch):
    root = write_scripts(tmp_path / "Pro-os", IID)
    files = ProScripts(root).files(IID)
    assert files["run_script.sh"] == RUN_SCRIPT and files["parser.py"] == PARSER
    # Scale's entry script turns each Dockerfile ENV line into an export, base first.
    assert files["env"] == 'export PRO_MARKER=set-by-dockerfile\nexport PYTEST_ADDOPTS="-p no:randomly"'
    assert ProScripts(root / "run_scripts").files(IID) == files
    assert ProScripts(root).files("instance_other") is None
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "s"], cwd=root, check=True)
    mirrors = tmp_path / "mirrors"
    subprocess.run(["git", "clone", "-q", "--bare", str(root), str(mirrors / "scaleapi+SWE-bench_Pro-os" / "repo")], check=True)
    monkeypatch.delenv("HA_PRO_SCRIPTS", raising=False)
    monkeypatch.setenv("HA_REPOS_DIR", str(mirrors))
    bare = find_scripts()
    assert bare is not None and bare.bare and bare.files(IID) == files and bare.files("nope") is None
    assert len(bare.rev) == 40
    with pytest.raises(ValueError, match="no run_scripts"):
        ProScripts(tmp_path)


def test_python_specs_from_the_dockerfiles(tmp_path):
    specs = python_specs(ProScripts(write_scripts(tmp_path, IID)), IID)
    assert specs["python"] == "3.11" and specs["install_repo"] is True and specs["pypi_cutoff"] == "2023-09-19"
    assert specs["pip_packages"] == ["pytest", "pytest-xdist", "mock", "pyyaml"]
    assert specs["requirements_files"] == ["requirements.txt", "test/requirements.txt"]
    base = tmp_path / "dockerfiles" / "base_dockerfile" / IID / "Dockerfile"
    base.write_text("FROM ubuntu:22.04\n")
    assert python_specs(ProScripts(tmp_path), IID) is None  # no Python named anywhere -> needs Scale's image
    # an ubuntu base with the Python from apt (some ansible instances: ansible-test wants python3.9)
    base.write_text("FROM ubuntu:20.04\nRUN apt-get update && apt-get install -y \\\n    git \\\n    python3.9 \\\n"
                    "    python3.9-dev \\\n    python3-pip \\\n    && ln -sf /usr/bin/python3.9 /usr/bin/python3\n")
    assert python_specs(ProScripts(tmp_path), IID)["python"] == "3.9"
    base.write_text("FROM ubuntu:20.04\nRUN apt-get install -y python3-pip\nRUN ln -sf /usr/bin/python3.9 /usr/bin/python3\n")
    assert python_specs(ProScripts(tmp_path), IID) is None  # python3-pip alone names no version


def test_output_parsing_and_binary_hunks():
    log = "noise\n@@HA_PRO_OUTPUT@@\n" + json.dumps({"tests": [
        {"name": "a", "status": "FAILED"}, {"name": "b", "status": "PASSED"}, {"name": "a", "status": "PASSED"}]}) + "\n@@HA_PRO_END@@\n"
    assert parse_output(log) == {"a": "PASSED", "b": "PASSED"}  # the last entry of a name wins, as in Scale's export
    assert parse_output("no output.json\n@@HA_PRO_OUTPUT@@\n\n@@HA_PRO_END@@") == {}
    assert parse_output("@@HA_PRO_OUTPUT@@\n{\"tests\": [tru\n@@HA_PRO_END@@") == {}
    text = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    binary = "diff --git a/logo.png b/logo.png\nindex 1..2 100644\nGIT binary patch\nliteral 3\nabc\n\n"
    marker = "diff --git a/i.bin b/i.bin\nBinary files a/i.bin and b/i.bin differ\n"
    kept, dropped = strip_binary_hunks(binary + text + marker)
    assert kept == text and dropped == ["logo.png", "i.bin"]


def test_loader_attaches_scripts_and_specs_only_where_found(tmp_path, monkeypatch):
    require_data("swebench_pro")
    monkeypatch.delenv("HA_REPOS_DIR", raising=False)
    monkeypatch.setenv("HA_DATA_DIR", str(DATA))
    tasks = load_benchmark("pro", pro_scripts=write_scripts(tmp_path, IID))
    by_id = {t.instance_id: t for t in tasks}
    task = by_id[IID]
    assert task.environment.workdir == "/app" and "cd /app" in task.tests.test_command
    assert "'test/units/utils/test_vars.py'" in task.tests.test_command
    assert task.environment.extra["specs"]["python"] == "3.11" and task.metadata["pro_scripts"].startswith("scaleapi/")
    others = [t for t in tasks if t.instance_id != IID]
    assert len(others) == 730 and not any(t.tests.test_command for t in others)


def test_grading_without_scripts_says_how_to_get_them(tiny_task):
    task = dataclasses.replace(tiny_task, benchmark="swebench_pro",
                               tests=dataclasses.replace(tiny_task.tests, test_command="", log_parser="pro"))
    with pytest.raises(GradingError, match="HA_PRO_SCRIPTS"):
        Grader().grade(task, tiny_task.gold_patch)


@pytest.mark.parametrize("isolation", ["bwrap", "none"])
def test_local_gold_empty_binary_and_scales_rule(tiny_task, tmp_path, isolation):
    if isolation == "bwrap":
        require_bwrap()
    task = pro_version(tiny_task, write_scripts(tmp_path / "s", tiny_task.instance_id))
    grader = Grader(local_sandbox_factory(LocalSandboxConfig(isolation=isolation)))
    gold = grader.grade(task, tiny_task.gold_patch)
    assert gold.resolved, gold.log_tail
    assert set(gold.fail_to_pass.values()) == {"PASSED"} and gold.pass_to_pass["env::exported"] == "PASSED"
    assert "SELECTED: tests/test_hidden.py tests/test_visible.py" in gold.log_tail
    empty = grader.grade(task, "")
    assert not empty.resolved and empty.fail_to_pass == {"tests/test_hidden.py::test_clamp_high": "FAILED"}
    # A binary hunk is stripped, as Scale does; the text part still resolves.
    binary = "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 3\nKcmZ?wb^re<0RR91\n\nliteral 0\nHcmV?d00001\n\n"
    mixed = grader.grade(task, binary + tiny_task.gold_patch)
    assert mixed.resolved and mixed.dropped_paths == ["logo.png"]


def test_a_skipped_p2p_fails_under_scales_rule(tiny_task, tmp_path):
    require_bwrap()
    task = pro_version(tiny_task, write_scripts(tmp_path / "s", tiny_task.instance_id), p2p_extra=("tests/test_skip.py::test_s",))
    skip = ("diff --git a/tests/test_skip.py b/tests/test_skip.py\nnew file mode 100644\n--- /dev/null\n"
            "+++ b/tests/test_skip.py\n@@ -0,0 +1,4 @@\n+import pytest\n+@pytest.mark.skip\n+def test_s():\n+    pass\n")
    tests = dataclasses.replace(task.tests, test_patch=task.tests.test_patch + skip,
                                test_command=task.tests.test_command.replace("tests/test_visible.py'", "tests/test_visible.py,tests/test_skip.py'"))
    report = Grader().grade(dataclasses.replace(task, tests=tests), tiny_task.gold_patch)
    assert report.pass_to_pass["tests/test_skip.py::test_s"] == "SKIPPED" and not report.resolved


def test_docker_grades_pro_at_app(tiny_task, tmp_path):
    from tests.conftest import require_docker

    require_docker()
    task = pro_version(tiny_task, write_scripts(tmp_path / "s", tiny_task.instance_id))
    grader = Grader(docker_sandbox_factory())
    gold = grader.grade(task, tiny_task.gold_patch)
    assert gold.resolved, gold.log_tail
    assert not grader.grade(task, "").resolved


def test_cli_validate_pro_without_scripts_and_with_a_bad_repos_dir(tmp_path, monkeypatch, capsys):
    from ha_cli.main import main

    require_data("swebench_pro")
    monkeypatch.setenv("HA_DATA_DIR", str(DATA))
    monkeypatch.delenv("HA_PRO_SCRIPTS", raising=False)
    monkeypatch.setenv("HA_REPOS_DIR", str(tmp_path))  # no Pro-os mirror there
    # An instance without scripts: one specific problem, before anything is cloned.
    other = "instance_ansible__ansible-39bd8b99ec8c6624207bf3556ac7f9626dad9173-v1055803c3a812189a1133297f7f5468579283f86"
    assert main(["tasks", "validate", "--benchmark", "pro", "--pro-scripts", str(write_scripts(tmp_path / "s", IID)),
                 "--instances", other, "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out[0]["instance_id"] == other and "HA_PRO_SCRIPTS" in out[0]["problems"][0]
    assert main(["tasks", "list", "--benchmark", "pro", "--repos", str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_pro_gradings_get_canaries_in_the_files_the_run_script_runs(tiny_task, tmp_path):
    """Scale's run script runs the selected test files: the canaries go into them, and a patch that
    empties pytest's run method (every test 'passes'; Pro has no runner guard of ours) earns
    nothing. Without the canaries it earns 1.0."""
    require_bwrap()
    from .verdict_payloads import RUNTEST_SRC, _compiled

    task = pro_version(tiny_task, write_scripts(tmp_path / "s", tiny_task.instance_id))
    gold = Grader().grade(task, tiny_task.gold_patch)
    assert gold.resolved, (gold.status, gold.tampering)
    c = gold.canaries
    assert c["files"] == 1 and c["planted"] == c["reported"] == c["as_planted"] and c["must_fail"] > 0, c
    src = tmp_path / "forger"
    subprocess.run(["cp", "-a", str(tiny_task.source_dir), str(src)], check=True)
    forged = _git_diff(src, lambda d: (d / "calc.py").write_text((d / "calc.py").read_text() + _compiled(RUNTEST_SRC)))
    assert Grader(canaries=False).grade(task, forged).reward == 1.0
    report = Grader().grade(task, forged)
    assert report.reward == 0.0 and report.status == "verdict_tampered", (report.status, report.tampering)
    assert any("false assertion" in r for r in report.tampering)
