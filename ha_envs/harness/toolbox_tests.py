"""Test selection for the ``run_tests`` tool; runs inside the sandbox next to toolbox_server.py.

Given the change (or explicit paths), score the repository's test files the way the paper's H2
selector does (test file named after a changed module +3, a symbol of the change referenced +2,
same directory +1), keep the best, and build the command for the project's own runner: pytest,
unittest, Django's ``tests/runtests.py``, ``bin/test``, ``node --test`` / ``npm test``, ``go test``,
``cargo test``. Python 3.6 compatible, standard library only.
"""

import json
import os
import re

PY_TEST = re.compile(r"(^test_.*\.py$)|(.*_test\.py$)|(^tests\.py$)")
JS_TEST = re.compile(r".*\.(test|spec)\.(c|m)?(j|t)sx?$")
SRC_EXT = {".py": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".ts": "javascript",
           ".go": "go", ".rs": "rust"}
SYMBOL = re.compile(r"^[+-]?\s*(?:async\s+)?(?:def|class|function|func|fn|pub fn|pub\s+struct|struct|const|let|var)\s+"
                    r"(?:\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]*)", re.M)
HUNK_CTX = re.compile(r"^@@[^@]*@@\s*(?:.*?\b(?:def|class|function|func|fn)\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*))?", re.M)


def is_test_file(rel):
    name = os.path.basename(rel)
    parts = rel.split("/")
    if name.endswith(".py"):
        if name in ("conftest.py", "__init__.py", "runtests.py"):
            return False
        return bool(PY_TEST.match(name)) or any(p in ("tests", "test", "testing") for p in parts[:-1])
    if name.endswith("_test.go"):
        return True
    if name.endswith(".rs"):
        return parts[0] == "tests"
    if JS_TEST.match(name):
        return True
    if os.path.splitext(name)[1] in (".js", ".mjs", ".cjs", ".ts"):
        return any(p in ("test", "tests", "__tests__") for p in parts[:-1])
    return False


def language_of(rel):
    return SRC_EXT.get(os.path.splitext(rel)[1])


def stem(rel):
    name = os.path.splitext(os.path.basename(rel))[0]
    return "" if name in ("__init__", "index", "mod", "lib", "main") else name


def select(box, args):
    root = box.root
    explicit = args.get("paths") or []
    limit = int(args.get("max_files") or 5)
    if explicit:
        rels = [os.path.relpath(box.path(p), root) for p in explicit]
        missing = [r for r in rels if not os.path.exists(os.path.join(root, r))]
        if missing:
            raise box.error("no such test path: %s" % ", ".join(missing))
        lang = language_of(rels[0]) or detect_language(root)
        chosen = [(r, 0, ["given"]) for r in rels]
        changed = []
    else:
        diff = box.git_diff()
        changed = sorted(set(re.findall(r"^\+\+\+ b/(.+)$", diff, re.M)))
        sources = [c for c in changed if language_of(c) and not is_test_file(c)]
        if not changed:
            raise box.error("there are no changes yet, so no test is related to them; "
                            "pass paths=[...] to run specific tests.")
        lang = language_of(sources[0]) if sources else (language_of(changed[0]) or detect_language(root))
        src_diff = "".join(part for part in re.split(r"^(?=diff --git )", diff, flags=re.M)
                           if not any(part.startswith("diff --git a/%s " % t) for t in changed if is_test_file(t)))
        symbols = set(SYMBOL.findall(src_diff)) | set(s for s in HUNK_CTX.findall(src_diff) if s)
        symbols = set(s for s in symbols if len(s) > 2)
        chosen = score(box, root, sources, [c for c in changed if is_test_file(c)], symbols, lang)[:limit]
    command, framework = build_command(root, lang, chosen, changed)
    if not command:
        raise box.error("found no tests related to the change (changed: %s); pass paths=[...] or use run_check "
                        "with your own command." % (", ".join(changed) or "nothing"))
    return command, {"command": command, "framework": framework,
                     "selected": [{"path": p, "score": s, "why": w} for p, s, w in chosen]}


