"""`ha compare` (paired bootstrap over instances, pooled by benchmark), trajectory exports and
`ha show-trajectory` (text, and an HTML page checked in headless Chromium)."""

from __future__ import annotations

import json
import os
import shutil
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

from tests.ha_agents.conftest import h2_plan_responder

from ha_agents.runs.compare import compare
from ha_agents.runs.evaluate import evaluate
from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.records.export import load_trajectory, to_traj_json
from ha_agents.records.viewer import diff_lines, render_html, token_texts
from ha_cli.main import main
from ha_envs.actions import ToolCall


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
    # the exact test beside it: 20 verified units rose by 1 and none fell (p = 2 * 2^-20); on pro one
    # unit rose, which relabelling the sides gives half the time (two-sided: 1)
    assert rows["verified"].p_exact == pytest.approx(2 * 2.0 ** -20) and rows["pro"].p_exact == 1.0
    assert res.pooled.p_exact == pytest.approx(2 * 2.0 ** -21) and "| exact p |" in res.markdown()
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
    assert data["pooled"]["p_exact"] == 1.0
    assert (tmp_path / "cmp" / "compare.md").read_text().startswith("B = ")
    with pytest.raises(ValueError, match="share no instance"):
        compare(fake_run(tmp_path / "C", {"z": ("mini", [True])}), tmp_path / "A")


