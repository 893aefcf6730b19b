"""How a harness's command runs in the session's sandbox: each in a fresh subshell (as
mini-swe-agent's environments run them: ``cd`` and variables do not persist), in its working
directory, with its variables."""

from __future__ import annotations

import shlex


def subshell_command(command: str, cwd: str, env: dict[str, str]) -> str:
    exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in sorted(env.items()))
    cd = f"cd {shlex.quote(cwd)} && " if cwd else ""
    return f"( {exports}{cd}bash -c {shlex.quote(command)} )"