def score(box, root, sources, changed_tests, symbols, lang):
    stems = set(stem(s) for s in sources) - {""}
    dirs = set(os.path.dirname(s) for s in sources)
    rows = []
    for path in box.walk(root):
        rel = os.path.relpath(path, root)
        if not is_test_file(rel) or language_of(rel) != lang:
            continue
        pts, why = 0, []
        name = os.path.basename(rel).lower()
        if any(s and s.lower() in name for s in stems):
            pts += 3
            why.append("named after a changed module")
        if rel in changed_tests:
            pts += 3
            why.append("changed by you")
        try:
            with open(path, "rb") as f:
                text = f.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            text = ""
        refs = [s for s in sorted(symbols | stems) if re.search(r"\b%s\b" % re.escape(s), text)]
        if refs:
            pts += 2
            why.append("references " + ", ".join(refs[:4]))
        tdir = os.path.dirname(rel)
        if any(tdir == d or tdir.startswith(os.path.join(d, "test")) or
               tdir.startswith(os.path.join(os.path.dirname(d), "test")) for d in dirs):
            pts += 1
            why.append("next to the change")
        if pts:
            rows.append((rel, pts, why))
    rows.sort(key=lambda r: (-r[1], r[0]))
    return rows


def detect_language(root):
    for marker, lang in (("go.mod", "go"), ("Cargo.toml", "rust"), ("package.json", "javascript")):
        if os.path.exists(os.path.join(root, marker)):
            return lang
    return "python"


def quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def build_command(root, lang, chosen, changed):
    paths = [p for p, _, _ in chosen]
    if lang == "go":
        pkgs = sorted(set("./" + (os.path.dirname(p) or ".") for p in paths + [c for c in changed if c.endswith(".go")]))
        return "go test -count=1 " + " ".join(quote(p.rstrip("/")) for p in pkgs), "go test"
    if lang == "rust":
        extra = " ".join("--test " + quote(stem(p) or "lib") for p in paths if p.startswith("tests/"))
        only_integration = paths and all(p.startswith("tests/") for p in paths)
        return ("cargo test --offline %s" % extra if only_integration else "cargo test --offline").strip(), "cargo test"
    if lang == "javascript":
        pkg = {}
        try:
            with open(os.path.join(root, "package.json")) as f:
                pkg = json.load(f)
        except (OSError, ValueError):
            pass
        if not paths:
            return ("npm test --silent" if pkg.get("scripts", {}).get("test") else ""), "npm test"
        node_test = any(uses_node_test(os.path.join(root, p)) for p in paths)
        if node_test or not pkg.get("scripts", {}).get("test"):
            return "node --test " + " ".join(quote(p) for p in paths), "node --test"
        return "npm test --silent -- " + " ".join(quote(p) for p in paths), "npm test"
    if not paths:
        return "", ""
    if os.path.exists(os.path.join(root, "tests", "runtests.py")):
        labels = []
        for p in paths:
            if p.startswith("tests/"):
                labels.append(os.path.splitext(p[len("tests/"):])[0].replace("/", "."))
        if labels:
            return "python tests/runtests.py --verbosity 2 " + " ".join(quote(l) for l in sorted(set(labels))), "django runtests.py"
    if os.path.exists(os.path.join(root, "bin", "test")):
        return "python bin/test " + " ".join(quote(p) for p in paths), "bin/test"
    if uses_pytest(root, paths):
        return "python -m pytest -q -p no:cacheprovider " + " ".join(quote(p) for p in paths), "pytest"
    modules = [os.path.splitext(p)[0].replace("/", ".") for p in paths]
    return "python -m unittest -v " + " ".join(quote(m) for m in modules), "unittest"


def uses_node_test(path):
    try:
        with open(path) as f:
            return "node:test" in f.read(1 << 16)
    except OSError:
        return False


def uses_pytest(root, paths):
    for marker in ("pytest.ini", "conftest.py", "tox.ini", "setup.cfg", "pyproject.toml"):
        p = os.path.join(root, marker)
        if os.path.exists(p):
            if marker in ("pytest.ini", "conftest.py"):
                return True
            with open(p, "rb") as f:
                if b"pytest" in f.read():
                    return True
    for rel in paths:
        try:
            with open(os.path.join(root, rel), "rb") as f:
                text = f.read(1 << 16)
        except OSError:
            continue
        if b"import pytest" in text or b"unittest" not in text:
            return True
    return False
