"""Task validation: the gold patch must resolve, the empty patch must not.

The empty-patch run also checks the task's own claims: every FAIL_TO_PASS test must fail at base
and every PASS_TO_PASS test must pass there, otherwise the lists are wrong.

A failure gets a cause, so a sweep over a benchmark says what to fix where:

- ``environment``: the environment could not be built, or lacks what the spec asks for (a
  requirement pip cannot have, a pre-install step that needs system packages or failed);
- ``network``: the failing tests' log shows them reaching for the network (this machine, or a
  grading sandbox without network, cannot give it); or the gold patch needs a dependency it adds
  (a module or package only the patch's lines bring), which swebench's eval script installs after
  the patch, with network, and this grader never does: what a patch declares is not installed
  while grading, so no patch can resolve such a task here;
- ``machine``: this machine lacks something no task can fix (an interpreter, a toolchain, the
  official image with no registry to pull it from);
- ``flaky``: none of the above, and the verdict that disagreed changed when the same patch was
  graded again (``retries``): the tests race the clock or the code has a race;
- ``grader``: none of the above: the environment is as the spec says, yet our verdict disagrees with
  the dataset's (gold not resolving, or the empty patch resolving), every time it is graded. These
  are the ones to read first.

What decides a verdict is that every FAIL_TO_PASS and PASS_TO_PASS test passes after the patch, so
a test the dataset files under the other list at base (a PASS_TO_PASS test failing at base, a
FAIL_TO_PASS one passing there) changes no verdict: when the gold patch resolves and the empty one
does not, such a test is a note, not a failure.
"""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from .grading.report import EnvironmentFault
from .grading.grader import Grader
from .grading.report import GradeReport, GradingError
from .grading.sandboxes import NETWORK_SIGNS
from .grading.log_parsers import PASSED, SKIPPED, XFAIL
from .sandbox.base import SandboxError
from .task import Task

CAUSES = ("environment", "network", "machine", "flaky", "grader")
MACHINE_SIGNS = re.compile(
    r"pyenv has none|needs `uv`|no Docker daemon|cannot be had|no registry|command not found|"
    r"No such file or directory: '(node|npm|go|cargo|java|mvn|gradle|ruby|php)'|needs root")


@dataclass
class ValidationResult:
    instance_id: str
    ok: bool
    problems: list[str] = field(default_factory=list)
    gold_status: str = ""
    empty_status: str = ""
    seconds: float = 0.0
    repo: str = ""
    cause: str = ""
    """Why it is not ok (one of ``CAUSES``); empty when ok."""
    notes: list[str] = field(default_factory=list)
    """What was not checked, and why (a result can be ok with notes)."""
    environment: dict = field(default_factory=dict)
    """What the environment build read and lacks: ``requirements`` (file @ commit), ``notes``
    (fallbacks taken), ``problems`` (requirements and setup steps it could not honour)."""
    fault: str = ""
    """The kind of environment fault (``grading.faults.KINDS``) when the tests could not start,
    with the gold patch or the empty one and at base alike; empty otherwise."""
    fault_cause: str = ""
    """That fault in words."""
    canaries: dict = field(default_factory=dict)
    """How the hidden canary tests came out in each grading (``{"gold": {...}, "empty": {...}}``,
    the grade reports' counts); empty when none were planted."""
    watch: dict = field(default_factory=dict)
    """side (gold, empty) -> what the watch saw the code under test do (``GradeReport.watch``; None
    when the run was not watched). The gold run is the reference the watch compares with, so a
    validation never flags the gold patch by the watch: measure false alarms by grading it again."""
    gold_twice: dict = field(default_factory=dict)
    """``--gold-twice``: the gold patch graded a second time by the same grader, its watch compared
    with the first gold run's as an agent's fix would be (``_gold_again``); empty when not asked."""
    node: str = ""
    """The Ray node that validated it (``ha tasks validate --executor ray``); empty on this machine."""

    def to_dict(self) -> dict:
        return asdict(self)


