"""`ha tasks validate` as a sweep: failures get a cause, a stratified sample, a resumable JSONL of
results, a Markdown summary; the CLI flags reach the run (real grading of real tasks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ha_envs.task import Task, TestSpec
from tests.conftest import task_row
from ha_envs.validate import (ValidationResult, read_results, stratified_sample, summary_markdown,
                              validate_task)
from ha_envs.grading.grader import Grader
from ha_envs.grading.sandboxes import local_sandbox_factory

HA = Path(sys.executable).with_name("ha")
NETWORK_TEST = ("import socket\n\n\ndef test_reaches_the_internet():\n"
                "    socket.create_connection(('example.com', 80), timeout=3).close()\n")


def _network_task(tiny_task: Task) -> Task:
    """The tiny task with one more PASS_TO_PASS test that needs the internet."""
    (Path(tiny_task.source_dir) / "tests" / "test_net.py").write_text(NETWORK_TEST)
    tests = TestSpec(**{**tiny_task.tests.__dict__,
                        "pass_to_pass": tiny_task.tests.pass_to_pass + ("tests/test_net.py::test_reaches_the_internet",)})
    return Task(**{**tiny_task.__dict__, "instance_id": "tiny__net", "tests": tests})


def test_a_test_that_needs_the_network_is_classified_as_such(tiny_task):
    res = validate_task(_network_task(tiny_task), Grader(local_sandbox_factory(network=False)))
    assert not res.ok and res.cause == "network"
    assert any("reach for the network" in p for p in res.problems)


def test_a_plain_disagreement_is_the_graders(tiny_task):
    """Nothing about the environment or the network: a gold patch that does not resolve is ours to
    read, and graded again it still does not (not flaky)."""
    broken = Task(**{**tiny_task.__dict__, "gold_patch": tiny_task.gold_patch.replace("return hi", "return x + 0")})
    res = validate_task(broken, Grader(local_sandbox_factory(network=False)), retries=1)
    assert not res.ok and res.cause == "grader"
    assert not any("grades" in p for p in res.problems)
    good = validate_task(tiny_task, Grader(local_sandbox_factory(network=False)))
    assert good.ok and good.cause == "" and good.problems == []


def test_a_gold_patch_that_needs_a_new_dependency_needs_the_network(tiny_task, tmp_path):
    """pylint-4661's fix imports ``appdirs`` (and adds it to setup.cfg); an environment built for the
    base commit has no such module, and swebench gets it by installing after the patch, with network.
    This grader installs nothing a patch declares: named as needing the network, not the grader's."""
    from tests.conftest import CALC, _git_diff

    work = tmp_path / "needy"
    subprocess.run(["cp", "-a", str(tiny_task.source_dir), str(work)], check=True)
    fixed = CALC.replace("return lo\n    return x", "return hi\n    return x")
    needy = _git_diff(work, lambda d: (d / "calc.py").write_text("import ha_no_such_dependency\n\n" + fixed))
    res = validate_task(Task(**{**tiny_task.__dict__, "gold_patch": needy}), Grader(local_sandbox_factory(network=False)))
    assert not res.ok and res.cause == "network"
    assert any("needs ha_no_such_dependency, which the environment lacks" in p and "installs nothing a patch "
               "declares" in p for p in res.problems)


