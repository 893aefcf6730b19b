#!/usr/bin/env bash
# HarnessAdapt-RL on GPU nodes: GRPO with verl, the harness evolved at the start of every epoch
# under the dual-rate gate, trained on R2E-Gym with SWE-bench Verified excluded, evaluated on
# SWE-bench Verified. See README.md beside this file for the hardware, memory and time estimates.
#
#   bash examples/verl-swebench-verified/recipe.sh              # the whole run
#   DRY_RUN=1 bash examples/verl-swebench-verified/recipe.sh    # print every command; write verl's
#                                                               # files; launch nothing
#
# 1. One verl run (ha train --backend verl --evolve): EPOCHS x UPDATES_PER_EPOCH GRPO updates (the
#    paper's: n=4, no std normalisation, lr 1e-6 constant, token-mean loss, truncated rollouts
#    dropped). At every epoch's start, inside verl's trainer process, with the weights about to be
#    trained: the skill teacher (SKILL_TEACHER, optional), then up to EVOLVE_ROUNDS rounds of propose
#    -> validate -> compare -> gate whose rollouts come from verl's own agent loop (the same token
#    mode, sampling and workers as training). The accepted harness reaches every agent-loop worker
#    through the harness board, no restart; the optimizer, its moments and the step counters run on.
# 2. Merge verl's last actor checkpoint into a Hugging Face directory: the final weights; the final
#    harness is OUT/train/harness.yaml.
# 3. Evaluate the final model-harness pair on SWE-bench Verified (3 runs) and the start, and compare
#    them (ha compare: paired bootstrap CI over instances).
set -euo pipefail

: "${MODEL:=Qwen/Qwen3-8B}"              # a local HF directory (or a hub name the nodes can read)
: "${SERVED_NAME:=policy}"               # the model name vLLM serves it under
: "${OUT:=runs/harnessadapt-verified}"
: "${EPOCHS:=2}"                         # the paper: 2 epochs gave H1 and H2
: "${UPDATES_PER_EPOCH:=20}"
: "${TASKS_PER_UPDATE:=46}"              # the paper's batch: 46 tasks x 4 rollouts = 184 per update
: "${GROUP:=4}"
: "${START_HARNESS:=h0}"                 # the paper's H0: bash and submit
: "${EVOLVE_ROUNDS:=5}"
: "${EVOLVE_TASKS:=46}"                  # tasks per gate comparison (x GROUP rollouts a side)
: "${PROPOSER:=rule}"                    # rule | llm (TEACHER=openai:NAME@URL) | cli (TEACHER_COMMAND=...)
: "${TEACHER:=}"
: "${TEACHER_COMMAND:=}"
: "${SKILL_TEACHER:=}"                   # a model spec (openai:NAME@URL): a screened skill per task per epoch
: "${TRAIN_BENCHMARK:=r2e}"              # R2E-Gym-Lite from the hub, or TRAIN_DATA=FILE
: "${TRAIN_DATA:=}"
: "${EVAL_BENCHMARK:=verified}"
: "${EVAL_DATA:=}"
: "${GPUS_PER_NODE:=8}"
: "${NNODES:=1}"
: "${VLLM_TP:=2}"                        # tensor parallel size of vLLM, in training and for the evaluation
: "${VLLM_PORT:=8000}"
: "${WORKERS:=64}"                       # episodes in flight for ha eval (Docker sandboxes)
: "${DRY_RUN:=0}"
: "${HA:=ha}"                            # the CLI (python -m ha_cli.main works too)

run() {  # print the command; run it unless DRY_RUN (then only `ha train --dry-run` runs)
  printf '$'; printf ' %q' "$@"; printf '\n'
  if [[ "$DRY_RUN" != 1 ]]; then "$@"; fi
}

data_flags() {  # $1: benchmark, $2: data file (may be empty)
  printf '%s\n' --benchmark "$1"
  if [[ -n "$2" ]]; then printf '%s\n' --data "$2"; fi
}

serve() {  # $1: model directory
  run vllm serve "$1" --served-model-name "$SERVED_NAME" --port "$VLLM_PORT" --tensor-parallel-size "$VLLM_TP" \
      --max-model-len 32768 --enable-auto-tool-choice --tool-call-parser hermes --gpu-memory-utilization 0.9
}

