"""Grade anyone's predictions: a SWE-bench ``predictions.jsonl`` (from any agent) against a suite or
benchmark, as swebench's ``run_evaluation`` does, for users without registry access.

Writes, under ``out``: ``logs/<instance_id>/`` (``patch.diff``, ``report.json`` in swebench's
per-instance layout plus our verdict fields, ``test_output.txt``: the tail of the test log) and
``report.json`` in swebench's run-report layout (resolved / unresolved / empty-patch / error ids).
A rerun skips the instances whose ``logs/<id>/report.json`` exists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ha_envs.grading.grader import Grader
from ha_envs.grading.report import GradeReport, GradingError
from ha_envs.sandbox import live
from ha_envs.task import Task

from .interrupt import run_pool


class PredictionsError(ValueError):
    """The predictions file cannot be read; the message names the line and the problem."""


def load_predictions(path: Path | str) -> dict[str, dict[str, Any]]:
    """instance id -> prediction (``instance_id``, ``model_name_or_path``, ``model_patch``), from a
    JSONL file or a JSON list; every bad line is reported at once."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise PredictionsError(f"cannot read predictions {path}: {exc}") from None
    rows: list[tuple[int, Any]] = []
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            rows = list(enumerate(json.loads(text), start=1))
        except json.JSONDecodeError as exc:
            raise PredictionsError(f"{path}: not valid JSON: {exc}") from None
    else:
        problems = []
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append((i, json.loads(line)))
            except json.JSONDecodeError as exc:
                problems.append(f"line {i}: not JSON ({exc.msg})")
        if problems:
            raise PredictionsError(f"{path}: " + "; ".join(problems[:10]))
    out: dict[str, dict[str, Any]] = {}
    problems = []
    for i, row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("instance_id"), str):
            problems.append(f"entry {i}: no instance_id")
            continue
        patch = row.get("model_patch")
        if patch is not None and not isinstance(patch, str):
            problems.append(f"entry {i} ({row['instance_id']}): model_patch is not text")
            continue
        if row["instance_id"] in out:
            problems.append(f"entry {i}: {row['instance_id']} predicted twice")
            continue
        out[row["instance_id"]] = row
    if problems:
        raise PredictionsError(f"{path}: " + "; ".join(problems[:10]))
    return out


def instance_report(task: Task, pred: dict[str, Any], grade: GradeReport | None, error: str = "") -> dict[str, Any]:
    """swebench's per-instance report (``tests_status`` split by success and failure, as the rule
    that decided split it: the same verdict as the env's reward), plus our status, flags, the rule
    and its swebench version (``verdict_rules``), where the OS-level trace was taken (``trace_from``),
    the Python watch's record and where it came from (``watch``, ``watch_from``) and the error."""
    patch = pred.get("model_patch")
    empty = {"success": [], "failure": []}
    split = grade.tests_status if grade else {}
    body: dict[str, Any] = {
        "patch_is_None": patch is None, "patch_exists": bool(patch and patch.strip()),
        "patch_successfully_applied": bool(grade and grade.status not in ("patch_failed", "patch_too_large",
                                                                           "patch_refused")),
        "resolved": bool(grade and grade.resolved),
        "tests_status": {k: split.get(k, empty) for k in ("FAIL_TO_PASS", "PASS_TO_PASS")},
        "status": grade.status if grade else "error", "flags": grade.flags if grade else [],
        "grader_version": grade.grader_version if grade else "",
        "verdict_rules": grade.verdict_rules if grade else "", "overruled": grade.overruled if grade else "",
        "network_excluded": grade.network_excluded if grade else [],
        "trace_from": grade.trace_from if grade else "",  # where a Go/Rust/JS run's OS trace was taken (ostrace.py)
        "watch_from": grade.watch_from if grade else "",  # where the Python watch's record came from (watchsock.py)
        "watch": grade.watch if grade else None,  # what the watch saw the code under test do, by kind
        "error": error or (grade.error if grade else ""),  # a grade's own error: why a patch did not apply, ...
    }
    return {task.instance_id: body}