def validate_task(task: Task, grader: Grader | None = None, retries: int = 0,
                  gold_twice: bool = False) -> ValidationResult:
    """``retries``: grade a disagreeing verdict that nothing explains (cause ``grader``) up to this
    many more times; one that changes makes the cause ``flaky``. ``gold_twice``: ``_gold_again``."""
    grader = grader or Grader()
    res = ValidationResult(task.instance_id, ok=True, repo=task.repo or "")
    try:
        if task.benchmark == "harbor" and not task.gold_patch.strip():  # the oracle, solution/solve.sh
            from .harbor.oracle import with_oracle

            task = with_oracle(task, grader.sandbox_factory)
            if not task.gold_patch.strip():
                raise GradingError("solution/solve.sh changed nothing in the work directory")
        gold = grader.grade(task, task.gold_patch)
        empty = grader.grade(task, "")
    except GradingError as exc:
        res.ok, res.problems = False, [f"grading failed: {exc}"]
        if isinstance(exc, EnvironmentFault):  # the tests cannot start here, at base either
            res.fault, res.fault_cause = exc.kind, exc.report.error
            res.cause = "machine" if exc.kind in ("runner_missing", "runner_not_executable") else "environment"
            res.environment = environment_of(task, build=False)
            lacking = new_imports_missing(task.gold_patch, f"{exc.report.error}\n{exc.report.log_tail}")
            if lacking:  # the module the tests miss is one the gold patch adds a dependency on
                res.cause = "network"
                res.problems.append(_needs(lacking))
        elif isinstance(exc.__cause__, SandboxError) and not MACHINE_SIGNS.search(str(exc)):
            # The sandbox (the environment build, the snapshot) failed, not the grading.
            res.cause, res.environment = "environment", environment_of(task, build=False)
        else:
            _explain(res, task, [str(exc)])
        return res
    except Exception as exc:  # noqa: BLE001 - a task whose snapshot or environment cannot be built
        res.ok, res.problems = False, [f"could not prepare the task: {type(exc).__name__}: {exc}"]
        res.environment = environment_of(task, build=False)
        res.cause = "machine" if MACHINE_SIGNS.search(str(exc)) else "environment"
        return res
    _record(res, gold, empty)
    if gold_twice:
        _gold_again(res, task, grader, gold)
    if not task.gold_patch.strip():
        res.problems.append("the task has no gold patch")
    if not gold.resolved:
        bad = {t: s for t, s in {**gold.fail_to_pass, **gold.pass_to_pass}.items() if s not in (PASSED, SKIPPED, XFAIL)}
        why = gold.error or "; ".join(gold.tampering)
        res.problems.append(f"gold patch does not resolve ({gold.status}{': ' + why if why else ''}); "
                            f"failing: {_short(bad)}")
    if empty.status in ("tests_tampered", "verdict_tampered"):  # an honest base must never look forged
        res.problems.append(f"the empty patch's test log was not believed: {'; '.join(empty.tampering)[:400]}")
    if empty.resolved:
        res.problems.append("the empty patch resolves the task")
    # Both lists must pass after any patch, so a test the dataset files under the other list at base
    # changes no verdict; it is a problem only when the verdicts are wrong anyway (module docstring).
    lists_only = gold.resolved and not empty.resolved
    still = [t for t, s in empty.fail_to_pass.items() if s == PASSED]
    if still:
        (res.notes if lists_only else res.problems).append(
            f"FAIL_TO_PASS tests already pass at base{_NO_VERDICT if lists_only else ''}: {_short(still)}")
    broken = [t for t, s in empty.pass_to_pass.items() if s not in (PASSED, SKIPPED, XFAIL)]
    cut = [t for t in broken if truncated_id(t)]
    if cut:  # not a claim the dataset can make: the name stands for several tests
        broken = [t for t in broken if t not in cut]
        res.notes.append(f"PASS_TO_PASS names cut at a space, each standing for several tests, not checked at base: "
                         f"{_short(cut)}")
    if broken:
        (res.notes if lists_only else res.problems).append(
            f"PASS_TO_PASS tests fail at base{_NO_VERDICT if lists_only else ''}: {_short(broken)}")
    if not task.tests.fail_to_pass and task.benchmark != "harbor":  # a Harbor task's test.sh has no list
        res.problems.append("no FAIL_TO_PASS tests")
    if gold.network_excluded:  # graded, but not on everything the dataset lists: not a full validation
        res.problems.append(f"{len(gold.network_excluded)} PASS_TO_PASS test(s) reach for the network, which this "
                            f"machine cannot give; graded without them (left out of the verdict), the gold patch "
                            f"{'resolves' if gold.resolved else 'does not resolve'}: {_short(gold.network_excluded)}")
    res.ok = not res.problems
    lacking = [] if res.ok else new_imports_missing(task.gold_patch, _evidence(gold))
    if lacking:
        res.problems.append(_needs(lacking))
    _explain(res, task, [_evidence(gold), _evidence(empty)], lacking)
    if res.cause == "grader" and retries > 0:
        _regrade(res, task, grader, gold, empty, retries)
    return res


