"""The gateway: an OpenAI-compatible endpoint in front of a model server, one session per episode.

An unmodified harness is given a base URL, ``http://HOST:PORT/s/<session>/v1``, and calls
``POST .../chat/completions`` (and ``GET .../models``) there as it would call any server; the
gateway forwards each call to the session's model and records the turn (``recorder.py``).

Routes (JSON in and out):

- ``POST /sessions`` ``{"name"?}`` -> 201 ``{"session", "base_url"}``: open a session;
- ``POST /s/<id>/v1/chat/completions``: one model call (400: a malformed request, 404: no such
  session, 502: the model server failed for good; the session is then marked ``model_error`` and
  its episode is masked);
- ``GET /s/<id>/v1/models``: the session's model;
- ``POST /s/<id>/exec`` ``{"command", "cwd"?, "env"?}`` -> ``{"output", "returncode"}``: run one
  command in the session's sandbox (only sessions opened with one: ``ha gateway eval``);
- ``GET /s/<id>/record``: what the session recorded so far; ``POST /s/<id>/end``: close it (its
  record is returned, and handed to ``on_end`` when the server has one).

Standard library only (``ThreadingHTTPServer``): one thread per connection, a large listen queue.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from ..llm.base import LLMClient, LLMError
from .recorder import ContextLimit, RequestError, TurnRecorder, read_messages

_ROUTE = re.compile(r"^/s/([A-Za-z0-9_.-]{1,128})(/v1/chat/completions|/v1/models|/exec|/record|/end)/?$")
_UNSUPPORTED = ("stream", "n")


@dataclass
class Session:
    id: str
    recorder: TurnRecorder
    model: str
    sandbox: Any = None
    """Where ``/exec`` runs commands (a ``Sandbox``); None: the session has none."""
    command_timeout_s: float | None = None
    model_error: str = ""
    """The model server failed for good on a call: the episode is masked (``model_error``)."""
    sandbox_error: str = ""
    """The sandbox failed under a command: the episode is masked (``sandbox_error``)."""
    context_limit: bool = False
    """Token mode: the conversation filled the context budget (the episode ends ``context_limit``)."""
    execs: int = 0
    exec_s: float = 0.0
    ended: bool = False
    started: float = field(default_factory=time.monotonic)
    exec_lock: threading.Lock = field(default_factory=threading.Lock)
    """One command at a time in the sandbox's shell."""
    requested: list[dict[str, Any]] = field(default_factory=list)
    """Per call, the sampling fields the harness asked for (the gateway's own options decide)."""

    def record(self) -> dict[str, Any]:
        r = self.recorder
        return {"session": self.id, "model": self.model, "messages": r.messages(), "model_calls": r.model_calls,
                "token_ids": r.stream.token_ids, "loss_mask": r.stream.loss_mask, "logprobs": r.stream.logprobs,
                "token_error": r.token_error, "model_error": self.model_error, "context_limit": self.context_limit,
                "sandbox_error": self.sandbox_error, "execs": self.execs,
                "requested": self.requested}


