"""Batches of episodes: evaluation runs (``evaluate``), GRPO rollout groups (``rollouts``), paired
comparison of two runs (``compare``), grading anyone's predictions (``grade``) and progress on
stderr (``progress``)."""

from . import remote_env  # noqa: F401,E402 - registers EpisodeConfig(env_placement="ray")
