"""What the model-taking commands share: whole-number flags that must be positive, the model
preflight (``ha_agents.llm.preflight``) with ``--no-preflight``, the API-key warning, and the
retry and stop flags of an HTTP model."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Iterable

MAX_MODEL_ERRORS = 5
"""``ha_agents.runs.model_faults.MAX_MODEL_ERRORS``, not imported: building the parser stays light."""


def _whole_number(text: str, least: int, says: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < least:
        raise argparse.ArgumentTypeError(f"{text}: must be {says}")
    return n


def positive_int(text: str) -> int:
    """An argparse type: a whole number, at least 1 (``--runs``, ``--workers``, ...)."""
    return _whole_number(text, 1, "at least 1")


def non_negative_int(text: str) -> int:
    """An argparse type: a whole number, 0 or more."""
    return _whole_number(text, 0, "0 or more")


def add_preflight_arg(parser: Any) -> None:
    parser.add_argument("--no-preflight", action="store_true",
                        help="skip the check that the model answers (one tiny request, before any sandbox starts)")


def add_model_fault_args(group: Any) -> None:
    """``--max-model-errors``, ``--max-attempts``, ``--backoff-max``."""
    group.add_argument("--max-model-errors", type=non_negative_int, default=MAX_MODEL_ERRORS, metavar="N",
                       help=f"stop the run after N episodes in a row end in a model error (default {MAX_MODEL_ERRORS}; "
                            "0: never stop); rerunning the same command resumes them")
    group.add_argument("--max-attempts", type=positive_int, default=None, metavar="N",
                       help="HTTP attempts per model call, retries included (openai:; default 6)")
    group.add_argument("--backoff-max", type=float, default=None, metavar="SECONDS",
                       help="the longest wait between two attempts (openai:; default 30; waits grow from 0.5 s)")


def preflight(args: argparse.Namespace, models: Iterable[tuple[str, Any]], options: Any = None, *,
              tasks: Iterable[Any] = (), token_mode: Any = None) -> None:
    """Check each ``(flag, spec)`` model before the run starts (unless ``--no-preflight``); warn
    when a remote model's API key variable is unset. ``options``, ``tasks`` and ``token_mode`` are
    those of ``--model`` (the others, teachers, are called with default options). Raises
    ``ModelCheckError`` naming the flag."""
    from ha_agents.llm.options import ModelOptions
    from ha_agents.llm.preflight import PROMPT, ModelCheckError, check_model, missing_key_warning

    ids = [t.instance_id for t in tasks]
    prompt_ids = None
    if token_mode is not None:
        from ha_agents.chat.tokens import as_codec

        prompt_ids = as_codec(token_mode.resolve()[1]).encode(PROMPT)
    for flag, spec in models:
        if not isinstance(spec, str) or not spec:
            continue
        main = flag == "--model"
        opts = options if main and options is not None else ModelOptions()
        note = missing_key_warning(spec, opts)
        if note:
            print(f"warning: {flag} {spec}: {note}", file=sys.stderr)
        if getattr(args, "no_preflight", False):
            continue
        try:
            check_model(spec, opts, prompt_ids=prompt_ids if main else None, instance_ids=ids if main else ())
        except ModelCheckError as exc:
            hint = " (--no-preflight skips this check)" if spec.startswith("openai:") else ""
            raise ModelCheckError(f"{flag} {spec}: {exc}{hint}") from None
