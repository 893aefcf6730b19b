"""Real-instance environments: a venv from the matching pyenv Python (local sandbox) and the same
environment inside a Docker image; the code under test is always the work copy."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ha_envs.grading.grader import Grader
from ha_envs.grading.sandboxes import docker_sandbox_factory
from ha_envs.sandbox import make_sandbox
from ha_envs.sandbox.provision.pyenv import pyenv_python, python_env
from ha_envs.task import EnvironmentSpec, Task, TestSpec


def _pypi_reachable() -> bool:
    proc = subprocess.run(["python3", "-m", "pip", "download", "--no-deps", "-q", "-d", "/tmp/ha-pypi-probe",
                           "iniconfig==2.0.0"], capture_output=True, timeout=120)
    return proc.returncode == 0


def upstream(root, files: dict[str, str], repo: str):
    """A one-commit repository from ``files``, mirrored as ``root/mirrors/<owner>+<name>/repo``: its
    base commit and ``diff(edit)`` (the patch an edit of a copy makes)."""
    work = root / "repo"
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    subprocess.run(git + ["commit", "-qm", "base"], cwd=work, check=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(root / "mirrors" / repo.replace("/", "+") / "repo")],
                   check=True)

    def diff(edit):
        copy = root / "w"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(work, copy)
        edit(copy)
        subprocess.run(["git", "add", "-A"], cwd=copy, check=True)
        return subprocess.run(["git", "diff", "--cached"], cwd=copy, capture_output=True, text=True).stdout
    return base, diff


def require_docker() -> None:
    from ha_envs.sandbox.docker import docker_client
    from ha_envs.sandbox.provision.images import build_base_image
    try:
        build_base_image(docker_client(timeout=30))
    except Exception as exc:  # noqa: BLE001
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no docker: {exc}")


@pytest.fixture(scope="module")
def real_task(tmp_path_factory):
    # In CI (this machine's image: pyenv 3.6-3.13, PyPI reachable) a missing piece is a failure.
    try:
        pyenv_python("3.9")
    except Exception as exc:  # noqa: BLE001
        if os.environ.get("CI"):
            pytest.fail(f"no pyenv Python 3.9 but CI is set: {exc}")
        pytest.skip(f"no pyenv Python 3.9: {exc}")
    if not _pypi_reachable():
        if os.environ.get("CI"):
            pytest.fail("PyPI is not reachable but CI is set: real-instance environments cannot be built")
        pytest.skip("PyPI is not reachable: the environment cannot be built")
    root = tmp_path_factory.mktemp("acme")
    init = "import sys\n\n\ndef double(x):\n    return x + x + 1\n\n\ndef version():\n    return sys.version_info[:2]\n"
    base, diff = upstream(root, {
        "setup.py": "from setuptools import setup\nsetup(name='acme', version='1.0', packages=['acme'], "
                    "install_requires=['iniconfig==2.0.0'])\n",
        "acme/__init__.py": init,
        "tests/test_acme.py": "import iniconfig\nfrom acme import version\n\n\ndef test_version():\n    assert version() == (3, 9)\n",
    }, "acme/calc")
    gold = diff(lambda w: (w / "acme" / "__init__.py").write_text(init.replace("x + x + 1", "x + x")))
    hidden = diff(lambda w: (w / "tests" / "test_double.py").write_text(
        "from acme import double\n\n\ndef test_double():\n    assert double(2) == 4\n"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HA_REPOS_DIR", str(root / "mirrors"))
        yield Task(instance_id="acme__calc-1", benchmark="swebench_verified", language="python",
                   problem_statement="double(2) returns 5", repo="acme/calc", base_commit=base, gold_patch=gold,
                   tests=TestSpec(hidden, ("tests/test_double.py::test_double",), ("tests/test_acme.py::test_version",),
                                  "pytest -rA tests", "swebench:psf/requests", timeout_s=300),
                   environment=EnvironmentSpec(extra={"specs": {"python": "3.9", "packages": "pytest",
                                                                "install": "python -m pip install ."}}),
                   metadata={"version": "1.0"})


def test_local_env_uses_the_matching_python_and_the_work_copy(real_task):
    env = python_env(real_task)
    assert (env / ".ha-ready").is_file() and python_env(real_task) == env  # cached
    # The repository's own distribution is named `acme`, not after the repo (acme/calc): found (a legacy
    # setup.py install here, no direct_url.json) because the package it installed is in the repository;
    # it stays installed, and its import root (the top level) is recorded.
    listed = subprocess.run([str(env / "bin" / "python"), "-m", "pip", "list"], capture_output=True, text=True).stdout
    assert "iniconfig" in listed and "acme" in listed
    assert (env / "ha-import-roots.json").read_text() == '[""]'
    sb = make_sandbox("local", real_task)
    try:
        sb.start()
        assert sb.run("python --version").output.strip().startswith("Python 3.9.")
        sb.run("sed -i 's/x + x + 1/x * 2/' acme/__init__.py")
        assert sb.run("python -c 'import acme; print(acme.double(3), acme.__file__)'").output.split()[0] == "6"
        assert "site-packages" not in sb.run("python -c 'import acme; print(acme.__file__)'").output
        # A test that sets its own PYTHONPATH for a subprocess (pylint's do) still gets the work copy
        # (through the env's .pth, as an editable install), never an installed copy of the base.
        alone = sb.run("cd /tmp && env -u PYTHONPATH python -c 'import acme; print(acme.double(3), acme.__file__)'")
        assert alone.output.split() == ["6", f"{real_task.environment.workdir}/acme/__init__.py"], alone.output
    finally:
        sb.close()
    g = Grader()
    assert g.grade(real_task, real_task.gold_patch).resolved
    assert not g.grade(real_task, "").resolved


def test_an_env_packed_on_one_machine_runs_relocated_on_another(real_task, tmp_path, monkeypatch):
    """A built environment moved to a machine whose cache is elsewhere (artifacts.pack_env /
    install_env): its scripts' #! lines point into the new place, it grades the gold patch there, it
    says it was copied, and the copy is never used when the archive was cut short."""
    import hashlib

    from ha_envs.sandbox.provision.artifacts import env_dest, env_origin, install_env, pack_env
    from ha_envs.task import TaskError

    here = python_env(real_task)
    data = pack_env(here)
    digest = hashlib.sha256(data).hexdigest()
    monkeypatch.setenv("HA_CACHE_DIR", str(tmp_path / "other-node"))
    kind, there = env_dest(real_task)
    assert kind == "python-env" and there.name == here.name and there != here
    with pytest.raises(TaskError, match="cut short or damaged"):
        install_env(kind, there, data[: len(data) // 2], digest, str(here))
    assert not (there / ".ha-ready").exists()
    assert install_env(kind, there, data, digest, str(here)) == there
    assert env_origin(there) == "copied" and env_origin(here) == "built"
    assert python_env(real_task) == there  # found, not built again
    shebang = (there / "bin" / "pytest").read_text().splitlines()[0]
    assert shebang.startswith(f"#!{there}/bin/python"), shebang
    assert str(here) not in "".join(p.read_text(errors="replace") for p in (there / "bin").iterdir()
                                    if p.is_file() and not p.is_symlink())
    away = here.with_name(here.name + ".away")
    here.rename(away)  # nothing of the first machine's copy may be needed
    try:
        ran = subprocess.run([str(there / "bin" / "pytest"), "--version"], capture_output=True, text=True)
        assert ran.returncode == 0, ran.stderr
        g = Grader()
        assert g.grade(real_task, real_task.gold_patch).resolved
        assert not g.grade(real_task, "").resolved
    finally:
        away.rename(here)


def test_env_python_keeps_its_packages_when_called_through_a_link(real_task, tmp_path):
    """tox --current-env (sphinx's test command) links .tox/py39/bin/python to the env's python and
    calls it there: a venv would fall back to the bare interpreter without its packages; the env is a
    real prefix and must not. Building it must leave the shared pyenv interpreter untouched."""
    env = python_env(real_task)
    link = tmp_path / ".tox" / "py39" / "bin" / "python"
    link.parent.mkdir(parents=True)
    link.symlink_to(env / "bin" / "python")
    out = subprocess.run([str(link), "-c", "import sys, iniconfig; print(sys.prefix)"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(env)
    base = pyenv_python("3.9").resolve().parent.parent
    bare = subprocess.run([str(base / "bin" / "python3.9"), "-c", "import iniconfig"], capture_output=True)
    assert bare.returncode != 0, "the env's packages leaked into the shared pyenv interpreter"
    for script in (env / "bin").iterdir():  # scripts run the env's python, wherever they were copied from
        if script.is_file() and not script.is_symlink() and script.read_bytes().startswith(b"#!"):
            assert str(base) not in script.read_text().splitlines()[0], script


def test_docker_env_image_gives_the_same_verdicts(real_task):
    require_docker()
    sb = make_sandbox("docker", real_task, warm=0)
    try:
        sb.start()
        assert sb.run("python --version").output.strip().startswith("Python 3.9.")
        assert "1 passed" in sb.run("pytest -q tests/test_acme.py 2>&1 | tail -1").output  # asserts Python 3.9
    finally:
        sb.close()
    g = Grader(docker_sandbox_factory())
    assert g.grade(real_task, real_task.gold_patch).resolved
    assert not g.grade(real_task, "").resolved


def test_collect_builds_environments_before_any_episode_and_a_failed_build_masks_only_its_task(
        real_task, tmp_path, monkeypatch):
    """A first environment build (minutes on a real instance) happens in ``collect``'s preparation,
    announced with an ETA, not inside the first episode's time budget; a task whose environment
    cannot be built is said so there and its episodes end masked while the other task resolves."""
    import dataclasses
    import io

    from ha_agents.runs.rollouts import collect
    from ha_envs.sandbox.provision.pyenv import python_env_dest

    monkeypatch.setenv("HA_CACHE_DIR", str(tmp_path / "cache"))  # nothing built yet
    broken = dataclasses.replace(real_task, instance_id="acme__calc-2", environment=EnvironmentSpec(
        extra={"specs": {"python": "2.1", "packages": "pytest", "install": "python -m pip install ."}}))
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    recs = collect([real_task, broken], 1, "oracle", "h0", out=tmp_path / "run", workers=1)
    lines = err.getvalue().splitlines()
    built = [i for i, x in enumerate(lines) if x.startswith("snapshots and environments 1/2: acme__calc-1 (")]
    episodes = [i for i, x in enumerate(lines) if re.match(r"\[\d/2\] run 1 ", x)]
    assert built and episodes and built[0] < episodes[0], lines  # built, with its ETA, before any episode ended
    assert "| ETA " in lines[built[0]]
    assert (python_env_dest(real_task) / ".ha-ready").is_file()
    assert any(x.startswith("environment of acme__calc-2 could not be built") and "Python 2.1 is needed" in x
               for x in lines), lines
    by_id = {r["instance_id"]: r for r in recs}
    assert by_id["acme__calc-1"]["resolved"] is True
    assert by_id["acme__calc-2"]["termination"] == "sandbox_error" and "Python 2.1" in json.dumps(dict(by_id["acme__calc-2"]), default=str)


def test_env_pinned_to_a_pypi_date(real_task):
    """SWE-bench Pro's images install from PyPI as of a date (pypi-timemachine); `pypi_cutoff` does the
    same through uv, so an old Python does not backtrack through today's releases."""
    import dataclasses

    specs = {"python": "3.9", "pip_packages": ["iniconfig", "pytest"], "requirements_files": ["requirements.txt"],
             "install_repo": False, "pypi_cutoff": "2021-01-01"}
    task = dataclasses.replace(real_task, instance_id="acme__calc-dated",
                               environment=EnvironmentSpec(extra={"specs": specs}))
    env = python_env(task)
    versions = subprocess.run([str(env / "bin" / "python"), "-c", "import iniconfig, pytest; print(pytest.__version__)"],
                              capture_output=True, text=True)
    assert versions.returncode == 0 and versions.stdout.strip() == "6.2.1"  # the newest pytest on 2021-01-01
    assert "acme" not in subprocess.run([str(env / "bin" / "python"), "-m", "pip", "list"], capture_output=True,
                                        text=True).stdout  # install_repo False: the repository is not installed


def test_instances_of_one_version_share_a_dependency_layer(real_task, tmp_path, monkeypatch):
    """Two instances of one repository and spec at different base commits: the dependencies are
    installed once (one layer, built for the first), each environment installs its own commit of
    the repository on a copy, and neither install reaches the layer."""
    import dataclasses

    from ha_envs.sandbox.provision.pyenv import ENV_FORMAT, LAYER_REPORT, dependency_layer

    files = {"setup.py": "from setuptools import setup\nsetup(name='acme', version='1.0', packages=['acme'], "
                         "install_requires=['iniconfig==2.0.0'])\n",
             "acme/__init__.py": "def triple(x):\n    return x * 3\n"}
    first, _ = upstream(tmp_path, files, "acme/layered")
    work, git = tmp_path / "repo", ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    (work / "setup.py").write_text(files["setup.py"].replace("1.0", "1.1"))
    subprocess.run(git + ["commit", "-qam", "next"], cwd=work, check=True)
    second = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "push", "-q", str(tmp_path / "mirrors" / "acme+layered" / "repo"), "HEAD:refs/heads/next"],
                   cwd=work, check=True)
    monkeypatch.setenv("HA_REPOS_DIR", str(tmp_path / "mirrors"))
    specs = {"python": "3.9", "packages": "iniconfig==2.0.0", "install": "python -m pip install ."}
    one = dataclasses.replace(real_task, instance_id="acme__layered-1", repo="acme/layered", base_commit=first,
                              environment=EnvironmentSpec(extra={"specs": specs}))
    two = dataclasses.replace(one, instance_id="acme__layered-2", base_commit=second)
    env1 = python_env(one)
    layer = dependency_layer(one)
    ready = (layer / ".ha-ready").stat().st_mtime_ns
    env2 = python_env(two)
    assert env1 != env2 and dependency_layer(two) == layer
    assert (layer / ".ha-ready").read_text() == "acme__layered-1" and (layer / ".ha-ready").stat().st_mtime_ns == ready
    for env in (env1, env2):
        assert json.loads((env / "ha-build.json").read_text())["layer"] == layer.name
        assert not (env / LAYER_REPORT).exists()
        # each records what built it (``ha cache`` tells stale entries by it), the env its own record
        assert json.loads((env / ".ha-format").read_text()) == {"kind": "python-env", "format": ENV_FORMAT}
        assert (env / ".ha-format").stat().st_ino != (layer / ".ha-format").stat().st_ino
    assert json.loads((layer / ".ha-format").read_text()) == {"kind": "python-layer", "format": ENV_FORMAT}

    def dists(prefix):
        out = subprocess.run([str(prefix / "bin" / "python"), "-m", "pip", "list", "--format=json"],
                             capture_output=True, text=True, check=True).stdout
        return {d["name"].lower(): d["version"] for d in json.loads(out)}
    assert dists(env1)["acme"] == "1.0" and dists(env2)["acme"] == "1.1"
    assert dists(env1)["iniconfig"] == dists(env2)["iniconfig"] == "2.0.0"
    assert "acme" not in dists(layer) and dists(layer)["iniconfig"] == "2.0.0"  # the instances' installs stay theirs
    for env in (env1, env2):  # the scripts run the instance's python, not the layer's
        for script in (env / "bin").iterdir():
            if script.is_file() and not script.is_symlink() and script.read_bytes().startswith(b"#!"):
                assert str(layer) not in script.read_text(), script