@dataclass
class GradeRun:
    resolved: list[str]
    unresolved: list[str]
    empty: list[str]
    errors: list[str]
    flagged: list[str]
    skipped: list[str]

    def markdown(self) -> str:
        total = len(self.resolved) + len(self.unresolved) + len(self.empty) + len(self.errors)
        return ("| instances | resolved | unresolved | empty patch | errors | flagged |\n|---|---|---|---|---|---|\n"
                f"| {total} | {len(self.resolved)} ({100 * len(self.resolved) / max(1, total):.1f}%) | "
                f"{len(self.unresolved)} | {len(self.empty)} | {len(self.errors)} | {len(self.flagged)} |")


def grade_predictions(tasks: list[Task], predictions: dict[str, dict[str, Any]], out: Path | str,
                      grader: Grader | None = None, workers: int = 1,
                      progress: Callable[[str, dict[str, Any]], None] | None = None) -> GradeRun:
    """Grade the predictions of ``tasks`` (those without one are not graded); see the module doc."""
    out = Path(out)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    grader = grader or Grader()
    chosen = [t for t in tasks if t.instance_id in predictions]
    skipped = [t.instance_id for t in chosen if (out / "logs" / _safe(t.instance_id) / "report.json").is_file()]
    todo = [t for t in chosen if t.instance_id not in skipped]

    def one(task: Task) -> None:
        pred = predictions[task.instance_id]
        d = out / "logs" / _safe(task.instance_id)
        d.mkdir(parents=True, exist_ok=True)
        patch = pred.get("model_patch") or ""
        (d / "patch.diff").write_text(patch, encoding="utf-8", errors="surrogateescape")
        grade, error = None, ""
        try:
            grade = grader.grade(task, patch)
        except GradingError as exc:
            error = str(exc)
        except Exception as exc:  # noqa: BLE001 - one broken instance must not stop the others
            error = f"{type(exc).__name__}: {exc}"
        if live.stopping():  # its sandbox was closed under it: no verdict; a rerun grades it
            return
        (d / "test_output.txt").write_text((grade.log_tail or grade.error) if grade else error)
        rep = instance_report(task, pred, grade, error)
        tmp = d / "report.json.tmp"
        tmp.write_text(json.dumps(rep, indent=2))
        tmp.replace(d / "report.json")  # written last: its presence means "done" on a rerun
        if progress:
            progress(task.instance_id, rep[task.instance_id])

    run_pool(one, todo, workers, lambda _: None)  # Ctrl-C: finished instances' reports stay, a rerun skips them
    run = GradeRun([], [], [], [], [], skipped)
    for task in chosen:
        body = json.loads((out / "logs" / _safe(task.instance_id) / "report.json").read_text())[task.instance_id]
        if body["status"] == "error":
            run.errors.append(task.instance_id)
        elif not body["patch_exists"]:
            run.empty.append(task.instance_id)
        elif body["resolved"]:
            run.resolved.append(task.instance_id)
        else:
            run.unresolved.append(task.instance_id)
        if body["flags"]:
            run.flagged.append(task.instance_id)
    ids = [t.instance_id for t in chosen]
    report = {
        "total_instances": len(tasks), "submitted_instances": len(ids), "completed_instances": len(ids) - len(run.errors),
        "resolved_instances": len(run.resolved), "unresolved_instances": len(run.unresolved),
        "empty_patch_instances": len(run.empty), "error_instances": len(run.errors),
        "completed_ids": sorted(set(ids) - set(run.errors)), "incomplete_ids": sorted(set(t.instance_id for t in tasks) - set(ids)),
        "empty_patch_ids": sorted(run.empty), "submitted_ids": sorted(ids), "resolved_ids": sorted(run.resolved),
        "unresolved_ids": sorted(run.unresolved), "error_ids": sorted(run.errors), "flagged_ids": sorted(run.flagged),
        "unknown_prediction_ids": sorted(set(predictions) - {t.instance_id for t in tasks}), "schema_version": 2,
    }
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    return run


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:200]
