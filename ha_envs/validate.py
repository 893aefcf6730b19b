"""Task validation: the gold patch must resolve, the empty patch must not.

The empty-patch run also checks the task's own claims: every FAIL_TO_PASS test must fail at base
and every PASS_TO_PASS test must pass there, otherwise the lists are wrong.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from .grading.grader import Grader, GradingError
from .grading.parsers import PASSED, SKIPPED, XFAIL
from .task import Task


@dataclass
class ValidationResult:
    instance_id: str
    ok: bool
    problems: list[str] = field(default_factory=list)
    gold_status: str = ""
    empty_status: str = ""
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def validate_task(task: Task, grader: Grader | None = None) -> ValidationResult:
    grader = grader or Grader()
    res = ValidationResult(task.instance_id, ok=True)
    try:
        gold = grader.grade(task, task.gold_patch)
        empty = grader.grade(task, "")
    except GradingError as exc:
        res.ok, res.problems = False, [f"grading failed: {exc}"]
        return res
    except Exception as exc:  # noqa: BLE001 - a task whose snapshot or environment cannot be built
        res.ok, res.problems = False, [f"could not prepare the task: {type(exc).__name__}: {exc}"]
        return res
    res.gold_status, res.empty_status = gold.status, empty.status
    res.seconds = round(gold.duration_s + empty.duration_s, 2)
    if not task.gold_patch.strip():
        res.problems.append("the task has no gold patch")
    if not gold.resolved:
        bad = {t: s for t, s in {**gold.fail_to_pass, **gold.pass_to_pass}.items() if s not in (PASSED, SKIPPED, XFAIL)}
        why = gold.error or "; ".join(gold.tampering)
        res.problems.append(f"gold patch does not resolve ({gold.status}{': ' + why if why else ''}); "
                            f"failing: {_short(bad)}")
    if empty.status == "tests_tampered":  # an honest base must never look forged
        res.problems.append(f"the empty patch's test log was not believed: {'; '.join(empty.tampering)[:400]}")
    if empty.resolved:
        res.problems.append("the empty patch resolves the task")
    still = [t for t, s in empty.fail_to_pass.items() if s == PASSED]
    if still:
        res.problems.append(f"FAIL_TO_PASS tests already pass at base: {_short(still)}")
    broken = [t for t, s in empty.pass_to_pass.items() if s not in (PASSED, SKIPPED, XFAIL)]
    if broken:
        res.problems.append(f"PASS_TO_PASS tests fail at base: {_short(broken)}")
    if not task.tests.fail_to_pass:
        res.problems.append("no FAIL_TO_PASS tests")
    res.ok = not res.problems
    return res


def validate_tasks(tasks: list[Task], workers: int = 2, grader: Grader | None = None) -> list[ValidationResult]:
    grader = grader or Grader()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(lambda t: validate_task(t, grader), tasks))


def _short(items: dict[str, str] | list[str]) -> str:
    parts = [f"{k}={v}" for k, v in items.items()] if isinstance(items, dict) else [str(i) for i in items]
    text = ", ".join(parts)
    return text if len(text) < 400 else text[:400] + " ..."
