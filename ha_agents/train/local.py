"""The local trainer (``--backend local``): a ``transformers`` causal LM on CPU or one GPU, trained
with our GRPO loss by a small torch loop.

Why not TRL's ``GRPOTrainer`` (trl 1.16 was read and tried; see README "Training"): its public API
recomputes the old-policy logprobs instead of taking the sampler's (the clipped ratio against the
rollout logprobs needs a private method override), computes advantages itself from reward
functions, and drives generation from its own prompt sampler in fixed-size consecutive groups,
where our ``collect()`` owns the episodes and their sandboxes. What it would add beyond that is
about fifteen lines of loss; the GRPO maths here stays ours and tested either way.

- Rollouts use the weights being trained, in process (``client()`` wraps the same model object);
  generation runs with dropout off, and so does the loss, so the recomputed logprobs match the
  sampler's up to numerics (the mismatch is reported per update).
- Update: ``mini_batches`` optimizer steps per update, each over its share of the samples, the
  loss normalised over that mini-batch's mask-1 tokens (token-mean) across micro-batches. A
  micro-batch holds members of one GRPO group (length-sorted, up to ``micro_batch_tokens``);
  their shared prompt runs once and every member's continuation attends to its cached keys and
  values (``share_prefix``), members running in length buckets so a short continuation is not
  padded to a long one; only mask-1 positions go through the LM head. ``pack=False`` is the
  naive per-sample, full-vocabulary baseline kept for ``benchmarks/bench_train.py``; the tests
  check both give the same update.
- Precision and size (``dtype``, ``lora_rank``, ``gradient_checkpointing``): the weights load in
  fp32 (default), bf16 or fp16; with ``lora_rank`` > 0 the base weights are frozen and a ``peft``
  LoRA adapter (fp32, on the attention and MLP projections unless ``lora_targets`` says otherwise)
  is all the optimizer sees; a KL term's reference policy is then the base model with the adapter
  disabled (no second copy). Gradient checkpointing recomputes each decoder layer in the backward
  pass; it runs every member's whole sequence (no shared prompt: a cached prompt cannot be replayed
  by the recomputation).
- Checkpoints hold the model, the optimizer, the step and every RNG state. With LoRA, the model
  part is the adapter (``adapter/``, ``peft``'s format); ``save_merged`` (every save with
  ``merge_on_save``) writes the base weights with the adapter merged in as a plain model directory.
"""

from __future__ import annotations

import json
import math
import random
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..llm.base import LLMError
from ..loop import CONTEXT_TOKENS
from .base import Sample
from .losses import LossConfig, get_loss
from .memory import MemoryEstimate, estimate_memory


@dataclass
class LocalConfig:
    lr: float = 1e-6
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    mini_batches: int = 1
    micro_batch_tokens: int = 16384
    temperature: float = 1.0
    """Sampling temperature of the rollouts, and the one the trainer's logprobs are computed at."""
    max_tokens: int = 512
    """Cap per model call of the rollouts (``ha train --max-tokens``)."""
    context_tokens: int = CONTEXT_TOKENS
    loss: LossConfig = field(default_factory=LossConfig)
    device: str | None = None
    seed: int = 0
    pack: bool = True
    share_prefix: bool = True
    """Members of a GRPO group start from the same prompt: run it once per micro-batch and let every
    member's continuation attend to its cached keys and values (gradients flow back through the one
    shared prefix). Only mask-0 tokens are ever shared."""
    dtype: str = "fp32"
    """The weights' dtype: fp32, bf16 or fp16 (a LoRA adapter stays fp32)."""
    lora_rank: int = 0
    """0: full fine-tuning; R > 0: a LoRA adapter of rank R, the base weights frozen."""
    lora_alpha: float | None = None
    """LoRA scaling numerator (default: 2 x rank)."""
    lora_targets: tuple[str, ...] | None = None
    """Module names the adapter wraps (default: the attention and MLP projections the model has)."""
    gradient_checkpointing: bool = False
    merge_on_save: bool = False
    """LoRA: every checkpoint also holds the merged plain model (``model/``), not only the adapter."""

    def validate(self) -> "LocalConfig":
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; use {', '.join(DTYPES)}")
        if self.dtype == "fp16" and not self.lora_rank:
            raise ValueError("--dtype fp16 needs --lora-rank R: full fine-tuning in fp16 has no loss scaling and no fp32 "
                             "master weights here, and AdamW's epsilon (1e-8) is 0 in fp16 (updates turn NaN); use "
                             "--dtype bf16, or a LoRA adapter (kept in fp32)")
        if self.lora_rank < 0:
            raise ValueError(f"the LoRA rank must be 0 (full fine-tuning) or positive, got {self.lora_rank}")
        if self.lora_rank == 0 and (self.lora_alpha is not None or self.lora_targets or self.merge_on_save):
            raise ValueError("--lora-alpha, --lora-targets and --merge need a LoRA adapter: pass --lora-rank R > 0")
        return self


