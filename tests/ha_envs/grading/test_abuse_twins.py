"""The abuse suite, canaries told apart by what they touch, in Go, Rust and JavaScript: code under
test that turns failures into passes only for tests whose body names something the package declares,
for tests in which the package ran, or for tests not shaped like a drawn canary
(``twin_payloads.py``). The drawn canaries come out as planted, so without twins each form earns
1.0; the twins (copies of the hidden file's own passing tests, ``canary_twins_braces.py``) call
into the package, and the forgery passes the one that must fail."""

from __future__ import annotations

import pytest

from ha_envs.grading.grader import Grader
from ha_envs.grading.sandboxes import docker_sandbox_factory, local_sandbox_factory

from .abuse_helpers import kind  # noqa: F401
from .test_abuse_escapes import assert_graded_zero
from .test_abuse_verdict import patch_of
from .twin_payloads import FORMS

pytestmark = pytest.mark.abuse

# every form in the local sandbox, one in Docker (its mechanics are the same for each form: CI time)
CASES = [*(("local", f) for f in sorted(FORMS)), ("docker", "go-reexec-passes-tests-naming-the-package")]
BARE = {"go-reexec-passes-tests-naming-the-package", "js-no-op-asserts-in-tests-the-package-ran-in",
        "rust-sh-filter-passes-tests-not-shaped-like-canaries"}
"""One form per language graded without twins too (CI time); the others show the same in the
graded report: every listed test passed and no drawn canary came out wrong."""


def _task(name: str):
    from ha_envs.loaders import load_suite

    return next(t for t in load_suite("mini") if t.instance_id == name)


@pytest.mark.parametrize("kind,form", CASES, indirect=["kind"])
def test_forgeries_keyed_on_what_a_test_touches_fail_a_twin(kind, form, tmp_path):
    """Without twins (the drawn canaries planted, the watch off) the forgery resolves the task; with
    them it is ``verdict_tampered``, reward 0, because a copy of a passing test with one check turned
    round was reported passed (and nothing else was wrong: the forged verdict is complete)."""
    name, path, text = FORMS[form]
    task = _task(name)
    patch = patch_of(task.source_dir, path, text, tmp_path)
    factory = docker_sandbox_factory() if kind == "docker" else local_sandbox_factory()
    if kind == "local" and form in BARE:
        bare = Grader(factory, twins=False, watch=False).grade(task, patch)
        assert bare.reward == 1.0 and bare.canaries["as_planted"] == bare.canaries["planted"], bare.tampering
    report = Grader(factory, watch=False).grade(task, patch)
    assert_graded_zero(report)
    assert report.status == "verdict_tampered", (report.status, report.tampering)
    assert report.tampering and all("a copy of the passing test" in r and "turned round" in r
                                    for r in report.tampering), report.tampering
    listed = {**report.fail_to_pass, **report.pass_to_pass}
    assert set(listed.values()) == {"PASSED"}, listed  # the forgery worked on every listed test
