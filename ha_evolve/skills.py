"""The skill teacher: two trajectories of one task (a success and a failure when both exist) -> a
Markdown report whose last section is a mechanism-level skill of at most 120 words.

A screen rejects a skill that leaks the answer: repository paths or file names, identifiers of the
repository (names its source files define, its file and directory names) or of the gold patch,
the fix's identifiers paraphrased as words (``_restart_ttl`` as "restart the TTL", ``LRUStore``
as "LRU store"), diff or code text. Plain English that happens to hold a keyword ("verify each
class separately") passes. A second, independent check reads for meaning (``points_at_the_fix``):
a near-answer hint in plain words says *where* the fix goes and *how much* changes ("round half-up
in the money helper; only that line changes") even when it names nothing, so a skill that names a
place of the fix in words (a word of a touched file or of the function a hunk changes, beside a
word for a place in code: helper, module, function, ...), bounds the edit ("only that line", "a
one-line change", "the fix is in"), or says part of a changed name ("half up" for
``ROUND_HALF_UP``) is rejected too. A rejected skill is asked for again with the
reasons (at most ``retries`` times, the paper's 3); then the task goes without. Skills are shown to
the policy during training as a non-trainable ``source="skill"`` message (``RepairEnv.reset``
option ``skill``) and never at evaluation.

For the paper's ablations two contrasting forms exist: ``near_answer_hint`` (names where the fix is:
it inflates training success and hurts after removal) and ``skill_library`` (a fixed list of generic
skills, picked by keyword).
"""

from __future__ import annotations

import functools
import os
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
_CODE = re.compile(r"```|^\s*[-+]{1,3}\s|^@@|\bdef\s+\w+\s*\(|\bclass\s+\w+\s*[:({]|\breturn\b.*[;()]|[{};]\s*$|"
                   r"\w+\(\)|=>|::", re.M)
_DEFINES = re.compile(r"^\s*(?:export\s+)?(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?"
                      r"(?:class|def|function|func|fn|struct|enum|trait|interface|type|module)\s+([A-Za-z_]\w*)", re.M)
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SOURCE_SUFFIXES = {".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt", ".rb",
                    ".php", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift"}
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
_COMMON = set("""a an the and or not of to in on for with by as at is are be was were if then else when while
this that these those it its into from out over under than because so but only each every any all no none
value values state states call calls function functions method methods class classes object objects type types
error errors test tests case cases input inputs output outputs list lists string strings number numbers file
files path paths key keys data time times code check checks return returns result results""".split())


def _code_shaped(name: str) -> bool:
    """A name no English text would write: with ``_``, a digit, or a capital after the first letter."""
    return "_" in name or any(c.isdigit() for c in name) or any(c.isupper() for c in name[1:])


def _english(name: str) -> bool:
    return name.isalpha() and name.islower() and len(name) < 8  # "store" is English, "ttlcache" is not


def split_words(identifier: str) -> list[str]:
    """``_restart_ttl`` -> [restart, ttl]; ``LRUStore`` -> [lru, store]; ``parseHTTPHeader2`` ->
    [parse, http, header, 2]."""
    return [w.lower() for w in _WORDS.findall(identifier)]


@dataclass(frozen=True)
class RepoNames:
    """What the task's repository names: ``code`` (code-shaped identifiers its sources define),
    ``classes`` (capitalised plain-word definitions such as ``Clock``, a leak when written as a name
    mid-sentence), ``files`` (file stems and directory names that are not English words)."""

    code: frozenset[str] = frozenset()
    classes: frozenset[str] = frozenset()
    files: frozenset[str] = frozenset()


def repository_names(task: Task, max_files: int = 5000, max_bytes: int = 512_000) -> RepoNames:
    """The names of the task's repository at its base: its source directory, else its snapshot (the
    rollouts built it; a task whose snapshot cannot be had screens on the gold patch alone)."""
    root: Path | None = Path(task.source_dir) if task.source_dir is not None else None
    if root is None:
        try:
            from ha_envs.sandbox import prepare_snapshot

            root = prepare_snapshot(task).path
        except Exception:  # noqa: BLE001 - no snapshot (no network, no cache): the patch's names still screen
            return RepoNames()
    return _scan(str(root), max_files, max_bytes)


@functools.lru_cache(maxsize=64)
def _scan(root: str, max_files: int, max_bytes: int) -> RepoNames:
    code: set[str] = set()
    classes: set[str] = set()
    files: set[str] = set()
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "__pycache__"))
        for d in dirnames:
            if len(d) >= 3 and not _english(d):
                files.add(d)
        for name in sorted(filenames):
            seen += 1
            if seen > max_files:
                return RepoNames(frozenset(code), frozenset(classes), frozenset(files))
            stem, suffix = os.path.splitext(name)
            if len(stem) >= 3 and not _english(stem) and not stem.startswith("."):
                files.add(stem)
            if suffix not in _SOURCE_SUFFIXES:
                continue
            path = os.path.join(dirpath, name)
            try:
                if os.path.getsize(path) > max_bytes:
                    continue
                text = Path(path).read_text(errors="replace")
            except OSError:
                continue
            for ident in _DEFINES.findall(text):
                if len(ident) < 3 or ident.lower() in _COMMON:
                    continue
                if _code_shaped(ident.lstrip("_")) or ident.startswith("_"):
                    code.add(ident)
                elif ident[0].isupper():
                    classes.add(ident)
    return RepoNames(frozenset(code), frozenset(classes), frozenset(files))