start_server() {
  if [[ "$DRY_RUN" == 1 ]]; then serve "$1"; return; fi
  serve "$1" > "$OUT/vllm.log" 2>&1 &
  VLLM_PID=$!
  for _ in $(seq 1 180); do
    curl -sf "http://127.0.0.1:$VLLM_PORT/v1/models" > /dev/null && return
    sleep 5
  done
  echo "vLLM did not come up in 15 minutes; see $OUT/vllm.log" >&2
  exit 1
}

stop_server() {
  if [[ -n "${VLLM_PID:-}" ]]; then kill "$VLLM_PID"; wait "$VLLM_PID" || true; VLLM_PID=; fi
}
trap stop_server EXIT

mkdir -p "$OUT"
POLICY_URL="openai:$SERVED_NAME@http://127.0.0.1:$VLLM_PORT/v1"
mapfile -t TRAIN_SRC < <(data_flags "$TRAIN_BENCHMARK" "$TRAIN_DATA")
mapfile -t EVAL_SRC < <(data_flags "$EVAL_BENCHMARK" "$EVAL_DATA")
TEACHER_FLAGS=()
if [[ -n "$TEACHER" ]]; then TEACHER_FLAGS+=(--teacher "$TEACHER"); fi
if [[ -n "$TEACHER_COMMAND" ]]; then TEACHER_FLAGS+=(--teacher-command "$TEACHER_COMMAND"); fi

if [[ -n "$SKILL_TEACHER" ]]; then TEACHER_FLAGS+=(--skill-teacher "$SKILL_TEACHER"); fi
UPDATES=$((EPOCHS * UPDATES_PER_EPOCH))

# 1. one verl run: GRPO, and at every epoch's start skills, evolution and the gate on verl's rollouts
train=("$HA" train --backend verl "${TRAIN_SRC[@]}" --exclude-benchmark "$EVAL_BENCHMARK" --model "$MODEL"
       --harness "$START_HARNESS" --updates "$UPDATES" --tasks-per-update "$TASKS_PER_UPDATE"
       --group-size "$GROUP" --lr 1e-6 --temperature 1 --context-tokens 32768 --max-turns 60
       --evolve --evolve-every "$UPDATES_PER_EPOCH" --evolve-rounds "$EVOLVE_ROUNDS" --evolve-group-size "$GROUP"
       --gate-tasks "$EVOLVE_TASKS" --proposer "$PROPOSER" "${TEACHER_FLAGS[@]}"
       --sandbox docker --rollout-engine vllm --gpus-per-node "$GPUS_PER_NODE" --nnodes "$NNODES"
       --save-every "$UPDATES_PER_EPOCH" --seed 0 --out "$OUT/train"
       --override "actor_rollout_ref.rollout.tensor_model_parallel_size=$VLLM_TP"
       --override "actor_rollout_ref.actor.fsdp_config.param_offload=false"
       --override "actor_rollout_ref.model.enable_gradient_checkpointing=true"
       --override "actor_rollout_ref.actor.ulysses_sequence_parallel_size=4"
       --override "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=32768"
       --override "actor_rollout_ref.actor.use_dynamic_bsz=true"
       --override "trainer.max_actor_ckpt_to_keep=1"
       --override "trainer.experiment_name=$(basename "$OUT")")
if [[ "$DRY_RUN" == 1 ]]; then
  printf '$'; printf ' %q' "${train[@]}" --dry-run; printf '\n'
  "${train[@]}" --dry-run
else
  "${train[@]}"
fi
# 2. the final weights: verl's last actor checkpoint as a Hugging Face directory; the final harness
run python -m verl.model_merger merge --backend fsdp \
    --local_dir "$OUT/train/checkpoints/global_step_$UPDATES/actor" --target_dir "$OUT/model"
current_model="$OUT/model"
current_harness="$OUT/train/harness.yaml"   # written at every epoch's start: the harness training ran on last

# 3. the deliverable, (weights, harness), on SWE-bench Verified; and the start for the paired CI
for pair in "final|$current_model|$current_harness" "start|$MODEL|$START_HARNESS"; do
  IFS='|' read -r name model harness <<< "$pair"
  start_server "$model"
  run "$HA" eval "${EVAL_SRC[@]}" --model "$POLICY_URL" --harness "$harness" --runs 3 --temperature 1 --seed 0 \
      --max-tokens 32768 --sandbox docker --workers "$WORKERS" --out "$OUT/eval-$name"
  stop_server
done
run "$HA" compare "$OUT/eval-start" "$OUT/eval-final" --out "$OUT/compare"
