"""Host side of the in-sandbox toolbox (see ``toolbox_server.py`` for what runs inside).

:class:`ToolboxClient` installs the server through the episode's persistent shell, then sends each
call as one short shell command made of bash builtins only (no process is forked per call):
check the server is alive, write the request to its FIFO, wait for its acknowledgement, print the
answer file. When the agent killed the server (or deleted its directory) the next call reinstalls
it once; when the sandbox has no ``python3`` the tools say so and bash keeps working.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..sandbox.base import Sandbox

_HERE = Path(__file__).parent
_SOURCES = ("toolbox_server.py", "toolbox_tests.py")
_DOWN = "__HA_TOOLBOX_DOWN__"
_NO_PYTHON = "__HA_NO_PYTHON__"
_READY = "__HA_TOOLBOX_READY__"
ANSWER_CAP = 4 << 20


class ToolboxError(RuntimeError):
    """The toolbox cannot serve calls in this sandbox; the message says why (shown to the model)."""


@dataclass
class ToolboxResult:
    ok: bool
    output: str
    data: dict[str, Any] = field(default_factory=dict)


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


class ToolboxClient:
    def __init__(self, sandbox: Sandbox, call_timeout_s: float = 60.0) -> None:
        self.sandbox = sandbox
        self.call_timeout_s = call_timeout_s
        self.dir: str | None = None
        self._seq = 0
        self.installs = 0

    def install(self) -> None:
        """Copy the server into the sandbox and start it (idempotent per shell)."""
        tag = "HA_TOOLBOX_" + secrets.token_hex(6)
        d = f'"${{TMPDIR:-/tmp}}/.ha-toolbox-{secrets.token_hex(4)}"'
        parts = [f"D={d}; mkdir -p \"$D\" || exit 1"]
        for name in _SOURCES:
            src = (_HERE / name).read_text()
            parts.append(f"cat > \"$D/{name}\" <<'{tag}'\n{src}{tag}")
        root = _sh_quote(self.sandbox.workdir)
        parts.append(
            f"__ha_py=$(command -v python3 || command -v python) || {{ echo {_NO_PYTHON}; false; }} && "
            "rm -f \"$D/req\" \"$D/ack\" && mkfifo \"$D/req\" \"$D/ack\" && "
            f"( \"$__ha_py\" -I -S \"$D/toolbox_server.py\" {root} \"$D\" $$ </dev/null >\"$D/log\" 2>&1 & "
            "echo $! > \"$D/pid\" ) && IFS= read -t 20 -r __ha_r 0<>\"$D/ack\" && [ \"$__ha_r\" = ready ] && "
            f"echo \"{_READY} $D\" || {{ cat \"$D/log\" 2>/dev/null | tail -5; false; }}"
        )
        # A subshell: an `exit` above must not end the agent's shell.
        script = "(\n" + "\n".join(parts) + "\n) || :"
        res = self.sandbox.run(script, timeout=60, head_bytes=1 << 16, tail_bytes=1 << 16)
        self.installs += 1
        if _NO_PYTHON in res.output:
            raise ToolboxError("this tool needs python3 (3.6 or newer) inside the sandbox, and there is none; use bash.")
        for line in res.output.splitlines():
            if line.startswith(_READY + " "):
                self.dir = line[len(_READY) + 1:].strip()
                return
        raise ToolboxError("the toolbox did not start in the sandbox: " + res.output.strip()[-400:])

    def call(self, op: str, args: dict[str, Any] | None = None) -> ToolboxResult:
        """One call; raises ToolboxError when the server cannot answer (after one reinstall)."""
        for attempt in (0, 1):
            if self.dir is None:
                self.install()
            out = self._send(op, args or {})
            if out is not None:
                return out
            self.dir = None  # the server died or its directory was removed: reinstall once
        raise ToolboxError(f"the toolbox did not answer `{op}`; the tool could not run (bash still works).")

    def _send(self, op: str, args: dict[str, Any]) -> ToolboxResult | None:
        assert self.dir is not None
        self._seq += 1
        rid = self._seq
        req = json.dumps({"id": rid, "op": op, "args": args}, ensure_ascii=True)
        d = _sh_quote(self.dir)
        t = max(1, int(self.call_timeout_s))
        # Only builtins, and no command whose failure could trip an agent's `set -e`.
        command = (
            f"if {{ read -r __ha_p < {d}/pid && kill -0 \"$__ha_p\"; }} 2>/dev/null; then "
            f"printf '%s\\n' {_sh_quote(req)} 1<>{d}/req || :; __ha_i=; "
            f"while IFS= read -t {t} -r __ha_i 0<>{d}/ack; do [ \"$__ha_i\" = {rid} ] && break; done; "
            f"if [ \"$__ha_i\" = {rid} ]; then IFS= read -r -d '' __ha_o < {d}/out.{rid} || :; printf '%s' \"$__ha_o\"; fi; "
            f"else echo {_DOWN}; fi; __ha_o="
        )
        res = self.sandbox.run(command, timeout=self.call_timeout_s + 10, head_bytes=ANSWER_CAP, tail_bytes=0)
        text = res.output.strip()
        if not text or text.startswith(_DOWN) or res.timed_out:
            return None
        try:
            resp = json.loads(text)
        except json.JSONDecodeError:
            return None
        if resp.get("id") != rid:
            return None
        return ToolboxResult(bool(resp.get("ok")), str(resp.get("output", "")), dict(resp.get("data") or {}))