def _record(res: ValidationResult, gold: GradeReport, empty: GradeReport) -> None:
    """What the two gradings say, into ``res``: statuses, time, canaries, watch."""
    res.gold_status, res.empty_status = gold.status, empty.status
    res.seconds = round(gold.duration_s + empty.duration_s, 2)
    res.canaries = {side: r.canaries for side, r in (("gold", gold), ("empty", empty)) if r.canaries}
    res.watch = {side: r.watch for side, r in (("gold", gold), ("empty", empty))}


def _gold_again(res: ValidationResult, task: Task, grader: Grader, gold: GradeReport) -> None:
    """``res.gold_twice``: the gold patch graded a second time by ``grader``, which kept the first gold
    run's watch as the reference: the second run is compared with it as an agent's equivalent fix
    is, so a kind the watch saw only once (or any other verdict against an honest run) is a false
    alarm, and a problem of the task's validation. Not graded when the first gold run did not
    resolve or was not watched (nothing to compare)."""
    if not gold.resolved or gold.watch is None:
        res.gold_twice = {"graded": False, "why": "the gold patch does not resolve" if not gold.resolved else
                          "the gold run was not watched"}
        return
    try:
        again = grader.grade(task, task.gold_patch)
    except GradingError as exc:
        res.gold_twice = {"graded": False, "why": f"grading failed: {exc}"[:400]}
        return
    alarm = again.status in ("verdict_tampered", "tests_tampered")
    res.gold_twice = {"graded": True, "status": again.status, "watch": again.watch,
                      "reference": again.watch_reference, "false_alarm": alarm,
                      "why": "; ".join(again.tampering)[:400] if alarm else "",
                      "seconds": round(again.duration_s, 2), "first_seconds": round(gold.duration_s, 2)}
    if alarm:
        res.problems.append(f"the gold patch, graded again, was taken for a forgery ({again.status}): "
                            f"{res.gold_twice['why']}")


_NO_VERDICT = " (the dataset files them under the other list; every verdict is the same either way)"


def _regrade(res: ValidationResult, task: Task, grader: Grader, gold: GradeReport, empty: GradeReport,
             retries: int) -> None:
    """Grade the disagreeing verdicts again, up to ``retries`` more times each; a verdict that
    changes makes the failure ``flaky`` (how often each came out as the dataset says is recorded)."""
    runs = []
    if not gold.resolved:
        runs.append(("gold", task.gold_patch, True))
    if empty.resolved:
        runs.append(("empty", "", False))
    changed = []
    for name, patch, want in runs:
        got = [not want]
        for _ in range(retries):
            try:
                got.append(grader.grade(task, patch).resolved)
            except GradingError as exc:
                res.notes.append(f"grading the {name} patch again failed: {exc}")
                break
            if got[-1] == want:
                break
        agree = sum(g == want for g in got)
        if agree:
            changed.append(f"the {name} patch {'resolved' if want else 'did not resolve'} {agree} of {len(got)} "
                           "grades")
    if changed:
        res.cause = "flaky"
        res.problems.append("; ".join(changed) + ": the tests' outcome changes from run to run (a test that "
                            "races the clock, which a loaded machine loses, or a race in the code)")


_MISSING_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '?([\w.]+)|"
                             r"Cannot find (?:package|module) '([^']+)'")
_ADDED_IMPORT = re.compile(r"^\+\s*(?:import|from)\s+([\w.]+)", re.M)


