"""One persistent bash session driven over pipes.

Each command is sent as ``{ eval $'<quoted>' </dev/null; }`` inside an ``&&``/``||`` list (so an
agent's ``set -e`` cannot turn a failing command into the end of the session), followed by a marker
carrying a per-command nonce and the exit code. ``eval`` runs in the shell itself, so ``cd`` and ``export`` persist; a
syntax error in the command is the command's error, not a broken protocol; stdin from /dev/null
keeps a command from eating the protocol. Output is read until the marker, keeping the head and the
tail when it is longer than the cap, so a flood costs bounded memory.
"""

from __future__ import annotations

import io
import os
import secrets
import select
import subprocess
import tarfile
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from .base import RunResult, SandboxError, decode_output

_SAFE = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-./,:=+@%^&*()[]{}<>|;~#!?$`\"")


def text_bytes(text: str) -> bytes:
    """UTF-8 bytes of ``text``; undecodable bytes carried as surrogate escapes become those bytes
    again, and any other lone surrogate (which no byte sequence can carry) becomes U+FFFD."""
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:
        out = bytearray()
        for ch in text:
            o = ord(ch)
            if 0xDC80 <= o <= 0xDCFF:
                out.append(o - 0xDC00)
            elif 0xD800 <= o <= 0xDFFF:
                out += "\ufffd".encode()
            else:
                out += ch.encode()
        return bytes(out)


