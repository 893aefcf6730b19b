"""A ``docker`` command line for mini-swe-agent's docker environment that runs its commands in a
gateway session's sandbox instead (``environment.executable`` points here; nothing of the harness
is changed). Standard library only: it runs under the harness's own Python.

- ``run -d ... IMAGE sleep T``: the "image" is the session id; prints it as the container id;
- ``exec [-w DIR] [-e K=V]... ID INTERPRETER... COMMAND``: ``POST $HA_GATEWAY_URL/s/ID/exec``,
  prints the output and exits with the command's status;
- ``stop`` / ``rm``: nothing to do (the gateway owns the sandbox).
"""

import json
import os
import sys
import urllib.error
import urllib.request


def _exec(args):
    cwd, env, i = "", {}, 0
    while i < len(args) and args[i].startswith("-"):
        flag = args[i]
        if flag in ("-w", "--workdir"):
            cwd = args[i + 1]
        elif flag in ("-e", "--env"):
            key, _, value = args[i + 1].partition("=")
            env[key] = value
        elif flag in ("-i", "-t", "-it"):
            i += 1
            continue
        i += 2
    session, command = args[i], args[-1]
    url = os.environ["HA_GATEWAY_URL"].rstrip("/") + f"/s/{session}/exec"
    data = json.dumps({"command": command, "cwd": cwd, "env": env}).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=None) as resp:
            out = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        sys.stderr.write(f"ha gateway: {exc.code}: {exc.read()[:500].decode(errors='replace')}\n")
        return 125
    sys.stdout.write(out["output"])
    return int(out["returncode"])


def main(argv):
    if not argv:
        sys.stderr.write("usage: docker_shim.py run|exec|stop|rm ...\n")
        return 2
    verb, args = argv[0], argv[1:]
    if verb == "run":
        print(args[args.index("sleep") - 1] if "sleep" in args else args[-1])
        return 0
    if verb == "exec":
        return _exec(args)
    if verb in ("stop", "rm", "kill"):
        return 0
    sys.stderr.write(f"ha gateway shim: docker {verb} is not supported\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