def test_compare_replicates_pair_by_position_through_the_cli(tmp_path, capsys):
    """Seeds as replicates: A1,A2 vs B1,B2 pairs replicate k with replicate k, one unit per
    (instance, replicate); the CI widens with the spread between replicates; unequal counts refuse."""
    inst = [f"t{i}" for i in range(4)]
    a1 = fake_run(tmp_path / "A1", {i: ("mini", [False] * 4) for i in inst})
    a2 = fake_run(tmp_path / "A2", {i: ("mini", [False] * 4) for i in inst})
    b1 = fake_run(tmp_path / "B1", {i: ("mini", [True] * 4) for i in inst})       # replicate 1: +100 points
    b2 = fake_run(tmp_path / "B2", {i: ("mini", [False] * 4) for i in inst})      # replicate 2: no gain
    assert main(["compare", f"{a1},{a2}", f"{b1},{b2}", "--json", "--samples", "2000"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pooled"]["n"] == 8 and data["pooled"]["diff"] == pytest.approx(0.5)
    assert 0 < data["pooled"]["ci_low"] < 0.5 < data["pooled"]["ci_high"] < 1.0
    assert data["pooled"]["p_exact"] == pytest.approx(2 / 16)  # 4 units of +1 (the other 4 tie): 2 * 2^-4
    one = compare(a1, b1, samples=2000)
    assert one.pooled.n == 4 and one.pooled.ci_low == one.pooled.ci_high == 1.0  # one replicate hides the spread
    assert "(instance, replicate) pairs" in compare(f"{a1},{a2}", [b1, b2], samples=500).markdown()
    with pytest.raises(ValueError, match="pair by position"):
        compare(f"{a1},{a2}", b1)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("show") / "run"
    evaluate(__import__("ha_envs").load_suite("mini")[10:11], "oracle", "h2", out_dir=out)
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


def browser_dom(page):
    """The page's DOM after its scripts ran, from headless Chromium."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed but CI is set: .ci/run must install it")
        pytest.skip("chromium not installed")
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120).stdout


def ha(*args, cwd=None):
    """The installed `ha` command, as a user runs it."""
    exe = Path(sys.executable).with_name("ha")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "ha_cli.main"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, timeout=300, cwd=cwd)


def spans(html_text, cls_pattern=r"[\w ]+"):
    """(class, text) of every ``<span class=...>`` in a piece of serialized DOM."""
    return [(c, unescape(t)) for c, t in re.findall(rf'<span class="({cls_pattern})">(.*?)</span>', html_text, re.S)]


def pre_texts(html_text, cls):
    return [unescape(t) for t in re.findall(rf'<pre class="{cls}">(.*?)</pre>', html_text, re.S)]


TEST_ROW = r'<tr class="test" data-set="(\w+)"><td>\w+</td><td>(.*?)</td><td class="st (\w+)">(\w+)</td>'


def section(dom, start_id, end_marker):
    return dom[dom.index(f'id="{start_id}"'):dom.index(end_marker)]


def assert_diff_coloured_by_structure(pre_html, patch):
    lines = spans(pre_html, r"hdr|hunk|add|del|ctx|meta")
    headers = [(c, t) for c, t in lines if t.startswith(("diff --git", "index ", "--- ", "+++ "))]
    assert headers and {c for c, _ in headers} == {"hdr"}  # file headers are never additions / removals
    assert {c for c, t in lines if t.startswith("+") and not t.startswith("+++ ")} == {"add"}
    assert {c for c, t in lines if t.startswith("-") and not t.startswith("--- ")} == {"del"}
    assert {c for c, t in lines if t.startswith("@@")} == {"hunk"}
    assert [t for _, t in lines] == patch.rstrip("\n").split("\n")


def test_html_page_renders_in_headless_chromium(run_dir, tmp_path):
    page = tmp_path / "t.html"
    assert main(["show-trajectory", str(run_dir / "trajectories.jsonl"), "--html", str(page)]) == 0
    rec = load_trajectory(run_dir / "trajectories.jsonl")
    dom = browser_dom(page)
    # the page's script ran in the browser and counted the messages by source
    n_hook = sum(1 for m in rec["messages"] if m.get("source", "").startswith("hook:"))
    n_tool = sum(1 for m in rec["messages"] if m.get("source") == "tool")
    assert f"hook: {n_hook}" in dom and f"tool: {n_tool}" in dom and n_hook >= 1
    assert dom.count('class="msg ') == len(rec["messages"])
    assert 'class="add"' in dom and "review_on_submit" in dom
    # native tool calls: every edit's old and new text shown verbatim, as a before / after pair
    edits = [json.loads(tc["function"]["arguments"]) for m in rec["messages"] for tc in m.get("tool_calls") or []
             if tc["function"]["name"] == "edit_file"]
    conversation = section(dom, "conversation", 'id="diff"')
    assert edits and pre_texts(conversation, "arg before") == [a["old_str"] for a in edits]
    assert pre_texts(conversation, "arg after") == [a["new_str"] for a in edits]
    assert "\\n" not in conversation.split('class="msg policy"', 1)[1]  # no JSON-escaped arguments
    # every F2P / P2P test of the grade, with its status
    rows = re.findall(TEST_ROW, dom)
    grade = rec["grade"]
    assert {(s, unescape(n), st) for s, n, _, st in rows} == (
        {("FAIL_TO_PASS", n, st) for n, st in grade["fail_to_pass"].items()}
        | {("PASS_TO_PASS", n, st) for n, st in grade["pass_to_pass"].items()})
    assert {c for *_, c, st in rows} == {"pass"} and "resolved · reward 1.0" in dom
    assert_diff_coloured_by_structure(dom[dom.index('id="diff"'):], rec["patch"])


INJECTED = ("echo '<script>document.body.dataset.pwned = 1</script>"
            "<img src=x onerror=\"document.body.dataset.pwned = 2\">'")


@pytest.fixture(scope="module")
def token_run(tmp_path_factory, tokenizer):
    """`ha eval` in token mode (a tokenizer.json, ChatML) against an OpenAI-compatible server: one
    correct edit of two (so F2P fails, P2P passes), a bash call echoing HTML, run_tests, submit."""
    root = tmp_path_factory.mktemp("tokens")
    tokenizer.save(str(root / "tokenizer.json"))
    task, plan, respond = h2_plan_responder(tokenizer, [ToolCall("bash", {"command": INJECTED}), ToolCall("run_tests", {})])

    with FakeOpenAIServer(respond, tokenizer=tokenizer) as srv:
        done = ha("eval", "--suite", "mini", "--instances", task.instance_id, "--model", f"openai:fake@{srv.url}",
                  "--harness", "h2", "--tokenizer", root / "tokenizer.json", "--template", "chatml",
                  "--out", root / "run")
    assert done.returncode == 0, done.stderr
    return root, plan[0].arguments


def test_token_record_page_in_headless_chromium(token_run, tokenizer, tmp_path):
    root, edit = token_run
    rec = load_trajectory(root / "run" / "trajectories.jsonl")
    ids, mask = rec["token_ids"], rec["loss_mask"]
    assert ids and 0 < sum(mask) < len(ids) and not rec["token_error"] and not rec["resolved"]
    page = tmp_path / "tokens.html"
    done = ha("show-trajectory", root / "run" / "trajectories.jsonl", "--html", page,
              "--tokenizer", root / "tokenizer.json")
    assert done.returncode == 0 and f"wrote {page}" in done.stdout, done.stderr
    dom = browser_dom(page)
    # our script ran; the HTML the agent echoed (in a tool argument and its output) did not
    assert "policy: " in dom and "pwned" in dom
    assert "data-pwned" not in dom and dom.count("<script>") == 1
    assert "&lt;script&gt;document.body.dataset.pwned = 1&lt;/script&gt;&lt;img" in dom
    # grade panel: all 11 F2P failed (half a fix), all P2P passed, each coloured by status
    rows = re.findall(TEST_ROW, dom)
    assert {(s, c, st) for s, _, c, st in rows} == {("FAIL_TO_PASS", "fail", "FAILED"), ("PASS_TO_PASS", "pass", "PASSED")}
    assert len(rows) == len(rec["grade"]["fail_to_pass"]) + len(rec["grade"]["pass_to_pass"])
    assert "not resolved · reward 0.0 · status unresolved" in dom
    # a text-format (hermes) call: the edit's old / new text as text, not JSON-escaped
    conversation = section(dom, "conversation", 'id="tokens"')
    assert pre_texts(conversation, "arg before") == [edit["old_str"]]
    assert pre_texts(conversation, "arg after") == [edit["new_str"]]
    assert '\\"\\"\\"Money helpers' not in conversation and "<tool_call>" not in conversation.split("#2 assistant")[1]
    # diffs (the review hook's, the final one): headers are headers
    review = next(m["content"] for m in rec["messages"] if m.get("source") == "hook:review_on_submit")
    hook_html = conversation[conversation.index("hook:review_on_submit"):]
    review_diff = review[review.index("diff --git"):review.index("\n\n", review.index("@@"))]  # prose after it
    assert_diff_coloured_by_structure(hook_html[:hook_html.index("</pre>")], review_diff)
    assert_diff_coloured_by_structure(dom[dom.index('id="diff"'):], rec["patch"])
    # token view: one span per token, coloured by its loss mask, decoded, logprobs in the tooltips
    toks = re.findall(r'<span class="tok m(\d)" title="id (\d+)([^"]*)">(.*?)</span>', dom, re.S)
    assert [int(t[1]) for t in toks] == ids and [int(t[0]) for t in toks] == mask
    assert "".join(unescape(t[3]) for t in toks) == tokenizer.decode(ids, skip_special_tokens=False)
    eos = tokenizer.token_to_id("<|im_end|>")  # appended by the loop (the server stops before it): no logprob
    assert {t[2] for t in toks if t[0] == "1" and int(t[1]) != eos} == {" · logprob -0.5000"}
    assert {t[2] for t in toks if t[0] == "1" and int(t[1]) == eos} == {""}
    assert 'class="key m1"' in dom and 'class="key m0"' in dom and "model turn 4" in dom


def test_token_view_without_a_tokenizer_shows_ids(token_run):
    root, _ = token_run
    rec = load_trajectory(root / "run" / "trajectories.jsonl")
    page = render_html(rec)
    toks = re.findall(r'<span class="tok m(\d)" title="id (\d+)[^"]*">(.*?)</span>', page)
    assert [(int(m), t) for m, _, t in toks] == [(m, f"{i} ") for m, i in zip(rec["loss_mask"], rec["token_ids"])]
    assert "pass --tokenizer to show text" in page


def test_token_texts_join_to_the_decoded_text(tokenizer):
    text = "price: 5 € or 4 £, ✓ done<|im_end|>\n"
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    texts = token_texts(ids, lambda i: tokenizer.decode(i, skip_special_tokens=False))
    assert len(texts) == len(ids) and "".join(texts) == text
    assert "" in texts and any("€" in t for t in texts)  # a character split across tokens shows once


def test_diff_lines_follow_hunks():
    patch = ("intro\ndiff --git a/q.sql b/q.sql\nindex 1..2 100644\n--- a/q.sql\n+++ b/q.sql\n@@ -1,3 +1,3 @@\n"
             " select 1;\n--- old comment\n+++ new comment\n x\n\\ No newline at end of file\n"
             "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+a = 1\n"
             "\nAll good? --- then submit\n")
    assert [r for r, _ in diff_lines(patch)] == [
        "", "hdr", "hdr", "hdr", "hdr", "hunk", "ctx", "del", "add", "ctx", "meta",
        "hdr", "hdr", "hdr", "hdr", "hunk", "add", "", "", ""]


def test_html_escapes_everything():
    rec = {"instance_id": "<x>", "messages": [
        {"role": "user", "content": "<script>alert(1)</script>", "source": "tool"},
        {"role": "assistant", "source": "policy", "content": '<tool_call>{"name": "bash", "arguments": '
         '{"command": "<script>alert(2)</script>"}}</tool_call>', "tool_calls": [
             {"id": "c\"1", "function": {"name": "<b>edit</b>", "arguments": {"old_x": "<i>\n", "new_x": "</pre>"}}},
             {"id": "c2", "function": {"name": "bash", "arguments": "{not json <script>"}}]}],
           "patch": "+<b>", "hooks": {}, "grade": {"resolved": False, "status": "unresolved",
                                                     "fail_to_pass": {"t<script>": "FAILED"}, "flags": ["<f>"]},
           "token_ids": [1, 2], "loss_mask": [0, 1], "logprobs": [None, -0.1]}
    page = render_html(rec, tokenizer=type("T", (), {"decode": lambda self, ids, **kw: "<s>" * len(ids)})())
    assert page.count("<script>") == 1 and "&lt;script&gt;alert(1)" in page and "&lt;script&gt;alert(2)" in page
    assert "+&lt;b&gt;" in page and "&lt;b&gt;edit&lt;/b&gt;" in page and "&lt;/pre&gt;" in page
    assert 'c&quot;1' in page and "{not json &lt;script&gt;" in page and "t&lt;script&gt;" in page
    assert '<span class="tok m0" title="id 1">&lt;s&gt;</span>' in page


def test_grade_panel_shows_each_status_and_the_rules_split():
    grade = {"resolved": False, "status": "unresolved", "verdict_rules": "swebench 4.1.0 (pass_and_fail)",
             "fail_to_pass": {"a": "XFAIL"}, "pass_to_pass": {"b": "SKIPPED", "c": "MISSING"},
             "tests_status": {"FAIL_TO_PASS": {"success": ["a"], "failure": []},
                              "PASS_TO_PASS": {"success": ["b"], "failure": ["c"]}},
             "flags": ["touches_test_infrastructure"], "suspicion": ["edits tests/conftest.py"]}
    page = render_html({"instance_id": "x", "messages": [], "reward": 0.0, "grade": grade})
    rows = re.findall(r'<tr class="test" data-set="(\w+)"><td>\w+</td><td>(\w+)</td><td class="st (\w+)">(\w+)</td>'
                      r'<td class="st (\w+)">(\w+)</td></tr>', page)
    assert rows == [("FAIL_TO_PASS", "a", "skip", "XFAIL", "pass", "success"),
                    ("PASS_TO_PASS", "b", "skip", "SKIPPED", "pass", "success"),
                    ("PASS_TO_PASS", "c", "missing", "MISSING", "fail", "failure")]
    assert "FAIL_TO_PASS 1/1 passed · PASS_TO_PASS 1/2 passed · rules swebench 4.1.0 (pass_and_fail)" in page
    assert '<li class="flag"><b>touches_test_infrastructure</b></li>' in page and "edits tests/conftest.py" in page