def tar_bytes(files: dict[str, bytes]) -> bytes:
    """An uncompressed tar of ``files`` (relative name -> bytes), regular files only, mode 0644."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uid, info.gid, info.mtime = len(data), 0o644, 0, 0, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def ansi_c_quote(text: str) -> str:
    """Quote ``text`` as a bash ``$'...'`` word that evaluates back to the exact bytes."""
    out = ["$'"]
    for b in text_bytes(text):
        if b in _SAFE:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02x}")
    out.append("'")
    return "".join(out)


@dataclass
class Captured:
    head: bytearray
    tail: bytearray
    total: int
    exit_code: int | None
    timed_out: bool
    stopped: str = ""
    """Why a watchdog stopped the command (e.g. the disk quota), '' when none did."""


class PersistentShell:
    """A bash process on pipes. ``argv`` starts it (e.g. bwrap ... bash, or docker exec -i ... bash)."""

    def __init__(self, argv: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None,
                 preexec_fn: Callable[[], None] | None = None, init_script: str = "") -> None:
        self.argv = list(argv)
        self.env = env
        self.cwd = cwd
        self.preexec_fn = preexec_fn
        self.init_script = init_script
        self.proc: subprocess.Popen[bytes] | None = None
        self._leftover = b""
        self._nonce = secrets.token_hex(8)
        self._seq = 0
        self.init_output = b""
        """What ``init_script`` printed (a sandbox may fold a first measurement into it)."""

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> None:
        try:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                env=self.env, cwd=self.cwd, start_new_session=True, preexec_fn=self.preexec_fn, bufsize=0,
            )
        except OSError as exc:
            raise SandboxError(f"cannot start the sandbox shell {self.argv[0]!r}: {exc}") from exc
        self._leftover = b""
        if self.init_script:
            res = self.execute(self.init_script, timeout=30, head_cap=1 << 16, tail_cap=1 << 16)
            if res.exit_code is None:
                raise SandboxError("the sandbox shell did not come up: " + bytes(res.head + res.tail).decode(errors="replace")[-500:])
            self.init_output = bytes(res.head + res.tail)

    def execute(self, command: str, timeout: float, head_cap: int, tail_cap: int,
                on_timeout: Callable[[], None] | None = None, grace: float = 2.0,
                watchdog: Callable[[], str | None] | None = None, watch_every: float = 0.5) -> Captured:
        """Run one command. ``exit_code`` is None when the marker never came (shell stuck or dead).

        ``watchdog`` is polled every ``watch_every`` seconds while the command runs; a reason it
        returns stops the command as a timeout would (``on_timeout``) and lands in ``stopped``."""
        if not self.alive:
            raise SandboxError("the sandbox shell died (it is not running)")
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        # The marker is unguessable by the command (session nonce) and unique per command (seq).
        self._seq += 1
        tag = f"__HA_{self._nonce}_{self._seq}_"
        marker = b"\n" + tag.encode()
        keep = len(marker) + 16  # never feed bytes that may start a marker
        # In an && / || list errexit is ignored, so an agent's `set -e` cannot make a failing
        # command kill the session.
        script = (f"{{ eval {ansi_c_quote(command)} </dev/null; }} && __ha_rc=0 || __ha_rc=$?\n"
                  f"printf '\\n{tag}%s__\\n' \"$__ha_rc\"\n")
        try:
            self.proc.stdin.write(script.encode())
        except (BrokenPipeError, OSError) as exc:
            raise SandboxError(f"the sandbox shell died (it closed its input: {exc})") from exc

        cap = Captured(bytearray(), bytearray(), 0, None, False)
        pending = bytearray(self._leftover)
        self._leftover = b""
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        killed_at: float | None = None
        next_watch = time.monotonic() + watch_every
        while True:
            start = pending.find(marker)
            end = pending.find(b"__\n", start + len(marker)) if start >= 0 else -1
            if end >= 0:
                _feed(cap, bytes(pending[:start]), head_cap, tail_cap)
                cap.exit_code = int(pending[start + len(marker):end])
                self._leftover = bytes(pending[end + 3:])
                if killed_at is not None and on_timeout is not None:
                    # bash reports background jobs killed by the timeout ("... Killed sleep 9") when it
                    # reads its next line: let it do so into a throwaway command, not the agent's next one.
                    self.execute("sleep 0.2", 10.0, 0, 0)
                return cap
            if len(pending) > keep:
                _feed(cap, bytes(pending[:-keep]), head_cap, tail_cap)
                del pending[:-keep]
            now = time.monotonic()
            if watchdog is not None and killed_at is None and now >= next_watch:
                next_watch = now + watch_every
                reason = watchdog()
                if reason:
                    cap.stopped = reason
                    if on_timeout:
                        on_timeout()
                    killed_at = now
                    deadline = now + grace
                    continue
            if now >= deadline:
                if killed_at is None:
                    cap.timed_out = True
                    if on_timeout:
                        on_timeout()
                    killed_at = now
                    deadline = now + grace
                    continue
                _feed(cap, bytes(pending), head_cap, tail_cap)
                return cap  # marker never came: the caller restarts the shell
            ready, _, _ = select.select([fd], [], [], min(deadline - now, watch_every if watchdog else 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # EOF: the shell exited or was killed
                _feed(cap, bytes(pending), head_cap, tail_cap)
                self.proc.wait()
                return cap
            pending += chunk

    def close(self) -> None:
        if self.proc is None:
            return
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.proc = None


def to_result(cap: Captured, timeout: float, duration_s: float, notes: list[str]) -> RunResult:
    """The RunResult of a captured command: head and tail with a note of what was cut, 124 on timeout."""
    if cap.timed_out:
        notes.insert(0, f"command timed out after {timeout:g}s; it and every process it started were killed")
    if cap.stopped:
        notes.insert(0, f"{cap.stopped}; the command and every process it started were killed")
    data, truncated = bytes(cap.head) + bytes(cap.tail), False
    if cap.total > len(data):
        cut = cap.total - len(data)
        data = (bytes(cap.head) + f"\n[... {cut} bytes of output cut ({cap.total} in all); first "
                f"{len(cap.head)} and last {len(cap.tail)} kept ...]\n".encode() + bytes(cap.tail))
        truncated = True
    exit_code = 124 if cap.timed_out else (cap.exit_code if cap.exit_code is not None else -1)
    return RunResult(decode_output(data), exit_code, cap.timed_out, truncated, duration_s, tuple(notes))


def _feed(cap: Captured, data: bytes, head_cap: int, tail_cap: int) -> None:
    if not data:
        return
    cap.total += len(data)
    room = head_cap - len(cap.head)
    if room > 0:
        cap.head += data[:room]
        data = data[room:]
    if data and tail_cap:
        cap.tail += data
        if len(cap.tail) > tail_cap:
            del cap.tail[:len(cap.tail) - tail_cap]
