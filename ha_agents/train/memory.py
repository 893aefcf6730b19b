"""A memory estimate of the local trainer, computed from counts alone (nothing is run or measured),
printed by ``ha train`` before the first rollout.

- **weights**: every parameter at its dtype (frozen base weights at ``--dtype``; with LoRA the
  adapter's weights are fp32, as ``peft`` keeps them);
- **gradients**: one per trainable parameter, at its dtype;
- **AdamW moments**: two per trainable parameter, at its dtype (``torch.optim.AdamW`` keeps
  ``exp_avg`` and ``exp_avg_sq`` like the parameter);
- **reference model**: a second copy of the weights when a KL term needs one and there is no LoRA
  (with LoRA the reference is the base model with the adapter disabled: no copy);
- **activations (estimate)**: a rough count of what autograd keeps per token and decoder layer,
  ``ACT_PER_TOKEN_LAYER`` = 10 hidden-size + 4 intermediate-size values (norm inputs and outputs,
  q/k/v/attention outputs, the residual, the MLP's gate, up, activation and product), times the
  tokens of one micro-batch; with gradient checkpointing one hidden state per layer plus one layer
  recomputed in full; plus the LM head's fp32 logits and log-softmax over the vocabulary at the
  trainable positions (taken as all the micro-batch's tokens). Attention scores are not counted
  (fused attention keeps none). It is an estimate: allocator overhead, temporary buffers and the
  framework are not in it.
"""

from __future__ import annotations

from dataclasses import dataclass

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
ACT_HIDDEN, ACT_INTERMEDIATE = 10, 4
GIB = 1024 ** 3


@dataclass(frozen=True)
class MemoryEstimate:
    params: int
    trainable: int
    weights: int
    grads: int
    adam: int
    reference: int
    activations: int
    """All in bytes but the two counts; ``activations`` is an estimate."""

    @property
    def total(self) -> int:
        return self.weights + self.grads + self.adam + self.reference + self.activations

    def line(self) -> str:
        g = lambda b: f"{b / GIB:.2f} GiB"  # noqa: E731
        ref = f", reference model {g(self.reference)}" if self.reference else ""
        return (f"memory estimate (computed, not measured): {self.params:,} parameters, {self.trainable:,} trainable "
                f"({100 * self.trainable / max(1, self.params):.2f}%): weights {g(self.weights)}, gradients "
                f"{g(self.grads)}, AdamW moments {g(self.adam)}{ref}, activations ~{g(self.activations)} (estimate, "
                f"per micro-batch); total ~{g(self.total)}")


def estimate_memory(params: int, trainable: int, dtype: str, trainable_dtype: str, *, layers: int, hidden: int,
                    intermediate: int, vocab: int, tokens: int, checkpointing: bool = False,
                    reference: bool = False) -> MemoryEstimate:
    """``params``: all parameters; ``trainable``: those the optimizer updates (at ``trainable_dtype``;
    the other ``params - trainable`` at ``dtype``); ``tokens``: one micro-batch's tokens."""
    for d in (dtype, trainable_dtype):
        if d not in DTYPE_BYTES:
            raise ValueError(f"unknown dtype {d!r}; use {', '.join(DTYPE_BYTES)}")
    if not 0 <= trainable <= params:
        raise ValueError(f"trainable parameters ({trainable}) must be between 0 and all parameters ({params})")
    b, bt = DTYPE_BYTES[dtype], DTYPE_BYTES[trainable_dtype]
    weights = (params - trainable) * b + trainable * bt
    per_layer = (ACT_HIDDEN * hidden + ACT_INTERMEDIATE * intermediate) * b
    if checkpointing:
        body = tokens * (layers * hidden * b + per_layer)
    else:
        body = tokens * layers * per_layer
    head = tokens * vocab * 4 * 2  # fp32 logits and their log-softmax
    return MemoryEstimate(params=params, trainable=trainable, weights=weights, grads=trainable * bt,
                          adam=2 * trainable * bt, reference=params * b if reference else 0,
                          activations=body + head)
