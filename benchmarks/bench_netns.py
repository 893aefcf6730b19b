"""What a network namespace of its own costs a local sandbox with network on, side by side.

Baseline: ``network_namespace="host"`` (``bwrap --share-net``: the host's namespace, one loopback for
all, as every grading with network ran before). Ours: ``"private"`` (bwrap's own namespace with
slirp4netns attached: ``ha_envs/sandbox/netns.py``). Alternating, one pair at a time:

- start: a fresh sandbox on a bundled task, from ``start()`` until its first command has answered,
  then ``close()`` (what every grading with network pays once);
- command: the median of a trivial command in a started sandbox (unchanged: the shell is the same);
- fetch: a small HTTP GET from a server on this machine's outward address, through the route the
  sandbox has (NAT in slirp4netns for ours, none for the baseline).

    python benchmarks/bench_netns.py [--n 20] [--commands 200]
"""

from __future__ import annotations

import argparse
import http.server
import platform
import socket
import statistics
import threading
import time

from ha_envs.loaders import load_suite
from ha_envs.sandbox.local import LocalSandbox, LocalSandboxConfig

import timing


def _server() -> tuple[str, int]:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.connect(("192.0.2.1", 9))
    host = probe.getsockname()[0]
    srv = http.server.ThreadingHTTPServer((host, 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return host, srv.server_address[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20, help="sandbox starts per mode")
    ap.add_argument("--commands", type=int, default=200)
    args = ap.parse_args()
    task = next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")
    host, port = _server()
    fetch = f"python3 -c \"import urllib.request; urllib.request.urlopen('http://{host}:{port}/', timeout=10).read()\""
    modes = ("host", "private")
    starts: dict[str, list[float]] = {m: [] for m in modes}
    fetches: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(args.n):
        for mode in modes:
            sb = LocalSandbox(task, LocalSandboxConfig(isolation="bwrap", network=True, network_namespace=mode))
            t0 = time.perf_counter()
            sb.start()
            sb.run("true", timeout=30)
            starts[mode].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            res = sb.run(fetch, timeout=30)
            fetches[mode].append(time.perf_counter() - t0)
            assert res.exit_code == 0, res.output
            sb.close()
    command = {}
    for mode in modes:
        sb = LocalSandbox(task, LocalSandboxConfig(isolation="bwrap", network=True, network_namespace=mode))
        sb.start()
        command[mode] = timing.median_ms(lambda: sb.run("true", timeout=30), args.commands)
        sb.close()
    print(f"machine: {platform.machine()}, {platform.python_version()}; {args.n} starts per mode, alternating\n")
    print("| network namespace | start to first answer, median ms | trivial command, median ms | HTTP GET (outward address), median ms |")
    print("|---|---:|---:|---:|")
    for mode, label in (("host", "host (`--share-net`, the baseline)"), ("private", "private (slirp4netns, ours)")):
        print(f"| {label} | {statistics.median(starts[mode]) * 1000:.1f} | {command[mode]:.2f} | "
              f"{statistics.median(fetches[mode]) * 1000:.1f} |")
    ratio = statistics.median(starts["private"]) / statistics.median(starts["host"])
    print(f"\nstart, private / host: {ratio:.2f}")


if __name__ == "__main__":
    main()
