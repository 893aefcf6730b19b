"""Grading a Harbor task (``ha_envs/harbor``): its ``tests/test.sh`` run on the agent's patch.

As every grading here: the agent's work copy comes as a patch (its diff), untrusted; it is replayed
into a fresh grading sandbox of the task's environment (bubblewrap over a fresh copy, or a fresh
container), so processes, shell state and PATH shims the agent left behind are gone; protected
paths are taken from the base (``protect.py``). Only then are the task's ``tests/`` put at ``/tests``
(read-only; as Harbor uploads them after the agent finished: the agent never sees them) and an
empty ``/logs/verifier`` made (a private, capped tmpfs under bubblewrap); ``bash /tests/test.sh`` runs from the work directory, and the reward file
it leaves is read as untrusted data (``parse_reward``): ``reward.json`` (a ``reward`` key) before
``reward.txt``, a finite number in [0, 1]; reward 1 resolves.

A reward file that is missing or not such a number is never a reward. With the patch in, the base
is run the same way in a fresh copy: when the base's reward is valid the patch is to blame
(``reward_invalid``, reward 0); when it is not either, the verifier is broken: an environment fault
(kind ``reward_invalid``, masked). The same for a verifier that cannot start.
"""

from __future__ import annotations

import base64
import json
import math
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..sandbox.base import Sandbox, SandboxError
from ..sandbox.provision.workcopy import Snapshot, prepare_snapshot
from ..sandbox.reaper import owned_prefix
from ..sandbox.shell import ansi_c_quote
from ..harbor.steps import tests_folders
from ..task import Task
from . import faults, harbor_trace
from .copy_scripts import put_files
from .patch_rules import filter_patch, flag_patch
from .report import EnvironmentFault, GradeReport, GradingError, PatchRefused, ungradable

REWARD_BYTES = 64 << 10
"""Largest reward file read; a larger one is not a reward."""
LOGS = "/logs"
LOGS_BYTES = 256 << 20
"""Size of the grading sandbox's private ``/logs`` (a capped tmpfs under bubblewrap)."""
TESTS = "/tests"


def is_harbor(task: Task) -> bool:
    return task.tests.log_parser == "harbor"


def graded_reward(report: GradeReport) -> float | None:
    """The reward a Harbor task's verifier wrote, as this grading believed it; None when none was."""
    return report.verifier_reward if report.status in ("resolved", "unresolved") else None


def parse_reward(name: str, data: bytes) -> tuple[float | None, str]:
    """(reward, "") from a reward file's bytes, or (None, why not). Untrusted: only a finite
    number in [0, 1] is a reward (``reward.txt``: the number alone; ``reward.json``: a number or an
    object whose ``reward`` and every other value are such numbers)."""
    if len(data) > REWARD_BYTES:
        return None, f"{name} has {len(data)} bytes (at most {REWARD_BYTES} are read)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, f"{name} is not UTF-8 text"
    if name.endswith(".json"):
        def refuse(const: str) -> float:
            raise ValueError(f"{const} is not a number")
        try:
            value = json.loads(text, parse_constant=refuse)
        except ValueError as exc:
            return None, f"{name} is not valid JSON ({exc})"
        values = value if isinstance(value, dict) else {"reward": value}
        if "reward" not in values:
            return None, f"{name} has no 'reward' key (keys: {', '.join(sorted(values))[:200]})"
        for key, v in values.items():
            why = _not_reward(v)
            if why:
                return None, f"{name}: {key!r} {why}"
        return float(values["reward"]), ""
    try:
        value = float(text.strip())
    except ValueError:
        return None, f"{name} is not a number: {text.strip()[:80]!r}"
    why = _not_reward(value)
    return (None, f"{name}: {why}") if why else (value, "")


def _not_reward(v: object) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return f"is not a number ({type(v).__name__})"
    if not math.isfinite(v):
        return f"is not finite ({v})"
    if not 0.0 <= v <= 1.0:
        return f"is {v}, outside [0, 1]"
    return ""


def grade_harbor(grader, task: Task, patch: str, snapshot: Snapshot | None = None) -> GradeReport:
    """The grade of ``patch`` for a Harbor task (``grader``: the :class:`Grader` whose sandboxes and
    patch steps are used)."""
    t0 = time.monotonic()
    if len(patch) > grader.patch_bytes:
        return ungradable(task, "patch_too_large", f"the patch has {len(patch)} characters; the cap is "
                          f"{grader.patch_bytes}", time.monotonic() - t0)
    kept, dropped, unsafe = filter_patch(patch, task)
    report = GradeReport(task.instance_id, "unresolved", False, dropped_paths=dropped)
    flag_patch(report, kept, dropped, unsafe)
    try:
        ran = _verify(grader, task, kept, report, snapshot)
        if ran is not None:
            _judge(grader, task, snapshot, report, *ran, patched=bool(kept.strip()))
    except PatchRefused as exc:
        report.status, report.resolved, report.error = "patch_refused", False, str(exc)
        report.flag("patch_refused", str(exc))
    except GradingError:
        raise
    except (OSError, SandboxError) as exc:
        raise GradingError(f"grading {task.instance_id} failed: {exc}") from exc
    report.duration_s = time.monotonic() - t0
    return report