def test_a_pass_to_pass_name_cut_at_a_space_is_not_held_against_the_base(tiny_task, tmp_path):
    """swebench's pytest parser cuts ids at the first space, so ``test_p[foo, bar]`` and
    ``test_p[foo, baz]`` are both ``test_p[foo,`` in the dataset (pylint-8898): its status at base is
    whichever line came last. Such a name is noted, not called a test failing at base."""
    from tests.conftest import CALC, _git_diff

    (Path(tiny_task.source_dir) / "tests" / "test_p.py").write_text(
        "import pytest\nfrom calc import clamp\n\n\n@pytest.mark.parametrize('s', ['foo, bar', 'foo, baz'])\n"
        "def test_p(s):\n    assert clamp(9, 0, 5) == 5\n")
    work = tmp_path / "w"
    subprocess.run(["cp", "-a", str(tiny_task.source_dir), str(work)], check=True)
    gold = _git_diff(work, lambda d: (d / "calc.py").write_text(CALC.replace("return lo\n    return x", "return hi\n    return x")))
    cut = "tests/test_p.py::test_p[foo,"
    tests = TestSpec(**{**tiny_task.tests.__dict__, "log_parser": "swebench:pylint-dev/pylint",
                        "pass_to_pass": tiny_task.tests.pass_to_pass + (cut,)})
    task = Task(**{**tiny_task.__dict__, "tests": tests, "gold_patch": gold})
    res = validate_task(task, Grader(local_sandbox_factory(network=False)))
    assert res.ok and res.problems == [] and res.gold_status == "resolved", res.problems
    assert len(res.notes) == 1 and cut in res.notes[0]
    assert "`tiny__clamp`: PASS_TO_PASS names cut at a space" in summary_markdown([res])
    from ha_envs.validate import truncated_id

    assert truncated_id(cut) and not truncated_id("t.py::test_p[foo-bar]") and not truncated_id("t.py::test_p")


def test_new_imports_missing_reads_only_what_the_patch_adds():
    from ha_envs.validate import new_imports_missing

    patch = "+++ b/a.py\n+import appdirs\n+from foo.bar import x\n-import gone\n import kept\n"
    log = ("E   ModuleNotFoundError: No module named 'appdirs'\nImportError: No module named foo.bar\n"
           "ModuleNotFoundError: No module named 'kept'\nModuleNotFoundError: No module named 'gone'\n")
    assert new_imports_missing(patch, log) == ["appdirs", "foo.bar"]
    assert new_imports_missing(patch, "all fine") == []
    # axios-5316: the fix adds formdata-node to package.json; the hidden tests import it
    pkg = '+++ b/package.json\n     "express": "^4.18.1",\n+    "formdata-node": "^5.0.0",\n'
    node_log = ("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'formdata-node' imported from /testbed/test/http.js\n"
                "Error: Cannot find module 'express'\nError: Cannot find module './lib/missing'\n")
    assert new_imports_missing(pkg, node_log) == ["formdata-node"]


def _with_specs(task: Task, **specs) -> Task:
    from ha_envs.task import EnvironmentSpec

    return Task(**{**task.__dict__, "environment": EnvironmentSpec(extra={"specs": specs})})


def test_an_environment_that_cannot_be_built_is_classified(tiny_task):
    """The spec names a requirements file swebench knows no path of: a named build failure."""
    res = validate_task(_with_specs(tiny_task, python="3.9", packages="requirements.txt"),
                        Grader(local_sandbox_factory(network=False)))
    assert not res.ok and res.cause == "environment"
    assert "names a requirements.txt, but swebench knows no path of it" in res.problems[0]


def test_what_the_machine_lacks_is_classified(tiny_task):
    res = validate_task(_with_specs(tiny_task, python="2.5"), Grader(local_sandbox_factory(network=False)))
    assert not res.ok and res.cause == "machine" and "Python 2.5 is needed" in res.problems[0]


def test_a_repository_that_cannot_be_had_is_the_machines(tmp_path, monkeypatch):
    """No mirror and no way to GitHub (here: every GitHub URL rewritten to a closed local port)."""
    monkeypatch.setenv("HA_REPOS_DIR", str(tmp_path / "mirrors"))
    monkeypatch.setenv("HA_CACHE_DIR", str(tmp_path / "cache"))
    for k, v in {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "url.http://127.0.0.1:9/.insteadOf",
                 "GIT_CONFIG_VALUE_0": "https://github.com/"}.items():
        monkeypatch.setenv(k, v)
    task = Task(instance_id="nobody__nowhere-1", benchmark="swebench_verified", language="python", problem_statement="",
                repo="nobody/nowhere", base_commit="1" * 40, gold_patch="x",
                tests=TestSpec("", ("t",), (), "true", "pytest"))
    res = validate_task(task, Grader(local_sandbox_factory(network=False)))
    assert not res.ok and res.cause == "machine"
    assert "nobody/nowhere cannot be had here: no mirror under " + str(tmp_path / "mirrors") in res.problems[0]


