"""Preflight: one cheap check that a run's model can answer at all, before any sandbox starts.

A broken model otherwise shows up as every episode masked ``model_error`` (after retries) and a
pass@1 of 0. ``check_model(spec, ...)`` raises :class:`ModelCheckError` naming the cause:

- ``openai:NAME@URL``: ``GET URL/models`` (when the server lists its models, an unknown NAME is
  named with the list), then one tiny request of the kind the run sends (``/chat/completions``,
  or ``/completions`` in token mode) with the run's sampling and request fields, no retries. A
  refused connection, a 401/403 (the key variable named, and whether it is set), a 404 (no such
  endpoint or model), any other 4xx/5xx (the server's own words) and a reply that is not an OpenAI
  completion each get their own message.
- ``replay:FILE``: the file exists, holds trajectories, and records every selected task.
- Scripted models, ``hf:`` and ``menu:`` need no check here (they fail at load time already).
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import urlparse

from .options import ModelOptions

TIMEOUT_S = 60.0
"""How long the preflight waits for each answer (a cold server may take a while to answer once)."""
PROMPT = "Reply with the word OK."


class ModelCheckError(ValueError):
    """The model of a run cannot answer; the message says why and what to fix."""


def is_local_url(url: str) -> bool:
    host = (urlparse(url).hostname or "").lower()
    return host in ("localhost", "::1", "0.0.0.0") or host.startswith("127.")


def missing_key_warning(spec: Any, options: ModelOptions | None) -> str | None:
    """A warning when a remote ``openai:`` model's API key variable is unset (local servers often need none)."""
    if not (isinstance(spec, str) and spec.startswith("openai:")):
        return None
    options = options or ModelOptions()
    url = spec.rsplit("@", 1)[-1]
    if options.api_key() or is_local_url(url):
        return None
    return (f"${options.api_key_env} is unset: requests to {url} go without an API key "
            "(set it, or name another variable with --api-key-env)")


def check_model(spec: Any, options: ModelOptions | None = None, *, prompt_ids: list[int] | None = None,
                instance_ids: Iterable[str] = (), timeout_s: float = TIMEOUT_S) -> None:
    """Raise :class:`ModelCheckError` when ``spec`` cannot serve the run (see the module docstring).
    ``prompt_ids``: token mode, the ids of :data:`PROMPT` (sent to ``/completions`` as the run's
    requests are); ``instance_ids``: the run's tasks (a replay file must record each)."""
    if not isinstance(spec, str):
        return
    if spec.startswith("openai:"):
        from .openai_http import parse_model_spec

        cfg = parse_model_spec(spec)
        _check_http(cfg.model, cfg.base_url, options or ModelOptions(), prompt_ids, timeout_s)
    elif spec.startswith("replay:"):
        check_replay(spec[len("replay:"):], instance_ids)


