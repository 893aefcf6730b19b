"""The local sandbox with network on, in a network namespace of its own (slirp4netns).

Two sandboxes bind the same fixed port at once (redis's test server did, and its gradings collided
under ``--workers 2``); neither reaches a service on the host's loopback, while the outside (here
the host's own non-loopback address, through slirp's NAT) stays reachable; slirp4netns goes with
the sandbox. ``network_namespace="host"`` keeps the old shared namespace, where the same port
collides."""

from __future__ import annotations

import socket
import threading

import pytest

import ha_envs
from ha_envs.sandbox import SandboxError
from ha_envs.sandbox import netns
from ha_envs.sandbox.local import LocalSandbox, LocalSandboxConfig

from tests.conftest import require_bwrap, require_tool

BIND = ("python3 -c \"import socket, time; s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen(1); "
        "print('BOUND', flush=True); time.sleep({hold})\"")
CONNECT = ("python3 -c \"import socket\nfor h in {hosts!r}:\n  try:\n    c = socket.create_connection((h, {port}), "
           "timeout=3); print(h, c.recv(64).decode().strip())\n  except OSError as e: print(h, 'FAIL', type(e).__name__)\"")


@pytest.fixture()
def service():
    """A service on every host address (loopback included) that answers ``HOST``."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", 0))
    srv.listen(8)

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"HOST\n")
    threading.Thread(target=serve, daemon=True).start()
    yield srv.getsockname()[1]
    srv.close()


def _host_address() -> str:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.connect(("192.0.2.1", 9))  # no packet is sent: this picks the outward interface
    return probe.getsockname()[0]


def _sandbox(mode: str) -> LocalSandbox:
    task = next(t for t in ha_envs.load_suite("mini") if t.instance_id == "mini__ttl_cache")
    sb = LocalSandbox(task, LocalSandboxConfig(isolation="bwrap", network=True, network_namespace=mode))
    sb.start()
    return sb


def _slirps() -> int:
    import subprocess

    return len(subprocess.run(["pgrep", "-x", "slirp4netns"], capture_output=True, text=True).stdout.split())


def test_a_namespace_of_its_own_keeps_ports_and_the_hosts_loopback_apart(service):
    require_bwrap()
    require_tool("slirp4netns")
    before = _slirps()
    a, b = _sandbox("private"), _sandbox("private")
    try:
        assert a.net is not None and b.net is not None and _slirps() == before + 2
        hold = a.run(BIND.format(port=21079, hold=6) + " &", timeout=10)
        assert hold.exit_code == 0
        second = b.run(BIND.format(port=21079, hold=0), timeout=10)
        assert "BOUND" in second.output, second.output  # the same fixed port, at once
        host = _host_address()
        out = a.run(CONNECT.format(hosts=("127.0.0.1", host), port=service), timeout=20).output
        assert "127.0.0.1 FAIL" in out and f"{host} HOST" in out, out  # own loopback; the outside works
    finally:
        a.close()
        b.close()
    assert _slirps() == before and a.net is None


def test_the_hosts_namespace_shares_one_loopback(service):
    require_bwrap()
    a, b = _sandbox("host"), _sandbox("host")
    try:
        assert a.net is None
        a.run(BIND.format(port=21080, hold=6) + " &", timeout=10)
        import time

        time.sleep(1)
        second = b.run(BIND.format(port=21080, hold=0), timeout=10)
        assert "BOUND" not in second.output and "Address already in use" in second.output, second.output
        out = b.run(CONNECT.format(hosts=("127.0.0.1",), port=service), timeout=20).output
        assert "127.0.0.1 HOST" in out, out
    finally:
        a.close()
        b.close()


def test_a_namespace_mode_that_cannot_be_had_is_a_clear_error(monkeypatch):
    require_bwrap()
    task = ha_envs.load_suite("mini")[0]
    for mode, error in (("shared", "auto, private or host"), ("private", "slirp4netns is not installed")):
        if mode == "private":
            monkeypatch.setattr(netns, "available", lambda: False)
        sb = LocalSandbox(task, LocalSandboxConfig(isolation="bwrap", network=True, network_namespace=mode))
        with pytest.raises(SandboxError, match=error):
            sb.start()
        sb.close()


def test_a_resolver_on_the_hosts_loopback_is_replaced_by_slirps(tmp_path):
    conf = tmp_path / "resolv.conf"
    conf.write_text("# systemd-resolved\nnameserver 127.0.0.53\noptions edns0\n")
    assert netns.resolv_conf(str(conf)) == f"nameserver {netns.SLIRP_DNS}\n"
    conf.write_text("nameserver 10.255.255.53\nnameserver 127.0.0.1\n")
    assert netns.resolv_conf(str(conf)) is None  # a reachable one is kept as it is