def _judge(grader, task: Task, snapshot: Snapshot | None, report: GradeReport, reward: float | None, why: str,
           log: str, timed_out: bool, survivors: list[str], patched: bool) -> None:
    report.log_tail = log[-4000:]
    if timed_out:  # reward 0 whatever else: the shell our limit killed is not a survivor to compare
        report.status, report.error = "tests_timed_out", f"tests/test.sh ran past {task.tests.timeout_s} s"
        return
    if survivors and _outlived_only_with_the_patch(grader, task, snapshot, report, survivors, patched):
        return
    if why.startswith(TWO_REWARDS):  # the task's verifier writes one; the code under test wrote the other
        report.status, report.error = "verdict_tampered", why
        report.tampering.append(why)
        report.flag("verdict_tampered", why)
        return
    if reward is not None:
        report.resolved = reward >= 1.0
        report.status = "resolved" if report.resolved else "unresolved"
        report.verdict_rules, report.verifier_reward = f"harbor (reward {reward:g})", reward
        return
    base = _verify(grader, task, "", GradeReport(task.instance_id, "unresolved", False), snapshot) if patched else None
    if base is not None and base[0] is not None:
        report.status, report.error = "reward_invalid", (f"{why}; at base, in a fresh copy, the verifier writes a "
                                                         "valid reward, so the patch is to blame")
        report.flag("reward_invalid", report.error)
        return
    failure = faults.StartFailure("reward_invalid", why)
    report.status, report.fault = faults.FAULT_STATUS, failure.kind
    report.error = f"{failure.describe()}, with the patch and at base alike"
    raise EnvironmentFault(f"{task.instance_id}: environment fault: {report.error}", report, failure)


def _outlived_only_with_the_patch(grader, task: Task, snapshot: Snapshot | None, report: GradeReport,
                                  survivors: list[str], patched: bool) -> bool:
    """Processes outlived tests/test.sh (killed before the reward was read; they could have rewritten
    it meanwhile) or the process that started them, or the trace shows another way to forge the reward
    (``harbor_trace.findings``: a failed write of the reward, limits or memory of another process, the
    shell killed). When the base's verifier, in a fresh copy, shows none, the patch made them: the
    reward is not believed (``verdict_tampered``, reward 0, unmasked; True). When the base shows some
    too, that is the task's verifier: noted, and the reward stands (False)."""
    base = _verify(grader, task, "", GradeReport(task.instance_id, "unresolved", False), snapshot) if patched else None
    if not patched or (base is not None and base[4]):  # no patch: this run is the base's own
        left = len(survivors) if base is None else len(base[4])
        report.error = (f"{_said(survivors)}; the base's verifier leaves {left} too (the task's own): processes were "
                        "killed before the reward was read")
        return False
    why = f"{_said(survivors)}; at base, in a fresh copy, the verifier shows none"
    report.status, report.error = "verdict_tampered", why
    report.tampering.append(why)
    report.flag("verdict_tampered", why)
    return True


def _said(found: list[str]) -> str:
    pids = [p for p in found if p.isdigit()]
    out = [(f"{len(pids)} process(es) started during the tests outlived tests/test.sh or the process that started "
            f"them ({', '.join(pids[:8])}: they could rewrite the reward file after the verifier wrote it)")] if pids else []
    return "; ".join(out + [f"the trace of tests/test.sh shows {x}" for x in found if not x.isdigit()])


