"""Reading, exporting and rendering trajectory records (one ``trajectories.jsonl`` line each).

- ``load_trajectory(path, instance_id, run)``: one record, from a trajectories.jsonl or a traj.json;
- ``write_traj_json(records, out)``: mini-swe-agent-style ``<out>/trajs/run<k>/<id>/<id>.traj.json``;
- ``render_text`` / ``render_html``: one episode, readable: messages coloured by source, hook
  firings, tool counts, the grade and the final diff. The HTML page is self-contained.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

TRAJ_FORMAT = "mini-swe-agent-1"


def load_trajectory(path: str | Path, instance_id: str | None = None, run: int | None = None) -> dict[str, Any]:
    path = Path(path)
    text = path.read_text()
    if path.suffix == ".json":
        data = json.loads(text)
        rec = dict(data.get("info", {}).get("record") or {})
        rec.setdefault("messages", data.get("messages", []))
        return rec
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    for r in records:
        if (instance_id is None or r["instance_id"] == instance_id) and (run is None or int(r.get("run", 1)) == run):
            return r
    raise ValueError(f"{path}: no episode" + (f" of {instance_id}" if instance_id else "") + (f" run {run}" if run else ""))


def to_traj_json(rec: dict[str, Any]) -> dict[str, Any]:
    """mini-swe-agent's trajectory layout; our full record rides along under ``info.record``."""
    summary = {k: v for k, v in rec.items() if k not in ("messages", "token_ids", "loss_mask", "logprobs")}
    return {
        "trajectory_format": TRAJ_FORMAT,
        "info": {"exit_status": rec.get("termination"), "submission": rec.get("patch", ""),
                 "model_stats": {"api_calls": len(rec.get("model_calls") or [])},
                 "resolved": rec.get("resolved"), "record": summary},
        "messages": [{"role": m["role"], "content": m.get("content") or "",
                      **({"tool_calls": m["tool_calls"]} if m.get("tool_calls") else {}),
                      "extra": {k: v for k, v in m.items() if k not in ("role", "content", "tool_calls")}}
                     for m in rec.get("messages", [])],
    }


def write_traj_json(records: list[dict[str, Any]], out: Path) -> list[Path]:
    written = []
    for r in records:
        d = out / "trajs" / f"run{int(r.get('run', 1))}" / r["instance_id"]
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"{r['instance_id']}.traj.json"
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(to_traj_json(r), indent=1))
        tmp.replace(p)
        written.append(p)
    return written


def _kind(m: dict[str, Any]) -> str:
    src = m.get("source") or ("policy" if m["role"] == "assistant" else m["role"])
    if m.get("error_kind"):
        return "error"
    return "hook" if src.startswith("hook:") else src


def _body(m: dict[str, Any]) -> str:
    text = m.get("content") or ""
    for tc in m.get("tool_calls") or []:
        fn = tc.get("function", {})
        text += ("\n" if text else "") + f"→ {fn.get('name')}({fn.get('arguments')})"
    return text


def _header(rec: dict[str, Any]) -> list[tuple[str, str]]:
    grade = rec.get("grade") or {}
    return [("instance", rec.get("instance_id", "?")), ("model", str(rec.get("model") or rec.get("policy"))),
            ("harness", f"{rec.get('harness')} ({rec.get('harness_hash', '')})"),
            ("outcome", f"{'resolved' if rec.get('resolved') else 'not resolved'}; termination {rec.get('termination')}"
                        + (" (masked)" if rec.get("mask_sample") else "")),
            ("grade", grade.get("status", "-")), ("turns", str(rec.get("turns"))),
            ("tools", ", ".join(f"{k}×{v}" for k, v in (rec.get("tool_counts") or {}).items()) or "-")]


def render_text(rec: dict[str, Any]) -> str:
    lines = [f"{k:9} {v}" for k, v in _header(rec)]
    for name, h in (rec.get("hooks") or {}).items():
        lines.append(f"hook      {name} ×{h['count']}: {'; '.join(h['reasons'][:5])}")
    for m in rec.get("messages", []):
        lines.append(f"\n── {m['role']} [{m.get('source', '')}{' ' + m['error_kind'] if m.get('error_kind') else ''}]")
        lines.append(_body(m))
    lines.append("\n── final diff")
    lines.append(rec.get("patch") or "(empty)")
    return "\n".join(lines)


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d1f23}
header{background:#1d2733;color:#fff;padding:14px 22px}header table td{padding:1px 12px 1px 0}
main{max-width:1100px;margin:0 auto;padding:16px}
.msg{border-radius:6px;margin:10px 0;padding:8px 12px;border-left:5px solid #999;background:#fff}
.msg .who{font-size:12px;color:#555;margin-bottom:4px}
.msg pre{white-space:pre-wrap;word-break:break-word;margin:0;font:12.5px/1.4 ui-monospace,monospace}
.system{border-color:#8a8f98;background:#eceef1}.task{border-color:#2f6fdb;background:#eaf1fd}
.policy{border-color:#1f9d55;background:#e9f7ef}.tool{border-color:#5b6470}
.hook{border-color:#e08a00;background:#fff5e5}.error{border-color:#d93025;background:#fdecea}
.skill{border-color:#8e44ad;background:#f5ecfa}
table.hooks td,table.hooks th{padding:3px 10px;text-align:left;border-bottom:1px solid #ddd}
.diff .add{color:#137333}.diff .del{color:#b3261e}.diff .hunk{color:#5b6470}
"""

_JS = """
const counts = {};
document.querySelectorAll('.msg').forEach(m => { const k = m.dataset.kind; counts[k] = (counts[k] || 0) + 1; });
document.getElementById('stats').textContent =
  Object.keys(counts).sort().map(k => k + ': ' + counts[k]).join(', ');
"""


def render_html(rec: dict[str, Any]) -> str:
    e = html.escape
    head = "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in _header(rec))
    hooks = "".join(f"<tr><td>{e(n)}</td><td>{h['count']}</td><td>{e('; '.join(h['reasons']))}</td></tr>"
                    for n, h in (rec.get("hooks") or {}).items())
    msgs = []
    for i, m in enumerate(rec.get("messages", [])):
        kind = _kind(m)
        who = f"#{i} {m['role']} · {m.get('source', '')}" + (f" · {m['error_kind']}" if m.get("error_kind") else "")
        body = e(_body(m))
        if len(body) > 4000:
            body = f"<details><summary>{len(body)} chars</summary>{body}</details>"
        msgs.append(f'<div class="msg {kind}" data-kind="{kind}"><div class="who">{e(who)}</div><pre>{body}</pre></div>')
    diff_lines = []
    for line in (rec.get("patch") or "").splitlines():
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else "hunk" if line.startswith("@@") else ""
        diff_lines.append(f'<span class="{cls}">{e(line)}</span>')
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{e(rec.get('instance_id', 'trajectory'))}</title>"
            f"<style>{_CSS}</style></head><body><header><table>{head}</table><div>messages: <span id='stats'></span>"
            f"</div></header><main><h3>Hook firings</h3><table class='hooks'><tr><th>hook</th><th>count</th><th>reasons</th>"
            f"</tr>{hooks or '<tr><td colspan=3>none</td></tr>'}</table><h3>Conversation</h3>{''.join(msgs)}"
            f"<h3>Final diff</h3><pre class='diff' id='diff'>{chr(10).join(diff_lines) or '(empty)'}</pre></main>"
            f"<script>{_JS}</script></body></html>")
