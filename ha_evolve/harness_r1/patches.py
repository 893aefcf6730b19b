"""Harness patches (``harnessadapt-patch-v1``): what a harness engineer writes instead of a whole
spec. A patch is a short list of operations on the current spec, read from model text and applied
purely; nothing in it runs on the host (rule hooks are data; script tools and code hooks run in the
sandbox, a code hook checked by its syntax tree only: ``ha_envs/harness/custom.py``).

The document (YAML or JSON)::

    format: harnessadapt-patch-v1        # optional; another value is refused
    ops:                                 # 1 to MAX_OPS operations, applied in order
      - {op: add_hook, hook: submit_gate}                      # a catalogue hook ...
      - {op: add_hook, hook: {name: test_after_edit, rule: {point: post_feedback, ...}}, before: submit_gate}
      - {op: add_hook, hook: {name: gate, rule: {point: pre_action, code: "def hook(ctx): ..."}}}   # a code hook
      - {op: replace_hook, name: budget_reminder, hook: {name: budget_reminder, params: {turns_left: 8}}}
      - {op: set_params, hook: stuck_detector, params: {same_step: 2}}     # or tool: NAME
      - {op: remove_hook, name: verification_reminder}
      - {op: add_tool, tool: run_tests}                        # or a script tool {name, script: {...}}

Components are written exactly as in a spec's ``tools:`` / ``hooks:`` lists. ``parse_patch(text)``
finds the document in a reply (the last ``<patch>...</patch>``, else the last fenced ``yaml`` /
``json`` block; a ``<think>`` block before it is kept for the log); ``apply_patch(spec, patch)``
returns the validated new spec or raises ``PatchError`` naming the operation and the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from ha_envs.harness import HarnessSpec, HarnessSpecError

FORMAT = "harnessadapt-patch-v1"
MAX_OPS = 8
OPS = ("add_hook", "replace_hook", "set_params", "remove_hook", "add_tool")
_KEYS = {"add_hook": {"hook"}, "replace_hook": {"name", "hook"}, "set_params": {"params"},
         "remove_hook": {"name"}, "add_tool": {"tool"}}
_OPTIONAL = {"add_hook": {"before"}, "set_params": {"hook", "tool"}, "add_tool": {"before"}}


class PatchError(ValueError):
    """The patch cannot be read or applied; ``stage`` is ``parse`` or ``apply``."""

    def __init__(self, message: str, stage: str = "apply") -> None:
        super().__init__(message)
        self.stage = stage


@dataclass(frozen=True)
class Patch:
    ops: tuple[dict[str, Any], ...]
    thinking: str = ""
    """The reply's ``<think>`` block before the patch, kept for the log."""
    raw: str = field(default="", repr=False)

    @property
    def points(self) -> list[str]:
        """What the patch touches: ``tools`` and the lifecycle points of the hooks it adds, replaces,
        re-parameterises or removes (a catalogue hook's points, a rule hook's ``point``), for the
        lifecycle ablation."""
        from ha_envs.harness import HOOKS

        out: set[str] = set()
        for op in self.ops:
            if op["op"] == "add_tool" or (op["op"] == "set_params" and "tool" in op):
                out.add("tools")
                continue
            item = op.get("hook", op.get("name"))
            name = _name(item)
            if isinstance(item, dict) and isinstance(item.get("rule"), dict):
                out.add(str(item["rule"].get("point", "?")))
            elif name in HOOKS:
                out.update(HOOKS[name].points)
            else:
                out.add("?")
        return sorted(out)


def _document(text: str) -> tuple[str, str]:
    """(the patch document, the thinking before it) from a model's reply."""
    tags = list(re.finditer(r"<patch>\s*(.*?)\s*</patch>", text, re.S))
    fences = list(re.finditer(r"```(?:ya?ml|json)\s*\n(.*?)```", text, re.S))
    hit = tags[-1] if tags else (fences[-1] if fences else None)
    if hit is None:
        raise PatchError("the reply holds no patch: put it in <patch>...</patch> or a ```yaml block", "parse")
    think = re.findall(r"<think>(.*?)</think>", text[:hit.start()], re.S)
    return hit.group(1), (think[-1].strip() if think else "")


