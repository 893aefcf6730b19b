"""The HTML page of one trajectory record (``ha show-trajectory --html``).

One self-contained file (inline CSS, one small script that counts messages by source; no network):
the header, the grade (resolved, reward, every FAIL_TO_PASS / PASS_TO_PASS test with its status,
integrity flags), hook firings, the conversation with tool calls as argument lists (multi-line
values as text; ``old_*`` / ``new_*`` pairs side by side as before / after), diffs coloured by the
structure of the patch, and for token-mode records the token view: every token a span coloured by
its loss mask, its id and logprob in the tooltip, decoded when a tokenizer is given.

Everything taken from the record is escaped: tool arguments and outputs are untrusted text.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any, Callable

from .export import grade_tally, header_fields, message_kind

COLLAPSE_CHARS = 4000
"""Text blocks longer than this start folded (still in the page)."""

FOLD_TOKENS = 600
"""Runs of loss-mask-0 tokens longer than this start folded in the token view."""

STATUS_CLASS = {"PASSED": "pass", "SKIPPED": "skip", "XFAIL": "skip", "MISSING": "missing"}
"""A test status's colour; any other status (FAILED, ERROR, ...) is ``fail``."""

_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_FILE_HEADER = ("diff --git ", "index ", "--- ", "+++ ", "new file mode", "deleted file mode", "old mode", "new mode",
                "similarity index", "dissimilarity index", "rename from", "rename to", "copy from", "copy to",
                "Binary files")
_HERMES_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


def e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def diff_lines(text: str) -> list[tuple[str, str]]:
    """Each line of ``text`` with its role in a diff: ``hdr`` (file headers: ``diff --git``,
    ``index``, ``---``, ``+++``, modes, renames), ``hunk`` (``@@``), ``add``, ``del``, ``ctx``,
    ``meta`` (``\\ No newline``), or ``""`` (not part of a diff: prose around it). Hunk lengths are
    followed, so a removed line reading ``--- x`` stays a removal."""
    out: list[tuple[str, str]] = []
    lines = text.split("\n")
    old = new = 0
    in_patch = False
    for j, line in enumerate(lines):
        if old > 0 or new > 0:
            role = {"+": "add", "-": "del", "\\": "meta"}.get(line[:1], "ctx" if line[:1] in (" ", "") else None)
            if role is not None:
                old -= role in ("del", "ctx")
                new -= role in ("add", "ctx")
                out.append((role, line))
                continue
            old = new = 0  # a hunk shorter than its header says: stop following it
        starts = line.startswith("diff --git ") or (
            line.startswith("--- ") and j + 1 < len(lines) and lines[j + 1].startswith("+++ "))
        in_patch = in_patch or starts
        hunk = _HUNK.match(line) if in_patch else None
        if hunk:
            old, new = int(hunk[1] or 1), int(hunk[2] or 1)
            out.append(("hunk", line))
        elif in_patch and line.startswith(_FILE_HEADER):
            out.append(("hdr", line))
        elif in_patch and line.startswith("\\"):
            out.append(("meta", line))
        else:
            in_patch = False
            out.append(("", line))
    return out


def _diff_html(text: str) -> str:
    return "\n".join(f'<span class="{role}">{e(line)}</span>' if role else e(line) for role, line in diff_lines(text))


def _pre(text: str, cls: str) -> str:
    block = f'<pre class="{cls}">{_diff_html(text)}</pre>'
    if len(text) > COLLAPSE_CHARS:
        return f"<details><summary>{len(text)} chars</summary>{block}</details>"
    return block


def _value(value: Any) -> str:
    if not isinstance(value, str):
        return f'<code class="arg">{e(json.dumps(value))}</code>'
    if "\n" in value or len(value) > 80:
        return _pre(value, "arg")
    return f'<code class="arg">{e(value)}</code>'