def _verify(grader, task: Task, kept: str, report: GradeReport, snapshot: Snapshot | None):
    """In one fresh grading sandbox: the patch, then the tests; (reward, why not, log, timed out, the
    pids that outlived the tests), or None when the patch does not apply."""
    tests = tests_folders(task.metadata["harbor"])  # a step's tests over the task's (harbor/steps.py)
    with folder_sandbox(grader.sandbox_factory, task, snapshot, tests, TESTS, ((LOGS, LOGS_BYTES),)) as sandbox:
        if grader.patch_in(task, sandbox, kept, report, True) is None:
            return None
        if getattr(grader.sandbox_factory, "in_place", False):
            sandbox.run(f"rm -rf {LOGS} && mkdir -p {LOGS} && chmod 777 {LOGS}", timeout=60)
        sandbox.run(f"mkdir -p {LOGS}/verifier {LOGS}/agent && rm -f {LOGS}/verifier/reward.*", timeout=60)
        env = "".join(f"export {k}={ansi_c_quote(v)}; " for k, v in
                      (task.metadata["harbor"].get("verifier_env") or {}).items() if k.isidentifier())
        before = _pids(sandbox)
        folder = f"/tmp/ha-trace-{secrets.token_hex(6)}"
        command = harbor_trace.wrap(f"{env}cd {ansi_c_quote(sandbox.workdir)} && bash {TESTS}/test.sh", folder)
        res = sandbox.run(f"{command} 2>&1", timeout=task.tests.timeout_s, head_bytes=1 << 20, tail_bytes=4 << 20)
        tracer = sandbox.run(f"cat {folder}/tracer 2>/dev/null", timeout=60).output.strip()
        survivors = end_survivors(sandbox, before + ([tracer] if tracer.isdigit() else []))
        seen = _traced(sandbox, folder, tracer)
        reward, why = read_reward(sandbox)
        return reward, why, res.output, res.timed_out, sorted(set(survivors) | set(seen), key=_order)


def _order(pid: str) -> tuple[int, str]:
    return (int(pid), "") if pid.isdigit() else (1 << 62, pid)


def _traced(sandbox: Sandbox, folder: str, tracer: str) -> list[str]:
    """``harbor_trace.findings`` of the trace of test.sh's processes, once the tracer has ended
    (every process it traced is gone: the survivors were killed); [] when nothing was traced."""
    if tracer.isdigit():
        sandbox.run(f"for ha_i in $(seq 100); do [ -e /proc/{tracer} ] || break; sleep 0.05; done; "
                    f"kill -KILL {tracer} 2>/dev/null", timeout=60)
    res = sandbox.run(f"if [ -f {folder}/trace ]; then echo HA_TRACE; head -c {harbor_trace.MAX_TRACE + 1} "
                      f"{folder}/trace; fi; rm -rf {folder}", timeout=120,
                      head_bytes=harbor_trace.MAX_TRACE + (1 << 20), tail_bytes=0)
    head, _, text = res.output.partition("\n")
    if head.strip() != "HA_TRACE":
        return []
    return harbor_trace.findings(text, cut=len(text.encode()) > harbor_trace.MAX_TRACE)


def _pids(sandbox: Sandbox) -> list[str]:
    """The processes in the sandbox (its own PID namespace: Harbor grading needs isolation) now."""
    res = sandbox.run("for p in /proc/[0-9]*; do printf '%s ' \"${p#/proc/}\"; done", timeout=60)
    return [p for p in res.output.split() if p.isdigit()]


def end_survivors(sandbox: Sandbox, before: list[str]) -> list[str]:
    """Stop and kill every live process that appeared while test.sh ran and outlived it (a process the
    code under test left behind can rewrite the reward file after the verifier wrote it); the pids
    found. Each round stops them all first, so none forks away between the look and the kill.
    Runs in the sandbox's own shell with builtins only (no process of its own to be found)."""
    script = (f"ha_before=' {' '.join(before)} '; ha_found=''; for ha_round in 1 2 3 4 5 6 7 8; do ha_new=''; "
              "for ha_p in /proc/[0-9]*; do ha_p=${ha_p#/proc/}; case \"$ha_before\" in *\" $ha_p \"*) continue;; esac; "
              "[ \"$ha_p\" = \"$$\" ] && continue; ha_st=''; read -r ha_st < \"/proc/$ha_p/stat\" 2>/dev/null || continue; "
              "ha_st=${ha_st##*) }; [ \"${ha_st%% *}\" = Z ] && continue; "
              "kill -STOP \"$ha_p\" 2>/dev/null && ha_new=\"$ha_new $ha_p\"; done; "
              "[ -z \"$ha_new\" ] && break; ha_found=\"$ha_found$ha_new\"; kill -KILL $ha_new 2>/dev/null; done; "
              "echo \"survivors:$ha_found\"")
    res = sandbox.run(script, timeout=60)
    line = next((x for x in res.output.splitlines() if x.startswith("survivors:")), "survivors:")
    return sorted(set(line.split(":", 1)[1].split()), key=int)


