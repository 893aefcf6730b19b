"""The Sandbox protocol and the records it returns.

A sandbox is where an episode's commands run: one persistent shell per episode (cwd and exported
variables persist between commands), rooted at the task's work copy. Two kinds of failure are kept
apart on purpose:

- the agent's command failing, timing out or printing too much is a normal :class:`RunResult`;
- the sandbox itself breaking (its process killed, the work copy gone, the disk full) raises
  :class:`SandboxError`, which the env turns into ``sandbox_error`` with ``mask_sample=True``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

COMMAND_TIMEOUT_S = 120.0
"""The default cap, in seconds, on one command in a sandbox (a harness's ``limits.command_timeout_s``)."""
OUTPUT_HEAD_BYTES = 8_000
"""Bytes of a long command output kept from its start (the middle is replaced by a note)."""
OUTPUT_TAIL_BYTES = 8_000
"""Bytes kept from its end."""


class SandboxError(RuntimeError):
    """The sandbox (not the agent's command) failed; the episode cannot go on."""


class EnvLostError(SandboxError):
    """The machine holding the env and its sandbox is gone (a remote env's Ray actor died with its
    node, raylet or worker): an episode ending ``env_lost``, which a run tries once more elsewhere."""


class PatchError(RuntimeError):
    """The agent's changes cannot be turned into a gradable patch because of what the agent did
    (``kind``: ``patch_too_large``, ``diff_failed``). Unlike :class:`SandboxError` this is the
    agent's doing: the episode is graded (reward 0), not masked."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class RunResult:
    output: str
    """stdout and stderr interleaved, decoded as UTF-8 with undecodable bytes shown as ``\\xNN``."""
    exit_code: int
    timed_out: bool = False
    truncated: bool = False
    """The output was longer than the cap; the head and tail were kept with a note between them."""
    duration_s: float = 0.0
    notes: tuple[str, ...] = ()
    """What the sandbox did besides running the command (processes killed, shell restarted)."""

    def render(self) -> str:
        """The observation text a tool call shows the model."""
        parts = [f"<returncode>{self.exit_code}</returncode>"]
        parts += [f"<note>{n}</note>" for n in self.notes]
        parts.append(f"<output>\n{self.output}</output>")
        return "\n".join(parts)


@runtime_checkable
class Sandbox(Protocol):
    """What every backend offers. All paths are relative to the work copy root or absolute inside
    the sandbox; the host's paths are never shown to the agent when isolation is on."""

    workdir: str
    """The work copy's path as the commands see it (e.g. ``/testbed``)."""

    def start(self) -> None:
        """Start the shell. Idempotent."""

    def run(self, command: str, timeout: float | None = None, head_bytes: int | None = None,
            tail_bytes: int | None = None) -> RunResult:
        """Run one shell command in the persistent session; output beyond head + tail bytes is cut
        in the middle (defaults from the sandbox's config)."""

    def read_file(self, path: str) -> bytes:
        """Bytes of a file inside the sandbox; raises FileNotFoundError."""

    def write_file(self, path: str, data: bytes) -> None:
        """Create or overwrite a file inside the sandbox (parents created)."""

    def diff(self) -> str:
        """The work copy's changes against the base commit as a git patch (new files included,
        build outputs excluded), made without any of the agent's git state (config, attributes,
        index, hooks) under the sandbox's limits. Raises :class:`PatchError` for a change over
        the size cap or a tree that cannot be diffed, :class:`SandboxError` when the sandbox broke."""

    def reset(self) -> None:
        """Pristine work copy and a fresh shell."""

    def close(self) -> None:
        """Stop every process and release resources. Idempotent."""


NUL_NOTE = "the command contains a NUL byte (\\x00), which a shell cannot take; nothing was run"


def nul_result(command: str) -> RunResult | None:
    """The typed refusal of a command bash cannot represent (bash would silently drop the text
    after a NUL byte and run the rest), or None when the command is fine."""
    if "\x00" not in command:
        return None
    return RunResult("", 2, notes=(NUL_NOTE,))


def decode_output(data: bytes) -> str:
    return data.decode("utf-8", errors="backslashreplace")
