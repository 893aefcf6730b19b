"""The toolbox: file and search tools that run INSIDE the sandbox, as one long-lived process.

This file is not imported by the library: ``toolbox.py`` copies its text into the sandbox and
starts it there with the sandbox's own ``python3`` (3.6 or newer, standard library only), so a
tool can only touch what the agent's shell can touch. One process per episode answers every call,
which keeps a tool call as cheap as a raw shell command (a fresh interpreter per call costs ~15 ms).

Protocol (two FIFOs in the toolbox directory, both held open read-write by this process so a
writer never blocks and nothing written is dropped):
  req: one JSON line per call, ``{"id": N, "op": NAME, "args": {...}}``
  out.N: the answer, ``{"id": N, "ok": bool, "output": str, "data": {...}}``, written to a file
  ack: one line ``N`` once ``out.N`` is complete
The process exits when its parent shell is gone.
"""

import difflib
import fnmatch
import json
import os
import re
import subprocess
import sys

MAX_READ_LINES = 400
MAX_LINE_CHARS = 2000
MAX_FILE_BYTES = 8 << 20
MAX_OUTPUT_CHARS = 40000
SKIP_DIRS = {".git", "node_modules", "target", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
             ".pytest_cache", "dist", "build", ".eggs"}
GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.quotepath=false"]


class ToolError(Exception):
    """A failure the model can act on; the message is shown to it."""


