"""One registry that turns a ``--model`` string into a client.

A model spec is ``KIND:ARGUMENT`` (``openai:NAME@URL``, ``replay:FILE``, ``hf:PATH``) or the name
of a scripted model (``oracle``, ``null``, ...: ``llm/policies.py``). Each kind registers a
builder with :func:`register_model_kind`; :func:`make_model` builds a client, and
:func:`check_model_spec` fails fast on a spec no episode could use, before any episode starts.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from .base import LLMClient
from .options import ModelOptions
from .policies import PARAMETRIC, POLICIES, make_policy

Builder = Callable[[str, ModelOptions], LLMClient]
"""(the spec's argument after ``KIND:``, the run's model options) -> a client."""
Checker = Callable[[str], None]

_KINDS: dict[str, tuple[Builder, Checker | None]] = {}


def register_model_kind(kind: str, check: Checker | None = None) -> Callable[[Builder], Builder]:
    """Register the builder of ``KIND:ARGUMENT`` specs; ``check`` validates an argument cheaply."""

    def deco(fn: Builder) -> Builder:
        if kind in _KINDS:
            raise ValueError(f"model kind {kind!r} is registered twice")
        _KINDS[kind] = (fn, check)
        return fn

    return deco


def model_kinds() -> list[str]:
    return sorted(_KINDS)


def _unknown(spec: str) -> ValueError:
    kinds = ", ".join(f"{k}:..." for k in model_kinds())
    return ValueError(f"unknown model {spec!r}: use a scripted model ({', '.join(sorted(POLICIES))}) or one of "
                      f"{kinds} (openai:NAME@URL, replay:TRAJECTORIES.jsonl, hf:MODEL_DIR, menu:REPLIES.yaml, coin_prompt:P, "
                      "tool_coin:P0,P1)")


def _split(spec: str) -> tuple[str, str]:
    kind, sep, arg = spec.partition(":")
    if not sep or kind not in _KINDS:
        raise _unknown(spec)
    return kind, arg


def check_model_spec(spec: Any) -> None:
    """Raise ValueError for a spec no episode could use; a client object passes as it is."""
    if not isinstance(spec, str) or spec in POLICIES:
        return
    kind, arg = _split(spec)
    check = _KINDS[kind][1]
    if check is not None:
        check(arg)


def make_model(spec: str, options: ModelOptions | None = None) -> LLMClient:
    """A client for ``spec``; ``options`` (sampling, request fields, API key variable) apply to the
    model backends."""
    from .scripted import PolicyClient

    if spec in POLICIES:
        return PolicyClient(make_policy(spec))
    kind, arg = _split(spec)
    return _KINDS[kind][0](arg, options or ModelOptions())


def _check_openai(arg: str) -> None:
    from .openai_http import parse_model_spec

    parse_model_spec("openai:" + arg)


@register_model_kind("openai", check=_check_openai)
def _openai(arg: str, o: ModelOptions) -> LLMClient:
    from .openai_http import OpenAIClient, parse_model_spec

    cfg = parse_model_spec("openai:" + arg)
    cfg = replace(cfg, api_key=o.api_key() or cfg.api_key, extra_body=dict(o.extra),
                  **{k: v for k, v in (("temperature", o.temperature), ("top_p", o.top_p),
                                       ("max_tokens", o.max_tokens), ("max_attempts", o.max_attempts),
                                       ("backoff_max_s", o.backoff_max_s)) if v is not None})
    return OpenAIClient(cfg)


@register_model_kind("replay")
def _replay(arg: str, o: ModelOptions) -> LLMClient:
    from .scripted import ReplayClient

    return ReplayClient(arg, run=None)  # a seeded episode draws one of the recorded runs


@register_model_kind("menu")
def _menu(arg: str, o: ModelOptions) -> LLMClient:
    from .scripted import MenuClient

    return MenuClient(arg)


def _parametric(kind: str) -> None:
    def check(arg: str) -> None:
        PARAMETRIC[kind](arg)

    def build(arg: str, o: ModelOptions) -> LLMClient:
        from .scripted import PolicyClient

        client = PolicyClient(PARAMETRIC[kind](arg))
        client.name = f"{kind}:{arg}"  # records name the probabilities too
        return client

    register_model_kind(kind, check=check)(build)


for _kind in PARAMETRIC:  # coin_prompt:P, tool_coin:P0,P1 (fixture policies with their probabilities)
    _parametric(_kind)


@register_model_kind("hf")
def _hf(arg: str, o: ModelOptions) -> LLMClient:
    from .hf import TransformersClient

    kw: dict[str, Any] = {}
    if o.temperature is not None:
        kw["temperature"] = o.temperature
    if o.top_p is not None:
        kw["top_p"] = o.top_p
    if o.max_tokens is not None:
        kw["max_tokens"] = o.max_tokens
    return TransformersClient(arg, **kw)


__all__ = ["check_model_spec", "make_model", "model_kinds", "register_model_kind"]
