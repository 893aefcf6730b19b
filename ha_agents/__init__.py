"""ha_agents: models on harness-wrapped repair envs, and what learns from their episodes.

The package in wings around the loop::

    loop.py      AgentLoop: one episode, token-faithful (ids, loss mask, logprobs as generated)
    episode.py   EpisodeConfig (how every episode of a run is set up), run_episode() -> EpisodeRecord
    chat/        chat templates rendered incrementally, tokenizers
    llm/         the LLMClient protocol, its backends, scripted models, the --model registry
    records/     the typed episode record, the one JSONL log, exports and the HTML viewer
    cluster/     Ray: groups placed on nodes, artifacts moved between them, remote envs
    runs/        evaluate(), collect() (GRPO groups), compare(), grading predictions, progress
    train/       the Trainer protocol, GRPO maths, the driver loop, local and verl backends
    adapters/    SkyRL-Gym and rllm envs over the same harness-wrapped env

What a user implements: an :class:`LLMClient` (a new model backend) or a :class:`Trainer` (a new RL
algorithm). What a user calls: :func:`evaluate`, :func:`collect`, :func:`run_episode`, with an
:class:`EpisodeConfig`. Imports here are light: nothing pulls torch, transformers, verl or Ray.
"""

from .episode import EpisodeConfig, TokenMode, run_episode
from .llm.base import Completion, LLMClient, LLMError
from .llm.registry import make_model, register_model_kind
from .loop import AgentLoop, LoopConfig, Trajectory
from .records.episode_record import EpisodeRecord, Outcome, classify
from .records.log import JsonlLog
from .runs.evaluate import evaluate
from .runs.rollouts import collect
from .train.base import Trainer

__all__ = ["AgentLoop", "Completion", "EpisodeConfig", "EpisodeRecord", "JsonlLog", "LLMClient", "LLMError",
           "LoopConfig", "Outcome", "TokenMode", "Trainer", "Trajectory", "classify", "collect", "evaluate",
           "make_model", "register_model_kind", "run_episode"]