def parse_patch(text: str) -> Patch:
    doc, thinking = _document(text)
    try:
        data = json.loads(doc) if doc.lstrip().startswith(("{", "[")) else yaml.safe_load(doc)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise PatchError(f"the patch is not valid YAML or JSON: {str(exc).splitlines()[0]}", "parse") from None
    if not isinstance(data, dict):
        raise PatchError(f"a patch is a mapping with `ops`, got {type(data).__name__}", "parse")
    unknown = set(data) - {"format", "ops"}
    if unknown:
        raise PatchError(f"unknown patch keys {sorted(unknown)} (a patch has `format` and `ops`)", "parse")
    if data.get("format", FORMAT) != FORMAT:
        raise PatchError(f"unknown patch format {data.get('format')!r}; this reader takes {FORMAT}", "parse")
    ops = data.get("ops")
    if not isinstance(ops, list) or not ops:
        raise PatchError("`ops` must be a non-empty list", "parse")
    if len(ops) > MAX_OPS:
        raise PatchError(f"{len(ops)} operations; a patch has at most {MAX_OPS}", "parse")
    for i, op in enumerate(ops, 1):
        if not isinstance(op, dict) or op.get("op") not in OPS:
            got = op.get("op") if isinstance(op, dict) else op
            raise PatchError(f"operation {i}: `op` must be one of {', '.join(OPS)}, got {got!r}", "parse")
        kind = op["op"]
        missing = _KEYS[kind] - set(op)
        extra = set(op) - _KEYS[kind] - _OPTIONAL.get(kind, set()) - {"op"}
        if missing or extra:
            raise PatchError(f"operation {i} ({kind}): " + "; ".join(
                ([f"missing {sorted(missing)}"] if missing else []) + ([f"unknown keys {sorted(extra)}"] if extra else [])),
                "parse")
        if kind == "set_params" and len({"hook", "tool"} & set(op)) != 1:
            raise PatchError(f"operation {i} (set_params): name exactly one of `hook: NAME` or `tool: NAME`", "parse")
    return Patch(tuple(dict(op) for op in ops), thinking, text)


def _name(item: Any) -> str | None:
    name = item.get("name") if isinstance(item, dict) else item
    return name if isinstance(name, str) else None  # a model may write anything there (a mapping, a list)


def _index(items: list[Any], name: str) -> int | None:
    return next((k for k, it in enumerate(items) if _name(it) == name), None)


def apply_patch(spec: HarnessSpec, patch: Patch) -> HarnessSpec:
    """The spec with every operation applied, validated; ``PatchError`` names the first that fails."""
    data = spec.to_dict()
    tools, hooks = list(data.get("tools") or []), list(data.get("hooks") or [])
    for i, op in enumerate(patch.ops, 1):
        kind = op["op"]
        where = f"operation {i} ({kind})"
        if kind in ("add_hook", "add_tool"):
            items, item = (hooks, op["hook"]) if kind == "add_hook" else (tools, op["tool"])
            name = _name(item)
            if not name:
                raise PatchError(f"{where}: the component needs a name")
            if _index(items, name) is not None:
                raise PatchError(f"{where}: the harness already has {name!r} (use replace_hook or set_params)")
            before = op.get("before") or ("submit" if kind == "add_tool" else None)
            at = _index(items, before) if before else None
            if op.get("before") and at is None:
                raise PatchError(f"{where}: no {op['before']!r} to insert before")
            items.insert(len(items) if at is None else at, item)
        elif kind in ("replace_hook", "remove_hook"):
            at = _index(hooks, op["name"])
            if at is None:
                raise PatchError(f"{where}: the harness has no hook {op['name']!r} "
                                 f"(hooks: {', '.join(str(_name(h)) for h in hooks) or 'none'})")
            if kind == "remove_hook":
                hooks.pop(at)
            else:
                hooks[at] = op["hook"]
        else:  # set_params
            items, name = (hooks, op["hook"]) if "hook" in op else (tools, op["tool"])
            at = _index(items, name)
            if at is None:
                raise PatchError(f"{where}: the harness has no {'hook' if 'hook' in op else 'tool'} {name!r}")
            if not isinstance(op["params"], dict):
                raise PatchError(f"{where}: `params` must be a mapping")
            cur = items[at]
            if isinstance(cur, dict) and ("rule" in cur or "script" in cur):
                raise PatchError(f"{where}: {name!r} is data-only; replace it instead of re-parameterising")
            params = {**(cur.get("params") or {} if isinstance(cur, dict) else {}), **op["params"]}
            items[at] = {"name": name, "params": params}
    data["tools"], data["hooks"] = tools, hooks
    try:
        return HarnessSpec.from_dict(data, origin="the patched harness").validate()
    except HarnessSpecError as exc:
        raise PatchError(f"the patched harness is invalid: {exc}") from None


