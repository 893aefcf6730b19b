"""LLM clients behind one protocol (``base.py``): OpenAI-compatible HTTP, local transformers,
scripted / replay models, and a fake OpenAI-compatible server for tests."""

from .base import Completion, LLMClient, LLMError, TransientLLMError
from .openai_http import OpenAIClient, OpenAIConfig, parse_model_spec
from .scripted import PolicyClient, ReplayClient, ScriptedClient

__all__ = ["Completion", "LLMClient", "LLMError", "OpenAIClient", "OpenAIConfig", "PolicyClient", "ReplayClient",
           "ScriptedClient", "TransientLLMError", "parse_model_spec"]
