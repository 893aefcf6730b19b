"""`ha compare` (paired bootstrap over instances, pooled by benchmark), trajectory exports and
`ha show-trajectory` (text, and an HTML page checked in headless Chromium)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from ha_agents.compare import compare
from ha_agents.evaluate import evaluate
from ha_agents.trajectory import load_trajectory, render_html, to_traj_json
from ha_cli.main import main


def fake_run(path, outcomes):
    """A run directory as `ha eval` writes it: {instance: (benchmark, [resolved per run])}."""
    path.mkdir(parents=True)
    with (path / "trajectories.jsonl").open("w") as fh:
        for iid, (bench, runs) in outcomes.items():
            for k, ok in enumerate(runs, 1):
                fh.write(json.dumps({"instance_id": iid, "benchmark": bench, "run": k, "resolved": ok}) + "\n")
    return path


def test_compare_pools_by_task_count_and_brackets_the_difference(tmp_path):
    a = {f"v{i}": ("verified", [i % 2 == 0] * 3) for i in range(40)}
    a.update({f"p{i}": ("pro", [False, False, False]) for i in range(10)})
    b = dict(a)
    b.update({f"v{i}": ("verified", [True] * 3) for i in range(40)})  # +50 points on verified
    b.update({"p0": ("pro", [True, True, False])})                     # +6.7 points on pro
    b["only_b"] = ("pro", [True])
    res = compare(fake_run(tmp_path / "A", a), fake_run(tmp_path / "B", b), samples=4000, seed=1)
    rows = {r.benchmark: r for r in res.rows}
    assert rows["verified"].n == 40 and rows["verified"].diff == pytest.approx(0.5)
    assert rows["pro"].diff == pytest.approx(2 / 3 / 10)
    assert res.pooled.n == 50 and res.pooled.diff == pytest.approx((40 * 0.5 + 10 * (2 / 30)) / 50)
    assert res.pooled.ci_low < res.pooled.diff < res.pooled.ci_high and res.pooled.ci_low > 0
    assert rows["verified"].ci_low > 0.3 and rows["pro"].ci_low == 0.0
    assert res.only_in_b == ["only_b"] and "1 only in B" in res.markdown()
    again = compare(tmp_path / "A", tmp_path / "B", samples=4000, seed=1)
    assert again.to_dict() == res.to_dict()  # reproducible


def test_compare_identical_runs_is_zero_with_a_zero_ci(tmp_path, capsys):
    a = {f"x{i}": ("mini", [i % 3 == 0]) for i in range(12)}
    fake_run(tmp_path / "A", a)
    fake_run(tmp_path / "B", a)
    assert main(["compare", str(tmp_path / "A"), str(tmp_path / "B"), "--json", "--out", str(tmp_path / "cmp")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pooled"]["diff"] == 0 and data["pooled"]["ci_low"] == 0 and data["pooled"]["ci_high"] == 0
    assert (tmp_path / "cmp" / "compare.md").read_text().startswith("B = ")
    with pytest.raises(ValueError, match="share no instance"):
        compare(fake_run(tmp_path / "C", {"z": ("mini", [True])}), tmp_path / "A")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("show") / "run"
    evaluate(__import__("ha_envs").load_suite("mini")[10:11], policy="oracle", harness="h2", out_dir=out)
    return out


def test_exports_traj_json_and_text(run_dir, capsys):
    rec = load_trajectory(run_dir / "trajectories.jsonl")
    [traj] = list((run_dir / "trajs" / "run1").glob("*/*.traj.json"))
    data = json.loads(traj.read_text())
    assert data["trajectory_format"] == "mini-swe-agent-1" and data["info"]["exit_status"] == "submitted"
    assert data["info"]["submission"] == rec["patch"] and len(data["messages"]) == len(rec["messages"])
    assert data == to_traj_json(rec)
    assert load_trajectory(traj)["instance_id"] == rec["instance_id"]
    assert main(["show-trajectory", str(run_dir / "trajectories.jsonl")]) == 0
    text = capsys.readouterr().out
    assert "outcome   resolved; termination submitted" in text and "hook      review_on_submit ×1" in text
    assert "── final diff" in text and rec["patch"].splitlines()[0] in text


def test_html_page_renders_in_headless_chromium(run_dir, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed but CI is set: .ci/run must install it")
        pytest.skip("chromium not installed")
    page = tmp_path / "t.html"
    assert main(["show-trajectory", str(run_dir / "trajectories.jsonl"), "--html", str(page)]) == 0
    rec = load_trajectory(run_dir / "trajectories.jsonl")
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    # the page's script ran in the browser and counted the messages by source
    n_hook = sum(1 for m in rec["messages"] if m.get("source", "").startswith("hook:"))
    n_tool = sum(1 for m in rec["messages"] if m.get("source") == "tool")
    assert f"hook: {n_hook}" in dom and f"tool: {n_tool}" in dom and n_hook >= 1
    assert dom.count('class="msg ') == len(rec["messages"])
    assert 'class="add"' in dom and "review_on_submit" in dom


def test_html_escapes_everything():
    rec = {"instance_id": "<x>", "messages": [{"role": "user", "content": "<script>alert(1)</script>", "source": "tool"}],
           "patch": "+<b>", "hooks": {}}
    page = render_html(rec)
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page and "+&lt;b&gt;" in page