def test_a_mirror_without_the_base_commit_is_the_machines(tmp_path, monkeypatch):
    """valkey-1842's base commit is on no branch a mirror of the default branches holds."""
    import subprocess

    mirror = tmp_path / "mirrors" / "acme+gone" / "repo"
    mirror.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=mirror, check=True)
    (mirror / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "-A"], cwd=mirror, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"], cwd=mirror, check=True)
    monkeypatch.setenv("HA_REPOS_DIR", str(tmp_path / "mirrors"))
    task = Task(instance_id="acme__gone-1", benchmark="swebench_multilingual", language="c", problem_statement="",
                repo="acme/gone", base_commit="4de8cf3567b4dfd3a541219462b22d46c730c4b4", gold_patch="x",
                tests=TestSpec("", ("t",), (), "true", "pytest"))
    res = validate_task(task, Grader(local_sandbox_factory(network=False)))
    assert not res.ok and res.cause == "machine"
    assert "acme/gone cannot be had here: the mirror" in res.problems[0]
    assert "lacks the base commit 4de8cf3567b4dfd3a541219462b22d46c730c4b4" in res.problems[0]


def test_a_mirror_missing_files_of_the_base_is_the_machines(tmp_path, monkeypatch):
    """A size-capped mirror (large blobs left out): the base tree cannot be checked out whole."""
    import subprocess

    work = tmp_path / "work"
    work.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    (work / "big.bin").write_bytes(b"large file\n" * 1000)
    (work / "a.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    subprocess.run(git + ["commit", "-qm", "base"], cwd=work, check=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True).stdout.strip()
    blob = subprocess.run(["git", "rev-parse", "HEAD:big.bin"], cwd=work, capture_output=True, text=True).stdout.strip()
    mirror = tmp_path / "mirrors" / "acme+capped" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", "--no-local", str(work), str(mirror)], check=True)
    packed = tmp_path / "objects.pack"  # loose objects, so one can be left out
    next((mirror / "objects" / "pack").glob("*.pack")).rename(packed)
    for pack in (mirror / "objects" / "pack").glob("pack-*"):
        pack.unlink()
    with open(packed, "rb") as f:
        subprocess.run(["git", "unpack-objects", "-q"], cwd=mirror, check=True, stdin=f)
    (mirror / "objects" / blob[:2] / blob[2:]).unlink()
    monkeypatch.setenv("HA_REPOS_DIR", str(tmp_path / "mirrors"))
    monkeypatch.setenv("HA_CACHE_DIR", str(tmp_path / "cache"))
    task = Task(instance_id="acme__capped-1", benchmark="swebench_verified", language="python", problem_statement="",
                repo="acme/capped", base_commit=base, gold_patch="x", tests=TestSpec("", ("t",), (), "true", "pytest"))
    res = validate_task(task, Grader(local_sandbox_factory(network=False)))
    assert not res.ok and res.cause == "machine"
    assert "acme/capped cannot be had here: the mirror" in res.problems[0] and "lacks 1 file(s) of the base commit (big.bin)" \
        in res.problems[0], res.problems


def _fake(iid: str, repo: str) -> Task:
    return Task(instance_id=iid, benchmark="test", language="python", problem_statement="", repo=repo,
                base_commit="0" * 40, tests=TestSpec("", ("t",), (), "true", "pytest"))


def test_stratified_sample_spreads_over_repositories_and_is_seeded():
    tasks = [_fake(f"a-{i}", "o/a") for i in range(10)] + [_fake(f"b-{i}", "o/b") for i in range(3)] + [_fake("c-0", "o/c")]
    pick = stratified_sample(tasks, 7, seed=1)
    repos = [t.repo for t in pick]
    assert len(pick) == 7 and repos.count("o/c") == 1 and repos.count("o/b") == 3 and repos.count("o/a") == 3
    assert [t.instance_id for t in pick] == [t.instance_id for t in stratified_sample(tasks, 7, seed=1)]
    assert {t.instance_id for t in stratified_sample(tasks, 7, seed=2)} != {t.instance_id for t in pick}
    assert pick == [t for t in tasks if t in pick]  # input order kept
    assert len(stratified_sample(tasks, 100, seed=0)) == len(tasks)


def test_results_file_survives_a_truncated_line_and_the_summary_names_causes(tmp_path):
    a = ValidationResult("x__1", ok=True, repo="o/x", gold_status="resolved", empty_status="unresolved")
    b = ValidationResult("y__2", ok=False, repo="o/y", cause="network", problems=["the failing tests reach for the network"])
    c = ValidationResult("y__3", ok=False, repo="o/y", cause="environment", environment={"problems": ["a conda package, not on PyPI: hdf5"]})
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps(a.to_dict()) + "\n" + json.dumps(b.to_dict()) + "\n" + json.dumps(c.to_dict())[:40])
    got = read_results(f)
    assert set(got) == {"x__1", "y__2"} and got["y__2"].cause == "network"
    md = summary_markdown([a, b, c])
    assert "| o/y | 2 | 0 | 1 | 1 | 0 | 0 |" in md and "| **all** | 3 | 1 | 1 | 1 | 0 | 0 |" in md
    assert "1/2 validate (50.0%)" in md  # the network failure is out of the goal's denominator
    assert "| y__3 | environment |" in md and "hdf5" in md


