"""The skill teacher: two trajectories of one task (a success and a failure when both exist) -> a
Markdown report whose last section is a mechanism-level skill of at most 120 words.

A screen rejects a skill that leaks the answer: repository paths or file names, identifiers of the
repository or the gold patch, diff or code text. A rejected skill is asked for again with the
reasons (at most ``retries`` times, the paper's 3); then the task goes without. Skills are shown to
the policy during training as a non-trainable ``source="skill"`` message (``RepairEnv.reset``
option ``skill``) and never at evaluation.

For the paper's ablations two contrasting forms exist: ``near_answer_hint`` (names where the fix is:
it inflates training success and hurts after removal) and ``skill_library`` (a fixed list of generic
skills, picked by keyword).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ha_envs.grading.patchfile import section_paths, split_patch
from ha_envs.task import Task

from .summary import digest

MAX_WORDS = 120
PROMPT = Path(__file__).parent / "prompts" / "skill_teacher.md"
_FILE = re.compile(r"\b[\w-]+\.(py|pyi|js|mjs|cjs|ts|tsx|jsx|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|toml|cfg|ini|"
                   r"json|ya?ml|md|rst|txt|sh|lock)\b", re.I)
_PATH = re.compile(r"(?<![\w.])(?:\.{0,2}/)?[\w.-]+/[\w.-]+(?:/[\w.-]+)*")
_CODE = re.compile(r"```|^\s*[-+]{1,3}\s|^@@|\bdef \w|\bclass \w|\breturn\b.*[;()]|[{};]\s*$|\w+\(\)|=>|::", re.M)
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
_COMMON = set("""a an the and or not of to in on for with by as at is are be was were if then else when while
this that these those it its into from out over under than because so but only each every any all no none
value values state states call calls function functions method methods class classes object objects type types
error errors test tests case cases input inputs output outputs list lists string strings number numbers file
files path paths key keys data time times code check checks return returns result results""".split())


@dataclass(frozen=True)
class Screen:
    ok: bool
    reasons: tuple[str, ...] = ()


def answer_identifiers(task: Task) -> set[str]:
    """Names a skill must not contain: identifiers the gold patch adds or removes, and the file
    names and path parts it touches (words of plain English excluded)."""
    names: set[str] = set()
    for section in split_patch(task.gold_patch):
        for path in section_paths(section):
            for part in path.split("/"):
                for name in (part, part.rsplit(".", 1)[0]):
                    if not (name.isalpha() and name.islower() and len(name) < 8):  # "store" is English
                        names.add(name)
        for line in section.splitlines():
            if line.startswith(("+", "-")) and not line.startswith(("+++", "---")):
                for ident in _IDENT.findall(line):
                    if len(ident) >= 4 and ident.lower() not in _COMMON and (
                            "_" in ident or any(c.isupper() for c in ident[1:]) or not ident.isalpha()):
                        names.add(ident)
    return {n for n in names if len(n) >= 3 and n.lower() not in _COMMON}


def screen(skill: str, task: Task) -> Screen:
    """Why ``skill`` may not be used (empty: it may)."""
    reasons: list[str] = []
    words = skill.split()
    if not words:
        reasons.append("the skill is empty")
    if len(words) > MAX_WORDS:
        reasons.append(f"{len(words)} words; at most {MAX_WORDS}")
    if _FILE.search(skill):
        reasons.append(f"names a file ({_FILE.search(skill).group(0)})")
    path = _PATH.search(skill)
    if path and not re.fullmatch(r"\w+/\w+", path.group(0)) or (path and "." in path.group(0)):
        reasons.append(f"names a path ({path.group(0)})")
    if _CODE.search(skill):
        reasons.append("contains code or diff text")
    leaked = sorted(i for i in answer_identifiers(task) if re.search(rf"\b{re.escape(i)}\b", skill))
    if leaked:
        reasons.append("names identifiers of the repository or the fix: " + ", ".join(leaked[:8]))
    return Screen(not reasons, tuple(reasons))


@dataclass
class SkillReport:
    instance_id: str
    report: str
    """The teacher's Markdown (contrast, tool use, skill) of the accepted attempt, or the last one."""
    skill: str | None
    """None when every attempt was screened out."""
    attempts: int
    rejected: list[list[str]] = field(default_factory=list)
    """The screen's reasons for each rejected attempt."""