def _call(name: str, args: Any, call_id: str | None = None) -> str:
    """One tool call: its name and arguments as a key / value list; ``old_X`` with ``new_X`` as a
    before / after pair."""
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            pass
    cid = f' <span class="cid">{e(call_id)}</span>' if call_id else ""
    head = f'<div class="fn">→ {e(name)}{cid}</div>'
    if not isinstance(args, dict):
        bad = '<div class="bad">arguments (not a JSON object)</div>'
        return f'<div class="call">{head}{bad}{_pre(str(args), "arg")}</div>'
    rows = []
    for key, value in args.items():
        if key.startswith("new_") and "old_" + key[4:] in args:
            continue  # shown with its old_ pair
        pair = "new_" + key[4:] if key.startswith("old_") else None
        if pair in args:
            before = f'<div><div class="k">{e(key)} (before)</div>{_pre(str(value), "arg before")}</div>'
            after = f'<div><div class="k">{e(pair)} (after)</div>{_pre(str(args[pair]), "arg after")}</div>'
            rows.append(f'<div class="pair">{before}{after}</div>')
        else:
            rows.append(f'<div class="kv"><span class="k">{e(key)}</span>{_value(value)}</div>')
    return f'<div class="call">{head}{"".join(rows) or "<div class=k>(no arguments)</div>"}</div>'


def _content(text: str) -> str:
    """Message text; hermes ``<tool_call>{json}</tool_call>`` blocks in it are shown as calls."""
    parts, at = [], 0
    for m in _HERMES_CALL.finditer(text):
        try:
            call = json.loads(m[1])
        except json.JSONDecodeError:
            continue
        if not isinstance(call, dict) or "name" not in call:
            continue
        if text[at:m.start()].strip():
            parts.append(_pre(text[at:m.start()].strip("\n"), "text"))
        parts.append(_call(str(call["name"]), call.get("arguments", {})))
        at = m.end()
    if text[at:].strip():
        parts.append(_pre(text[at:].strip("\n") if at else text, "text"))
    return "".join(parts)


def _message(i: int, m: dict[str, Any]) -> str:
    kind = message_kind(m)
    who = " · ".join(str(x) for x in (f"#{i} {m['role']}", m.get("source"), m.get("name"), m.get("error_kind")) if x)
    fns = [(tc.get("function") or {}, tc.get("id")) for tc in m.get("tool_calls") or []]
    calls = "".join(_call(str(fn.get("name")), fn.get("arguments"), cid) for fn, cid in fns)
    return (f'<div class="msg {e(kind)}" data-kind="{e(kind)}"><div class="who">{e(who)}</div>'
            f'{_content(m.get("content") or "")}{calls}</div>')


def _grade(rec: dict[str, Any]) -> str:
    grade = rec.get("grade") or {}
    if not grade:
        why = rec.get("error") or f"termination {rec.get('termination')}"
        return f'<p class="verdict unresolved">not graded: {e(why)}</p>'
    ok = bool(grade.get("resolved"))
    facts = [f"reward {rec.get('reward')}", f"status {grade.get('status')}", grade_tally(grade)]
    facts += [f"{label} {grade[k]}" for k, label in (("verdict_rules", "rules"), ("applied_with", "applied with"))
              if grade.get(k)]
    verdict = f'<p class="verdict {"resolved" if ok else "unresolved"}">{"resolved" if ok else "not resolved"} · ' \
              f'{e(" · ".join(facts))}</p>'
    notes = [f'<li class="flag"><b>{e(f)}</b></li>' for f in rec.get("flags") or grade.get("flags") or []]
    notes += [f'<li class="flag">{e(s)}</li>' for s in grade.get("suspicion") or []]
    notes += [f'<li class="flag">tampering: {e(s)}</li>' for s in grade.get("tampering") or []]
    notes += [f'<li>{label}: {e(", ".join(grade[k]))}</li>' for k, label in
              (("dropped_paths", "edits dropped before grading"), ("restored_paths", "restored from the base"))
              if grade.get(k)]
    if grade.get("error"):
        notes.append(f'<li class="flag">error: {e(grade["error"])}</li>')
    split = grade.get("tests_status") or {}  # the rule's success / failure per test, where the grader gives it
    rows = []
    for key, label in (("fail_to_pass", "FAIL_TO_PASS"), ("pass_to_pass", "PASS_TO_PASS")):
        success = set((split.get(label) or {}).get("success") or [])
        for name, status in (grade.get(key) or {}).items():
            counts = (f'<td class="st {"pass" if name in success else "fail"}">'
                      f'{"success" if name in success else "failure"}</td>' if split else "")
            rows.append(f'<tr class="test" data-set="{label}"><td>{label}</td><td>{e(name)}</td>'
                        f'<td class="st {STATUS_CLASS.get(status, "fail")}">{e(status)}</td>{counts}</tr>')
    head = "<tr><th>set</th><th>test</th><th>status</th>" + ("<th>verdict</th>" if split else "") + "</tr>"
    table = f'<table class="tests">{head}{"".join(rows)}</table>' if rows else "<p>no per-test statuses</p>"
    log = (f"<details><summary>test log (tail)</summary><pre class='text'>{e(grade['log_tail'])}</pre></details>"
           if grade.get("log_tail") else "")
    return verdict + (f'<ul class="flags">{"".join(notes)}</ul>' if notes else "") + table + log