def test_cli_sweep_is_resumable_and_writes_json_and_markdown(tiny_task, tmp_path):
    net = _network_task(tiny_task)
    src = tmp_path / "tasks.jsonl"
    src.write_text(json.dumps(task_row(tiny_task)) + "\n" + json.dumps(task_row(net)) + "\n")
    results, md = tmp_path / "out" / "results.jsonl", tmp_path / "summary.md"
    cmd = [str(HA), "tasks", "validate", "--jsonl", str(src), "--network", "off", "--results", str(results),
           "--markdown", str(md), "--json", "--workers", "2"]
    first = subprocess.run(cmd, capture_output=True, text=True)
    assert first.returncode == 1, first.stderr  # one task is not valid here
    rows = {r["instance_id"]: r for r in json.loads(first.stdout)}
    assert rows["tiny__clamp"]["ok"] and rows["tiny__net"]["cause"] == "network"
    assert len(results.read_text().splitlines()) == 2
    assert "| tiny__net | network |" in md.read_text()
    # A rerun validates nothing again: both are in the results file.
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert "2 of 2 already in" in again.stderr and "validating the other 0" in again.stderr
    assert len(results.read_text().splitlines()) == 2
    assert {r["instance_id"]: r["cause"] for r in json.loads(again.stdout)} == {"tiny__clamp": "", "tiny__net": "network"}
    # A narrower selection over a file that holds other instances: progress counts this selection only.
    results.write_text("".join(l + "\n" for l in results.read_text().splitlines() if '"tiny__net"' in l))
    one = subprocess.run(cmd + ["--instances", "tiny__clamp"], capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    assert "0 of 1 already in" not in one.stderr and "[1/1] ok   tiny__clamp" in one.stderr, one.stderr
    # Without slirp4netns, gradings with network in the local sandbox share the host's loopback: with
    # two workers the CLI says so (redis' test servers collided on one port); offline (above), one at
    # a time, or with a namespace per sandbox (slirp4netns installed, as CI has it), not.
    from ha_envs.sandbox import netns

    assert "share one loopback" not in first.stderr
    for workers, said in (("2", not netns.available()), ("1", False)):
        run = subprocess.run([str(HA), "tasks", "validate", "--jsonl", str(src), "--network", "on", "--workers", workers,
                              "--instances", "tiny__clamp"], capture_output=True, text=True)
        assert run.returncode == 0 and ("share one loopback" in run.stderr) == said, run.stderr


def test_network_lines_are_found_anywhere_in_the_log():
    from ha_envs.grading.sandboxes import network_errors

    log = ("PASSED t::a\n" * 5000 + "E   socket.gaierror: [Errno -2] Name or service not known\n"
           + "E   Failed: The connect() request should time out.\n" * 3 + "PASSED t::b\n" * 5000)
    assert network_errors(log) == ["E   socket.gaierror: [Errno -2] Name or service not known",
                                   "E   Failed: The connect() request should time out."]
    assert network_errors("FAILED t::c - AssertionError: 1 != 2\n") == []


def test_a_verdict_that_changes_when_graded_again_is_flaky(tiny_task, tmp_path):
    """valkey-928's cluster test races the gossip (upstream valkey#970): the gold patch resolves one
    grade in three. Here a PASS_TO_PASS test asks a local service, which fails the first grade and
    passes every later one: the gold patch fails, is graded again, resolves, and the cause is
    ``flaky`` with the count, not ``grader``."""
    import socket
    import threading

    # a sandbox with network has a network namespace of its own (sandbox/netns.py): the host's
    # loopback is out of its reach, so the service listens on the host's own address
    host = next(a for a in subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
                if "." in a and not a.startswith("127."))
    server = socket.socket()
    server.bind((host, 0))
    server.listen()
    port = server.getsockname()[1]
    answers = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(b"1" if answers else b"0")
            answers.append(1)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        (Path(tiny_task.source_dir) / "tests" / "test_race.py").write_text(
            "import socket\n\n\ndef test_race():\n"
            f"    s = socket.create_connection(({host!r}, {port}), timeout=10)\n"
            "    assert s.recv(1) == b'1'\n")
        tests = TestSpec(**{**tiny_task.tests.__dict__,
                            "pass_to_pass": tiny_task.tests.pass_to_pass + ("tests/test_race.py::test_race",)})
        task = Task(**{**tiny_task.__dict__, "instance_id": "tiny__race", "tests": tests})
        once = validate_task(task, Grader(local_sandbox_factory(network=True)), retries=0)
        assert not once.ok and once.cause == "grader" and once.gold_status == "unresolved"
        answers.clear()  # the CLI, as a user runs it: --retries reaches the run
        src, md = tmp_path / "tasks.jsonl", tmp_path / "summary.md"
        src.write_text(json.dumps(task_row(task)) + "\n")
        out = subprocess.run([str(HA), "tasks", "validate", "--jsonl", str(src), "--network", "on", "--retries", "2",
                              "--workers", "1", "--json", "--markdown", str(md)], capture_output=True, text=True)
    finally:
        server.close()
    assert out.returncode == 1, out.stderr
    [res] = json.loads(out.stdout)
    assert not res["ok"] and res["cause"] == "flaky", (res["cause"], res["problems"])
    assert any("the gold patch resolved 1 of 2 grades" in p for p in res["problems"])
    assert len(answers) == 3  # gold, empty, gold again: the retry stops at the first agreeing grade
    assert "| tiny__race | flaky |" in md.read_text()
    bad = subprocess.run([str(HA), "tasks", "validate", "--jsonl", str(src), "--retries", "-1"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--retries" in bad.stderr


def test_the_shared_loopback_note_names_only_concurrent_local_gradings_with_network(tiny_task):
    """validate, eval and grade say it through one function: the local sandbox, two workers or more,
    and network (asked for, or the official harness's for a real benchmark's task)."""
    from ha_envs.grading.sandboxes import shared_loopback_note

    real = Task(**{**tiny_task.__dict__, "benchmark": "swebench_verified"})
    shared = dict(private_network=False)  # no slirp4netns: the host's network namespace
    assert "share one loopback" in shared_loopback_note("local", 2, [tiny_task, real], **shared)
    assert "share one loopback" in shared_loopback_note("local", 4, [tiny_task], network=True, **shared)
    assert shared_loopback_note("local", 2, [tiny_task], **shared) is None  # a bundled task is graded offline
    assert shared_loopback_note("local", 2, [real], network=False, **shared) is None
    assert shared_loopback_note("local", 1, [real], **shared) is None
    assert shared_loopback_note("docker", 8, [real], **shared) is None
    assert shared_loopback_note("local", 8, [real], private_network=True) is None  # a namespace per sandbox


def test_a_test_filed_under_the_other_list_changes_no_verdict_and_is_a_note(tiny_task, tmp_path):
    """xarray-6744: PASS_TO_PASS tests that fail at base here; the gold patch passes them and the
    empty patch does not resolve. Both lists must pass after a patch, so no verdict changes: noted.
    When the gold patch does not resolve, the same test is one of the problems."""
    from tests.conftest import CALC, _git_diff

    (Path(tiny_task.source_dir) / "tests" / "test_more.py").write_text(
        "from calc import clamp\n\n\ndef test_also_high():\n    assert clamp(7, 0, 5) == 5\n")
    tests = TestSpec(**{**tiny_task.tests.__dict__,
                        "pass_to_pass": tiny_task.tests.pass_to_pass + ("tests/test_more.py::test_also_high",)})
    work = tmp_path / "w"
    subprocess.run(["cp", "-a", str(tiny_task.source_dir), str(work)], check=True)
    gold = _git_diff(work, lambda d: (d / "calc.py").write_text(CALC.replace("return lo\n    return x", "return hi\n    return x")))
    task = Task(**{**tiny_task.__dict__, "tests": tests, "gold_patch": gold})
    res = validate_task(task, Grader(local_sandbox_factory(network=False)))
    assert res.ok and res.problems == [], res.problems
    assert any(n.startswith("PASS_TO_PASS tests fail at base (the dataset files them under the other list")
               and "test_also_high" in n for n in res.notes)
    broken = Task(**{**task.__dict__, "gold_patch": tiny_task.gold_patch.replace("return hi", "return x + 0")})
    bad = validate_task(broken, Grader(local_sandbox_factory(network=False)))
    assert not bad.ok and any(p.startswith("PASS_TO_PASS tests fail at base: ") for p in bad.problems)


def test_tests_that_import_a_dependency_only_the_gold_patch_adds_are_a_network_cause(tmp_path):
    """pylint-4661: the hidden tests import a package the gold patch adds as a dependency, so they
    cannot start at base either (an environment fault for the grader). swebench installs the patch's
    dependencies with network; this grader never does: the cause is ``network``, as it was before
    the grader learned to tell faults apart, not ``environment``."""
    import dataclasses
    import subprocess

    from ha_envs.loaders import load_suite
    from ha_envs.validate import validate_task
    from tests.conftest import _git_diff, require_bwrap

    require_bwrap()
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def where():\n    return '/tmp'\n")

    def copy(name):
        subprocess.run(["cp", "-a", str(repo), str(tmp_path / name)], check=True)
        return tmp_path / name

    gold = _git_diff(copy("g"), lambda d: (d / "calc.py").write_text(
        "import appdirs_zz_missing\n\n\ndef where():\n    return appdirs_zz_missing.user_dir()\n"))
    test_patch = _git_diff(copy("t"), lambda d: (d / "tests" / "test_where.py").write_text(
        "import appdirs_zz_missing\nfrom calc import where\n\n\ndef test_where():\n    assert where()\n"))
    task = next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")
    task = dataclasses.replace(task, instance_id="tiny__dep", source_dir=repo, gold_patch=gold, tests=dataclasses.replace(
        task.tests, test_patch=test_patch, fail_to_pass=("tests/test_where.py::test_where",), pass_to_pass=(),
        test_command="python -m pytest -rA -p no:cacheprovider tests/test_where.py", log_parser="pytest"))
    res = validate_task(task)
    assert (res.ok, res.cause, res.fault) == (False, "network", "runner_import"), res
    assert any("appdirs_zz_missing" in p and "adds a dependency" in p for p in res.problems), res.problems


def test_the_summary_counts_how_the_canaries_came_out():
    rows = [ValidationResult("a", True, repo="r", canaries={"gold": {"files": 1, "planted": 3, "must_fail": 1,
                                                                     "reported": 3, "as_planted": 3},
                                                            "empty": {"files": 1, "planted": 2, "must_fail": 1,
                                                                      "reported": 2, "as_planted": 2}}),
            ValidationResult("b", True, repo="r")]
    md = summary_markdown(rows)
    assert ("Hidden canaries: planted in 2 gradings of 1 instances (2 test files, 5 canaries, 2 must fail); 5 found "
            "in the runners' reports, 5 came out as planted.") in md
    assert "Hidden canaries" not in summary_markdown(rows[1:])