def check_replay(path: str, instance_ids: Iterable[str]) -> None:
    """Every selected task has a recorded trajectory in the replay file."""
    file = Path(path)
    if not file.is_file():
        raise ModelCheckError(f"replay:{path}: no such file")
    recorded: set[str] = set()
    for n, line in enumerate(file.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            recorded.add(json.loads(line)["instance_id"])
        except (json.JSONDecodeError, KeyError, TypeError):
            raise ModelCheckError(f"replay:{path}, line {n}: not a trajectory record (a JSON object with "
                                  "instance_id and messages, as ha eval writes)") from None
    if not recorded:
        raise ModelCheckError(f"replay:{path}: no trajectories to replay")
    wanted = list(dict.fromkeys(instance_ids))
    missing = [i for i in wanted if i not in recorded]
    if missing:
        shown = ", ".join(missing[:10]) + (f", ... ({len(missing) - 10} more)" if len(missing) > 10 else "")
        raise ModelCheckError(f"replay:{path} records no trajectory of {len(missing)} of the {len(wanted)} selected "
                              f"task(s): {shown}; select the tasks it records (--instances, --filter) or replay "
                              "a run of these tasks")


def _check_http(model: str, base_url: str, options: ModelOptions, prompt_ids: list[int] | None,
                timeout_s: float) -> None:
    base = base_url.rstrip("/")
    served = _served_models(base, options, timeout_s)
    if served is not None and model not in served:
        raise ModelCheckError(f"the server at {base_url} does not know model {model!r}; it serves "
                              f"{', '.join(served) if served else 'no models'} (the NAME of openai:NAME@URL)")
    body: dict[str, Any] = {"model": model, "max_tokens": 8, **options.extra}
    body.update({k: v for k, v in (("temperature", options.temperature), ("top_p", options.top_p)) if v is not None})
    token_mode = prompt_ids is not None
    path = "/completions" if token_mode else "/chat/completions"
    if token_mode:
        body.update(prompt=list(prompt_ids or []), return_token_ids=True, logprobs=1)
    else:
        body["messages"] = [{"role": "user", "content": PROMPT}]
    status, raw = _request(base + path, options, body, timeout_s)
    if status in (401, 403):
        raise ModelCheckError(_refused(status, base + path, options))
    if status == 404:
        raise ModelCheckError(f"HTTP 404 from {base + path}: {_detail(raw)}: no such model or endpoint (is "
                              f"{model!r} the served name, and does the URL end in /v1?)")
    if status in (405, 501):
        raise ModelCheckError(f"HTTP {status} from {base + path}: {_detail(raw)}: the server takes no POST "
                              f"request there; is {base_url} an OpenAI-compatible API?")
    if status != 200:
        raise ModelCheckError(f"HTTP {status} from {base + path}: {_detail(raw)}")
    if not _is_completion(raw, token_mode):
        kind = "completion" if token_mode else "chat completion"
        raise ModelCheckError(f"the reply of {base + path} is not an OpenAI {kind} (is {base_url} an "
                              f"OpenAI-compatible API?): {raw[:200].decode(errors='replace')!r}")


def _served_models(base: str, options: ModelOptions, timeout_s: float) -> list[str] | None:
    """The ids ``GET /models`` lists, or None when the server does not list them (not every one does)."""
    status, raw = _request(base + "/models", options, None, timeout_s)
    if status in (401, 403):
        raise ModelCheckError(_refused(status, base + "/models", options))
    if status != 200:
        return None
    try:
        data = json.loads(raw)
        return [str(m["id"]) for m in data["data"]]
    except (json.JSONDecodeError, KeyError, TypeError):
        return None


def _request(url: str, options: ModelOptions, body: dict[str, Any] | None, timeout_s: float) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json"}
    if options.api_key():
        headers["Authorization"] = f"Bearer {options.api_key()}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (socket.timeout, TimeoutError):
        raise ModelCheckError(f"the server at {url} accepted the connection but sent no answer within "
                              f"{timeout_s:.0f} s") from None
    except (urllib.error.URLError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ModelCheckError(f"no server answers at {url} ({reason}): is it running, and is the URL right?") from None


def _refused(status: int, url: str, options: ModelOptions) -> str:
    var = options.api_key_env
    if options.api_key():
        return f"HTTP {status} from {url}: the key in ${var} was refused"
    return f"HTTP {status} from {url}: the server wants an API key and ${var} is unset (set it, or pass --api-key-env)"


def _detail(raw: bytes) -> str:
    try:
        err = json.loads(raw).get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        if msg:
            return str(msg)[:300]
    except (json.JSONDecodeError, AttributeError):
        pass
    return raw[:300].decode(errors="replace").strip() or "(empty body)"


def _is_completion(raw: bytes, token_mode: bool) -> bool:
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
    except (json.JSONDecodeError, KeyError, IndexError, TypeError):
        return False
    if token_mode:
        return isinstance(choice, dict) and "text" in choice
    return isinstance(choice, dict) and isinstance(choice.get("message"), dict)


__all__ = ["ModelCheckError", "check_model", "check_replay", "is_local_url", "missing_key_warning"]
