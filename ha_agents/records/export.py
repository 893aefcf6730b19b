"""Reading, exporting and rendering trajectory records (one ``trajectories.jsonl`` line each).

- ``load_trajectory(path, instance_id, run)``: one record, from a trajectories.jsonl, a traj.json or
  an ATIF trajectory (``atif.py``);
- ``write_traj_json(records, out)``: mini-swe-agent-style ``<out>/trajs/run<k>/<id>/<id>.traj.json``;
- ``render_text``: one episode, readable: header, hook firings, messages, the final diff (the HTML
  page, ``viewer.render_html``, shows the same and more).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRAJ_FORMAT = "mini-swe-agent-1"


def load_trajectory(path: str | Path, instance_id: str | None = None, run: int | None = None) -> dict[str, Any]:
    path = Path(path)
    text = path.read_text()
    if path.suffix == ".json":
        data = json.loads(text)
        if str(data.get("schema_version", "")).startswith("ATIF-"):
            from .atif import from_atif

            return from_atif(data, str(path)).to_json()
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


def message_kind(m: dict[str, Any]) -> str:
    """How a message is coloured: ``system``, ``task``, ``policy``, ``tool``, ``hook``, ``skill`` or ``error``."""
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


def grade_tally(grade: dict[str, Any]) -> str:
    """``FAIL_TO_PASS 3/11 passed · PASS_TO_PASS 22/22 passed`` (the sets the grade has); by the
    verdict rule's split (``tests_status``) where the grade has one, else by PASSED."""
    parts = []
    for key in ("fail_to_pass", "pass_to_pass"):
        tests = grade.get(key) or {}
        split = (grade.get("tests_status") or {}).get(key.upper())
        if tests:
            ok = len(split["success"]) if split else sum(1 for s in tests.values() if s == "PASSED")
            parts.append(f"{key.upper()} {ok}/{len(tests)} passed")
    return " · ".join(parts) or "-"


def header_fields(rec: dict[str, Any]) -> list[tuple[str, str]]:
    grade = rec.get("grade") or {}
    fields = [("instance", rec.get("instance_id", "?")), ("model", str(rec.get("model") or rec.get("policy"))),
              ("harness", f"{rec.get('harness')} ({rec.get('harness_hash', '')})"),
              ("outcome", f"{'resolved' if rec.get('resolved') else 'not resolved'}; termination {rec.get('termination')}"
                          + (" (masked)" if rec.get("mask_sample") else "")),
              ("grade", grade.get("status", "-")), ("tests", grade_tally(grade)), ("reward", str(rec.get("reward"))),
              ("turns", str(rec.get("turns"))),
              ("tools", ", ".join(f"{k}×{v}" for k, v in (rec.get("tool_counts") or {}).items()) or "-")]
    ids = rec.get("token_ids") or []
    if ids:
        fields.append(("tokens", f"{len(ids)}, {sum(rec.get('loss_mask') or [])} trained (loss mask 1)"))
    return fields


def render_text(rec: dict[str, Any]) -> str:
    lines = [f"{k:9} {v}" for k, v in header_fields(rec)]
    for name, h in (rec.get("hooks") or {}).items():
        lines.append(f"hook      {name} ×{h['count']}: {'; '.join(h['reasons'][:5])}")
    for m in rec.get("messages", []):
        lines.append(f"\n── {m['role']} [{m.get('source', '')}{' ' + m['error_kind'] if m.get('error_kind') else ''}]")
        lines.append(_body(m))
    lines.append("\n── final diff")
    lines.append(rec.get("patch") or "(empty)")
    return "\n".join(lines)