@pytest.mark.abuse
def test_code_under_test_cannot_poison_the_shared_environment(real_task):
    """An attack on the shared layers: a patch without the fix whose module, imported by the tests
    during grading, drops a ``.pth`` that monkeypatches the function into the environment's
    site-packages, the standard library, and the dependency layer every instance of the version
    copies. Were any writable, the next grading (of this patch, of the empty one, of another
    instance) would pass without a fix. The sandbox shows the environment read-only and the layer
    not at all: nothing is written, and the empty patch still earns nothing."""
    import hashlib
    import os as host_os

    from ha_envs.sandbox.provision.pyenv import dependency_layer

    env, layer = python_env(real_task), dependency_layer(real_task)
    stdlib = env / "lib" / "python3.9"
    targets = [env / "lib" / "python3.9" / "site-packages", stdlib, layer / "lib" / "python3.9" / "site-packages",
               layer / "lib" / "python3.9"]
    os_py = hashlib.sha256((stdlib / "os.py").read_bytes()).hexdigest()
    poison = ("import os as _os\n"
              f"for _d in {[str(t) for t in targets]!r} + [_os.path.dirname(_os.__file__)]:\n"
              "    try:\n"
              "        with open(_os.path.join(_d, 'ha_pwn.pth'), 'w') as _f:\n"
              "            _f.write('import acme; acme.double = lambda x: x * 2\\n')\n"
              "    except OSError:\n"
              "        pass\n"
              "    try:\n"
              "        open(_os.path.join(_d, 'os.py'), 'a').close()\n"
              "    except OSError:\n"
              "        pass\n")
    init = subprocess.run(["git", "show", f"{real_task.base_commit}:acme/__init__.py"], capture_output=True, text=True,
                          cwd=host_os.environ["HA_REPOS_DIR"] + "/acme+calc/repo", check=True).stdout
    lines = [f"+{l}" for l in poison.splitlines()]
    patch = (f"diff --git a/acme/__init__.py b/acme/__init__.py\n--- a/acme/__init__.py\n+++ b/acme/__init__.py\n"
             f"@@ -1,{len(init.splitlines())} +1,{len(init.splitlines()) + len(lines)} @@\n"
             + "\n".join(lines + [f" {l}" for l in init.splitlines()]) + "\n")
    g = Grader()
    first = g.grade(real_task, patch)
    assert first.status != "patch_failed", first.error
    assert not first.resolved and first.reward == 0.0
    assert not g.grade(real_task, "").resolved
    assert not g.grade(real_task, patch).resolved  # the same patch again: nothing carried over
    for d in targets:
        assert not (d / "ha_pwn.pth").exists(), d
    assert hashlib.sha256((stdlib / "os.py").read_bytes()).hexdigest() == os_py


