"""Turn a unified diff into the edits an agent would make with str_replace-style tools.

Each hunk becomes one ``old -> new`` replacement. When the hunk's text is not unique in the file
(as it stands after the earlier hunks), lines around it are added until it is, so every edit
matches exactly once, as ``edit_file`` requires. New files become one ``create``; deleted files
one ``delete``. Binary hunks raise :class:`PatchEditError` (apply those with git instead).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchEditError(ValueError):
    """The patch cannot be expressed as text replacements."""


@dataclass(frozen=True)
class Edit:
    kind: str  # "replace", "create" or "delete"
    path: str
    old: str = ""
    new: str = ""


def patch_to_edits(patch: str, read_base: Callable[[str], str]) -> list[Edit]:
    edits: list[Edit] = []
    for header, body in _files(patch):
        if "GIT binary patch" in body or "Binary files" in body:
            raise PatchEditError("binary hunks cannot be expressed as text edits")
        old_path = _path(header, "--- ", "a/")
        new_path = _path(header, "+++ ", "b/")
        if new_path is None and old_path is not None:
            edits.append(Edit("delete", old_path))
            continue
        if new_path is None:
            continue  # a mode-only change
        hunks = _hunks(body)
        if old_path is None:
            edits.append(Edit("create", new_path, new="".join(new for _, _, new in hunks)))
            continue
        if old_path != new_path:
            raise PatchEditError(f"renames ({old_path} -> {new_path}) are not text edits")
        text = read_base(old_path)
        for start, old, new in hunks:
            edit_old, edit_new = _unique(text, old, new, start)
            pos = text.index(edit_old)
            text = text[:pos] + edit_new + text[pos + len(edit_old):]
            edits.append(Edit("replace", new_path, edit_old, edit_new))
    return edits


def _files(patch: str) -> list[tuple[str, str]]:
    parts = re.split(r"^(?=diff --git )", patch, flags=re.M)
    out = []
    for part in parts:
        if not part.startswith("diff --git "):
            continue
        idx = part.find("\n@@")
        out.append((part if idx < 0 else part[:idx + 1], "" if idx < 0 else part[idx + 1:]))
    return out


def _path(header: str, marker: str, prefix: str) -> str | None:
    for line in header.splitlines():
        if line.startswith(marker):
            p = line[len(marker):].split("\t")[0].strip()
            if p == "/dev/null":
                return None
            return p[len(prefix):] if p.startswith(prefix) else p
    if "new file mode" in header and marker == "--- ":
        return None
    if "deleted file mode" in header and marker == "+++ ":
        return None
    m = re.match(r"diff --git a/(\S+) b/(\S+)", header)
    return (m.group(1) if marker == "--- " else m.group(2)) if m else None


def _hunks(body: str) -> list[tuple[int, str, str]]:
    """(old start line, old text, new text) per hunk."""
    out: list[tuple[int, str, str]] = []
    lines = body.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        m = _HUNK.match(lines[i])
        i += 1
        if not m:
            continue
        old: list[str] = []
        new: list[str] = []
        prev = ""
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            i += 1
            if line.startswith("\\"):  # "\ No newline at end of file" applies to the previous line
                sides = {"-": [old], "+": [new], " ": [old, new]}.get(prev, [])
                for side in sides:
                    if side and side[-1].endswith("\n"):
                        side[-1] = side[-1][:-1]
                continue
            prev = line[:1]
            if prev in (" ", "-"):
                old.append(line[1:])
            if prev in (" ", "+"):
                new.append(line[1:])
        out.append((int(m.group(1)), "".join(old), "".join(new)))
    return out


def _unique(text: str, old: str, new: str, start_line: int) -> tuple[str, str]:
    """Grow ``old``/``new`` with the file's surrounding lines until ``old`` occurs exactly once."""
    if old and text.count(old) == 1:
        return old, new
    lines = text.splitlines(keepends=True)
    # Where the hunk should be: the occurrence closest to its header's line number.
    starts = [sum(len(l) for l in lines[:k]) for k in range(len(lines) + 1)]
    candidates = [k for k in range(len(lines) + 1) if text.startswith(old, starts[k])] if old else \
        [min(max(start_line, 0), len(lines))]
    if not candidates:
        raise PatchEditError(f"a hunk's text (line {start_line}) is not in the file")
    k = min(candidates, key=lambda c: abs(c + 1 - start_line))
    n_old = old.count("\n") + (0 if old.endswith("\n") or not old else 1)
    lo, hi = k, k + n_old
    while True:
        if lo > 0:
            lo -= 1
        if hi < len(lines):
            hi += 1
        before = "".join(lines[lo:k])
        after = "".join(lines[k + n_old:hi])
        cand_old = before + old + after
        if text.count(cand_old) == 1:
            return cand_old, before + new + after
        if lo == 0 and hi == len(lines):
            raise PatchEditError("could not make a hunk unique")
