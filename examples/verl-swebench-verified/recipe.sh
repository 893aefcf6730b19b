#!/usr/bin/env bash
# HarnessAdapt-RL on GPU nodes: GRPO with verl, the harness evolved at the start of every epoch
# under the dual-rate gate, trained on R2E-Gym with SWE-bench Verified excluded, evaluated on
# SWE-bench Verified. See README.md beside this file for the hardware, memory and time estimates.
#
#   bash examples/verl-swebench-verified/recipe.sh              # the whole run
#   DRY_RUN=1 bash examples/verl-swebench-verified/recipe.sh    # print every command; write verl's
#                                                               # files for epoch 1; launch nothing
#
# One epoch, as the method describes it (ha train --backend verl --evolve refuses: verl's trainer
# owns its epoch loop, so the epochs are this script's loop):
#   1. serve the current weights with vLLM (OpenAI-compatible), so the evolution gate samples the
#      policy being trained;
#   2. ha evolve run: up to EVOLVE_ROUNDS rounds of propose -> validate -> compare (both sides on the
#      same tasks with common seeds) -> gate; its harness.yaml is the epoch's harness, frozen;
#   3. ha train --backend verl on that harness for UPDATES_PER_EPOCH updates (the paper's GRPO:
#      n=4, no std normalisation, lr 1e-6 constant, token-mean loss, truncated rollouts dropped);
#   4. merge verl's last actor checkpoint into a Hugging Face directory: the next epoch's policy.
# Then the final model-harness pair is evaluated on SWE-bench Verified (3 runs) and compared with
# the start (ha compare: paired bootstrap CI over instances).
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
: "${TRAIN_BENCHMARK:=r2e}"              # R2E-Gym-Lite from the hub, or TRAIN_DATA=FILE
: "${TRAIN_DATA:=}"
: "${EVAL_BENCHMARK:=verified}"
: "${EVAL_DATA:=}"
: "${GPUS_PER_NODE:=8}"
: "${NNODES:=1}"
: "${VLLM_TP:=2}"                        # tensor parallel size of the serving instance (steps 1 and 5)
: "${VLLM_PORT:=8000}"
: "${WORKERS:=64}"                       # episodes in flight for ha evolve / ha eval (Docker sandboxes)
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

current_model="$MODEL"
current_harness="$START_HARNESS"
for epoch in $(seq 1 "$EPOCHS"); do
  ep="$OUT/epoch-$epoch"
  # 1-2. evolve the harness against the policy as it is now
  start_server "$current_model"
  run "$HA" evolve run "${TRAIN_SRC[@]}" --shuffle --shuffle-seed "$epoch" --limit "$EVOLVE_TASKS" \
      --model "$POLICY_URL" --harness "$current_harness" --proposer "$PROPOSER" "${TEACHER_FLAGS[@]}" \
      --rounds "$EVOLVE_ROUNDS" --group-size "$GROUP" --temperature 1 --seed "$epoch" --epoch "$epoch" \
      --sandbox docker --workers "$WORKERS" --out "$ep/evolve"
  stop_server
  if [[ "$DRY_RUN" != 1 ]]; then current_harness="$ep/evolve/harness.yaml"; fi
  # 3. GRPO on the frozen harness
  train=("$HA" train --backend verl "${TRAIN_SRC[@]}" --exclude-benchmark "$EVAL_BENCHMARK" --model "$current_model"
         --harness "$current_harness" --updates "$UPDATES_PER_EPOCH" --tasks-per-update "$TASKS_PER_UPDATE"
         --group-size "$GROUP" --lr 1e-6 --temperature 1 --context-tokens 32768 --max-turns 60
         --sandbox docker --rollout-engine vllm --gpus-per-node "$GPUS_PER_NODE" --nnodes "$NNODES"
         --save-every "$UPDATES_PER_EPOCH" --seed "$epoch" --out "$ep/train"
         --override "actor_rollout_ref.rollout.tensor_model_parallel_size=$VLLM_TP"
         --override "actor_rollout_ref.actor.fsdp_config.param_offload=false"
         --override "actor_rollout_ref.model.enable_gradient_checkpointing=true"
         --override "actor_rollout_ref.actor.ulysses_sequence_parallel_size=4"
         --override "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=32768"
         --override "actor_rollout_ref.actor.use_dynamic_bsz=true"
         --override "trainer.max_actor_ckpt_to_keep=1"
         --override "trainer.experiment_name=$(basename "$OUT")-epoch-$epoch")
  if [[ "$DRY_RUN" == 1 ]]; then
    printf '$'; printf ' %q' "${train[@]}" --dry-run; printf '\n'
    if [[ "$epoch" == 1 ]]; then "${train[@]}" --dry-run; fi
  else
    "${train[@]}"
  fi
  # 4. the next epoch's policy: verl's last actor checkpoint as a Hugging Face directory
  run python -m verl.model_merger merge --backend fsdp \
      --local_dir "$ep/train/checkpoints/global_step_$UPDATES_PER_EPOCH/actor" --target_dir "$ep/model"
  if [[ "$DRY_RUN" != 1 ]]; then current_model="$ep/model"; fi
done

# 5. the deliverable, (weights, harness), on SWE-bench Verified; and the start for the paired CI
for pair in "final|$current_model|$current_harness" "start|$MODEL|$START_HARNESS"; do
  IFS='|' read -r name model harness <<< "$pair"
  start_server "$model"
  run "$HA" eval "${EVAL_SRC[@]}" --model "$POLICY_URL" --harness "$harness" --runs 3 --temperature 1 --seed 0 \
      --max-tokens 32768 --sandbox docker --workers "$WORKERS" --out "$OUT/eval-$name"
  stop_server
done
run "$HA" compare "$OUT/eval-start" "$OUT/eval-final" --out "$OUT/compare"
