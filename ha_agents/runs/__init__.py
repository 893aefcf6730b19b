"""Batches of episodes: evaluation runs (``evaluate``), GRPO rollout groups (``rollouts``), paired
comparison of two runs (``compare``), grading anyone's predictions (``grade``) and progress on
stderr (``progress``)."""
