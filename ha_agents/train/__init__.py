"""Training: the trainer seam (``base``), GRPO losses (``losses``), the driver loop (``driver``),
task pools (``pool``); these need no torch. With torch:, the local torch trainer (``local``), tiny local models (``models``) and the
verl 0.9.1 adapter (``verl_loop``, ``verl_launch``)."""

from .base import Batch, BatchPolicy, Sample, Trainer, prepare_batch
from .driver import RolloutLedger, TaskSampler, TrainConfig, train
from .pool import PoolReport, build_pool

__all__ = ["Batch", "BatchPolicy", "PoolReport", "RolloutLedger", "Sample", "TaskSampler", "TrainConfig", "Trainer",
           "build_pool", "prepare_batch", "train"]
