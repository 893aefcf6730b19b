"""Batches of episodes: evaluation runs (``evaluate``), GRPO rollout groups (``rollouts``), paired
comparison of two runs (``compare``), grading anyone's predictions (``grade``) and progress on
stderr (``progress``). On Ray they place their episodes through ``ha_agents.cluster``."""

from .. import cluster  # noqa: F401 - registers EpisodeConfig(env_placement="ray")