def _paraphrase(words: list[str]) -> re.Pattern[str]:
    """The words in order, each perhaps inflected, with at most two other words between them."""
    parts = [re.escape(w) + r"(?:s|es|ed|d|ing)?" for w in words]
    return re.compile(r"\b" + r"\W+(?:\w+\W+){0,2}?".join(parts) + r"\b", re.I)


def _mid_sentence(skill: str, name: str) -> str | None:
    for m in re.finditer(rf"\b{re.escape(name)}\b", skill):
        before = skill[: m.start()].rstrip()
        if before and before[-1] not in ".!?:\n":
            return name
    return None


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


_SCOPE = re.compile(r"\b(?:only|just)\s+(?:that|this|the|one)\s+(?:\w+\s+)?(?:line|call|constant|expression)s?\b|"
                    r"\b(?:one|single|two)[- ]line(?:r|s)?\b|\b(?:that|this)\s+(?:one\s+)?line\s+(?:changes|needs|is)\b|"
                    r"\bthe\s+(?:fix|bug|change|error|fault|mistake)\s+(?:is|lies|goes|sits|belongs)\s+(?:in|at|on)\b|"
                    r"\b(?:nothing|no\s+other\s+\w+)\s+else\s+(?:changes|needs)\b", re.I)
_PLACE = (r"(?:helpers?|module|modules|file|files|function|functions|method|methods|class|routine|utility|"
          r"utilities|utils?|line|call|constant|import|package)")
_LAYOUT = {"src", "lib", "pkg", "app", "set", "base", "main", "util", "utils", "core", "internal", "cmd", "test",
           "tests", "common"}
"""Directory and name parts too generic to place a fix."""
_GLUE = r"(?:of|and|or|to|in|on|at|by|the|a|an|for|with|from|into|than|as|is|are)"
_HUNK_DEF = re.compile(r"^@@[^@]*@@.*?\b(?:def|class|function|func|fn)\s+([A-Za-z_]\w*)", re.M)


def fix_places(task: Task) -> set[str]:
    """Plain words for where the gold patch goes: the words of its files' and directories' names
    and of the functions its hunks change (``invoicing/money.py``, ``def round_money`` -> invoicing,
    money, round), less common English."""
    words: set[str] = set()
    for section in split_patch(task.gold_patch):
        for path in section_paths(section):
            for part in path.split("/"):
                words.update(split_words(part.rsplit(".", 1)[0]))
        for name in _HUNK_DEF.findall(section):
            words.update(split_words(name))
    return {w for w in words if len(w) >= 3 and not w.isdigit() and w not in _COMMON and w not in _LAYOUT}


def points_at_the_fix(skill: str, task: Task) -> list[str]:
    """Why ``skill`` reads as a near-answer hint though it names nothing (see the module's text)."""
    reasons = []
    for word in sorted(fix_places(task)):
        m = re.search(rf"\b{re.escape(word)}(?:s|es|ed|d|ing)?\b(?:\W+(?!{_GLUE}\b)\w+)?\W+{_PLACE}\b", skill, re.I)
        if m:
            reasons.append(f"points at where the fix goes ({m.group(0)!r})")
            break
    scope = _SCOPE.search(skill)
    if scope:
        reasons.append(f"bounds the edit as an answer would ({scope.group(0)!r})")
    for ident in sorted(answer_identifiers(task)):
        words = [w for w in split_words(ident.rsplit(".", 1)[0]) if len(w) >= 2]
        pairs = [(a, b) for a, b in zip(words, words[1:]) if not (a in _COMMON and b in _COMMON)] if len(words) >= 3 else []
        hit = next((m for a, b in pairs if (m := re.search(rf"\b{a}\W+{b}\b", skill, re.I))), None)
        if hit:
            reasons.append(f"says part of a name the fix adds ({hit.group(0)!r} of {ident})")
            break
    return reasons