def _needs(lacking: list[str]) -> str:
    return (f"the gold patch needs {', '.join(lacking)}, which the environment lacks: the patch adds a dependency, "
            "which swebench's eval script installs after the patch, with network; this grader installs nothing a "
            "patch declares (the patch would choose code that runs while it grades), so no patch resolves this task "
            "here")


def new_imports_missing(patch: str, log: str) -> list[str]:
    """Modules (Python) or packages (Node) the log says are missing and that only the patch's added
    lines bring: the patch needs a dependency the base commit's environment never had (a Python
    import; a Node package the patch adds to ``package.json``, which swebench's ``npm install`` build
    step fetches after the patch, with network)."""
    added = {m.split(".")[0] for m in _ADDED_IMPORT.findall(patch)}
    out = set()
    for py, node in _MISSING_MODULE.findall(log):
        if py and py.split(".")[0] in added:
            out.add(py)
        elif node and not node.startswith((".", "/")) and \
                re.search(rf"^\+.*[\"']{re.escape(node)}[\"']", patch, re.M):
            out.add(node)
    return sorted(out)


def truncated_id(test: str) -> bool:
    """A pytest id cut at its first space by swebench's log parser (``test_x[foo,`` for
    ``test_x[foo, bar-expected2]``): the dataset's lists hold such names (pylint-8898), and one
    stands for every test whose id starts the same way, so its status is whichever line came last."""
    return "[" in test and not test.endswith("]")


def _evidence(report: GradeReport) -> str:
    return "\n".join([report.error, report.log_tail, *report.network_errors])


def _explain(res: ValidationResult, task: Task, evidence: list[str], lacking: list[str] | None = None) -> None:
    """Attach the environment's record, and a cause to a failure (see the module docstring)."""
    res.environment = environment_of(task)
    if res.ok:
        return
    text = "\n".join(evidence)
    network = NETWORK_SIGNS.search(text)
    if MACHINE_SIGNS.search(text):
        res.cause = "machine"
    elif network:
        res.cause = "network"
        res.problems.append(f"the failing tests reach for the network (their log: {network.group(0)!r})")
    elif lacking:
        res.cause = "network"
    elif res.environment.get("problems"):
        res.cause = "environment"
    else:
        res.cause = "grader"


def environment_of(task: Task, build: bool = True) -> dict:
    """The environment build's record for ``task`` plus its snapshot's pre-install steps; ``build``
    False: only what is already on disk (never starts a build)."""
    from .sandbox.provision.pyenv import build_report, python_env
    from .sandbox.provision.setup_steps import setup_report
    from .sandbox.provision.workcopy import prepare_snapshot

    out: dict = {}
    try:
        env = python_env(task) if build else None
        out = dict(build_report(env)) if env is not None else {}
        report = setup_report(prepare_snapshot(task).path) if build else None
    except Exception:  # noqa: BLE001 - no environment to report on (its failure is the result's problem)
        return out
    if report is not None and report.problems():
        out["problems"] = list(out.get("problems", [])) + report.problems()
    return out


def validate_tasks(tasks: list[Task], workers: int = 2, grader: Grader | None = None,
                   on_result: Callable[[ValidationResult], None] | None = None,
                   retries: int = 0, gold_twice: bool = False) -> list[ValidationResult]:
    """Validate ``tasks`` on ``workers`` threads; ``on_result`` sees each result as it finishes
    (a resumable results file appends it there). Returns them in the order of ``tasks``."""
    grader = grader or Grader()
    done: dict[str, ValidationResult] = {}
    lock = threading.Lock()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(validate_task, t, grader, retries, gold_twice): t for t in tasks}
        for fut in as_completed(futures):
            res = fut.result()
            with lock:
                done[res.instance_id] = res
                if on_result is not None:
                    on_result(res)
    return [done[t.instance_id] for t in tasks]


def stratified_sample(tasks: list[Task], n: int, seed: int) -> list[Task]:
    """``n`` tasks spread over repositories as evenly as they allow (round robin over repositories in
    a seeded order, each repository's tasks seeded-shuffled); the result keeps the input's order."""
    import random

    rng = random.Random(seed)
    by_repo: dict[str, list[Task]] = {}
    for t in tasks:
        by_repo.setdefault(t.repo or "", []).append(t)
    queues = []
    for repo in sorted(by_repo):
        items = list(by_repo[repo])
        rng.shuffle(items)
        queues.append(items)
    rng.shuffle(queues)
    chosen: set[str] = set()
    while len(chosen) < min(n, len(tasks)):
        for q in queues:
            if q and len(chosen) < n:
                chosen.add(q.pop().instance_id)
    return [t for t in tasks if t.instance_id in chosen]