def delta_ops(base: HarnessSpec, cand: HarnessSpec) -> list[dict[str, Any]]:
    """The operations that turn ``base`` into ``cand``: ``apply_patch(base, ...)`` then has
    ``cand``'s hash (tools added, hooks removed, added in place or replaced, tools re-parameterised).
    ``PatchError`` when the difference is not a patch's to make (a tool removed or moved, the
    parser, limits or prompt changed) or takes more than ``MAX_OPS`` operations. How a whole-spec
    proposer (the rule mutator, a teacher) is compared with the engineer on equal terms."""
    a, b = base.to_dict(), cand.to_dict()
    for key in ("base", "parser", "limits", "system_prompt"):
        if a[key] != b[key]:
            raise PatchError(f"the candidate changes the harness's {key}, which a patch cannot")
    ops: list[dict[str, Any]] = []
    a_tools = {_name(t): t for t in a["tools"]}
    if [n for n in map(_name, b["tools"]) if n in a_tools] != list(a_tools):
        raise PatchError("the candidate removes or reorders tools, which a patch cannot")
    for name, item in _changed(a["tools"], b["tools"], "add_tool", "tool", ops):
        if isinstance(item, dict) and ("script" in item or "rule" in item):
            raise PatchError(f"the candidate changes the script tool {name!r}, which a patch cannot")
        ops.append({"op": "set_params", "tool": name, "params": (item.get("params") or {}) if isinstance(item, dict) else {}})
    kept = {_name(h) for h in b["hooks"]}
    ops += [{"op": "remove_hook", "name": _name(h)} for h in a["hooks"] if _name(h) not in kept]
    for name, item in _changed(a["hooks"], b["hooks"], "add_hook", "hook", ops):
        ops.append({"op": "replace_hook", "name": name, "hook": item})
    if len(ops) > MAX_OPS:
        raise PatchError(f"the candidate differs by {len(ops)} operations; a patch holds at most {MAX_OPS}")
    patched = apply_patch(base, Patch(tuple(ops)))
    if patched.hash != cand.hash:
        raise PatchError("the candidate's difference cannot be written as a patch (hook order changed)")
    return ops


def _changed(old: list[Any], new: list[Any], add: str, key: str, ops: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Appends to ``ops`` an ``add`` operation for each item of ``new`` missing from ``old`` (before
    the next one ``old`` has, so it lands in place); returns (name, item) of those changed."""
    have = {_name(it): it for it in old}
    names = [_name(it) for it in new]
    changed = []
    for k, item in enumerate(new):
        if names[k] not in have:
            later = next((n for n in names[k + 1:] if n in have), None)
            ops.append({"op": add, key: item, **({"before": later} if later else {})})
        elif item != have[names[k]]:
            changed.append((names[k], item))
    return changed
