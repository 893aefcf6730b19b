"""Tasks written as Harbor task folders (``ha tasks export --format harbor``).

Each task becomes ``OUT/<instance_id>/``: ``task.toml`` (schema 1.4), ``instruction.md``,
``environment/Dockerfile`` (the task's image: by default the bundled base image this library
builds, ``ha images build --base-only``, or a SWE-bench row's official image; ``image=`` names one,
``ha tasks export --build-images`` builds each task's snapshot image here), ``tests/`` (the hidden
test patch, a ``test.sh`` that restores the hidden and protected files, applies the patch, runs the
task's build and test commands and writes ``/logs/verifier/reward.txt`` from the FAIL_TO_PASS /
PASS_TO_PASS outcomes, read by this library's own log parsers copied beside it) and ``solution/``
(the gold patch and a ``solve.sh`` applying it). Bundled and local tasks carry their work copy in
``environment/testbed/``, ``COPY``'d onto the work directory.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path

from ..grading import log_parsers
from ..grading.sandboxes import tests_need_network
from ..sandbox.shell import ansi_c_quote
from ..task import Task, TaskError

BASE_IMAGE = "harnessadapt/base:bookworm"
SKIP = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".pytest_cache", "node_modules", "target")


NETWORK_MODES = ("task", "public")


def export_harbor(tasks: Iterable[Task], out: str | Path, images: dict[str, str] | None = None,
                  overwrite: bool = False, network: str = "task") -> list[Path]:
    """Write each task under ``out``; ``images``: instance id -> the image its Dockerfile starts FROM;
    ``network``: ``task`` (the agent's environment no-network, the verifier public only where the tests
    need it) or ``public`` (every phase public: for a Harbor environment that cannot enforce no-network,
    such as Harbor's Docker environment without its egress-control images; the runner then restricts
    the network, docs/interop.md)."""
    if network not in NETWORK_MODES:
        raise TaskError(f"network mode {network!r}: expected one of {', '.join(NETWORK_MODES)}")
    out = Path(out)
    written = []
    for task in tasks:
        written.append(export_task(task, out, (images or {}).get(task.instance_id), overwrite, network))
    return written


def export_task(task: Task, out: Path, image: str | None = None, overwrite: bool = False,
                network: str = "task") -> Path:
    if task.tests.log_parser == "harbor":
        raise TaskError(f"{task.instance_id}: a Harbor task is one already (its folder is {task.metadata['harbor']['task_dir']})")
    if task.tests.log_parser == "pro" and not task.tests.test_command:
        raise TaskError(f"{task.instance_id}: a SWE-bench Pro row is graded by Scale's run scripts, and none were found: "
                        "pass --pro-scripts DIR (a checkout of scaleapi/SWE-bench_Pro-os) or set HA_PRO_SCRIPTS")
    d = out / task.instance_id
    if d.exists():
        if not overwrite:
            raise TaskError(f"{d} exists (pass --overwrite to replace it)")
        shutil.rmtree(d)
    for sub in ("environment", "tests", "solution"):
        (d / sub).mkdir(parents=True)
    (d / "task.toml").write_text(task_toml(task, None if task.source_dir is not None else base_image(task, image), network))
    (d / "instruction.md").write_text(task.problem_statement.rstrip("\n") + "\n")
    (d / "environment" / "Dockerfile").write_text(dockerfile(task, image))
    if task.source_dir is not None:
        shutil.copytree(task.source_dir, d / "environment" / "testbed", ignore=SKIP, symlinks=True)
    _tests(task, d / "tests")
    (d / "solution" / "gold.patch").write_text(task.gold_patch)
    (d / "solution" / "solve.sh").write_text(
        "#!/bin/bash\n# harnessadapt export: the gold patch\nset -e\n"
        f"cd {ansi_c_quote(task.environment.workdir)}\n"
        'p="$(dirname "$0")/gold.patch"\n'
        'git apply --whitespace=nowarn "$p" || patch -p1 --forward --batch < "$p"\n')
    for script in (d / "solution" / "solve.sh", d / "tests" / "test.sh"):
        script.chmod(0o755)
    return d


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(float(value)) if isinstance(value, float) else str(value)
    return json.dumps(str(value))  # a JSON string is a TOML basic string


def task_toml(task: Task, image: str | None = None, network: str = "task") -> str:
    """``image``: the image the environment starts from, named when no work copy is copied in (the
    image holds it: a SWE-bench row's); ``network``: ``task`` or ``public`` (``export_harbor``)."""
    public = network == "public"
    verifier_net = "public" if public or tests_need_network(task) or task.tests.log_parser.startswith("swebench:") \
        else "no-network"
    meta = {"source": "harnessadapt", "benchmark": task.benchmark, "instance_id": task.instance_id,
            "language": task.language, "difficulty": task.difficulty, "repo": task.repo,
            "base_commit": task.base_commit or "", "fail_to_pass": len(task.tests.fail_to_pass),
            "pass_to_pass": len(task.tests.pass_to_pass)}
    sections = [
        'schema_version = "1.4"\nsource = "harnessadapt"',
        "[metadata]\n" + "\n".join(f"{k} = {_toml(v)}" for k, v in meta.items()),
        (f"[verifier]\ntimeout_sec = {_toml(float(task.tests.timeout_s) * (2 if task.tests.build_command else 1))}\n"
        f"network_mode = {_toml(verifier_net)}"),
        "[agent]\ntimeout_sec = 3600.0",
        f"[environment]\nbuild_timeout_sec = 1800.0\ncpus = 2\nmemory_mb = 4096\nstorage_mb = 10240\n"
        f"network_mode = {_toml('public' if public else 'no-network')}\nworkdir = {_toml(task.environment.workdir)}"
        + (f"\ndocker_image = {_toml(image)}" if image else ""),
    ]
    return "\n\n".join(sections) + "\n"


def base_image(task: Task, image: str | None) -> str:
    return image or task.environment.image or (task.environment.extra or {}).get("official_image") or BASE_IMAGE


def dockerfile(task: Task, image: str | None) -> str:
    wd = task.environment.workdir
    lines = [f"# harnessadapt export of {task.instance_id}", f"FROM {base_image(task, image)}", f"WORKDIR {wd}"]
    if task.source_dir is not None:
        lines += [f"COPY testbed/ {wd}/",
                  ("RUN if [ ! -d .git ]; then git init -q && git add -A && git -c user.name=harnessadapt "
                  "-c user.email=harnessadapt@localhost commit -q --no-verify -m base; fi")]
    return "\n".join(lines) + "\n"


def _tests(task: Task, tests: Path) -> None:
    (tests / "test.patch").write_text(task.tests.test_patch)
    from ..grading.pro import END_MARK, OUTPUT_MARK

    spec = {"instance_id": task.instance_id, "log_parser": task.tests.log_parser,
            "fail_to_pass": list(task.tests.fail_to_pass), "pass_to_pass": list(task.tests.pass_to_pass),
            "pro_marks": [OUTPUT_MARK, END_MARK]}
    if task.tests.log_parser == "r2e":  # R2E-Gym's rule: the parsed log equals the expected output exactly
        spec["expected_output"] = task.metadata.get("expected_output") or {}
    (tests / "spec.json").write_text(json.dumps(spec, indent=1) + "\n")
    shutil.copyfile(log_parsers.__file__, tests / "log_parsers.py")
    (tests / "grade.py").write_text(GRADE_PY.replace("SWEBENCH_VERSION", _pinned_swebench()))
    (tests / "test.sh").write_text(test_script(task))


def _pinned_swebench() -> str:
    """The swebench this library grades with (``verdicts.swebench_version``), for grade.py to install;
    the tested release where none is installed."""
    from ..grading.verdicts import swebench_version

    found = swebench_version()
    return "4.1.0" if found == "none" else found


def test_script(task: Task) -> str:
    q = ansi_c_quote
    hidden = " ".join(q(p) for p in task.hidden_test_files)
    protected = " ".join(q(p) for p in task.tests.protected_paths)
    build = task.tests.build_command.strip()
    # SWE-bench's images keep the repository's environment in conda's `testbed` (its eval scripts
    # activate it); grade.py then runs on the image's own python3
    env = ("if [ -f /opt/miniconda3/bin/activate ]; then . /opt/miniconda3/bin/activate && conda activate testbed; "
           "fi; " if task.tests.log_parser.startswith("swebench:") else "")
    return "\n".join([
        "#!/bin/bash",
        f"# harnessadapt export of {task.instance_id}: the hidden tests, then FAIL_TO_PASS / PASS_TO_PASS -> reward",
        "R=/logs/verifier; mkdir -p $R; rm -f $R/reward.txt $R/reward.json",
        f"cd {q(task.environment.workdir)} || exit 1",
        f"for f in {hidden}; do",
        '  if git cat-file -e HEAD:"$f" 2>/dev/null; then git checkout -q HEAD -- "$f"; else rm -rf -- "$f"; fi',
        "done",
        f"for p in {protected}; do",
        '  git checkout -q HEAD -- ":(glob)$p" 2>/dev/null; git ls-files -z -o -- ":(glob)$p" | xargs -0 -r rm -f --',
        "done",
        "if [ -s /tests/test.patch ]; then",
        "  git apply --whitespace=nowarn /tests/test.patch || patch -p1 --forward --batch < /tests/test.patch ||",
        '    { echo "harnessadapt: the hidden test patch does not apply"; echo 0 > $R/reward.txt; exit 0; }',
        "fi",
        *([(f"( {env}{build} ) > $R/build.log 2>&1 || {{ echo 'harnessadapt: the build failed'; echo 0 > $R/reward.txt; "
           "exit 0; }")] if build else []),
        f"( {env}{task.tests.test_command} ) > $R/test-output.log 2>&1",
        "tail -n 50 $R/test-output.log",
        "python3 /tests/grade.py $R/test-output.log /tests/spec.json > $R/reward.txt",
        "",
    ])


GRADE_PY = '''"""harnessadapt export: the test log -> 1 when every FAIL_TO_PASS test PASSED and every
PASS_TO_PASS test passed (PASSED, SKIPPED or XFAIL; SWE-bench Pro: PASSED, Scale's rule; R2E-Gym: the
parsed log equals the expected output exactly), else 0.
Parsers: harnessadapt's, beside this file (swebench:<repo> needs the swebench package, installed here
on first use; Pro: the output.json of Scale's parser, which the test command prints)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from log_parsers import get_parser  # noqa: E402

log_path, spec_path = sys.argv[1], sys.argv[2]
spec = json.load(open(spec_path))
log = open(log_path, errors="replace").read()
if spec["log_parser"].startswith("swebench:"):
    try:
        import swebench  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "swebench==SWEBENCH_VERSION"], stdout=sys.stderr)
if spec["log_parser"] == "pro":  # Scale's parser's output.json, printed between two marks by the test command
    start, end = spec["pro_marks"]
    body = log[log.rfind(start) + len(start):] if start in log else "null"
    body = body[:body.find(end)] if end in body else body
    try:
        data = json.loads(body.strip() or "null")
    except ValueError:
        data = None
    tests = data.get("tests") if isinstance(data, dict) else None
    statuses = {t["name"]: str(t.get("status", "")) for t in tests or [] if isinstance(t, dict)
                and isinstance(t.get("name"), str)}
    passing = ("PASSED",)  # Scale's rule: every listed test PASSED
else:
    statuses = get_parser(spec["log_parser"], spec["instance_id"])(log)
    passing = ("PASSED", "SKIPPED", "XFAIL")
if spec["log_parser"] == "r2e":
    from log_parsers import decolor  # noqa: E402

    expected = {decolor(k): v for k, v in spec["expected_output"].items()}
    ok = bool(expected) and {decolor(k): v for k, v in statuses.items()} == expected
else:
    ok = bool(spec["fail_to_pass"]) and all(statuses.get(t) == "PASSED" for t in spec["fail_to_pass"]) and all(
        statuses.get(t) in passing for t in spec["pass_to_pass"])
print(1 if ok else 0)
'''