Decode = Callable[[list[int]], str]


def token_texts(ids: list[int], decode: Decode, window: int = 8) -> list[str]:
    """Each token's own text, so that the texts join to ``decode(ids)``: decoded in context (a
    sentencepiece word start keeps its space), and a token that ends inside a multi-byte character
    gets ``""`` while the token completing it carries the character."""
    out: list[str] = []
    start = 0  # the first token whose text is not yet out
    for i in range(len(ids)):
        w = max(0, start - window)
        before, now = decode(ids[w:start]), decode(ids[w:i + 1])
        if now.endswith("\ufffd") and i + 1 - start < 4:
            out.append("")
            continue
        out.append(now[len(before):] if now.startswith(before) else decode(ids[start:i + 1]))
        start = i + 1
    return out


def _tokens(rec: dict[str, Any], decode: Decode | None) -> str:
    ids = rec.get("token_ids") or []
    if not ids:
        return ""
    mask = list(rec.get("loss_mask") or []) + [0] * len(ids)
    lps = list(rec.get("logprobs") or []) + [None] * len(ids)
    texts = token_texts(ids, decode) if decode else [f"{t} " for t in ids]
    segs, turn, i = [], 0, 0
    while i < len(ids):
        j = i
        while j < len(ids) and mask[j] == mask[i]:
            j += 1
        m = 1 if mask[i] else 0
        turn += m
        label = f"model turn {turn}" if m else ("prompt" if i == 0 else "observation")
        spans = "".join(f'<span class="tok m{m}" title="id {t}' + (f' · logprob {lp:.4f}' if lp is not None else "")
                        + f'">{e(x)}</span>' for t, x, lp in zip(ids[i:j], texts[i:j], lps[i:j]))
        title = f"{label} · {j - i} tokens · loss mask {m}"
        body = f'<pre class="toks">{spans}</pre>'
        if not m and j - i > FOLD_TOKENS:  # long prompts and tool outputs start folded
            body = f"<details><summary>show</summary>{body}</details>"
        segs.append(f'<div class="seg m{m}"><div class="who">{title}</div>{body}</div>')
        i = j
    how = "decoded with the given tokenizer" if decode else "token ids (pass --tokenizer to show text)"
    error = f'<p class="bad">{e(rec["token_error"])}</p>' if rec.get("token_error") else ""
    legend = ('<span class="key m1">trained (loss mask 1)</span> <span class="key m0">not trained (loss mask 0)</span>'
              f" · {len(ids)} tokens, {sum(mask[:len(ids)])} trained · {how}; hover a token for its id and logprob")
    return f'<h3 id="tokens">Tokens</h3><p class="legend">{legend}</p>{error}{"".join(segs)}'


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d1f23}
header{background:#1d2733;color:#fff;padding:14px 22px}header table td{padding:1px 12px 1px 0}
header a{color:#9cc3ff;margin-right:12px}
main{max-width:1100px;margin:0 auto;padding:16px}
pre{white-space:pre-wrap;word-break:break-word;margin:0;font:12.5px/1.4 ui-monospace,monospace}
.msg{border-radius:6px;margin:10px 0;padding:8px 12px;border-left:5px solid #999;background:#fff}
.who{font-size:12px;color:#555;margin-bottom:4px}
.system{border-color:#8a8f98;background:#eceef1}.task{border-color:#2f6fdb;background:#eaf1fd}
.policy{border-color:#1f9d55;background:#e9f7ef}.tool{border-color:#5b6470}
.hook{border-color:#e08a00;background:#fff5e5}.error{border-color:#d93025;background:#fdecea}
.skill{border-color:#8e44ad;background:#f5ecfa}
.call{margin:6px 0;padding:6px 8px;background:#ffffffb0;border:1px solid #cfd8d3;border-radius:4px}
.fn{font-weight:600;font-family:ui-monospace,monospace}.cid{color:#888;font-weight:400;font-size:11px}
.kv{margin:3px 0}.k{font-size:12px;color:#555;margin-right:8px}
pre.arg{background:#f6f8fa;border:1px solid #e1e4e8;padding:4px 6px;margin-top:2px}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:8px;margin:4px 0}
pre.before{background:#fdf0ef}pre.after{background:#eef8f1}
table.hooks td,table.hooks th,table.tests td,table.tests th{padding:3px 10px;text-align:left;border-bottom:1px solid #ddd}
table.tests{font:12.5px ui-monospace,monospace}
.st.pass{color:#137333}.st.fail{color:#b3261e;font-weight:600}.st.missing{color:#8a5a00;font-weight:600}.st.skip{color:#5b6470}
.verdict{font-weight:600}.verdict.resolved{color:#137333}.verdict.unresolved{color:#b3261e}
.flag{color:#b3261e}.bad{color:#b3261e}
.add{color:#137333;background:#e6f4ea}.del{color:#b3261e;background:#fce8e6}.hunk{color:#6f42c1}
.hdr{color:#1d2733;font-weight:600}.meta{color:#888}
pre.diff{background:#fff;padding:8px;border-radius:6px}
.seg{margin:6px 0;padding:4px 8px;background:#fff;border-radius:4px}
.tok{border-right:1px solid #0001}.tok.m1,.key.m1{background:#c8ecd4}.tok.m0,.key.m0{background:#eceef1;color:#555}
.key{padding:1px 6px;border-radius:3px}
"""

_JS = """
const counts = {};
document.querySelectorAll('.msg').forEach(m => { const k = m.dataset.kind; counts[k] = (counts[k] || 0) + 1; });
document.getElementById('stats').textContent =
  Object.keys(counts).sort().map(k => k + ': ' + counts[k]).join(', ');
"""


def render_html(rec: dict[str, Any], tokenizer: Any = None) -> str:
    """The page; ``tokenizer`` (``tokenizers.Tokenizer`` or Hugging Face) decodes the token view."""
    decode = (lambda ids: tokenizer.decode(ids, skip_special_tokens=False)) if tokenizer is not None else None
    head = "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in header_fields(rec))
    hooks = "".join(f"<tr><td>{e(n)}</td><td>{e(h['count'])}</td><td>{e('; '.join(h['reasons']))}</td></tr>"
                    for n, h in (rec.get("hooks") or {}).items())
    msgs = "".join(_message(i, m) for i, m in enumerate(rec.get("messages", [])))
    tokens = _tokens(rec, decode)
    links = [("grade", "grade"), ("conversation", "conversation")] + ([("tokens", "tokens")] if tokens else [])
    nav = "".join(f"<a href='#{a}'>{t}</a>" for a, t in links + [("diff", "final diff")])
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{e(rec.get('instance_id', 'trajectory'))}</title>"
            f"<style>{_CSS}</style></head><body><header><table>{head}</table><div>messages: <span id='stats'></span>"
            f"</div><nav>{nav}</nav></header><main><h3 id='grade'>Grade</h3>{_grade(rec)}"
            f"<h3>Hook firings</h3><table class='hooks'><tr><th>hook</th><th>count</th><th>reasons</th>"
            f"</tr>{hooks or '<tr><td colspan=3>none</td></tr>'}</table><h3 id='conversation'>Conversation</h3>{msgs}"
            f"{tokens}<h3>Final diff</h3><pre class='diff' id='diff'>{_diff_html(rec.get('patch') or '') or '(empty)'}"
            f"</pre></main><script>{_JS}</script></body></html>")