DTYPES = ("fp32", "bf16", "fp16")
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""The attention and MLP projections of Llama-, Qwen- and Mistral-style models (the default targets)."""


class LocalTrainer:
    def __init__(self, model_dir: str | Path, config: LocalConfig | None = None, eos_token: str | None = None) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise RuntimeError("the local trainer needs the `hf` extra: pip install -e '.[hf]'") from exc
        self.torch = torch
        self.config = config or LocalConfig()
        self.model_dir = Path(model_dir)
        if not (self.model_dir / "config.json").is_file():
            raise ValueError(f"{model_dir} is not a model directory (no config.json); build one with "
                             "`ha train --init-model DIR` or point --model at a local Hugging Face checkpoint")
        self.config.validate()
        device = self.config.device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[self.config.dtype]
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir), local_files_only=True)
            self.model = AutoModelForCausalLM.from_pretrained(str(self.model_dir), local_files_only=True,
                                                              dtype=dtype).to(device)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot load a model from {model_dir}: {exc}") from exc
        self.device = device
        self.peft = self._add_lora() if self.config.lora_rank else None
        if self.config.gradient_checkpointing:
            self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.model.eval()  # dropout off for sampling and loss alike
        torch.manual_seed(self.config.seed)
        self.optimizer = torch.optim.AdamW([p for p in self.model.parameters() if p.requires_grad], lr=self.config.lr,
                                           weight_decay=self.config.weight_decay)
        self.step = 0
        self.loss_fn = get_loss(self.config.loss.name)
        self.ref_model = None
        if self.config.loss.kl_coef and self.peft is None:  # with LoRA: the base model, adapter disabled
            self.ref_model = AutoModelForCausalLM.from_pretrained(str(self.model_dir), local_files_only=True,
                                                                  dtype=dtype).to(device).eval()
            for p in self.ref_model.parameters():
                p.requires_grad_(False)
        from ..episode import TokenMode
        from ..llm.hf import TransformersClient

        self.token_mode = TokenMode("auto", str(self.model_dir.resolve()), context_tokens=self.config.context_tokens)
        template, _ = self.token_mode.resolve()
        eos_token = eos_token or template.eos
        try:
            self._client = TransformersClient.from_model(self.model, self.tokenizer, temperature=self.config.temperature,
                                                         max_tokens=self.config.max_tokens, eos_token=eos_token,
                                                         seed=self.config.seed)
        except LLMError as exc:
            raise ValueError(str(exc)) from exc
        self._client.name = f"hf:{self.model_dir}"

    def _add_lora(self) -> Any:
        """Wrap ``self.model``'s target modules in a LoRA adapter (in place: ``self.model`` stays the
        transformers model, its base weights frozen); returns the ``PeftModel``."""
        try:
            from peft import LoraConfig, get_peft_model
        except ImportError as exc:
            raise RuntimeError("--lora-rank needs peft: pip install -e '.[hf]'") from exc
        c = self.config
        targets = lora_targets(self.model, c.lora_targets)
        alpha = c.lora_alpha if c.lora_alpha is not None else 2.0 * c.lora_rank
        return get_peft_model(self.model, LoraConfig(r=c.lora_rank, lora_alpha=alpha, target_modules=list(targets),
                                                     lora_dropout=0.0, bias="none", task_type="CAUSAL_LM"))

    def _reference(self, micro: list[Sample]) -> Any:
        """The reference policy's logprobs of ``micro`` for a KL term (None without one): the second
        copy of the initial weights, or with LoRA the base model with the adapter disabled."""
        if not self.config.loss.kl_coef:
            return None
        with self.torch.no_grad():
            if self.peft is not None:
                with self.peft.disable_adapter():
                    return self._micro(self.model, micro)[0]
            return self._micro(self.ref_model, micro)[0]

    @contextmanager
    def _recompute(self) -> Iterator[None]:
        """Gradient checkpointing acts on layers in training mode only; the model stays in eval mode
        (dropout off), so just the checkpointed decoder layers are switched while a loss is computed."""
        layers = [m for m in self.model.modules() if getattr(m, "gradient_checkpointing", False)]
        for m in layers:
            m.training = True
        try:
            yield
        finally:
            for m in layers:
                m.training = False

    def memory_estimate(self, tokens: int | None = None) -> MemoryEstimate:
        """The estimate ``ha train`` prints (``ha_agents.train.memory``), for micro-batches of
        ``tokens`` (default ``micro_batch_tokens``)."""
        cfg = self.model.config
        cfg = getattr(cfg, "text_config", None) or cfg
        params = sum(p.numel() for p in self.model.parameters())
        trainable = sum(p.numel() for p in self.model.parameters() if p.requires_grad)
        return estimate_memory(params, trainable, self.config.dtype, "fp32" if self.peft is not None else self.config.dtype,
                               layers=cfg.num_hidden_layers, hidden=cfg.hidden_size,
                               intermediate=getattr(cfg, "intermediate_size", None) or 4 * cfg.hidden_size,
                               vocab=cfg.vocab_size, tokens=tokens or self.config.micro_batch_tokens,
                               checkpointing=self.config.gradient_checkpointing, reference=self.ref_model is not None)

    # -- the seam ------------------------------------------------------------------------------
    def client(self) -> Any:
        return self._client

    def update(self, samples: list[Sample]) -> dict[str, float]:
        """One GRPO update over ``samples`` (advantages already set)."""
        torch = self.torch
        samples = [s for s in samples if s.n_trainable]
        if not samples:
            return {"skipped": 1.0}
        n_mb = max(1, min(self.config.mini_batches, len(samples)))
        chunks = [samples[i::n_mb] for i in range(n_mb)]
        totals: dict[str, float] = {"loss": 0.0, "grad_norm": 0.0, "clip_frac": 0.0, "approx_kl": 0.0}
        mismatch: list[torch.Tensor] = []
        tokens = 0
        for mb_i, mb in enumerate(chunks):
            norm = float(sum(s.n_trainable for s in mb))
            self.optimizer.zero_grad(set_to_none=True)
            mb_loss = 0.0
            for micro in self._micro_batches(mb):
                with self._recompute():
                    logp, mask, old, adv, entropy = self._micro(self.model, micro, bool(self.config.loss.entropy_coef))
                have_old = ~torch.isnan(old)
                if mb_i == 0:
                    sel = mask.bool() & have_old
                    if sel.any():
                        mismatch.append((logp.detach() - old)[sel].abs())
                old_logp = torch.where(have_old, old, logp.detach())
                ref = self._reference(micro)
                loss, m = self.loss_fn(logp, old_logp, adv, mask, self.config.loss, norm=norm, n_seqs=len(mb),
                                       ref_logp=ref, entropy=entropy)
                loss.backward()
                mb_loss += float(loss.detach())
                w = float(mask.sum()) / norm
                totals["clip_frac"] += m["clip_frac"] * w / n_mb
                totals["approx_kl"] += m["approx_kl"] * w / n_mb
            gn = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
            self.optimizer.step()
            totals["loss"] += mb_loss / n_mb
            totals["grad_norm"] += float(gn) / n_mb
            tokens += int(norm)
        self.step += 1
        mm = torch.cat(mismatch) if mismatch else None
        return {**totals, "tokens": float(tokens), "samples": float(len(samples)), "optimizer_steps": float(n_mb),
                "logprob_mismatch_mean": float(mm.mean()) if mm is not None else math.nan,
                "logprob_mismatch_max": float(mm.max()) if mm is not None else math.nan}

    def sequence_logprob(self, sample: Sample) -> Any:
        """The differentiable sum of the policy's logprobs over ``sample``'s mask-1 tokens (for
        algorithms written on top of this trainer's model)."""
        with self._recompute():
            logp, mask, _, _, _ = self._micro(self.model, [sample])
        return (logp * mask).sum()

    def sft(self, samples: list[Sample], epochs: int = 1, lr: float | None = None) -> list[float]:
        """Supervised warm start: token-mean NLL of the mask-1 tokens, one optimizer step per sample
        batch per epoch (advantage 1, ratio 1: the GRPO gradient reduces to the NLL gradient)."""
        torch = self.torch
        if lr is not None:
            self._set_lr(lr)
        losses = []
        for _ in range(epochs):
            self.optimizer.zero_grad(set_to_none=True)
            norm = float(sum(s.n_trainable for s in samples))
            total = 0.0
            for micro in self._micro_batches(samples):
                with self._recompute():
                    logp, mask, _, _, _ = self._micro(self.model, micro)
                loss = -(logp * mask).sum() / norm
                loss.backward()
                total += float(loss.detach())
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
            self.optimizer.step()
            losses.append(total)
        if lr is not None:
            self._set_lr(self.config.lr)
        return losses

    def _set_lr(self, lr: float) -> None:
        for g in self.optimizer.param_groups:
            g["lr"] = lr

    # -- checkpoints ---------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """``model/`` (the weights, a plain model directory) or with LoRA ``adapter/`` (``peft``'s
        adapter directory; ``model/`` too with ``merge_on_save``), and ``trainer.pt``."""
        torch = self.torch
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        if self.peft is not None:
            self.peft.save_pretrained(path / "adapter")
            if self.config.merge_on_save:
                self.save_merged(path / "model")
        else:
            self.model.save_pretrained(path / "model")
            self.tokenizer.save_pretrained(path / "model")
        torch.save({"optimizer": self.optimizer.state_dict(), "step": self.step,
                    "torch_rng": torch.get_rng_state(), "python_rng": random.getstate(),
                    "numpy_rng": np.random.get_state(), "config": json.dumps(asdict(self.config), default=str)},
                   path / "trainer.pt")

    def save_merged(self, out: str | Path) -> Path:
        """The current policy as a plain model directory (what ``hf:DIR`` and ``--model`` load): the
        base weights with every LoRA delta added (at ``dtype``), the adapter left as it is. Without
        LoRA, the model itself."""
        out = Path(out)
        if self.peft is None:
            self.model.save_pretrained(out)
        else:
            self.model.save_pretrained(out, state_dict=merged_state_dict(self.model))
            (out / "adapter_config.json").unlink(missing_ok=True)
        self.tokenizer.save_pretrained(out)
        return out

    def load(self, path: Path) -> None:
        torch = self.torch
        path = Path(path)
        if self.peft is not None:
            self._load_adapter(path)
        else:
            self._load_weights(path)
        blob = self.load_optimizer(path)
        self.step = int(blob["step"])
        torch.set_rng_state(blob["torch_rng"])
        random.setstate(blob["python_rng"])
        np.random.set_state(blob["numpy_rng"])

    def _load_weights(self, path: Path) -> None:
        from safetensors.torch import load_file

        weights = path / "model" / "model.safetensors"
        if (path / "adapter").is_dir():
            raise ValueError(f"{path}: the checkpoint holds a LoRA adapter (adapter/); load it with the same "
                             "--lora-rank (and --lora-targets) it was trained with")
        if not weights.is_file():
            raise ValueError(f"{path}: no model.safetensors in the checkpoint")
        state = load_file(str(weights), device=str(self.device))
        missing, unexpected = self.model.load_state_dict(state, strict=False)
        tied = set(getattr(self.model, "_tied_weights_keys", None) or [])
        if unexpected or [k for k in missing if k not in tied and not _tied(self.model, k)]:
            raise ValueError(f"{path}: the checkpoint does not fit the model (missing {missing[:3]}, unexpected {unexpected[:3]})")

    def _load_adapter(self, path: Path) -> None:
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        weights = path / "adapter" / "adapter_model.safetensors"
        if not weights.is_file():
            raise ValueError(f"{path}: no adapter/adapter_model.safetensors (a LoRA checkpoint of the local trainer)")
        result = set_peft_model_state_dict(self.peft, load_file(str(weights), device=str(self.device)))
        missing = [k for k in result.missing_keys if "lora_" in k]
        if result.unexpected_keys or missing:
            raise ValueError(f"{path}: the adapter does not fit this model and --lora-* settings (missing {missing[:3]}, "
                             f"unexpected {result.unexpected_keys[:3]})")

    def load_optimizer(self, path: str | Path) -> dict[str, Any]:
        """Continue the optimizer state (AdamW's moments and their step counts) saved in checkpoint
        ``path`` (its ``trainer.pt``), for a new run that starts from that checkpoint's weights: a
        fresh state's first steps move every weight by about ``lr`` whatever its gradient's scale.
        The learning rate stays this run's. Returns the saved blob. Raises ``ValueError`` when the
        file is missing, unreadable, or holds the state of another model's parameters."""
        torch = self.torch
        path = Path(path)
        file = path / "trainer.pt"
        if not file.is_file():
            raise ValueError(f"{path}: no trainer.pt (the optimizer state a local-backend checkpoint holds)")
        try:
            blob = torch.load(file, weights_only=False)
            state = blob["optimizer"]
        except Exception as exc:  # a truncated or foreign file: say which, lose nothing
            raise ValueError(f"{file}: not a readable optimizer checkpoint ({type(exc).__name__}: {exc})") from exc
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        saved = [i for g in state.get("param_groups", []) for i in g["params"]]
        if len(saved) != len(params):
            raise ValueError(f"{file}: the optimizer state holds {len(saved)} parameters, this model has {len(params)}")
        for i, p in zip(saved, params):
            moment = state["state"].get(i, {}).get("exp_avg")
            if moment is not None and tuple(moment.shape) != tuple(p.shape):
                raise ValueError(f"{file}: the optimizer state of parameter {i} has shape {tuple(moment.shape)}, "
                                 f"this model's has {tuple(p.shape)} (a checkpoint of another model?)")
        self.optimizer.load_state_dict(state)
        self._set_lr(self.config.lr)  # the learning rate is this run's (a resume may change it)
        return blob

    # -- internals -----------------------------------------------------------------------------
    def _micro_batches(self, samples: list[Sample]) -> list[list[Sample]]:
        if not self.config.pack:
            return [[s] for s in samples]
        if self.config.share_prefix:
            by_group: dict[str, list[Sample]] = {}
            for s in samples:
                by_group.setdefault(s.group, []).append(s)
            return [m for members in by_group.values() for m in self._length_batches(members)]
        return self._length_batches(samples)

    def _length_batches(self, samples: list[Sample]) -> list[list[Sample]]:
        out: list[list[Sample]] = []
        cur: list[Sample] = []
        for s in sorted(samples, key=lambda s: len(s.token_ids)):
            longest = max([len(x.token_ids) for x in cur] + [len(s.token_ids)])
            if cur and longest * (len(cur) + 1) > self.config.micro_batch_tokens:
                out.append(cur)
                cur = []
            cur.append(s)
        if cur:
            out.append(cur)
        return out

    def _rows(self, micro: list[Sample], P: int = 0) -> tuple[Any, ...]:
        """Padded tensors of a micro-batch from token ``P`` on: input ids and attention [B, L], and
        per predicted token its loss mask and rollout logprob (NaN where none) [B, L'], where
        position t predicts token t + 1; with a shared prefix (P > 0) the prefix's last position
        predicts token P, so L' = L, else L' = L - 1. Also the advantages [B]."""
        torch = self.torch
        first = P if P else 1
        L = max(len(s.token_ids) for s in micro) - P
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids = torch.full((len(micro), L), pad, dtype=torch.long)
        attn = torch.zeros((len(micro), L), dtype=torch.long)
        mask = torch.zeros((len(micro), L - (first - P)))
        old = torch.full(mask.shape, float("nan"))
        for i, s in enumerate(micro):
            n = len(s.token_ids)
            ids[i, : n - P] = torch.tensor(s.token_ids[P:])
            attn[i, : n - P] = 1
            mask[i, : n - first] = torch.tensor(s.loss_mask[first:], dtype=torch.float)
            old[i, : n - first] = torch.tensor([math.nan if lp is None else lp for lp in s.logprobs[first:]],
                                               dtype=torch.float)
        adv = torch.tensor([s.advantage for s in micro], dtype=torch.float)
        d = self.device
        return ids.to(d), attn.to(d), mask.to(d), old.to(d), adv.to(d)

    def _shared_prefix(self, micro: list[Sample]) -> int:
        """Tokens every member shares before any member's first mask-1 token (0: no sharing)."""
        if not (self.config.pack and self.config.share_prefix) or self.config.gradient_checkpointing or len(micro) < 2:
            return 0
        first = min(s.loss_mask.index(1) if 1 in s.loss_mask else len(s.loss_mask) for s in micro)
        ref = micro[0].token_ids
        n = 0
        limit = min(first, *(len(s.token_ids) - 1 for s in micro))
        while n < limit and all(s.token_ids[n] == ref[n] for s in micro):
            n += 1
        return n if n >= 32 else 0

    def _micro(self, model: Any, micro: list[Sample], with_entropy: bool = False) -> tuple[Any, ...]:
        """(logp, mask, old, adv, entropy) of one micro-batch, aligned [B, predicted tokens]: logprobs
        at the sampling temperature, zero at mask-0 positions. ``pack`` off is the naive baseline
        (full-vocabulary log-softmax at every position); otherwise only mask-1 positions go through
        the LM head, and a group's shared prompt runs once (its cache serves every member)."""
        torch = self.torch
        P = self._shared_prefix(micro)
        ids, attn, mask, old, adv = self._rows(micro, P)
        head = model.get_output_embeddings()
        if not self.config.pack or head is None:
            logits = model(input_ids=ids, attention_mask=attn).logits[:, :-1].float() / (self.config.temperature or 1.0)
            lsm = torch.log_softmax(logits, dim=-1)
            logp = lsm.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
            ent = -(lsm.exp() * lsm).sum(-1) if with_entropy else None
            return logp * (mask > 0), mask, old, adv, ent
        base = model.base_model
        if not P:
            hidden = base(input_ids=ids, attention_mask=attn).last_hidden_state[:, :-1]
            targets = ids[:, 1:]
        else:
            hidden = self._shared_prefix_hidden(model, base, micro, P, ids, attn)
            targets = ids
        sel = mask > 0
        lsm = torch.log_softmax(head(hidden[sel]).float() / (self.config.temperature or 1.0), dim=-1)
        picked = lsm.gather(-1, targets[sel].unsqueeze(-1)).squeeze(-1)
        logp = torch.zeros(mask.shape, dtype=picked.dtype, device=picked.device).masked_scatter(sel, picked)
        ent = None
        if with_entropy:
            ent = torch.zeros(mask.shape, dtype=picked.dtype, device=picked.device).masked_scatter(
                sel, -(lsm.exp() * lsm).sum(-1))
        return logp, mask, old, adv, ent


    def _shared_prefix_hidden(self, model: Any, base: Any, micro: list[Sample], P: int, ids: Any, attn: Any) -> Any:
        """Final hidden states [B, S, H] predicting tokens P.. of every member: the shared prompt runs
        once (with gradients), then members' continuations run in length buckets, each bucket
        attending to its own copy of the prompt's keys and values. Buckets hold members within
        ``_BUCKET_FILL`` of the bucket's longest continuation, so a short give-up does not pad to a
        long fix (attention over the prompt is most of a continuation's cost); rows past a member's
        length are zero and never selected."""
        torch = self.torch
        from transformers import DynamicCache

        B, S = ids.shape
        d = self.device
        pre = base(input_ids=torch.tensor([micro[0].token_ids[:P]], device=d), use_cache=True)
        kv = [(layer.keys, layer.values) for layer in pre.past_key_values.layers]
        last = pre.last_hidden_state[:, -1:]
        lengths = [len(s.token_ids) - P for s in micro]
        parts: list[tuple[list[int], Any]] = []
        for rows in _length_buckets(lengths):
            b, Sb = len(rows), max(lengths[i] for i in rows)
            cache = DynamicCache(ddp_cache_data=[(k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in kv],
                                 config=model.config)
            idx = torch.tensor(rows, device=d)
            b_attn = torch.cat([torch.ones((b, P), dtype=torch.long, device=d), attn[idx, :Sb]], dim=1)
            pos = torch.arange(P, P + Sb, device=d).unsqueeze(0).expand(b, Sb)
            hs = base(input_ids=ids[idx, :Sb], attention_mask=b_attn, past_key_values=cache,
                      position_ids=pos).last_hidden_state
            h = torch.cat([last.expand(b, 1, -1), hs[:, :-1]], dim=1)
            parts.append((rows, torch.nn.functional.pad(h, (0, 0, 0, S - Sb))))
        order = torch.tensor([i for rows, _ in parts for i in rows], device=d)
        return torch.cat([h for _, h in parts], dim=0)[torch.argsort(order)]  # back to the members' order


_BUCKET_FILL = 0.75
"""A member joins a bucket while its continuation is at least this share of the bucket's longest."""


def _length_buckets(lengths: list[int]) -> list[list[int]]:
    """Indices of ``lengths`` in buckets, longest first, each within ``_BUCKET_FILL`` of its longest."""
    out: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        if out and lengths[i] >= _BUCKET_FILL * lengths[out[-1][0]]:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def lora_targets(model: Any, targets: tuple[str, ...] | None) -> tuple[str, ...]:
    """The module names a LoRA adapter wraps on ``model``, checked: every name asked for must be a
    linear layer's name there; by default the attention and MLP projections it has (``LORA_TARGETS``)."""
    import torch

    linear = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)})
    if targets:
        unknown = [t for t in targets if t not in linear]
        if unknown:
            raise ValueError(f"--lora-targets {','.join(unknown)}: no linear layer of that name in the model; "
                             f"its linear layers: {', '.join(linear)}")
        return tuple(targets)
    found = tuple(t for t in LORA_TARGETS if t in linear)
    if not found:
        raise ValueError(f"the model has none of the default LoRA targets ({', '.join(LORA_TARGETS)}); pass "
                         f"--lora-targets from its linear layers: {', '.join(linear)}")
    return found


def merged_state_dict(model: Any) -> dict[str, Any]:
    """``model``'s state dict with its LoRA layers merged (``W + scale * B @ A`` at W's dtype) under
    the plain module names, the adapter's own tensors left out; ``model`` is not changed."""
    from peft.tuners.lora import LoraLayer

    state = {k.replace(".base_layer.", "."): v for k, v in model.state_dict().items() if "lora_" not in k}
    for name, m in model.named_modules():
        if isinstance(m, LoraLayer):
            w = m.get_base_layer().weight
            delta = sum(m.get_delta_weight(a).float() for a in m.active_adapters)
            state[f"{name}.weight"] = (w.detach().float() + delta).to(w.dtype)
    return state


def _tied(model: Any, key: str) -> bool:
    """A missing key that is the output embedding tied to the input one."""
    return key.endswith("lm_head.weight") and bool(getattr(model.config, "tie_word_embeddings", False))
