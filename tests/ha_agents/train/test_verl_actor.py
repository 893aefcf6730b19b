"""verl 0.9.1's own actor (the engine-based TrainingWorker + FSDP2 engine + verl's ppo_loss; the legacy
``DataParallelPPOActor`` no longer ships in 0.9.1) takes one real PPO update on CPU on a tiny local
model: single-process gloo group, a CPU platform registered through verl's ``set_platform`` plugin
hook, and the FSDP engine picked with ``VERL_ENGINE_DEVICE=cuda``. Run in a subprocess so the
process group and platform singleton do not leak into other tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

if not os.environ.get("CI"):
    pytest.importorskip("verl")

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = r'''
import json, os, socket, sys, types
from contextlib import contextmanager
from functools import partial
from pathlib import Path
import torch, torch.distributed as dist

s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                  LOCAL_WORLD_SIZE="1", VERL_ENGINE_DEVICE="cuda")  # FSDP engines register for cuda/npu only
dist.init_process_group("gloo", rank=0, world_size=1)

from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import set_platform

_none = lambda *a, **k: None
_zero = lambda *a, **k: 0
_cpu = types.SimpleNamespace(current_device=lambda: "cpu", device_count=lambda: 1, set_device=_none,
    synchronize=_none, is_available=lambda: True, empty_cache=_none, manual_seed=torch.manual_seed,
    manual_seed_all=torch.manual_seed, max_memory_allocated=_zero, max_memory_reserved=_zero,
    memory_allocated=_zero, memory_reserved=_zero, mem_get_info=lambda *a, **k: (0, 0),
    reset_peak_memory_stats=_none, get_rng_state=torch.get_rng_state, set_rng_state=torch.set_rng_state,
    is_bf16_supported=lambda *a, **k: True, get_device_name=lambda *a, **k: "CPU")

class CPUPlatform(PlatformBase):
    device_name = property(lambda self: "cpu")
    vendor_name = property(lambda self: "cpu")
    device_module = property(lambda self: _cpu)
    def is_available(self): return True
    def is_platform_available(self, use_smi_check=False): return True
    def current_device(self): return "cpu"   # verl passes this straight to .to()/device=
    def device_count(self): return 1
    def set_device(self, device_index): pass
    def synchronize(self, device_index=None): pass
    def manual_seed(self, seed): torch.manual_seed(seed)
    def manual_seed_all(self, seed): torch.manual_seed(seed)
    def set_allocator_settings(self, settings): pass
    def empty_cache(self): pass
    def get_device_capability(self, device_index=0): return None, None
    def communication_backend_name(self): return "gloo"
    def visible_devices_envvar(self): return "CUDA_VISIBLE_DEVICES"
    @contextmanager
    def nvtx_range(self, msg): yield
    def profiler_start(self): pass
    def profiler_stop(self): pass
    def ray_resource_name(self): return "CPU"
    def ray_noset_envvars(self): return []
    def is_ipc_supported(self): return False
    def cudart(self): return None

set_platform(CPUPlatform())

from hydra import compose, initialize_config_dir
import verl
from verl import DataProto
from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla
from verl.utils import tensordict_utils as tu
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.config import TrainingWorkerConfig
from verl.workers.engine_workers import TrainingWorker
from verl.workers.utils.losses import ppo_loss
from verl.workers.utils.padding import left_right_2_no_padding, no_padding_2_padding

model_dir = sys.argv[1]
with initialize_config_dir(config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer/config"), version_base=None):
    cfg = compose(config_name="ppo_trainer", overrides=[
        f"actor_rollout_ref.model.path={model_dir}", "actor_rollout_ref.model.use_remove_padding=false",
        "+actor_rollout_ref.model.override_config.attn_implementation=eager",
        "actor_rollout_ref.actor.strategy=fsdp2",  # FSDP1 insists on GPU (sync_module_states=True)
        "+actor_rollout_ref.actor.fsdp_config.mixed_precision={param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}",
        "actor_rollout_ref.actor.fsdp_config.use_torch_compile=false",
        "actor_rollout_ref.actor.ppo_mini_batch_size=4", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.actor.use_dynamic_bsz=false", "actor_rollout_ref.actor.use_kl_loss=false",
        "actor_rollout_ref.actor.entropy_coeff=0", "actor_rollout_ref.actor.loss_agg_mode=token-mean",
        "actor_rollout_ref.actor.optim.lr=1e-2"])
model_config = omega_conf_to_dataclass(cfg.actor_rollout_ref.model)
actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
actor.model_config = model_config
engine_config = actor.engine
engine_config.use_dynamic_bsz = False
engine_config.micro_batch_size_per_gpu = engine_config.infer_micro_batch_size_per_gpu = 2
worker = TrainingWorker(config=TrainingWorkerConfig(model_type="language_model", model_config=model_config,
    engine_config=engine_config, optimizer_config=actor.optim, checkpoint_config=actor.checkpoint))
worker.reset()
worker.set_loss_fn(partial(ppo_loss, config=actor))

B, P, R = 4, 24, 16
g = torch.Generator().manual_seed(0)
prompts = torch.randint(10, model_config.hf_config.vocab_size, (B, P), generator=g)
responses = torch.randint(10, model_config.hf_config.vocab_size, (B, R), generator=g)
pm = torch.ones(B, P, dtype=torch.long); pm[0, :4] = 0; pm[2, :7] = 0   # left-padded prompts
rm = torch.ones(B, R, dtype=torch.long); rm[1, 12:] = 0; rm[3, 9:] = 0  # right-padded responses
prompts[pm == 0] = 0; responses[rm == 0] = 0
attn = torch.cat([pm, rm], 1)
adv = (torch.tensor([0.5, -0.5, 0.5, -0.5])[:, None] * rm).float()

def batch(**extra):
    d = dict(prompts=prompts, responses=responses, input_ids=torch.cat([prompts, responses], 1),
             attention_mask=attn, position_ids=(attn.cumsum(1) - 1).clamp(min=0), response_mask=rm.clone(), **extra)
    return left_right_2_no_padding(DataProto.from_single_dict(d, meta_info={"temperature": 1.0}).to_tensordict())

def logprobs():  # what the trainer's _compute_old_log_prob does
    td = batch(); tu.assign_non_tensor(td, calculate_entropy=False, compute_loss=False)
    return no_padding_2_padding(tu.get(worker.infer_batch(td), "log_probs"), td).float()

def params():
    return {k: (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().clone()
            for k, v in worker.engine.module.named_parameters()}

old, before = logprobs(), params()
td = batch(old_log_probs=old, advantages=adv)
tu.assign_non_tensor(td, calculate_entropy=True, global_batch_size=4, mini_batch_size=4, epochs=1, seed=0,
                     dataloader_kwargs={"shuffle": False}, compute_loss=True)  # as the trainer's _update_actor
metrics = tu.get(worker.train_mini_batch(td), "metrics")
ref, _ = compute_policy_loss_vanilla(old, old, adv, rm.bool(), loss_agg_mode="token-mean", config=actor)
after, new = params(), logprobs()
print("RESULT " + json.dumps({
    "metrics": {k: [float(x) for x in v] for k, v in metrics.items()}, "ref_pg_loss": ref.item(),
    "changed": sum(not torch.equal(before[k], after[k]) for k in before), "n_params": len(before),
    "seq_delta": ((new - old) * rm).sum(1).tolist()}))
'''


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from ha_agents.train.models import init_model

    return init_model(tmp_path_factory.mktemp("verl-actor-model"), "qwen", hidden=32, layers=1, heads=2,
                      vocab_size=2000)


def test_verl_actor_takes_one_ppo_step_on_cpu(model_dir, tmp_path):
    script = tmp_path / "actor_step.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(model_dir)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-5000:]
    out = json.loads(lines[-1][len("RESULT "):])
    m = out["metrics"]
    for key in ("actor/pg_loss", "actor/pg_clipfrac", "actor/ppo_kl", "loss", "grad_norm", "lr"):
        assert key in m, sorted(m)
    # old log-probs come from the same engine, so ratio == 1 and verl's loss is -token-mean(advantages)
    assert m["actor/pg_loss"][0] == pytest.approx(out["ref_pg_loss"], abs=1e-5)
    assert out["ref_pg_loss"] == pytest.approx(-(8 - 6 + 8 - 4.5) / 53, abs=1e-5)
    assert m["actor/ppo_kl"][0] == pytest.approx(0.0, abs=1e-6) and m["actor/pg_clipfrac"][0] == 0.0
    assert m["grad_norm"][0] > 0 and out["changed"] == out["n_params"]
    up, down = out["seq_delta"][0::2], out["seq_delta"][1::2]  # advantages +0.5, -0.5, +0.5, -0.5
    assert all(d > 0 for d in up) and all(d < 0 for d in down), out["seq_delta"]
