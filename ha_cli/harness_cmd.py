"""``ha harness list | show | schema | diff``: the preset harnesses and spec files."""

from __future__ import annotations

import argparse
import json



def _spec(ref: str):
    from ha_cli.train_cmd import resolve_harness

    return resolve_harness(ref)


def cmd_harness_list(args: argparse.Namespace) -> int:
    from ha_envs.harness import preset_names

    rows = [_spec(n) for n in preset_names()]
    if args.json:
        print(json.dumps([{"name": s.name, "hash": s.hash, "tools": s.tool_names, "hooks": s.hook_names,
                           "description": s.description} for s in rows], indent=2))
        return 0
    print(f"{'name':10} {'hash':16} {'tools':>5} {'hooks':>5}  description")
    for s in rows:
        print(f"{s.name:10} {s.hash:16} {len(s.tools):>5} {len(s.hooks):>5}  {_clip(s.description, 90)}")
    return 0


def _clip(text: str, n: int) -> str:
    """``text`` on one line, cut to ``n`` characters with an ellipsis when longer."""
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"


def cmd_harness_show(args: argparse.Namespace) -> int:
    from ha_envs.harness.spec import hook_of, tool_of

    spec = _spec(args.harness)
    if args.without:
        spec = spec.without(*args.without)
    tools = [{"name": c.name, "options": opts, "schema": tool.openai_schema(), "kind": "script" if c.define else "catalogue"}
             for c in spec.tools for tool, opts in [tool_of(c)]]
    hooks = [{"name": c.name, "points": list(h.points), "params": c.definition("hook") if c.define else h.params,
              "kind": "rule" if c.define else "catalogue"} for c in spec.hooks for h in [hook_of(c)]]
    if args.json:
        print(json.dumps({"name": spec.name, "hash": spec.hash, "description": spec.description,
                          "parser": spec.to_dict()["parser"], "limits": spec.to_dict()["limits"],
                          "tools": tools, "hooks": hooks, "spec": spec.to_dict()}, indent=2))
        return 0
    print(f"harness {spec.name}  hash {spec.hash}\n{spec.description}\n")
    p = spec.parser
    print(f"parser: {p.format} (multi_call={p.multi_call}, max_format_errors={p.max_format_errors})")
    print("limits: " + ", ".join(f"{k}={v}" for k, v in spec.to_dict()["limits"].items()))
    print(f"\ntools ({len(tools)}):")
    for t in tools:
        fn = t["schema"]["function"]
        params = fn["parameters"].get("properties", {})
        req = set(fn["parameters"].get("required", []))
        sig = ", ".join(f"{k}{'' if k in req else '?'}: {v.get('type', 'any')}" for k, v in params.items())
        opts = f"  options {json.dumps(t['options'])}" if t["options"] else ""
        print(f"  {t['name']}({sig}){opts}\n      {fn['description']}")
    print(f"\nhooks ({len(hooks)}, run in this order at each point):")
    for h in hooks:
        print(f"  {h['name']} [{', '.join(h['points'])}]")
        for k, v in h["params"].items():
            print(f"      {k} = {json.dumps(v)}")
    return 0


def cmd_harness_schema(args: argparse.Namespace) -> int:
    from ha_envs.harness.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def cmd_harness_diff(args: argparse.Namespace) -> int:
    from ha_envs.harness import diff

    a, b = _spec(args.a), _spec(args.b)
    changes = diff(a, b)
    print(f"{a.name} ({a.hash}) -> {b.name} ({b.hash})")
    print("\n".join(changes) if changes else "no behavioural difference")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    harness = sub.add_parser("harness", help="inspect and compare harness specs").add_subparsers(
        dest="harness_command", required=True)
    p = harness.add_parser("list", help="the preset harnesses")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_harness_list)
    p = harness.add_parser("show", help="tools with schemas, hooks with parameters, hash")
    p.add_argument("harness", help="preset name or spec path")
    p.add_argument("--without", action="append", default=[], metavar="COMPONENT")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_harness_show)
    p = harness.add_parser("schema", help="the JSON Schema of a harness spec file (catalogue tools and hooks "
                           "with typed parameters)")
    p.set_defaults(func=cmd_harness_schema)
    p = harness.add_parser("diff", help="what changed from harness A to harness B")
    p.add_argument("a")
    p.add_argument("b")
    p.set_defaults(func=cmd_harness_diff)
