"""Environments from the repository's own requirements (at the spec's environment-setup commit) and the
spec's pre-install steps: real git repositories, real pip against PyPI for the build."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ha_envs.sandbox.provision.pyenv import build_report, pyenv_python, python_env
from ha_envs.sandbox.provision.requirements import conda_to_pip, repo_requirements
from ha_envs.sandbox.provision.setup_steps import apply_steps, setup_report
from ha_envs.sandbox.provision.workcopy import prepare_snapshot
from ha_envs.task import EnvironmentSpec, Task, TestSpec

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]


def commit(work, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    subprocess.run(GIT + ["commit", "-qm", message], cwd=work, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def pylint_like(tmp_path, monkeypatch):
    """A repository named pylint-dev/pylint (so swebench's path table applies): the base commit has an
    old requirements file; the later environment-setup commit includes two more files and a constraint."""
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=work, check=True)
    base = commit(work, {"requirements_test.txt": "pytest<7\n", "setup.py": "from setuptools import setup\n"
                         "setup(name='pylint', version='2.15', install_requires=['iniconfig<3'])\n",
                         "tox.ini": "[testenv]\ncommands = pytest {posargs}\n"}, "base")
    setup = commit(work, {
        "requirements_test.txt": "-r requirements_test_min.txt\n-c constraints.txt\n# a comment\ncoverage~=6.4\n"
                                 "types-pkg_resources==0.1.3\n",
        "requirements_test_min.txt": "-e .[testutils,spelling]\npy~=1.11.0\npytest~=7.2\n-r requirements_test_min.txt\n",
        "constraints.txt": "iniconfig<2.1\n"}, "environment setup")
    mirrors = tmp_path / "mirrors"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirrors / "pylint-dev+pylint" / "repo")], check=True)
    monkeypatch.setenv("HA_REPOS_DIR", str(mirrors))
    monkeypatch.setenv("HA_CACHE_DIR", str(tmp_path / "cache"))

    def task(setup_commit: str | None = setup, **specs) -> Task:
        return Task(instance_id="pylint-dev__pylint-1", benchmark="swebench_verified", language="python",
                    problem_statement="x", repo="pylint-dev/pylint", base_commit=base, gold_patch="",
                    tests=TestSpec("", ("t::a",), (), "pytest -rA", "swebench:pylint-dev/pylint"),
                    environment=EnvironmentSpec(extra={"specs": {"python": "3.9", "packages": "requirements.txt", **specs},
                                                       "environment_setup_commit": setup_commit}),
                    metadata={"version": "2.15"})

    return task, base, setup


def test_requirements_read_at_the_setup_commit_with_includes(pylint_like):
    task, base, setup = pylint_like
    reqs = repo_requirements(task(), task().environment.extra["specs"])
    # Includes inlined (once, even when a file includes itself), swebench's exclusions and its
    # clean-up (a yanked package replaced) applied; -c lines kept apart as constraints.
    assert reqs.requirements == ["py~=1.11.0", "pytest~=7.2", "coverage~=6.4", "types-setuptools"]
    assert reqs.constraints == ["iniconfig<2.1"]
    assert reqs.source == f"requirements_test.txt (+ requirements_test_min.txt, constraints.txt) @ {setup[:12]}"
    assert reqs.notes == []


def test_a_setup_commit_missing_from_the_mirror_falls_back_to_the_base_and_says_so(pylint_like):
    task, base, _ = pylint_like
    t = task(setup_commit="0" * 40)
    reqs = repo_requirements(t, t.environment.extra["specs"])
    assert reqs.requirements == ["pytest<7"]
    assert reqs.source.endswith(base[:12])
    assert reqs.notes and "not in the mirror" in reqs.notes[0] and "base commit" in reqs.notes[0]


def test_no_requirements_file_is_a_named_error(pylint_like):
    from ha_envs.sandbox.base import SandboxError

    task, _, _ = pylint_like
    t = task()
    specs = dict(t.environment.extra["specs"], packages="environment.yml")
    with pytest.raises(SandboxError, match="names a environment.yml, but swebench knows no path of it in pylint-dev/pylint"):
        repo_requirements(t, specs)


@pytest.mark.parametrize("conda,pip", [
    ("numpy", ("numpy", "")), ("numpy=1.23", ("numpy", "==1.23.*")), ("conda-forge::pandas=1.5.3=py39_0", ("pandas", "==1.5.3.*")),
    ("cftime >=1.5", ("cftime", ">=1.5")), ("matplotlib-base", ("matplotlib", "")), ("scipy==1.11.1", ("scipy", "==1.11.1")),
    ("dask 2022.8.*", ("dask", "==2022.8.*")), ("h5py<3.9", ("h5py", "<3.9")), ("dask-core", ("dask", "")),
])
def test_conda_specs_become_pip_requirements(conda, pip):
    assert conda_to_pip(conda) == pip


def test_pre_install_steps_edit_the_snapshot_and_system_steps_are_reported(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=work, check=True)
    base = commit(work, {"tox.ini": "commands = pytest {posargs}\n", "setup.py": "install_requires=['Jinja2>=2.3']\n"}, "base")
    mirrors = tmp_path / "mirrors"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirrors / "sphinx-doc+sphinx" / "repo")], check=True)
    monkeypatch.setenv("HA_REPOS_DIR", str(mirrors))
    monkeypatch.setenv("HA_CACHE_DIR", str(tmp_path / "cache"))
    steps = ["apt-get update && apt-get install -y graphviz", "sed -i 's/pytest/pytest -rA/' tox.ini",
             "sed -i 's/Jinja2>=2.3/Jinja2<3.0/' setup.py"]
    task = Task(instance_id="sphinx-doc__sphinx-1", benchmark="swebench_verified", language="python",
                problem_statement="x", repo="sphinx-doc/sphinx", base_commit=base, gold_patch="",
                tests=TestSpec("", ("t::a",), (), "tox -- -v", "swebench:sphinx-doc/sphinx"),
                environment=EnvironmentSpec(extra={"specs": {"pre_install": steps}}))
    snap = prepare_snapshot(task)
    assert (snap.path / "tox.ini").read_text() == "commands = pytest -rA {posargs}\n"
    assert "Jinja2<3.0" in (snap.path / "setup.py").read_text()
    # Committed on top of the base: a clean tree, the agent's diff will not contain them.
    assert subprocess.run(["git", "status", "--porcelain"], cwd=snap.path, capture_output=True, text=True).stdout == ""
    log = subprocess.run(["git", "log", "--format=%s"], cwd=snap.path, capture_output=True, text=True).stdout.splitlines()
    assert log[0].startswith("environment setup") and log[1] == "base"
    report = setup_report(snap.path)
    assert report.skipped == [steps[0]] and report.applied == steps[1:] and not report.failed
    assert any("graphviz" in p for p in report.problems())
    # Another task at the same commit without the steps gets its own, untouched snapshot.
    plain = Task(**{**task.__dict__, "environment": EnvironmentSpec()})
    assert "pytest -rA" not in (prepare_snapshot(plain).path / "tox.ini").read_text()


def test_a_failing_step_is_named_and_later_steps_do_not_run(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    report = apply_steps(repo, ["X=1", "echo $X > a", "false", "touch b"])
    assert report.applied == ["X=1", "echo $X > a"]
    assert report.failed.startswith("false (exit 1)")
    assert (repo / "a").read_text() == "1\n" and not (repo / "b").exists()


def test_env_built_from_the_repository_requirements_names_what_pip_cannot_have(pylint_like):
    """The full build: the requirements file at the setup commit is installed, a requirement PyPI
    does not have is a named problem (not a silent substitute), and no pytest<8 guess is added."""
    try:
        pyenv_python("3.9")
    except Exception as exc:  # noqa: BLE001
        if os.environ.get("CI"):
            pytest.fail(f"no pyenv Python 3.9 but CI is set: {exc}")
        pytest.skip(str(exc))
    task, _, _ = pylint_like
    # Point the spec at a small, installable file (the full one would pull coverage, mypy types...).
    mirror = os.environ["HA_REPOS_DIR"] + "/pylint-dev+pylint/repo"
    work = os.path.dirname(mirror) + "/w"
    subprocess.run(["git", "clone", "-q", mirror, work], check=True)
    setup2 = commit(Path(work), {"requirements_test.txt": "iniconfig==2.0.0\nha-no-such-package-on-pypi==9.9\npytest==7.4.0\n"},
                    "smaller")
    subprocess.run(["git", "push", "-q", mirror, "HEAD:refs/heads/main"], cwd=work, check=True)
    t = task(setup_commit=setup2)
    env = python_env(t)
    listed = subprocess.run([str(env / "bin" / "python"), "-m", "pip", "list", "--format=json"], capture_output=True,
                            text=True, check=True).stdout
    names = {d["name"].lower(): d["version"] for d in json.loads(listed)}
    assert names.get("iniconfig") == "2.0.0" and names.get("pytest") == "7.4.0"
    report = build_report(env)
    assert report["requirements"] == f"requirements_test.txt @ {setup2[:12]}"
    assert [p for p in report["problems"] if "ha-no-such-package-on-pypi==9.9" in p], report
    assert not any("pytest<8" in n for n in report["notes"])


def test_pypi_date_is_the_specs_or_the_one_asked_for(pylint_like, monkeypatch):
    from ha_envs.sandbox.provision.pyenv import pypi_cutoff

    task, _, setup = pylint_like
    mirror = os.environ["HA_REPOS_DIR"] + "/pylint-dev+pylint/repo"
    day = subprocess.run(["git", "log", "-1", "--format=%cs", setup], cwd=mirror, capture_output=True, text=True).stdout.strip()
    t = task()
    monkeypatch.delenv("HA_PYPI_CUTOFF", raising=False)
    assert pypi_cutoff(t, t.environment.extra["specs"])[0] is None  # today's PyPI unless asked
    assert pypi_cutoff(t, {"pypi_cutoff": "2023-05-01"}) == ("2023-05-01", "the spec's date")
    monkeypatch.setenv("HA_PYPI_CUTOFF", "setup-commit")
    assert pypi_cutoff(t, {}) == (day, f"the day of the environment-setup commit {setup[:12]}")
    assert pypi_cutoff(task(setup_commit=None), {})[0] is None  # nothing to date it by
    monkeypatch.setenv("HA_PYPI_CUTOFF", "2021-02-03")
    assert pypi_cutoff(t, {}) == ("2021-02-03", "HA_PYPI_CUTOFF")
    # a repository with a default of its own (sphinx's docutils) gets it unless the user says otherwise
    from ha_envs.sandbox.provision import pyenv

    assert pyenv.REPO_CUTOFF.get("sphinx-doc/sphinx") == "setup-commit"
    monkeypatch.setitem(pyenv.REPO_CUTOFF, "pylint-dev/pylint", "setup-commit")
    monkeypatch.delenv("HA_PYPI_CUTOFF")
    assert pypi_cutoff(t, {}) == (day, f"the day of the environment-setup commit {setup[:12]}, "
                                       "pylint-dev/pylint's default (REPO_CUTOFF)")
    monkeypatch.setenv("HA_PYPI_CUTOFF", "off")
    assert pypi_cutoff(t, {})[0] is None
    monkeypatch.setenv("HA_PYPI_CUTOFF", "2021-02-03")
    assert pypi_cutoff(t, {}) == ("2021-02-03", "HA_PYPI_CUTOFF")


def test_our_own_cutoff_leaves_the_test_runner_at_today():
    """A date of our own (sphinx's REPO_CUTOFF) must not give a 2020 pytest: the dataset's test ids
    come from the pytest swebench's images had (sphinx-8265: ``test_unparse[1234-1234_0]``). A spec's
    own date (SWE-bench Pro's pypi-timemachine) covers everything but the build backends."""
    from ha_envs.sandbox.provision.pyenv import cutoff_args

    ours = cutoff_args("2020-10-24", {"python": "3.9"})
    assert ours[:2] == ["--exclude-newer", "2020-10-24T23:59:59Z"]
    today = {ours[i + 1].split("=")[0] for i, a in enumerate(ours) if a == "--exclude-newer-package"}
    assert {"pytest", "pluggy", "setuptools", "wheel"} <= today
    spec = cutoff_args("2023-09-19", {"python": "3.11", "pypi_cutoff": "2023-09-19"})
    today = {spec[i + 1].split("=")[0] for i, a in enumerate(spec) if a == "--exclude-newer-package"}
    assert today == {"setuptools", "wheel"}