@contextmanager
def folder_sandbox(factory, task: Task, snapshot: Snapshot | None, folder: Path | Sequence[Path], inside: str,
                   tmpfs: tuple[tuple[str, int], ...] = ()) -> Iterator[Sandbox]:
    """A started, fresh sandbox of ``factory`` for ``task`` showing a private copy of the task's
    ``folder`` (its tests, its solution; several: laid one over the other, a later one's files
    winning) read-only at ``inside`` (bound by the local sandbox, uploaded into a container), with
    private ``tmpfs`` folders; closed and cleaned up after."""
    host = Path(tempfile.mkdtemp(prefix=owned_prefix("ha-harbor")))
    try:
        copy = host / "shown"
        copy.mkdir()
        for one in ([folder] if isinstance(folder, Path) else folder):
            shutil.copytree(one, copy, symlinks=True, dirs_exist_ok=True)
        sandbox, root = open_sandbox(factory, task, snapshot, ((str(copy), inside, False),), tmpfs)
        try:
            sandbox.start()
            if getattr(factory, "in_place", False):
                upload_dir(sandbox, copy, inside)
            yield sandbox
        finally:
            sandbox.close()
            if root is not None:
                shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(host, ignore_errors=True)


def open_sandbox(factory, task: Task, snapshot: Snapshot | None, binds: tuple[tuple[str, str, bool], ...],
                 tmpfs: tuple[tuple[str, int], ...] = ()) -> tuple[Sandbox, Path | None]:
    """A fresh sandbox of ``factory`` for ``task`` showing ``binds`` (host, path, writable) and
    private ``tmpfs`` folders (path, bytes): the local sandbox mounts them; a container
    (``in_place``) gets them from the caller (uploads, ``mkdir``)."""
    if getattr(factory, "in_place", False):
        return factory(None, None, task), None
    snapshot = snapshot or prepare_snapshot(task)
    root = Path(tempfile.mkdtemp(prefix=owned_prefix("ha-grade")))
    try:
        sandbox = factory(snapshot, root, task, binds=binds, tmpfs=tmpfs)
    except TypeError as exc:
        raise GradingError(f"{task.instance_id}: this grader's sandboxes cannot show a Harbor task's /tests and "
                           f"/logs ({exc}); grade with the local (bubblewrap) or docker sandbox") from None
    if getattr(sandbox, "isolated", True) is False:
        raise GradingError(f"{task.instance_id}: a Harbor task's verifier reads /tests and writes /logs: the local "
                           "sandbox needs bubblewrap for that (or use --sandbox docker)")
    return sandbox, root


def upload_dir(sandbox: Sandbox, folder: Path, inside: str) -> None:
    """A host folder's files into a container at ``inside`` (replacing what was there)."""
    files = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}
    sandbox.run(f"rm -rf {inside} && mkdir -p {inside}", timeout=60)
    put_files(sandbox, inside, files)


def read_reward(sandbox: Sandbox) -> tuple[float | None, str]:
    """The reward file test.sh left, read through the sandbox's shell (its bytes, base64, capped)
    and parsed on this side: ``reward.json`` first, as Harbor; a link or another kind of file is
    not a reward. Both files there and saying different things is no reward either, and a forgery
    (:data:`TWO_REWARDS`): code under test can drop the one the task's test.sh does not write."""
    found = [(name, _read_one(sandbox, name)) for name in ("reward.json", "reward.txt")]
    found = [(name, got) for name, got in found if got is not None]
    if not found:
        return None, "the verifier wrote no reward file (/logs/verifier/reward.json or reward.txt)"
    (first, (reward, why)), *rest = found
    if rest and (reward is None or rest[0][1][0] != reward):
        said = "; ".join(f"{n}: {r if r is not None else w}" for n, (r, w) in found)
        return None, f"{TWO_REWARDS} ({said})"
    return reward, why


TWO_REWARDS = "reward.json and reward.txt both written, and they disagree"


def _read_one(sandbox: Sandbox, name: str) -> tuple[float | None, str] | None:
    """(reward, why not) of one reward file; None when it is not there."""
    f = f"{LOGS}/verifier/{name}"
    res = sandbox.run(f"if [ -L {f} ]; then echo HA_LINK; elif [ -f {f} ]; then echo HA_FILE; "
                      f"head -c {REWARD_BYTES + 1} {f} | base64 -w0; echo; elif [ -e {f} ]; then echo HA_OTHER; fi",
                      timeout=60, head_bytes=4 * REWARD_BYTES, tail_bytes=0)
    head, _, body = res.output.partition("\n")
    kind = head.strip()
    if kind == "HA_LINK":
        return None, f"{name} is a symbolic link, not a file"
    if kind == "HA_OTHER":
        return None, f"{name} is not a regular file"
    if kind != "HA_FILE":
        return None
    try:
        data = base64.b64decode(body.strip(), validate=True)
    except ValueError:
        return None, f"{name} could not be read back from the sandbox"
    return parse_reward(name, data)