def _completion_body(session: Session, comp: Any, requested_model: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": comp.message.get("content") or None}
    if comp.message.get("tool_calls"):
        message["tool_calls"] = comp.message["tool_calls"]
    finish = comp.finish_reason or ("tool_calls" if message.get("tool_calls") else "stop")
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
    if comp.logprobs is not None:
        choice["logprobs"] = {"content": [{"token": "", "logprob": lp} for lp in comp.logprobs if lp is not None]}
    if comp.token_ids is not None:
        choice["token_ids"] = list(comp.token_ids)
    usage = {"prompt_tokens": int(comp.usage.get("prompt_tokens", 0)),
             "completion_tokens": int(comp.usage.get("completion_tokens", len(comp.token_ids or [])))}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {"id": f"chatcmpl-{session.id}-{len(session.recorder.model_calls)}", "object": "chat.completion",
            "created": int(time.time()), "model": requested_model or session.model, "choices": [choice], "usage": usage}


def _check_request(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise RequestError("the body must be a JSON object")
    for key in _UNSUPPORTED:
        if key == "stream" and body.get("stream"):
            raise RequestError("stream: streaming is not supported by the gateway; send stream=false")
        if key == "n" and body.get("n") not in (None, 1):
            raise RequestError("n: the gateway records one completion per call; send n=1")
    tools = body.get("tools") or []
    if not isinstance(tools, list) or any(not isinstance(t, dict) or not isinstance(t.get("function"), dict)
                                          for t in tools):
        raise RequestError("tools: expected a list of {\"type\": \"function\", \"function\": {...}} objects")
    for key in ("max_tokens", "max_completion_tokens", "seed"):
        if body.get(key) is not None and (not isinstance(body[key], int) or body[key] < 0):
            raise RequestError(f"{key}: expected a non-negative integer, got {body[key]!r}")
    return body


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024
    """Many harnesses connect at once (the standard library's default listen queue is 5)."""
    daemon_threads = True


class Gateway:
    """Sessions and the HTTP server. ``client_factory()`` makes one model client per session;
    ``recorder_factory(client)`` its recorder (token mode or chat mode)."""

    def __init__(self, client_factory: Callable[[], LLMClient], recorder_factory: Callable[[LLMClient], TurnRecorder],
                 model: str, host: str = "127.0.0.1", port: int = 0,
                 on_end: Callable[[Session], None] | None = None) -> None:
        self.client_factory = client_factory
        self.recorder_factory = recorder_factory
        self.model = model
        self.on_end = on_end
        self.sessions: dict[str, Session] = {}
        self.lock = threading.Lock()
        self.httpd = _Server((host, port), _handler(self))
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def base_url(self, session_id: str) -> str:
        return f"{self.url}/s/{session_id}/v1"

    def open(self, name: str | None = None, sandbox: Any = None, command_timeout_s: float | None = None,
             seed: int | None = None) -> Session:
        """A new session (``name``: its id when free, for readable URLs; else a random one). ``seed``:
        the episode's sampling seed for calls that name none (``TurnRecorder.seed``)."""
        sid = name if name and re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", name) else secrets.token_hex(8)
        with self.lock:
            if sid in self.sessions:
                sid = f"{sid}-{secrets.token_hex(4)}"
            session = Session(sid, self.recorder_factory(self.client_factory()), self.model, sandbox=sandbox,
                              command_timeout_s=command_timeout_s)
            session.recorder.seed = seed
            self.sessions[sid] = session
        return session

    def get(self, sid: str) -> Session | None:
        with self.lock:
            return self.sessions.get(sid)

    def end(self, session: Session) -> dict[str, Any]:
        if not session.ended:
            session.ended = True
            if self.on_end is not None:
                self.on_end(session)
        return session.record()

    def chat(self, session: Session, body: Any) -> tuple[int, dict[str, Any]]:
        body = _check_request(body)
        messages = read_messages(body.get("messages"))
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        session.requested.append({k: body[k] for k in ("model", "temperature", "top_p", "max_tokens", "seed")
                                  if k in body})
        try:
            comp = session.recorder.complete(messages, body.get("tools") or [], max_tokens=max_tokens,
                                             seed=body.get("seed"))
        except ContextLimit as exc:  # litellm and others read this code as a context-window error
            session.context_limit = True
            return 400, {"error": {"message": str(exc), "type": "invalid_request_error",
                                   "code": "context_length_exceeded"}}
        except LLMError as exc:
            session.model_error = session.model_error or str(exc)
            return 502, {"error": {"message": f"the model server failed: {exc}", "type": "upstream_error"}}
        return 200, _completion_body(session, comp, str(body.get("model") or ""))

    def exec(self, session: Session, body: Any) -> tuple[int, dict[str, Any]]:
        if session.sandbox is None:
            return 404, {"error": {"message": f"session {session.id} has no sandbox to run commands in"}}
        if not isinstance(body, dict) or not isinstance(body.get("command"), str):
            raise RequestError("exec: expected {\"command\": str, \"cwd\"?: str, \"env\"?: {str: str}}")
        env = body.get("env") or {}
        if not isinstance(env, dict) or any(not isinstance(k, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)
                                            or not isinstance(v, str) for k, v in env.items()):
            raise RequestError("exec: env must map variable names to strings")
        from ha_envs.sandbox.base import SandboxError

        from .commands import subshell_command

        t0 = time.monotonic()
        try:
            with session.exec_lock:
                result = session.sandbox.run(subshell_command(body["command"], body.get("cwd") or "", env),
                                             timeout=session.command_timeout_s)
        except SandboxError as exc:
            session.sandbox_error = session.sandbox_error or str(exc)
            return 502, {"error": {"message": f"the sandbox failed: {exc}", "type": "sandbox_error"}}
        session.execs += 1
        session.exec_s += time.monotonic() - t0
        return 200, {"output": result.output, "returncode": result.exit_code, "timed_out": result.timed_out}

    def __enter__(self) -> "Gateway":
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name="ha-gateway")
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def route(gw: Gateway, path: str) -> "tuple[Session, str] | tuple[int, str]":
    """(the session, what of it) a path names, or (404, why not)."""
    m = _ROUTE.match(path.split("?", 1)[0])
    if m is None:
        return 404, f"no route {path}; a session's base URL is /s/<session>/v1"
    session = gw.get(m.group(1))
    if session is None:
        return 404, f"unknown session {m.group(1)!r}; open one with POST /sessions"
    return session, m.group(2)


def _handler(gw: Gateway) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, payload: dict[str, Any]) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _error(self, code: int, message: str) -> None:
            self._send(code, {"error": {"message": message, "type": "invalid_request_error" if code == 400 else
                                        "not_found" if code == 404 else "gateway_error"}})

        def _route(self) -> tuple[Session, str] | None:
            routed = route(gw, self.path)
            if isinstance(routed[0], int):
                self._error(*routed)
                return None
            return routed

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/health":
                self._send(200, {"status": "ok", "sessions": len(gw.sessions)})
                return
            routed = self._route()
            if routed is None:
                return
            session, what = routed
            if what == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": session.model, "object": "model",
                                                             "owned_by": "ha-gateway"}]})
            elif what == "/record":
                self._send(200, session.record())
            else:
                self._error(405, f"use POST for {what}")

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                return json.loads(self.rfile.read(length) or b"null")
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise RequestError(f"the body is not JSON: {exc}") from None

        def do_POST(self) -> None:
            try:
                if self.path.rstrip("/") == "/sessions":
                    body = self._body() or {}
                    if not isinstance(body, dict):
                        raise RequestError("POST /sessions: the body must be a JSON object")
                    s = gw.open(body.get("name"))
                    self._send(201, {"session": s.id, "base_url": gw.base_url(s.id)})
                    return
                routed = self._route()
                if routed is None:
                    return
                session, what = routed
                if session.ended:
                    self._error(409, f"session {session.id} has ended")
                    return
                if what == "/v1/chat/completions":
                    self._send(*gw.chat(session, self._body()))
                elif what == "/exec":
                    self._send(*gw.exec(session, self._body()))
                elif what == "/end":
                    self._send(200, gw.end(session))
                else:
                    self._error(405, f"use GET for {what}")
            except RequestError as exc:
                self._error(400, str(exc))
            except Exception as exc:  # noqa: BLE001 - a bug or a sandbox fault: said, not a dropped connection
                self._error(500, f"{type(exc).__name__}: {exc}")

    return Handler
