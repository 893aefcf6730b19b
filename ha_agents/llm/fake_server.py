"""A local OpenAI-compatible server for tests: real HTTP on 127.0.0.1, scripted answers, faults
on demand.

``FakeOpenAIServer(respond)``: ``respond(body) -> reply`` decides each answer from the request
(a stateless function of the conversation, so a retried request gets the same answer). A reply is
text, a message dict (``content`` / ``tool_calls`` / ``finish_reason``), or ``{"text": ...}`` for
``/completions``. ``inject(*faults)`` queues faults for the next requests: ``"429"``, ``"500"``,
``"slow"`` (answers after ``slow_s``), ``"truncated_body"`` (HTTP 200 with cut JSON), ``"drop"``
(closes the connection). With a ``tokenizers.Tokenizer`` the server returns ``token_ids`` and
``prompt_token_ids`` as vLLM does when asked (``return_token_ids``). With ``models`` (a list of
names) it lists them at ``GET /v1/models`` and answers a request for another model with vLLM's
404; without, it accepts any model name and has no model list. With ``api_key`` it answers a
request without ``Authorization: Bearer <api_key>`` with 401, as hosted APIs do.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class FakeOpenAIServer:
    def __init__(self, respond: Callable[[dict[str, Any]], Any], tokenizer: Any = None, slow_s: float = 2.0,
                 models: list[str] | None = None, api_key: str | None = None) -> None:
        self.respond = respond
        self.models = models
        self.api_key = api_key
        self.tokenizer = tokenizer
        self.slow_s = slow_s
        self.faults: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def inject(self, *faults: str) -> None:
        with self.lock:
            self.faults.extend(faults)

    def __enter__(self) -> "FakeOpenAIServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.respond(body)
        if isinstance(reply, str):
            reply = {"content": reply}
        finish = reply.get("finish_reason") or ("tool_calls" if reply.get("tool_calls") else "stop")
        text = reply.get("text", reply.get("content") or "")
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids if self.tokenizer is not None else None
        if path.endswith("/completions") and not path.endswith("/chat/completions"):
            choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": finish}
            if body.get("logprobs"):
                choice["logprobs"] = {"token_logprobs": [-0.5] * (len(ids) if ids else 1)}
        else:
            message: dict[str, Any] = {"role": "assistant", "content": reply.get("content") or None}
            if reply.get("tool_calls"):
                message["tool_calls"] = [dict(tc, type="function") for tc in reply["tool_calls"]]
            choice = {"index": 0, "message": message, "finish_reason": finish}
            if body.get("logprobs") and ids is not None:
                choice["logprobs"] = {"content": [{"token": str(i), "logprob": -0.5} for i in ids]}
        if body.get("return_token_ids") and ids is not None:
            choice["token_ids"] = ids
        out: dict[str, Any] = {"id": f"cmpl-{len(self.requests)}", "object": "chat.completion", "model": body.get("model"),
                               "choices": [choice], "usage": {"prompt_tokens": 1, "completion_tokens": len(ids or text)}}
        if body.get("return_token_ids") and isinstance(body.get("prompt"), list):
            out["prompt_token_ids"] = body["prompt"]
        return out

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _refused(self) -> bool:
                if server.api_key is None or self.headers.get("Authorization") == f"Bearer {server.api_key}":
                    return False
                self._send(401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}})
                return True

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self._refused():
                    return
                if server.models is None or not self.path.endswith("/models"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models]})

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests.append(body)
                    fault = server.faults.popleft() if server.faults else None
                if self._refused():
                    return
                if server.models is not None and body.get("model") not in server.models:
                    self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                    return
                if fault in ("429", "500") or (fault or "").startswith("429:"):
                    code, _, after = fault.partition(":")
                    self._send(int(code), {"error": {"message": f"injected {fault}"}},
                               {"Retry-After": after} if after else None)
                    return
                if fault == "drop":
                    self.connection.close()
                    return
                if fault == "slow":
                    time.sleep(server.slow_s)
                try:
                    payload = server._answer(self.path, body)
                except Exception as exc:  # the script itself failed: a 400, so the test sees it
                    self._send(400, {"error": {"message": f"{type(exc).__name__}: {exc}"}})
                    return
                raw = json.dumps(payload).encode()
                if fault == "truncated_body":
                    raw = raw[: len(raw) // 2]
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _send(self, code: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        return Handler
