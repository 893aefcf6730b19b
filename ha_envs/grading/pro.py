"""SWE-bench Pro grading, as Scale's ``swe_bench_pro_eval.py`` does it.

Scale grades an instance with two per-instance files from ``scaleapi/SWE-bench_Pro-os``:
``run_scripts/<id>/run_script.sh`` (runs the selected test files from ``/app``) and
``run_scripts/<id>/parser.py`` (turns the run's stdout and stderr into ``{"tests": [{name,
status}]}``). Its entry script exports the ``ENV`` lines of the instance's two Dockerfiles, applies
the model patch with binary hunks stripped (``git apply``, no fuzz), checks the test files out,
runs ``bash run_script.sh <files joined by ','> > stdout.log 2> stderr.log``, then ``python
parser.py stdout.log stderr.log output.json``. Resolved iff every FAIL_TO_PASS and PASS_TO_PASS
name is among the tests whose status is ``PASSED``; no output.json means not resolved.

This module finds those files (``HA_PRO_SCRIPTS``: a checkout of the repository, its
``run_scripts`` directory, or a bare clone; else ``$HA_REPOS_DIR`` holding a mirror of
``scaleapi/SWE-bench_Pro-os``), and builds one self-contained grading command that writes them
into a private directory of the grading sandbox and runs them in that order. Scale's files are read
at run time from the user's copy; none ships with this package.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from functools import cached_property, lru_cache
from pathlib import Path

from ..task import TaskError

PRO_REPO = "scaleapi/SWE-bench_Pro-os"
OUTPUT_MARK, END_MARK = "@@HA_PRO_OUTPUT@@", "@@HA_PRO_END@@"
LOG_TAIL_BYTES = 65536


class ProScripts:
    """Read-only access to Scale's per-instance files in a checkout or a bare git clone."""

    def __init__(self, root: str | Path) -> None:
        root = Path(root)
        if not root.exists():
            raise TaskError(f"SWE-bench Pro scripts: {root} does not exist")
        self.bare = (root / "HEAD").is_file() and (root / "objects").is_dir()
        self._batch: subprocess.Popen | None = None
        self._lock = threading.Lock()
        if self.bare:
            self.root = root
        elif (root / "run_scripts").is_dir():
            self.root = root
        elif root.name == "run_scripts" and root.is_dir():
            self.root = root.parent
        else:
            raise TaskError(f"SWE-bench Pro scripts: {root} holds no run_scripts/ directory "
                            f"(expected a checkout of {PRO_REPO})")

    def read(self, rel: str) -> str | None:
        if not self.bare:
            path = self.root / rel
            return path.read_text(encoding="utf-8") if path.is_file() else None
        with self._lock:  # one `git cat-file --batch` answers every read of a bare clone
            if self._batch is None:
                self._batch = subprocess.Popen(["git", "--git-dir", str(self.root), "cat-file", "--batch"],
                                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            assert self._batch.stdin and self._batch.stdout
            self._batch.stdin.write(f"HEAD:{rel}\n".encode())
            self._batch.stdin.flush()
            header = self._batch.stdout.readline().decode().split()
            if len(header) != 3:  # "<spec> missing"
                return None
            data = self._batch.stdout.read(int(header[2]))
            self._batch.stdout.read(1)
            return data.decode("utf-8")

    @cached_property
    def rev(self) -> str:
        return self.revision()

    def revision(self) -> str:
        if self.bare:
            proc = subprocess.run(["git", "--git-dir", str(self.root), "rev-parse", "HEAD"], capture_output=True, text=True)
            return proc.stdout.strip()
        proc = subprocess.run(["git", "-C", str(self.root), "rev-parse", "HEAD"], capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else "unversioned"

    def files(self, instance_id: str) -> dict[str, str] | None:
        """run_script.sh, parser.py and the Dockerfiles' ENV lines of one instance, or None."""
        run = self.read(f"run_scripts/{instance_id}/run_script.sh")
        parser = self.read(f"run_scripts/{instance_id}/parser.py")
        if run is None or parser is None:
            return None
        env_lines = []
        for kind in ("base_dockerfile", "instance_dockerfile"):
            for line in (self.read(f"dockerfiles/{kind}/{instance_id}/Dockerfile") or "").split("\n"):
                line = line.strip()
                if line.startswith("ENV"):
                    env_lines.append(line.replace("ENV", "export", 1))  # Scale's own conversion, as is
        return {"run_script.sh": run, "parser.py": parser, "env": "\n".join(env_lines)}

    def dockerfile(self, instance_id: str, kind: str = "base_dockerfile") -> str | None:
        return self.read(f"dockerfiles/{kind}/{instance_id}/Dockerfile")


@lru_cache(maxsize=8)
def _scripts_at(root: str) -> ProScripts:
    return ProScripts(root)


def find_scripts(explicit: str | Path | None = None) -> ProScripts | None:
    """Scale's scripts: ``explicit``, else ``$HA_PRO_SCRIPTS``, else a mirror under ``$HA_REPOS_DIR``
    (``<owner>+<name>/repo`` or ``<owner>/<name>.git``); None when there are none."""
    root = explicit or os.environ.get("HA_PRO_SCRIPTS")
    if root:
        return _scripts_at(str(root))
    mirrors = os.environ.get("HA_REPOS_DIR")
    if mirrors:
        owner, name = PRO_REPO.split("/")
        for cand in (Path(mirrors) / f"{owner}+{name}" / "repo", Path(mirrors) / owner / f"{name}.git"):
            if cand.exists():
                return _scripts_at(str(cand))
    return None


def _heredoc(path: str, text: str) -> str:
    tag = "HA_PRO_EOF"
    while re.search(rf"^{tag}$", text, re.M):
        tag += "_"
    body = text if text.endswith("\n") else text + "\n"
    return f"cat > {path} <<'{tag}'\n{body}{tag}\n"


def grading_command(files: dict[str, str], selected: list[str] | tuple[str, ...], workdir: str = "/app") -> str:
    """The whole of Scale's entry script after the patch step, as one command for the grading
    sandbox; prints the tails of both logs, then output.json between markers."""
    selected_arg = ",".join(selected)
    quoted = "'" + selected_arg.replace("'", "'\"'\"'") + "'" if selected_arg else ""
    return (
        'HA_W=$(mktemp -d "${TMPDIR:-/tmp}/ha-pro.XXXXXX")\n'
        + _heredoc('"$HA_W/run_script.sh"', files["run_script.sh"])
        + _heredoc('"$HA_W/parser.py"', files["parser.py"])
        + "(\n"
        + (files.get("env", "") + "\n" if files.get("env") else "")
        + f"cd {workdir}\n"
        + f'bash "$HA_W/run_script.sh" {quoted} > "$HA_W/stdout.log" 2> "$HA_W/stderr.log"\n'
        + 'if command -v python >/dev/null 2>&1; then HA_PY=python; else HA_PY=python3; fi\n'
        + '"$HA_PY" "$HA_W/parser.py" "$HA_W/stdout.log" "$HA_W/stderr.log" "$HA_W/output.json"\n'
        + ")\n"
        + f'echo "--- stdout.log (tail) ---"; tail -c {LOG_TAIL_BYTES} "$HA_W/stdout.log"\n'
        + f'echo "--- stderr.log (tail) ---"; tail -c {LOG_TAIL_BYTES} "$HA_W/stderr.log"\n'
        + f'echo; echo "{OUTPUT_MARK}"; cat "$HA_W/output.json" 2>/dev/null; echo; echo "{END_MARK}"\n'
    )


def parse_output(log: str) -> dict[str, str]:
    """The test statuses from the output.json the grading command printed; {} when the parser wrote
    none or it is not valid (Scale: not resolved). A name listed twice keeps its last status, as
    Scale's export does."""
    start = log.rfind(OUTPUT_MARK)
    if start < 0:
        return {}
    body = log[start + len(OUTPUT_MARK):]
    end = body.find(END_MARK)
    body = body[:end] if end >= 0 else body
    try:
        data = json.loads(body.strip() or "null")
    except json.JSONDecodeError:
        return {}
    tests = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(tests, list):
        return {}
    out: dict[str, str] = {}
    for t in tests:
        if isinstance(t, dict) and isinstance(t.get("name"), str):
            out[t["name"]] = str(t.get("status", ""))
    return out


_SECTION = re.compile(r"(?=^diff --git )", re.M)


def strip_binary_hunks(patch: str) -> tuple[str, list[str]]:
    """Scale drops every file section of the patch that is binary (``Binary files ... differ`` or
    ``GIT binary patch``); returns the rest and the dropped sections' paths."""
    from ..task import patch_paths

    kept, dropped = [], []
    for section in _SECTION.split(patch):
        if not section.strip():
            continue
        if re.search(r"^Binary files .* differ$", section, re.M) or re.search(r"^GIT binary patch$", section, re.M):
            dropped.extend(p for p in patch_paths(section) if p != "dev/null")
            continue
        kept.append(section)
    return "".join(kept), dropped


_FROM_PYTHON = re.compile(r"^FROM\s+\S*python:(\d+\.\d+)", re.M)
def _apt_python(dockerfile: str) -> str | None:
    """X.Y of a ``python3.X`` package an ``apt-get install`` of the Dockerfile installs."""
    for line in re.sub(r"\\\n", " ", dockerfile).splitlines():
        if re.search(r"\bapt(?:-get)?\s+install\b", line):
            found = re.search(r"(?<![\w/.-])python(3\.\d+)(?![\w.])", line)
            if found:
                return found.group(1)
    return None


_PIP = re.compile(r"^\s*(?:python3?\s+-m\s+)?pip3?\s+install\s+(.*?)(?:\s*\|\|\s*true)?\s*$", re.M)
_CUTOFF = re.compile(r"pypi-timemachine\s+(\d{4}-\d{2}-\d{2})")
_NOT_DEPS = {"pip", "wheel", "setuptools", "pypi-timemachine"}


def python_specs(scripts: ProScripts | None, instance_id: str) -> dict | None:
    """A Python environment recipe (the ``specs`` ``pyenv.python_env`` builds) read from Scale's two
    Dockerfiles: the Python of ``FROM python:X.Y``, the plain packages of the build script's ``pip
    install`` lines, its ``-r`` requirement files (installed when the snapshot has them), and whether
    it installs the repository itself. An ``ubuntu:`` base that installs ``python3.X`` from apt gets
    that Python (ansible's ``ansible-test units --python 3.9`` looks for ``python3.9``). None when
    neither names a Python (those instances need Scale's image)."""
    if scripts is None:
        return None
    base = scripts.dockerfile(instance_id) or ""
    inst = scripts.dockerfile(instance_id, "instance_dockerfile") or ""
    m = _FROM_PYTHON.search(base)
    python = m.group(1) if m else _apt_python(base)
    if not python:
        return None
    packages: list[str] = []
    req_files: list[str] = []
    install_repo = False
    for line in _PIP.findall(inst + "\n" + base):
        words = line.split()
        i = 0
        while i < len(words):
            w = words[i]
            if w in ("-r", "--requirement") and i + 1 < len(words):
                req_files.append(words[i + 1])
                i += 2
                continue
            if w in ("-e", "--editable") and i + 1 < len(words):
                install_repo = install_repo or words[i + 1] in (".", "./", "/app")
                i += 2
                continue
            if w in (".", "./", "/app"):
                install_repo = True
            elif w.startswith("-"):
                if "=" not in w and w in ("--default-timeout", "--index-url", "-i", "--extra-index-url", "-c"):
                    i += 1  # the option's argument
            elif re.match(r"^[A-Za-z0-9][A-Za-z0-9._\-\[\],<>=!~]*$", w) and w.split("[")[0].lower() not in _NOT_DEPS:
                packages.append(w)
            i += 1
    cutoff = _CUTOFF.search(inst)
    return {"python": python, "pip_packages": list(dict.fromkeys(packages)),
            "requirements_files": list(dict.fromkeys(req_files)), "install_repo": install_repo,
            "pypi_cutoff": cutoff.group(1) if cutoff else None, "source": "SWE-bench_Pro-os Dockerfiles"}