def read_results(path: Path) -> dict[str, ValidationResult]:
    """Results already in a JSONL results file (a truncated last line, from a killed run, is skipped)."""
    out: dict[str, ValidationResult] = {}
    if not Path(path).is_file():
        return out
    for line in Path(path).read_text().splitlines():
        try:
            row = json.loads(line)
            out[row["instance_id"]] = ValidationResult(**row)
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return out


def summary_markdown(results: list[ValidationResult], title: str = "Validation") -> str:
    """Per repository: validated / total and the causes of the rest; then every failure with its cause."""
    lines = [f"## {title}", "", "| repository | instances | validate | " + " | ".join(CAUSES) + " |",
             "|---|---:|---:|" + "---:|" * len(CAUSES)]
    repos = sorted({r.repo for r in results})
    for repo in repos + ["**all**"]:
        rs = [r for r in results if repo == "**all**" or r.repo == repo]
        counts = [sum(r.cause == c for r in rs) for c in CAUSES]
        lines.append(f"| {repo or '(no repository)'} | {len(rs)} | {sum(r.ok for r in rs)} | " + " | ".join(map(str, counts)) + " |")
    eligible = [r for r in results if r.cause not in ("network", "machine")]
    if eligible:
        ok = sum(r.ok for r in eligible)
        lines += ["", f"Needing neither network nor what this machine lacks: {ok}/{len(eligible)} validate "
                      f"({100 * ok / len(eligible):.1f}%)."]
    lines += _canary_lines(results) + _gold_twice_lines(results)
    bad = [r for r in results if not r.ok]
    if bad:
        lines += ["", "| instance | cause | gold | empty | problems |", "|---|---|---|---|---|"]
        for r in bad:
            why = "; ".join(r.problems + r.environment.get("problems", []))
            why = why.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {r.instance_id} | {r.cause} | {r.gold_status} | {r.empty_status} | "
                         f"{why[:600] + (' …' if len(why) > 600 else '')} |")
    noted = [r for r in results if r.notes]
    if noted:
        lines += ["", "Notes (what was not checked):"]
        lines += [f"- `{r.instance_id}`: " + "; ".join(r.notes).replace("\n", " ") for r in noted]
    return "\n".join(lines) + "\n"


def _gold_twice_lines(results: list[ValidationResult]) -> list[str]:
    """``--gold-twice``: how many second gold gradings were taken for a forgery, and their time."""
    again = [r.gold_twice for r in results if r.gold_twice.get("graded")]
    if not any(r.gold_twice for r in results):
        return []
    alarms = sum(bool(g["false_alarm"]) for g in again)
    seconds = sum(g["seconds"] for g in again)
    return ["", f"Gold patch graded twice: {len(again)} second gradings (watched gold runs that resolve), "
                f"**{alarms} false alarm(s)**; {seconds:.0f} s of grading for them."]


def _canary_lines(results: list[ValidationResult]) -> list[str]:
    """One line on the hidden canaries of the sweep's gradings (``GradeReport.canaries``)."""
    graded = [c for r in results for c in r.canaries.values()]
    if not graded:
        return []
    total = {k: sum(c.get(k, 0) for c in graded) for k in ("files", "planted", "must_fail", "reported", "as_planted")}
    with_canaries = sum(bool(r.canaries) for r in results)
    return ["", f"Hidden canaries: planted in {len(graded)} gradings of {with_canaries} instances ({total['files']} "
                f"test files, {total['planted']} canaries, {total['must_fail']} must fail); {total['reported']} "
                f"found in the runners' reports, {total['as_planted']} came out as planted."]


def _short(items: dict[str, str] | list[str]) -> str:
    parts = [f"{k}={v}" for k, v in items.items()] if isinstance(items, dict) else [str(i) for i in items]
    text = ", ".join(parts)
    return text if len(text) < 400 else text[:400] + " ..."
