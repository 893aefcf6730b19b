"""Per-call cost of harness tools vs the same operation as a raw bash command, side by side.

For each operation, the median wall time of:
  raw/sandbox  the raw command through LocalSandbox.run (the floor: no harness at all)
  raw/harness  the raw command as a `bash` tool call through the whole wrapper stack (env.step)
  tool         the harness tool (read_file, edit_file, search) through the whole wrapper stack,
               tools only (no hooks)
  tool+h2      the same tool call under the h2 preset (its five hooks run on every step)
Goal: tool <= 2x raw/sandbox.

Operations (task mini__ttl_cache, isolated with bubblewrap when installed):
  read_file  lines 1-60 of ttlcache/cache.py           vs  sed -n '1,60p' ttlcache/cache.py
  edit_file  one exact, unique replacement (toggled)   vs  sed -i 's/.../.../' (and a python3 str.replace)
  search     'def ' across the repository               vs  grep -rn 'def ' .

    python benchmarks/bench_tools.py [--n 300]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
from functools import partial

import ha_envs
from ha_envs.actions import ToolCall
from ha_envs.harness import HarnessSpec, load_spec, render_call
from ha_envs.harness.spec import Component
from ha_envs.loaders import load_suite
from ha_envs.sandbox import bwrap_available

import timing

median_ms = partial(timing.median_ms, warmup=20)

TOOLS_ONLY = HarnessSpec(name="tools-only", tools=tuple(Component(n) for n in (
    "bash", "read_file", "edit_file", "search", "submit")), hooks=())
OLD, NEW = "class TTLCache", "class TTLCache "


class Stepper:
    def __init__(self, env) -> None:
        self.env = env
        self.env.reset()
        self.i = 0

    def __call__(self, name: str, **args) -> str:
        self.i += 1
        obs, _, term, trunc, _ = self.env.step(render_call(ToolCall(name, args), "openai", f"c{self.i}"))
        assert not (term or trunc), obs
        return obs[0]["content"]


def toggler(step_or_run, make_call):
    state = {"flip": False}

    def go():
        a, b = (NEW, OLD) if state["flip"] else (OLD, NEW)
        state["flip"] = not state["flip"]
        make_call(step_or_run, a, b)
    return go


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    args = ap.parse_args()
    os.environ.setdefault("HA_CACHE_DIR", tempfile.mkdtemp(prefix="ha-bench-cache-"))
    task = next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")
    kw = {"max_turns": 10**9}
    tools_env = ha_envs.make(task=task, harness=TOOLS_ONLY, **kw)
    h2_env = ha_envs.make(task=task, harness=load_spec("h2"), **kw)
    tool, h2 = Stepper(tools_env), Stepper(h2_env)
    sandbox = tools_env.get_wrapper_attr("sandbox")
    n = args.n

    def raw_sed_edit(run, a, b):
        run(f"sed -i 's/{a}(/{b}(/' ttlcache/cache.py")

    def raw_py_edit(run, a, b):
        run("python3 -c \"import sys; p='ttlcache/cache.py'; s=open(p).read(); assert s.count(sys.argv[1])==1; "
            f"open(p,'w').write(s.replace(sys.argv[1], sys.argv[2]))\" '{a}(' '{b}('")

    def tool_edit(step, a, b):
        out = step("edit_file", path="ttlcache/cache.py", old_str=a + "(", new_str=b + "(")
        assert out.startswith("Edited"), out

    raw_run = lambda c: sandbox.run(c)  # noqa: E731
    raw_bash = lambda c: tool("bash", command=c)  # noqa: E731
    rows = []
    read_cmd = "sed -n '1,60p' ttlcache/cache.py"
    rows.append(("read_file", read_cmd,
                 median_ms(lambda: raw_run(read_cmd), n), median_ms(lambda: raw_bash(read_cmd), n),
                 median_ms(lambda: tool("read_file", path="ttlcache/cache.py", start_line=1, end_line=60), n),
                 median_ms(lambda: h2("read_file", path="ttlcache/cache.py", start_line=1, end_line=60), n)))
    rows.append(("edit_file", "sed -i 's/old/new/' FILE",
                 median_ms(toggler(raw_run, raw_sed_edit), n), median_ms(toggler(raw_bash, raw_sed_edit), n),
                 median_ms(toggler(tool, tool_edit), n), median_ms(toggler(h2, tool_edit), n)))
    rows.append(("edit_file", "python3 str.replace (exact, unique)",
                 median_ms(toggler(raw_run, raw_py_edit), n), median_ms(toggler(raw_bash, raw_py_edit), n),
                 rows[-1][4], rows[-1][5]))
    grep_cmd = "grep -rn 'def ' ."
    rows.append(("search", grep_cmd,
                 median_ms(lambda: raw_run(grep_cmd), n), median_ms(lambda: raw_bash(grep_cmd), n),
                 median_ms(lambda: tool("search", pattern="def "), n), median_ms(lambda: h2("search", pattern="def "), n)))
    tools_env.close()
    h2_env.close()

    iso = "bwrap" if bwrap_available() else "none"
    print(f"# bench_tools: {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"isolation={iso}, n={n}, median ms per call")
    print("| tool | raw command | raw/sandbox | raw/harness | tool | tool+h2 | tool / raw/sandbox |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, raw, a, b, c, d in rows:
        print(f"| {name} | `{raw}` | {a:.2f} | {b:.2f} | {c:.2f} | {d:.2f} | {c / a:.2f}x |")


if __name__ == "__main__":
    main()
