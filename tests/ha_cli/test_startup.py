"""Start-up: `ha` imports none of the heavy libraries before a command needs them, and
`--benchmark` without data fails at once, saying how to give it, without waiting on the hub."""

from __future__ import annotations

import os
import subprocess
import sys

HEAVY = ("torch", "ray", "swebench", "transformers", "datasets", "ha_envs.grading", "ha_agents")


def test_importing_the_cli_imports_no_heavy_library():
    code = f"import sys, ha_cli.main; print([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_benchmark_without_data_says_how_to_give_it_and_does_not_wait_on_the_hub(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HA_DATA_DIR", "HF_"))}
    # a hub that refuses connections (a closed local port) and an empty cache
    env.update(HF_ENDPOINT="http://127.0.0.1:9", HF_HOME=str(tmp_path / "hf"))
    res = subprocess.run([sys.executable, "-m", "ha_cli.main", "tasks", "list", "--benchmark", "verified"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ha: error: SWE-bench/SWE-bench_Verified: the Hugging Face hub "
                                                   "cannot be reached (127.0.0.1:9:"), res.stderr
    assert "--data FILE" in lines[0] and "HA_DATA_DIR=DIR" in lines[0] and "swebench_verified/test.jsonl" in lines[0]
    offline = subprocess.run([sys.executable, "-m", "ha_cli.main", "eval", "--benchmark", "verified"],
                             capture_output=True, text=True, env=dict(env, HF_HUB_OFFLINE="1"), timeout=60)
    assert offline.returncode == 2 and "(HF_HUB_OFFLINE is set)" in offline.stderr and "--data FILE" in offline.stderr