class Toolbox(object):
    def __init__(self, root, state_dir):
        self.root = root
        self.state_dir = state_dir
        self.error = ToolError
        self.undo = {}  # abs path -> list of previous contents (None: the file did not exist)

    # -- paths and files ---------------------------------------------------------------------
    def path(self, p):
        if not isinstance(p, str) or not p.strip():
            raise ToolError("`path` must be a non-empty string")
        p = os.path.expanduser(p.strip())
        return os.path.normpath(p if os.path.isabs(p) else os.path.join(self.root, p))

    def show(self, ap):
        rel = os.path.relpath(ap, self.root)
        return ap if rel.startswith("..") else rel

    def load(self, ap):
        if not os.path.exists(ap):
            raise ToolError("%s does not exist.%s" % (self.show(ap), self.suggest(ap)))
        if os.path.isdir(ap):
            raise ToolError("%s is a directory; use find_files to list it." % self.show(ap))
        size = os.path.getsize(ap)
        if size > MAX_FILE_BYTES:
            raise ToolError("%s is %d bytes, over the %d-byte limit of this tool; use bash (sed -n, grep)."
                            % (self.show(ap), size, MAX_FILE_BYTES))
        with open(ap, "rb") as f:
            data = f.read()
        if b"\0" in data[:8192]:
            raise ToolError("%s is a binary file." % self.show(ap))
        return data.decode("utf-8", "surrogateescape")

    def save(self, ap, text, remember=True):
        if remember:
            prev = None
            if os.path.exists(ap):
                with open(ap, "rb") as f:
                    prev = f.read()
            stack = self.undo.setdefault(ap, [])
            stack.append(prev)
            del stack[:-20]
        parent = os.path.dirname(ap)
        if parent and not os.path.isdir(parent):
            os.makedirs(parent)
        with open(ap, "wb") as f:
            f.write(text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text)

    def suggest(self, ap):
        parent, name = os.path.split(ap)
        while parent and not os.path.isdir(parent):
            parent, name = os.path.split(parent)
        try:
            names = os.listdir(parent)
        except OSError:
            return ""
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        if close:
            return " Did you mean: %s?" % ", ".join(self.show(os.path.join(parent, c)) for c in close)
        return ""

    # -- tools ---------------------------------------------------------------------------------
    def op_ping(self, args):
        return "pong", {"python": sys.version.split()[0]}

    def op_read_file(self, args):
        ap = self.path(args.get("path"))
        lines = self.load(ap).splitlines(True)
        n = len(lines)
        start = args.get("start_line") or 1
        end = args.get("end_line")
        if start < 1 or (n and start > n) or (not n and start > 1):
            raise ToolError("start_line %d is outside %s (it has %d lines)." % (start, self.show(ap), n))
        if end is None or end == -1:
            end = n
        if end < start:
            raise ToolError("end_line %d is before start_line %d." % (end, start))
        end = min(end, n)
        note = ""
        if end - start + 1 > MAX_READ_LINES:
            note = ("\n[%s has %d lines; showing %d-%d. Pass start_line/end_line to read more.]"
                    % (self.show(ap), n, start, start + MAX_READ_LINES - 1))
            end = start + MAX_READ_LINES - 1
        out = []
        for i in range(start - 1, end):
            line = lines[i].rstrip("\r\n")
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + " [... line cut at %d chars]" % MAX_LINE_CHARS
            out.append("%6d\t%s" % (i + 1, line))
        if not n:
            return "%s is empty." % self.show(ap), {"lines": 0}
        return "\n".join(out) + note, {"lines": n, "shown": [start, end]}

    def op_edit_file(self, args):
        ap = self.path(args.get("path"))
        old, new = args.get("old_str"), args.get("new_str")
        if old == "":
            raise ToolError("old_str is empty; use insert_lines or create_file to add text.")
        if old == new:
            raise ToolError("old_str and new_str are identical; nothing to change.")
        text = self.load(ap)
        count = text.count(old)
        if count == 0:
            raise ToolError("old_str was not found in %s.%s" % (self.show(ap), self.near_miss(text, old)))
        if count > 1:
            lines, pos = [], text.find(old)
            while pos >= 0 and len(lines) < 10:
                n = str(text.count("\n", 0, pos) + 1)
                if n not in lines:
                    lines.append(n)
                pos = text.find(old, pos + 1)
            raise ToolError("old_str occurs %d times in %s (at lines %s%s); include more surrounding lines so "
                            "that it matches exactly once." % (count, self.show(ap), ", ".join(lines),
                                                               ", ..." if pos >= 0 else ""))
        pos = text.find(old)
        self.save(ap, text[:pos] + new + text[pos + len(old):])
        first = text.count("\n", 0, pos) + 1
        return ("Edited %s.\n%s" % (self.show(ap), self.snippet(ap, first, first + new.count("\n")))), {"line": first}

    def near_miss(self, text, old):
        """Say why an exact match failed when we can tell: whitespace, or the closest line."""
        squash = lambda s: re.sub(r"\s+", " ", s).strip()
        if squash(old) and squash(old) in squash(text):
            return " A match exists if whitespace is ignored: copy the indentation and line breaks exactly."
        first = next((l for l in old.splitlines() if l.strip()), "")
        lines = text.splitlines()
        best = difflib.get_close_matches(first, lines, n=1, cutoff=0.6)
        if best:
            i = lines.index(best[0])
            return " The closest line to its first line is %d: %r." % (i + 1, best[0].strip()[:200])
        return ""

    def snippet(self, ap, first, last, context=3):
        lines = self.load(ap).splitlines()
        lo, hi = max(1, first - context), min(len(lines), last + context)
        return "\n".join("%6d\t%s" % (i, lines[i - 1][:MAX_LINE_CHARS]) for i in range(lo, hi + 1))

    def op_create_file(self, args):
        ap = self.path(args.get("path"))
        content = args.get("content")
        if os.path.isdir(ap):
            raise ToolError("%s is a directory." % self.show(ap))
        if os.path.exists(ap) and not args.get("overwrite"):
            raise ToolError("%s already exists; use edit_file to change it (or overwrite=true to replace it)."
                            % self.show(ap))
        self.save(ap, content)
        return "Created %s (%d lines)." % (self.show(ap), len(content.splitlines())), {}

    def op_insert_lines(self, args):
        ap = self.path(args.get("path"))
        after, text = args.get("line"), args.get("text")
        lines = self.load(ap).splitlines(True)
        if after < 0 or after > len(lines):
            raise ToolError("line %d is outside 0..%d (0 inserts at the top of %s)." % (after, len(lines), self.show(ap)))
        if lines and after == len(lines) and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        if not text.endswith("\n"):
            text += "\n"
        lines[after:after] = [text]
        self.save(ap, "".join(lines))
        return ("Inserted %d line(s) after line %d of %s.\n%s"
                % (text.count("\n"), after, self.show(ap), self.snippet(ap, after + 1, after + text.count("\n")))), {}

    def op_undo_edit(self, args):
        ap = self.path(args.get("path"))
        stack = self.undo.get(ap)
        if not stack:
            raise ToolError("no edit of %s to undo (undo covers edit_file, create_file, insert_lines and "
                            "restore_file in this episode)." % self.show(ap))
        prev = stack.pop()
        if prev is None:
            os.remove(ap)
            return "Undid the creation of %s (file removed)." % self.show(ap), {}
        self.save(ap, prev, remember=False)
        return "Reverted the last edit of %s." % self.show(ap), {}

    def op_restore_file(self, args):
        ap = self.path(args.get("path"))
        rel = os.path.relpath(ap, self.root)
        if rel.startswith(".."):
            raise ToolError("%s is outside the repository." % ap)
        proc = subprocess.Popen(GIT + ["show", "HEAD:" + rel], cwd=self.root, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        data, _ = proc.communicate()
        if proc.returncode != 0:
            if not os.path.exists(ap):
                raise ToolError("%s is neither in the base commit nor on disk." % rel)
            with open(ap, "rb") as f:
                self.undo.setdefault(ap, []).append(f.read())
            os.remove(ap)
            return "%s is not in the base commit: removed it (undo_edit brings it back)." % rel, {}
        self.save(ap, data)
        return "Restored %s to the base commit (undo_edit reverts this)." % rel, {}

    def op_search(self, args):
        pattern = args.get("pattern")
        if not pattern:
            raise ToolError("`pattern` must be a non-empty string.")
        ap = self.path(args.get("path") or ".")
        limit = int(args.get("max_results") or 100)
        cmd = ["grep", "-rnI", "--color=never"] + ["--exclude-dir=%s" % d for d in sorted(SKIP_DIRS)]
        cmd += ["-E" if args.get("regex") else "-F"]
        if args.get("include"):
            cmd += ["--include=%s" % args["include"]]
        cmd += ["-e", pattern, "--", ap]
        try:
            proc = subprocess.Popen(cmd, cwd=self.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError:
            return self.search_py(pattern, ap, limit, args)
        shown, total = [], 0
        for raw in proc.stdout:
            total += 1
            if len(shown) < limit:
                shown.append(self.rel_line(raw.decode("utf-8", "backslashreplace").rstrip("\n")))
            elif total >= 10000:
                proc.kill()
                break
        err = proc.stderr.read().decode("utf-8", "replace").strip()
        rc = proc.wait()
        if rc == 2 and not shown:
            raise ToolError("search failed: %s" % (err.splitlines()[-1] if err else "bad pattern"))
        return self.search_result(pattern, shown, total, limit)

    def rel_line(self, line):
        if line.startswith(self.root + "/"):
            line = line[len(self.root) + 1:]
        if len(line) > 300:
            line = line[:300] + " [...]"
        return line

    def search_result(self, pattern, shown, total, limit):
        if not total:
            return "No matches for %r." % pattern, {"matches": 0}
        more = "" if total <= limit else "\n[%s%d matches; showing the first %d. Narrow the path or pattern.]" % (
            "at least " if total >= 10000 else "", total, limit)
        return "\n".join(shown) + more, {"matches": total}

    def search_py(self, pattern, ap, limit, args):
        try:
            rx = re.compile(pattern if args.get("regex") else re.escape(pattern))
        except re.error as exc:
            raise ToolError("bad regular expression: %s" % exc)
        shown, total = [], 0
        for path in self.walk(ap, args.get("include")):
            try:
                with open(path, "rb") as f:
                    data = f.read(MAX_FILE_BYTES)
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue
            for i, line in enumerate(data.decode("utf-8", "backslashreplace").splitlines(), 1):
                if rx.search(line):
                    total += 1
                    if len(shown) < limit:
                        shown.append(self.rel_line("%s:%d:%s" % (path, i, line)))
        return self.search_result(pattern, shown, total, limit)

    def walk(self, top, glob=None):
        if os.path.isfile(top):
            yield top
            return
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in sorted(filenames):
                if glob is None or fnmatch.fnmatch(name, glob):
                    yield os.path.join(dirpath, name)

    def op_find_files(self, args):
        pattern = args.get("pattern") or "*"
        ap = self.path(args.get("path") or ".")
        if not os.path.isdir(ap):
            raise ToolError("%s is not a directory.%s" % (self.show(ap), self.suggest(ap)))
        limit = int(args.get("max_results") or 200)
        found, total = [], 0
        for path in self.walk(ap):
            rel = os.path.relpath(path, self.root)
            if fnmatch.fnmatch(os.path.basename(path), pattern) or fnmatch.fnmatch(rel, pattern):
                total += 1
                if len(found) < limit:
                    found.append(self.show(path))
        if not total:
            return "No files match %r under %s." % (pattern, self.show(ap)), {"files": 0}
        more = "" if total <= limit else "\n[%d files match; showing %d.]" % (total, limit)
        return "\n".join(found) + more, {"files": total}

    def git_diff(self, paths=(), stat=False):
        """The work copy against HEAD, new files included, through a throwaway index so the
        agent's own index is never touched."""
        env = dict(os.environ, GIT_INDEX_FILE=os.path.join(self.state_dir, "index"))
        env.pop("GIT_DIR", None)
        env.pop("GIT_WORK_TREE", None)
        idx = os.path.join(self.root, ".git", "index")
        if os.path.exists(idx):
            with open(idx, "rb") as src, open(env["GIT_INDEX_FILE"], "wb") as dst:
                dst.write(src.read())
        subprocess.Popen(GIT + ["add", "-A"], cwd=self.root, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE).communicate()
        cmd = GIT + ["diff", "--cached", "--no-color", "--no-ext-diff"] + (["--stat"] if stat else []) + ["HEAD", "--"]
        proc = subprocess.Popen(cmd + list(paths), cwd=self.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise ToolError("git diff failed: %s" % err.decode("utf-8", "replace").strip()[:500])
        return out.decode("utf-8", "backslashreplace")

    def op_view_diff(self, args):
        paths = [self.show(self.path(args["path"]))] if args.get("path") else []
        out = self.git_diff(paths, stat=bool(args.get("stat")))
        if not out.strip():
            return "No changes against the base commit%s." % (" in " + paths[0] if paths else ""), {"empty": True}
        if len(out) > MAX_OUTPUT_CHARS:
            out = out[:MAX_OUTPUT_CHARS] + "\n[diff cut at %d chars; pass path=... to see one file.]" % MAX_OUTPUT_CHARS
        return out, {"empty": False}

    def op_fingerprint(self, args):
        """A cheap value that changes whenever a file of the work copy changes."""
        proc = subprocess.Popen(GIT + ["--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=all"],
                                cwd=self.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, _ = proc.communicate()
        parts = [out]
        for entry in out.split(b"\0"):
            path = entry[3:].decode("utf-8", "surrogateescape")
            if path:
                try:
                    st = os.stat(os.path.join(self.root, path))
                    parts.append(("%s:%d:%d" % (path, st.st_size, st.st_mtime_ns)).encode("utf-8", "surrogateescape"))
                except OSError:
                    parts.append(entry)
        import hashlib
        return "", {"fingerprint": hashlib.sha1(b"\0".join(parts)).hexdigest(), "clean": not out}

    def op_save_output(self, args):
        """Keep a long tool output inside the sandbox, next to the toolbox, for later reading."""
        d = os.path.join(os.path.dirname(self.state_dir), ".ha-outputs")
        if not os.path.isdir(d):
            os.makedirs(d)
        path = os.path.join(d, os.path.basename(str(args.get("name") or "output.txt")))
        with open(path, "wb") as f:
            f.write(str(args.get("content", "")).encode("utf-8", "surrogateescape"))
        return path, {"path": path}

    def op_select_tests(self, args):
        import toolbox_tests
        return toolbox_tests.select(self, args)


def serve(root, state_dir, parent):
    sys.path.insert(0, state_dir)
    box = Toolbox(root, state_dir)
    req_fd = os.open(os.path.join(state_dir, "req"), os.O_RDWR)
    ack_fd = os.open(os.path.join(state_dir, "ack"), os.O_RDWR)
    os.write(ack_fd, b"ready\n")
    import select
    buf = b""
    while True:
        ready, _, _ = select.select([req_fd], [], [], 1.0)
        if not ready:
            if parent and not _alive(parent):
                return
            continue
        chunk = os.read(req_fd, 1 << 16)
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            answer(box, line, state_dir, ack_fd)


def answer(box, line, state_dir, ack_fd):
    rid = 0
    try:
        req = json.loads(line.decode("utf-8", "surrogateescape"))
        rid = int(req.get("id", 0))
        fn = getattr(box, "op_" + str(req.get("op")), None)
        if fn is None:
            raise ToolError("unknown toolbox operation %r" % req.get("op"))
        output, data = fn(req.get("args") or {})
        resp = {"id": rid, "ok": True, "output": output, "data": data}
    except ToolError as exc:
        resp = {"id": rid, "ok": False, "output": str(exc), "data": {}}
    except Exception as exc:  # a bug or an OS error: report it instead of dying
        resp = {"id": rid, "ok": False, "output": "%s: %s" % (type(exc).__name__, exc), "data": {"internal": True}}
    path = os.path.join(state_dir, "out.%d" % rid)
    for old in os.listdir(state_dir):  # the shell has read every earlier answer (calls are sequential)
        if old.startswith("out."):
            os.remove(os.path.join(state_dir, old))
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps(resp, ensure_ascii=True))
    os.rename(path + ".tmp", path)
    os.write(ack_fd, ("%d\n" % rid).encode())


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


if __name__ == "__main__":
    serve(os.path.abspath(sys.argv[1]), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
