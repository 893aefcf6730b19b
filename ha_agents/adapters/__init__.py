"""Adapters for other RL frameworks over the same harness-wrapped env: ``skyrl`` (SkyRL-Gym's
``BaseTextEnv``, extra ``adapters``) and ``rllm`` (rllm's ``BaseEnv`` interface). Each module
imports its framework; this package imports neither."""

from .base import AdapterConfig, AdapterConfigError, TextEpisode, chat_messages

__all__ = ["AdapterConfig", "AdapterConfigError", "TextEpisode", "chat_messages"]