def _section(text: str, name: str) -> str:
    m = re.search(rf"^##\s*{name}\s*$(.*?)(?=^##\s|\Z)", text, re.M | re.S | re.I)
    return m.group(1).strip() if m else ""


def pick_pair(records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A success and a failure of one task when both exist; else the first two attempts."""
    wins = [r for r in records if r.get("resolved")]
    losses = [r for r in records if not r.get("resolved") and not r.get("mask_sample")]
    if wins and losses:
        return wins[0], losses[0]
    return records[0], (records[1] if len(records) > 1 else None)


@dataclass
class SkillTeacher:
    client: Any
    retries: int = 3

    def teach(self, task: Task, records: list[dict[str, Any]]) -> SkillReport:
        a, b = pick_pair(records)
        label = lambda r: "success" if r.get("resolved") else "failure"  # noqa: E731
        pairing = (f"one {label(a)} and one {label(b)}" if b is not None else f"a single {label(a)}")
        feedback = ""
        rejected: list[list[str]] = []
        text = ""
        for attempt in range(1, self.retries + 1):
            prompt = PROMPT.read_text().format(
                pairing=pairing, feedback=feedback, issue=task.problem_statement.strip()[:6000],
                label_a=label(a), attempt_a=digest(a, 4000),
                label_b=label(b) if b is not None else "none", attempt_b=digest(b, 4000) if b is not None else "(none)")
            text = self.client.complete([{"role": "user", "content": prompt}], []).text
            skill = _section(text, "Skill")
            verdict = screen(skill, task)
            if verdict.ok:
                return SkillReport(task.instance_id, text, skill, attempt, rejected)
            rejected.append(list(verdict.reasons))
            feedback = ("\nYOUR PREVIOUS SKILL WAS REJECTED: " + "; ".join(verdict.reasons)
                        + ". Write it again without these.\n")
        return SkillReport(task.instance_id, text, None, self.retries, rejected)


def near_answer_hint(task: Task) -> str:
    """The ablation's leaking form: where the fix goes (files and the names the gold patch touches)."""
    files = sorted({p for s in split_patch(task.gold_patch) for p in section_paths(s)})
    names = sorted(answer_identifiers(task) - {p for f in files for p in f.split("/")})[:8]
    return f"The fix is in {', '.join(files)}" + (f"; look at {', '.join(names)}." if names else ".")


SKILL_LIBRARY: dict[str, str] = {
    "boundary": "When a comparison decides membership at an edge (expiry, ranges, limits), write down the "
                "invariant at the boundary value itself before editing, and check both sides of it.",
    "state": "When a value is recomputed or refreshed, find every transition that writes it and make sure "
             "reads do not count as writes unless the contract says so.",
    "parse": "When input is parsed, list the grammar's cases, including empty and repeated parts, and make the "
             "parser reject or accept each deliberately.",
    "default": "Reproduce the reported behaviour with the smallest input first, fix the cause rather than the "
               "symptom, then run the closest existing tests.",
}


def skill_library(task: Task) -> str:
    """The ablation's library form: one generic skill picked by keywords of the issue."""
    text = task.problem_statement.lower()
    for key, words in (("boundary", ("expire", "deadline", "range", "limit", "bound", "edge")),
                       ("state", ("cache", "refresh", "update", "stale", "reset")),
                       ("parse", ("parse", "syntax", "format", "token", "quote"))):
        if any(w in text for w in words):
            return SKILL_LIBRARY[key]
    return SKILL_LIBRARY["default"]