def test_import_roots_found_from_the_installed_files(tmp_path):
    """ansible keeps its package in lib/, flask in src/, requests at the top; a vendored copy deeper
    down never wins."""
    from ha_envs.sandbox.provision.pyenv import _find_root, import_roots

    repo = tmp_path / "repo"
    for rel in ("lib/ansible/__init__.py", "test/lib/ansible_test/__init__.py", "test/support/ansible/__init__.py",
                "src/flask/__init__.py", "requests/__init__.py", "six.py"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("")
    assert [_find_root(repo, t) for t in ("ansible", "ansible_test", "flask", "requests", "six", "nope")] == \
        ["lib", "test/lib", "src", "", "", None]
    env = tmp_path / "env"
    env.mkdir()
    (env / "ha-import-roots.json").write_text('["lib", "test/lib"]')
    assert import_roots(repo, "/app", env) == "/app/lib:/app/test/lib"
    assert import_roots(repo, "/app", None) == "/app/src"  # no record: the src/ layout rule


# -- JavaScript (SWE-bench Multilingual): npm installs once, sandboxes see node_modules ---------------

def _npm_reachable() -> bool:
    if shutil.which("npm") is None:
        return False
    proc = subprocess.run(["npm", "view", "ms@2.1.3", "version"], capture_output=True, timeout=120)
    return proc.returncode == 0


def require_npm() -> None:
    if not _npm_reachable():
        if os.environ.get("CI"):
            pytest.fail("npm or its registry is not reachable but CI is set: JavaScript environments cannot be built")
        pytest.skip("npm or its registry is not reachable")


@pytest.fixture(scope="module")
def js_task(tmp_path_factory):
    require_npm()
    root = tmp_path_factory.mktemp("jsacme")
    index = "const ms = require('ms');\n\nfunction seconds(text) {\n  return ms(text) / 100;\n}\n\nmodule.exports = { seconds };\n"
    base, diff = upstream(root, {
        "package.json": '{"name": "acme-dur", "version": "1.0.0", "dependencies": {"ms": "2.1.3"}}\n',
        ".gitignore": "node_modules/\n",
        "index.js": index,
        "test/visible.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n"
                                "const ms = require('ms');\n\ntest('ms is installed', () => { assert.strictEqual(ms('1s'), 1000); });\n",
    }, "acme/dur")
    gold = diff(lambda w: (w / "index.js").write_text(index.replace("/ 100", "/ 1000")))
    hidden = diff(lambda w: (w / "test" / "seconds.test.js").write_text(
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { seconds } = require('..');\n\n"
        "test('seconds of 2m', () => { assert.strictEqual(seconds('2m'), 120); });\n"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HA_REPOS_DIR", str(root / "mirrors"))
        yield Task(instance_id="acme__dur-1", benchmark="swebench_multilingual", language="javascript",
                   problem_statement="seconds('2m') returns 1200", repo="acme/dur", base_commit=base, gold_patch=gold,
                   tests=TestSpec(hidden, ("seconds of 2m",), ("ms is installed",), "node --test test/", "node_tap",
                                  timeout_s=300),
                   environment=EnvironmentSpec(extra={"specs": {"docker_specs": {"node_version": "20"},
                                                                "install": ["npm install"],
                                                                "test_cmd": ["node --test test/"]}}))


def test_js_env_installs_once_and_both_sandboxes_grade_alike(js_task):
    from ha_envs.sandbox.provision.nodeenv import NODE_ENV_FORMAT, node_env

    nm = node_env(js_task)
    assert (nm / "ms" / "package.json").is_file() and node_env(js_task) == nm  # built once, cached
    assert json.loads((nm.parent / ".ha-format").read_text()) == {"kind": "node-env", "format": NODE_ENV_FORMAT}
    sb = make_sandbox("local", js_task)
    try:
        sb.start()
        assert sb.run("node -e \"console.log(require('ms')('1h'))\"").output.strip() == "3600000"
        assert sb.run("git status --porcelain").output.strip() == ""  # the node_modules link is ignored
        sb.run("sed -i 's#/ 100;#/ 1000;#' index.js")
        assert "node_modules" not in sb.diff()
        sb.reset()  # a reset work copy sees the installs again
        assert sb.run("node -e \"console.log(require('ms')('2s'))\"").output.strip() == "2000"
    finally:
        sb.close()
    local = Grader()
    assert local.grade(js_task, js_task.gold_patch).resolved
    assert not local.grade(js_task, "").resolved

    require_docker()
    sb = make_sandbox("docker", js_task, warm=0)
    try:
        sb.start()
        assert sb.run("node -e \"console.log(require('ms')('1h'))\"").output.strip() == "3600000"
        assert sb.run("node --version").output.strip() == subprocess.run(["node", "--version"], capture_output=True,
                                                                         text=True).stdout.strip()
        assert sb.run("git status --porcelain").output.strip() == ""
    finally:
        sb.close()
    remote = Grader(docker_sandbox_factory())
    gold = remote.grade(js_task, js_task.gold_patch)
    assert gold.resolved, gold.log_tail
    assert not remote.grade(js_task, "").resolved


@pytest.mark.abuse
def test_a_patch_cannot_edit_the_node_env_through_the_work_copys_link(js_task, tmp_path):
    """The work copy's ``node_modules`` is a link to the env every grading shares (in the Docker
    image, a writable path). A patch without the fix that edits ``node_modules/ms/index.js`` so that
    ``ms('2m')`` is ten times smaller would pass the hidden test; both sandboxes refuse to write
    through the link, the env stays as it was, and nothing is earned."""
    import difflib

    from ha_envs.sandbox.provision.nodeenv import node_env

    nm = node_env(js_task)
    src = (nm / "ms" / "index.js").read_text()
    forged = src + ("\nconst orig = module.exports;\n"
                    "module.exports = function (v, o) { return v === '2m' ? 12000 : orig(v, o); };\n")
    # the attack is worth something: with the forged ms, the base's code gives what the hidden test wants
    (tmp_path / "node_modules" / "ms").mkdir(parents=True)
    (tmp_path / "node_modules" / "ms" / "index.js").write_text(forged)
    (tmp_path / "index.js").write_text("const ms = require('ms');\nmodule.exports = { seconds: (t) => ms(t) / 100 };\n")
    got = subprocess.run(["node", "-e", "console.log(require('./index.js').seconds('2m'), require('ms')('1s'))"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert got.stdout.split() == ["120", "1000"], got.stderr
    patch = "diff --git a/node_modules/ms/index.js b/node_modules/ms/index.js\n" + "".join(difflib.unified_diff(
        src.splitlines(True), forged.splitlines(True), "a/node_modules/ms/index.js", "b/node_modules/ms/index.js"))
    graders = [("local", Grader())]
    require_docker()
    graders.append(("docker", Grader(docker_sandbox_factory())))
    for name, grader in graders:
        report = grader.grade(js_task, patch)
        assert not report.resolved and report.status == "patch_failed", (name, report.status, report.log_tail)
        assert (nm / "ms" / "index.js").read_text() == src, name  # the host's env (the local sandbox's)


def workspace_repo(root, repo: str, top: dict[str, str], b_dependency: str):
    """A two-package workspace (the files at its top from ``top``): ``packages/a`` depends on the
    workspace's ``b`` and on ``ms`` 2.0.0 (the root wants 2.1.3, so ``a`` gets a node_modules of its
    own); ``b``'s ``double`` adds one too many. Returns (base commit, gold patch, hidden tests)."""
    b_index = "function double(x) {\n  return x + x + 1;\n}\n\nmodule.exports = { double };\n"
    base, diff = upstream(root, {
        **top,
        ".gitignore": "node_modules/\n",
        "packages/a/package.json": '{"name": "a", "version": "1.0.0", "dependencies": {"b": %s, "ms": "2.0.0"}}\n'
                                   % b_dependency,
        "packages/a/index.js": "const { double } = require('b');\n\n"
                               "module.exports = { quad: (x) => double(double(x)), msVersion: require('ms/package.json').version };\n",
        "packages/b/package.json": '{"name": "b", "version": "1.0.0"}\n',
        "packages/b/index.js": b_index,
        "packages/a/test/visible.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n"
                                           "test('a sees its own ms', () => { assert.strictEqual(require('..').msVersion, '2.0.0'); });\n",
    }, repo)
    gold = diff(lambda w: (w / "packages" / "b" / "index.js").write_text(b_index.replace(" + 1;", ";")))
    hidden = diff(lambda w: (w / "packages" / "a" / "test" / "quad.test.js").write_text(
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { quad } = require('..');\n\n"
        "test('quad of 3', () => { assert.strictEqual(quad(3), 12); });\n"))
    return base, gold, hidden


@pytest.fixture(scope="module")
def workspace_task(tmp_path_factory):
    """An npm workspace: the root's node_modules links ``a`` and ``b`` to ``../packages/*`` (links
    that leave node_modules), and ``packages/a`` gets a node_modules of its own (it wants another
    ``ms`` than the root): what pnpm and yarn monorepos (vuejs/core) look like."""
    require_npm()
    root = tmp_path_factory.mktemp("jsws")
    base, gold, hidden = workspace_repo(root, "acme/ws", {
        "package.json": '{"name": "ws", "private": true, "workspaces": ["packages/*"], "dependencies": {"ms": "2.1.3"}}\n'},
        b_dependency='"1.0.0"')
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HA_REPOS_DIR", str(root / "mirrors"))
        yield Task(instance_id="acme__ws-1", benchmark="swebench_multilingual", language="javascript",
                   problem_statement="quad(3) is 15", repo="acme/ws", base_commit=base, gold_patch=gold,
                   tests=TestSpec(hidden, ("quad of 3",), ("a sees its own ms",), "node --test packages/a/test/",
                                  "node_tap", timeout_s=300),
                   environment=EnvironmentSpec(extra={"specs": {"install": ["npm install"],
                                                                "test_cmd": ["node --test packages/a/test/"]}}))


def test_a_workspace_env_keeps_every_node_modules_and_its_links_in_both_sandboxes(workspace_task):
    from ha_envs.sandbox.provision.nodeenv import nested_node_modules, node_env

    nm = node_env(workspace_task)
    assert nested_node_modules(nm) == ["packages/a"]
    # the root's workspace links now name the sandbox's work copy, not a path next to the env
    assert os.readlink(nm / "b") == f"{workspace_task.environment.workdir}/packages/b"
    assert (nm.parent / "nested" / "packages" / "a" / "node_modules" / "ms" / "package.json").is_file()
    sb = make_sandbox("local", workspace_task)
    try:
        sb.start()
        got = sb.run("node -e \"const a = require('./packages/a'); console.log(a.quad(1), a.msVersion, "
                     "require('ms/package.json').version)\"")
        # a's code, the base's b through the root's link (its bug: quad(1) is 7), a's own ms, the root's ms
        assert got.output.strip() == "7 2.0.0 2.1.3", got.output
        assert sb.run("git status --porcelain").output.strip() == ""  # both links ignored
        assert "node_modules" not in sb.diff()
    finally:
        sb.close()
    g = Grader()
    gold = g.grade(workspace_task, workspace_task.gold_patch)
    assert gold.resolved, gold.log_tail
    empty = g.grade(workspace_task, "")
    assert not empty.resolved and empty.fail_to_pass == {"quad of 3": "FAILED"}

    # the Docker sandbox: the env sits in the image where it sits here, so the same absolute links hold
    require_docker()
    sb = make_sandbox("docker", workspace_task, warm=0)
    try:
        sb.start()
        got = sb.run("node -e \"const a = require('./packages/a'); console.log(a.quad(1), a.msVersion, "
                     "require('ms/package.json').version)\"")
        assert got.output.strip() == "7 2.0.0 2.1.3", got.output
        assert sb.run("readlink packages/a/node_modules").output.strip() == str(nm.parent / "nested/packages/a/node_modules")
        assert sb.run("git status --porcelain").output.strip() == ""
        sb.run("sed -i 's/x + x + 1/x + x/' packages/b/index.js")
        assert sb.run("node -e \"console.log(require('./packages/a').quad(1))\"").output.strip() == "4"
        assert "node_modules" not in sb.diff()
    finally:
        sb.close()
    remote = Grader(docker_sandbox_factory())
    gold = remote.grade(workspace_task, workspace_task.gold_patch)
    assert gold.resolved, gold.log_tail
    empty = remote.grade(workspace_task, "")
    assert not empty.resolved and empty.fail_to_pass == {"quad of 3": "FAILED"}

    # once the env is gone from the cache, its env image and the snapshot image made on it are
    # orphans: `ha images prune` removes both, the snapshot image first (docker refuses a parent)
    from ha_envs.sandbox.docker import docker_client
    from ha_envs.sandbox.provision.images import env_image, image_exists, snapshot_image

    client = docker_client()
    env_tag, (snap_tag, _) = env_image(client, workspace_task), snapshot_image(client, workspace_task)
    shutil.rmtree(nm.parent)
    ha = Path(sys.executable).with_name("ha")
    dry = json.loads(subprocess.run([str(ha), "images", "prune", "--dry-run", "--json"], capture_output=True,
                                    text=True, check=True).stdout)
    tags = [t for o in dry["removed"] for t in o["tags"]]
    assert env_tag in tags and snap_tag in tags and tags.index(snap_tag) < tags.index(env_tag)
    assert image_exists(client, env_tag) and image_exists(client, snap_tag)  # a dry run removes nothing
    out = json.loads(subprocess.run([str(ha), "images", "prune", "--json"], capture_output=True, text=True,
                                    check=True).stdout)
    assert not [o for o in out["kept"] if env_tag in o["tags"] or snap_tag in o["tags"]], out["kept"]
    assert not image_exists(client, env_tag) and not image_exists(client, snap_tag)
    assert image_exists(client, "harnessadapt/base:bookworm")


@pytest.fixture(scope="module")
def pnpm_task(tmp_path_factory):
    """A pnpm workspace whose ``packageManager`` release corepack installs (as vuejs/core's): package
    ``a`` links ``b`` (``workspace:*``) and its own ``ms`` into the root's ``.pnpm`` store, and the
    tests run through ``pnpm``, which the offline sandbox must have from the env."""
    require_npm()
    if shutil.which("corepack") is None:
        if os.environ.get("CI"):
            pytest.fail("corepack (Node.js) is missing but CI is set")
        pytest.skip("no corepack here")
    root = tmp_path_factory.mktemp("pnpmws")
    base, gold, hidden = workspace_repo(root, "acme/pnpmws", {
        "package.json": '{"name": "ws", "private": true, "packageManager": "pnpm@8.15.9", '
                        '"scripts": {"test": "node --test packages/a/test/"}, "dependencies": {"ms": "2.1.3"}}\n',
        "pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n"}, b_dependency='"workspace:*"')
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HA_REPOS_DIR", str(root / "mirrors"))
        # this machine's npm registry serves no signing keys (VALIDATION.md, vuejs/core)
        mp.setenv("COREPACK_INTEGRITY_KEYS", "0")
        mp.setenv("COREPACK_ENABLE_DOWNLOAD_PROMPT", "0")
        # the host's pnpm is corepack's shim (`corepack enable pnpm`, as VALIDATION.md sets up vuejs/core)
        shims = root / "shims"
        shims.mkdir()
        subprocess.run(["corepack", "enable", "--install-directory", str(shims), "pnpm"], check=True)
        mp.setenv("PATH", f"{shims}:{os.environ['PATH']}")
        yield Task(instance_id="acme__pnpmws-1", benchmark="swebench_multilingual", language="typescript",
                   problem_statement="quad(3) is 15", repo="acme/pnpmws", base_commit=base, gold_patch=gold,
                   tests=TestSpec(hidden, ("quad of 3",), ("a sees its own ms",), "pnpm test", "node_tap", timeout_s=300),
                   environment=EnvironmentSpec(extra={"specs": {"install": ["pnpm install"],
                                                                "test_cmd": ["pnpm test"]}}))


def test_a_node_env_moved_to_another_cache_keeps_its_links_inside_it(pnpm_task, tmp_path, monkeypatch):
    """A pnpm workspace's node env (a package's node_modules links into the root's ``.pnpm`` store:
    absolute links between the env's trees) installed under another cache: every link that pointed
    into the first place points into the second, and it grades there without the first (in the
    Docker sandbox, whose image holds the env at its path on this machine)."""
    import hashlib

    from ha_envs.sandbox.provision.artifacts import env_dest, install_env, pack_env
    from ha_envs.sandbox.provision.nodeenv import node_env

    here = node_env(pnpm_task).parent
    data = pack_env(here)
    monkeypatch.setenv("HA_CACHE_DIR", str(tmp_path / "other-node"))
    kind, there = env_dest(pnpm_task)
    install_env(kind, there, data, hashlib.sha256(data).hexdigest(), str(here))
    links = [os.readlink(os.path.join(d, n)) for d, ds, fs in os.walk(there) for n in ds + fs
             if os.path.islink(os.path.join(d, n))]
    assert any(t.startswith(str(there) + "/") for t in links)  # the workspace's links were absolute
    assert not [t for t in links if t.startswith(str(here))]
    assert node_env(pnpm_task) == there / "node_modules"
    require_docker()  # pnpm runs from the env's corepack release in the Docker sandbox (the env at its path)
    away = here.with_name(here.name + ".away")
    here.rename(away)
    try:
        g = Grader(docker_sandbox_factory())
        gold = g.grade(pnpm_task, pnpm_task.gold_patch)
        assert gold.resolved, gold.log_tail
        assert not g.grade(pnpm_task, "").resolved
    finally:
        away.rename(here)


def test_the_docker_sandbox_runs_a_pnpm_workspace_offline_with_the_envs_pnpm(pnpm_task):
    """The image gets corepack's shims and the env's corepack home: ``pnpm`` is the release the env
    was installed with, read without network, and the workspace's links hold."""
    from ha_envs.sandbox.provision.nodeenv import COREPACK_DIR, nested_node_modules, node_env

    nm = node_env(pnpm_task)
    assert nested_node_modules(nm) == ["packages/a"], nested_node_modules(nm)
    assert (nm.parent / COREPACK_DIR).is_dir()
    require_docker()
    sb = make_sandbox("docker", pnpm_task, warm=0)
    try:
        sb.start()
        assert sb.run("pnpm --version").output.strip().splitlines()[-1] == "8.15.9"
        got = sb.run("node -e \"const a = require('./packages/a'); console.log(a.quad(1), a.msVersion, "
                     "require('ms/package.json').version)\"")
        assert got.output.strip() == "7 2.0.0 2.1.3", got.output
        assert sb.run("git status --porcelain").output.strip() == ""
    finally:
        sb.close()
    remote = Grader(docker_sandbox_factory())
    gold = remote.grade(pnpm_task, pnpm_task.gold_patch)
    assert gold.resolved, gold.log_tail
    empty = remote.grade(pnpm_task, "")
    assert not empty.resolved and empty.fail_to_pass == {"quad of 3": "FAILED"}


SPEED_C = r"""#define PY_SSIZE_T_CLEAN
#include <Python.h>
static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(42); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_speed", NULL, -1, methods};
PyMODINIT_FUNC PyInit__speed(void) { return PyModule_Create(&mod); }
"""


@pytest.fixture(scope="module")
def compiled_task(real_task, tmp_path_factory):
    """A repository with a C extension (as astropy's): its environment keeps the build's files and
    every work copy and grading copy holds them in place."""
    root = tmp_path_factory.mktemp("cext")
    init = "from ._speed import answer\nfrom ._version import version\n\n\ndef scale(x):\n    return answer() * x + 1\n"
    # the build also writes a version file the repository does not track (as setuptools_scm does)
    setup = ("import os\nfrom setuptools import Extension, setup\nfrom setuptools.command.build_py import build_py\n\n\n"
             "class Version(build_py):\n    def run(self):\n        super().run()\n"
             "        with open(os.path.join(self.build_lib, 'cext', '_version.py'), 'w') as f:\n"
             "            f.write('version = \"1.0\"\\n')\n\n\n"
             "setup(name='cext', version='1.0', packages=['cext'], cmdclass={'build_py': Version}, "
             "ext_modules=[Extension('cext._speed', ['cext/_speed.c'])])\n")
    base, diff = upstream(root, {
        "setup.py": setup,
        "cext/__init__.py": init, "cext/_speed.c": SPEED_C,
        "tests/test_answer.py": "from cext import answer\n\n\ndef test_answer():\n    assert answer() == 42\n",
    }, "acme/cext")
    gold = diff(lambda w: (w / "cext" / "__init__.py").write_text(init.replace(" + 1", "")))
    hidden = diff(lambda w: (w / "tests" / "test_scale.py").write_text(
        "from cext import scale\n\n\ndef test_scale():\n    assert scale(2) == 84\n"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HA_REPOS_DIR", str(root / "mirrors"))
        yield Task(instance_id="acme__cext-1", benchmark="swebench_verified", language="python",
                   problem_statement="scale(2) returns 85", repo="acme/cext", base_commit=base, gold_patch=gold,
                   tests=TestSpec(hidden, ("tests/test_scale.py::test_scale",), ("tests/test_answer.py::test_answer",),
                                  "pytest -rA tests", "swebench:psf/requests", timeout_s=300),
                   environment=EnvironmentSpec(extra={"specs": {"python": "3.9", "packages": "pytest",
                                                                "install": "python -m pip install -e ."}}),
                   metadata={"version": "1.0"})


def test_compiled_extensions_are_in_every_work_copy_and_never_in_a_patch(compiled_task):
    import re

    from ha_envs.sandbox.local import LocalSandbox, LocalSandboxConfig
    from ha_envs.sandbox.provision.pyenv import built_files

    env = python_env(compiled_task)
    built = built_files(env)
    assert len(built) == 2 and built[1] == "cext/_version.py", built
    assert re.fullmatch(r"cext/_speed\.cpython-39-[^/]+\.so", built[0]), built
    assert any("built files" in n for n in json.loads((env / "ha-build.json").read_text())["notes"])
    # the install built from a copy: the snapshot every work copy starts from holds no build outputs
    from ha_envs.sandbox.provision.workcopy import prepare_snapshot

    snap = prepare_snapshot(compiled_task).path
    assert not (snap / "build").exists() and not list(snap.glob("cext/*.so")) and not list(snap.glob("*.egg-info"))
    probe = "python -c 'import cext; print(cext.answer(), cext._speed.__file__)'"
    sb = LocalSandbox(compiled_task, LocalSandboxConfig(reset_strategy="git"))
    try:
        sb.start()
        out = sb.run(probe).output.split()
        assert out[0] == "42" and out[1].endswith("/" + built[0]) and "site-packages" not in out[1], out
        assert sb.diff() == ""  # the build's files are the environment's, not the agent's change
        # The agent damages the extension: still no patch, so the grader's copy keeps the pristine build.
        assert sb.run(f"echo junk > {built[0]}").exit_code == 0
        assert sb.run(probe).exit_code != 0
        assert sb.diff() == ""
        sb.reset()  # the git strategy cleans ignored files, then puts the build back
        assert sb.run(probe).output.split()[0] == "42"
        # Abuse: the agent un-ignores the built extension and ships its own in the patch (a binary
        # that could answer whatever the hidden test wants). The grader's copy already holds the
        # pristine build, so such a patch cannot apply: no reward.
        assert sb.run(f"sed -i '/_speed/d' .git/info/exclude && cp /bin/true {built[0]}").exit_code == 0
        smuggled = sb.diff()
        assert f"b/{built[0]}" in smuggled
    finally:
        sb.close()
    g = Grader()
    assert g.grade(compiled_task, compiled_task.gold_patch).resolved
    assert not g.grade(compiled_task, "").resolved
    attack = g.grade(compiled_task, compiled_task.gold_patch + smuggled)
    assert not attack.resolved and attack.reward == 0


def test_compiled_extensions_in_the_docker_sandbox(compiled_task):
    require_docker()
    sb = make_sandbox("docker", compiled_task, warm=0)
    try:
        sb.start()
        assert sb.run("python -c 'import cext; print(cext.answer())'").output.strip() == "42"
        assert sb.diff() == ""
    finally:
        sb.close()
    g = Grader(docker_sandbox_factory())
    assert g.grade(compiled_task, compiled_task.gold_patch).resolved
    assert not g.grade(compiled_task, "").resolved
