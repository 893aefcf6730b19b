"""Agent-loop bookkeeping and rollout throughput, side by side in one run.

Part 1, per-turn bookkeeping (render + tokenise + mask) when the conversation already holds about
1K, 16K and 64K tokens: the AgentLoop's incremental path (render only the observation delta,
tokenise it, append ids and mask) vs re-rendering the whole conversation with the chat template and
re-tokenising it every turn (what a loop without incremental rendering does). Tokenizer: a byte-level
BPE trained locally (ha_agents.toy_tokenizer, vocab 2000); template: chatml. Goal: per-turn cost
independent of context length; ratio at 64K >= 20x.

Part 2, rollout throughput on the bundled suite (12 tasks) with an instant scripted model (five
tool calls, then submit; no model latency) under h1, at 1 and 2 workers: episodes per minute, with
the mean time per episode spent in reset, tools and grading.

    python benchmarks/bench_agent_loop.py [--reps 30] [--skip-rollouts]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from functools import partial

from ha_agents.chat.template import CHATML
from ha_agents.chat.toy_tokenizer import toy_tokenizer
from ha_envs.harness import TOOLS
from ha_envs.loaders import load_suite

import timing

median_ms = partial(timing.median_ms, warmup=1)

TOOL_OUTPUT = "\n".join(f"    {i:4d}\tdef handler_{i}(request, *args):  # returns the parsed value or None" for i in range(40))


def conversation(tokenizer, target_tokens: int) -> tuple[list[dict], list[dict]]:
    tools = [TOOLS[n].openai_schema() for n in ("bash", "read_file", "submit")]
    msgs = [{"role": "system", "content": "You fix issues."}, {"role": "user", "content": "The parser drops the last field."}]
    n = len(tokenizer.encode(CHATML.prompt(msgs, tools), add_special_tokens=False).ids)
    step = len(tokenizer.encode(TOOL_OUTPUT, add_special_tokens=False).ids) + 40
    i = 0
    while n < target_tokens:
        msgs.append({"role": "assistant", "content": f"<tool_call>\n{{\"name\": \"read_file\", \"arguments\": {{\"path\": \"m{i}.py\"}}}}\n</tool_call>"})
        msgs.append({"role": "tool", "content": TOOL_OUTPUT})
        n += step
        i += 1
    return msgs, tools


def bookkeeping(reps: int) -> list[tuple[int, int, float, float]]:
    corpus = [t.problem_statement for t in load_suite("mini")] + [TOOL_OUTPUT, CHATML.jinja] * 5
    tok = toy_tokenizer(corpus, vocab_size=2000)
    rows = []
    for target in (1024, 16384, 65536):
        msgs, tools = conversation(tok, target)
        ids = tok.encode(CHATML.render(msgs, tools), add_special_tokens=False).ids
        new = [{"role": "tool", "content": TOOL_OUTPUT}]
        token_ids, mask = list(ids), [0] * len(ids)

        def incremental() -> None:
            delta = tok.encode(CHATML.delta(new, closed=True), add_special_tokens=False).ids
            token_ids.extend(delta)
            mask.extend([0] * len(delta))
            del token_ids[len(ids):], mask[len(ids):]

        def full() -> None:
            text = CHATML.render(msgs + new, tools)
            enc = tok.encode(text, add_special_tokens=False)
            # rebuild the loss mask: assistant spans are mask 1, found through character offsets
            spans, pos = [], 0
            while True:
                s = text.find("<|im_start|>assistant\n", pos)
                if s < 0:
                    break
                e = text.find("<|im_end|>", s)
                spans.append((s + 22, e + 10 if e >= 0 else len(text)))
                pos = s + 1
            j, m = 0, []
            for a, _ in enc.offsets:
                while j < len(spans) and spans[j][1] <= a:
                    j += 1
                m.append(1 if j < len(spans) and spans[j][0] <= a < spans[j][1] else 0)

        rows.append((target, len(ids), median_ms(incremental, reps), median_ms(full, max(5, reps // 3))))
    return rows


class FiveCalls:
    """An instant model: five cheap tool calls, then submit (OpenAI tool-call form)."""

    name = "five-calls"

    def __init__(self) -> None:
        self.n = 0

    def complete(self, messages, tools, prompt_ids=None):
        from ha_agents.llm.base import Completion
        plan = [("find_files", {"pattern": "*"}), ("search", {"pattern": "def "}), ("view_diff", {}),
                ("bash", {"command": "ls -la"}), ("read_file", {"path": "README.md", "start_line": 1, "end_line": 20})]
        self.n += 1
        name, args = plan[self.n - 1] if self.n <= len(plan) else ("submit", {})
        return Completion({"role": "assistant", "content": "",
                           "tool_calls": [{"id": f"c{self.n}", "function": {"name": name, "arguments": json.dumps(args)}}]})


def rollouts(workers: int) -> tuple[float, dict[str, float]]:
    from concurrent.futures import ThreadPoolExecutor

    from ha_agents.episode import run_episode
    tasks = load_suite("mini")
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        recs = list(pool.map(lambda t: run_episode(t, FiveCalls(), "h1"), tasks))
    wall = time.perf_counter() - t0
    assert all(r["termination"] == "submitted" for r in recs), [r["termination"] for r in recs]
    parts = {k: statistics.mean(r["timings"].get(k, 0.0) for r in recs) for k in ("reset_s", "sandbox_s", "grade_s", "episode_s")}
    return len(recs) / wall * 60, parts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--skip-rollouts", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("HA_CACHE_DIR", tempfile.mkdtemp(prefix="ha-bench-cache-"))
    print(f"# bench_agent_loop: {platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("\n| context (target) | tokens | incremental ms/turn | full re-render ms/turn | ratio |")
    print("|---|---:|---:|---:|---:|")
    for target, n, inc, full in bookkeeping(args.reps):
        print(f"| {target // 1024}K | {n} | {inc:.3f} | {full:.2f} | {full / inc:.0f}x |")
    if args.skip_rollouts:
        return
    print("\n| workers | episodes/min | mean reset s | mean tools s | mean grade s | mean episode s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for w in (1, 2):
        rate, p = rollouts(w)
        print(f"| {w} | {rate:.1f} | {p['reset_s']:.2f} | {p['sandbox_s']:.2f} | {p['grade_s']:.2f} | {p['episode_s']:.2f} |")


if __name__ == "__main__":
    main()
