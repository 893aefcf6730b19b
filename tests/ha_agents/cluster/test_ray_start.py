"""A library call never joins a Ray cluster it was not asked to: with one running on the machine,
``init_ray()`` starts a private instance; given the address, it joins."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ha_agents.cluster.ray_start import init_ray

RAY = Path(sys.executable).with_name("ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def running_cluster():
    """A real head node on this machine, in Ray's default temp dir (where ``ray.init()`` would find
    it), stopped by its own process group so no other Ray on the machine is touched."""
    ray = __import__("ray") if os.environ.get("CI") else pytest.importorskip("ray")
    port = _free_port()
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    # no drain on SIGTERM: the whole group gets the signal, so the node's drain request would wait
    # out Ray's 30 s for a GCS that is already gone (teardown ~35 s instead of ~5 s)
    env["RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S"] = "0"
    head = subprocess.Popen([str(RAY), "start", "--head", "--block", f"--port={port}", "--num-cpus=1",
                             "--include-dashboard=false"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    current = Path("/tmp/ray/ray_current_cluster")
    deadline = time.monotonic() + 120
    while not (current.exists() and current.read_text().strip().endswith(f":{port}")):
        assert head.poll() is None and time.monotonic() < deadline, "the head node did not start"
        time.sleep(0.5)
    address = current.read_text().strip()  # the address ray.init() would discover and join
    try:
        yield ray, address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
        if current.exists() and current.read_text().strip().endswith(f":{port}"):
            current.unlink()


def test_a_running_cluster_is_not_joined_unless_named(running_cluster, monkeypatch):
    ray, address = running_cluster
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert init_ray(num_cpus=2) == "local"
    assert ray.get_runtime_context().gcs_address != address and ray.cluster_resources()["CPU"] == 2  # its own resources, not the cluster's one CPU
    ray.shutdown()
    monkeypatch.setenv("RAY_ADDRESS", address)
    assert init_ray(num_cpus=2) == address  # num_cpus is dropped when joining: no "must not be provided" error
    assert ray.get_runtime_context().gcs_address == address and ray.cluster_resources()["CPU"] == 1
