"""Reading an untrusted patch: its file sections and the repository paths each one touches.

A patch from the agent (or from anyone's predictions file) is data, not a well-formed ``git diff``:
its headers may carry any prefixes (``diff.noprefix``, ``diff.mnemonicPrefix``), C-quoted names,
renames and copies, absolute paths, ``..`` or ``.git`` components. Paths are read the way the
appliers read them (``git apply`` and ``patch -p1`` strip one leading component), from every header
line that names a file, so a section cannot hide what it writes behind an unusual prefix.

The grader does not rely on this for safety: after applying, it restores every protected path from
the base commit whatever the patch said (``protect.py``). What this gives is an early, reportable
account of what a patch tried to touch (``dropped_paths``, ``flags``).
"""

from __future__ import annotations

import re

_HEADER_PATH_LINES = ("--- ", "+++ ", "rename from ", "rename to ", "copy from ", "copy to ")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", '"': '"', "\\": "\\"}


def split_patch(patch: str) -> list[str]:
    """A multi-file patch -> one section per file (``diff --git`` headers, else ``--- `` pairs).
    Text before the first header (a commit message) is kept as its own section."""
    lines = patch.splitlines(keepends=True)
    starts = [i for i, l in enumerate(lines) if l.startswith("diff --git ")]
    if not starts:
        starts = [i for i, l in enumerate(lines)
                  if l.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")]
    if not starts:
        return [patch] if patch.strip() else []
    sections = []
    if starts[0] > 0 and "".join(lines[:starts[0]]).strip():
        sections.append("".join(lines[:starts[0]]))
    for a, b in zip(starts, starts[1:] + [len(lines)]):
        sections.append("".join(lines[a:b]))
    return sections


def unquote(token: str) -> str:
    """A git C-quoted name (``"a/x\\tb"``) -> its text; an unquoted name is returned as is."""
    if len(token) < 2 or not (token.startswith('"') and token.endswith('"')):
        return token
    body, out, i = token[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n in "01234567" and i + 3 < len(body) + 1 and re.fullmatch(r"[0-7]{3}", body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out += _ESCAPES.get(n, n).encode()
            i += 2
            continue
        out += c.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _git_header_names(rest: str) -> list[str]:
    """The two names of ``diff --git <a> <b>``; quoted names may hold spaces, and unquoted ones are
    split where the second half repeats the first (``a/x y b/x y``)."""
    rest = rest.rstrip("\n")
    names: list[str] = []
    while rest:
        if rest.startswith('"'):
            m = re.match(r'"(?:[^"\\]|\\.)*"', rest)
            if not m:
                names.append(rest)
                break
            names.append(unquote(m.group(0)))
            rest = rest[m.end():].lstrip(" ")
        else:
            if '"' in rest:
                head, _, tail = rest.partition(' "')
                names.append(head)
                rest = '"' + tail
                continue
            words = rest.split(" ")
            half = len(words) // 2
            if len(words) % 2 == 0 and strip_one(" ".join(words[:half])) == strip_one(" ".join(words[half:])):
                names += [" ".join(words[:half]), " ".join(words[half:])]
            else:
                names += words[:1] + ([" ".join(words[1:])] if len(words) > 1 else [])
            break
    return names


def strip_one(name: str) -> str:
    """``-p1``: drop the first path component (any prefix, not only ``a/`` and ``b/``)."""
    return name.split("/", 1)[1] if "/" in name else name


def section_paths(section: str) -> list[str]:
    """Every path a file section would write, as the appliers resolve it (``/dev/null`` left out)."""
    out: dict[str, None] = {}
    for line in section.splitlines():
        if line.startswith("diff --git "):
            for name in _git_header_names(line[len("diff --git "):]):
                out.setdefault(strip_one(name), None)
        elif line.startswith(_HEADER_PATH_LINES):
            key = next(k for k in _HEADER_PATH_LINES if line.startswith(k))
            raw = line[len(key):].rstrip("\n")
            name = unquote(raw) if raw.startswith('"') else raw.split("\t")[0].rstrip()
            if name == "/dev/null":
                continue
            # rename/copy lines carry no prefix; ---/+++ lines carry one
            out.setdefault(strip_one(name) if key in ("--- ", "+++ ") else name, None)
        elif line.startswith("@@") or line.startswith("GIT binary patch"):
            break  # the header is over; hunk lines that look like headers are content
    return [p for p in out if p]


def unsafe_path(path: str) -> str | None:
    """Why a path must never be written by a patch (absolute, ``..``, ``.git``, control bytes),
    else None."""
    parts = path.split("/")
    if path.startswith("/"):
        return "absolute path"
    if ".." in parts:
        return "'..' component"
    if any(p.lower() == ".git" or p.lower().startswith(".git/") for p in parts):
        return "inside .git"
    if any(ord(c) < 32 for c in path):
        return "control character in the name"
    return None