def screen(skill: str, task: Task, repo: RepoNames | None = None) -> Screen:
    """Why ``skill`` may not be used (empty: it may). ``repo``: the repository's names
    (:func:`repository_names`, computed when not given)."""
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
    repo = repo if repo is not None else repository_names(task)
    fix = answer_identifiers(task)
    exact = fix | repo.code | repo.files
    leaked = sorted(i for i in exact if re.search(rf"\b{re.escape(i)}\b", skill, 0 if _code_shaped(i) else re.I))
    leaked += sorted(n for n in repo.classes if _mid_sentence(skill, n))
    if leaked:
        reasons.append("names identifiers of the repository or the fix: " + ", ".join(leaked[:8]))
    said = []
    for ident in sorted(fix):
        words = split_words(ident.rsplit(".", 1)[0])
        if len(words) >= 2 and all(len(w) >= 2 for w in words) and not all(w in _COMMON for w in words):
            m = _paraphrase(words).search(skill)
            if m and ident not in leaked:
                said.append(f"{m.group(0)!r} for {ident}")
    if said:
        reasons.append("paraphrases identifiers of the fix: " + ", ".join(said[:4]))
    reasons += points_at_the_fix(skill, task)
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
        repo = repository_names(task)
        for attempt in range(1, self.retries + 1):
            prompt = PROMPT.read_text().format(
                pairing=pairing, feedback=feedback, issue=task.problem_statement.strip()[:6000],
                label_a=label(a), attempt_a=digest(a, 4000),
                label_b=label(b) if b is not None else "none", attempt_b=digest(b, 4000) if b is not None else "(none)")
            text = self.client.complete([{"role": "user", "content": prompt}], []).text
            skill = _section(text, "Skill")
            verdict = screen(skill, task, repo)
            if verdict.ok:
                return SkillReport(task.instance_id, text, skill, attempt, rejected)
            rejected.append(list(verdict.reasons))
            feedback = ("\nYOUR PREVIOUS SKILL WAS REJECTED: " + "; ".join(verdict.reasons)
                        + ". Write it again without these.\n")
        return SkillReport(task.instance_id, text, None, self.retries, rejected)


def teach_skills(teacher: SkillTeacher, tasks: list[Task], model: Any, config: Any, group_size: int,
                 out: str | Path, workers: int = 2, collector: Any = None) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """One epoch's skills, as the method makes them: ``group_size`` preparation rollouts per task
    of ``model`` under ``config`` (an ``EpisodeConfig``: the current harness, no skill), then the
    teacher on each task's pair. Returns (instance id -> screened skill, the preparation records);
    every report, kept or screened out, goes to ``out/skills.jsonl``. ``collector``: what runs the
    preparation rollouts (``collect``'s signature; default ``collect``)."""
    import json
    from collections import defaultdict

    from ha_agents.runs.rollouts import collect

    out = Path(out)
    records = (collector or collect)(tasks, group_size, model, config, out=out / "preparation", workers=workers,
                                     progress_bar=False)
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_task[r["instance_id"]].append(r)
    skills: dict[str, str] = {}
    with (out / "skills.jsonl").open("a") as fh:
        for t in tasks:
            if not by_task.get(t.instance_id):
                continue
            try:
                rep = teacher.teach(t, by_task[t.instance_id])
            except Exception as exc:  # noqa: BLE001 - a teacher failure leaves the task without a skill
                rep = SkillReport(t.instance_id, "", None, 0, [[f"the teacher call failed: {exc}"]])
            if rep.skill:
                skills[t.instance_id] = rep.skill
            fh.write(json.dumps({"instance_id": rep.instance_id, "skill": rep.skill, "attempts": rep.attempts,
                                 "rejected": rep.rejected, "report": rep.report}) + "\n")
    return skills, records


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
