"""Docker on a Ray cluster: images moved from the driver's daemon to a node's own daemon (never
pulled or rebuilt where a copy can be had), and a node whose daemon is gone drained."""

from __future__ import annotations

import dataclasses
import io
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from ha_agents.cluster.ray_start import SLOTS, init_ray
from ha_agents.runs.rollouts import collect
from ha_envs.loaders import load_suite
from ha_envs.sandbox.base import SandboxError


def _docker_or_skip() -> None:
    if shutil.which("dockerd") is None or subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("no Docker daemon but CI is set")
        pytest.skip("no Docker daemon")


@pytest.fixture
def second_daemon():
    """A second, empty Docker daemon on this machine (its own data root and socket): another node's."""
    _docker_or_skip()
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("a second dockerd needs root, and CI is set")
        pytest.skip("a second dockerd needs root")
    root = Path(tempfile.mkdtemp(prefix="ha-d2-", dir="/tmp"))  # short: a unix socket path is at most 107 bytes
    host = f"unix://{root}/sock"
    # in a network namespace of its own: a second daemon in the host's would remove the first's docker0
    proc = subprocess.Popen(["unshare", "--net", "dockerd", "--data-root", str(root / "data"), "--exec-root",
                             str(root / "exec"), "--pidfile", str(root / "pid"), "-H", host, "--iptables=false",
                             "--ip6tables=false"], stdout=open(root / "log", "wb"), stderr=subprocess.STDOUT)
    try:
        for _ in range(60):
            if subprocess.run(["docker", "-H", host, "info"], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the second dockerd did not start: {(root / 'log').read_text()[-1500:]}")
        yield host
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        subprocess.run(["umount", "-R", str(root / "data")], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def _had_bridge() -> bool:
    out = subprocess.run(["docker", "network", "inspect", "bridge", "-f", "{{index .Options \"com.docker.network.bridge.name\"}}"],
                         capture_output=True, text=True)
    return out.stdout.strip() == "docker0"


def _tiny_image() -> str:
    """A small image in this machine's daemon (one file), under a fresh tag."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = os.urandom(3 << 20)  # a few MB: more than one piece with a small piece size
        info = tarfile.TarInfo("payload.bin")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    tag = f"harnessadapt/test-tiny:{uuid.uuid4().hex[:10]}"
    subprocess.run(["docker", "import", "-", tag], input=buf.getvalue(), check=True, capture_output=True)
    return tag


def _image_id(tag: str, host: str | None = None) -> str:
    cmd = ["docker"] + (["-H", host] if host else []) + ["image", "inspect", "-f", "{{.Id}}", tag]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def test_an_image_moves_from_the_drivers_daemon_to_a_nodes_own(second_daemon, monkeypatch):
    """A task's official image that only the driver's daemon has is saved once (in pieces, into
    Ray's object store) and loaded into the node's daemon, same image id; asked again the node has
    it; a damaged stream is never loaded; an image the driver lacks is reported missing."""
    import ray

    from ha_agents.cluster import artifact_store
    from ha_agents.cluster.artifact_store import ArtifactStore
    from ha_envs.sandbox.provision.images import load_image, save_image

    if Path("/sys/class/net").is_dir():  # the first daemon's bridge survived the second's start
        assert (Path("/sys/class/net") / "docker0").exists() or not _had_bridge()
    tag = _tiny_image()
    task = load_suite("mini")[0]
    task = dataclasses.replace(task, environment=dataclasses.replace(
        task.environment, extra=dict(task.environment.extra or {}, official_image=tag)))
    monkeypatch.setenv("HA_OFFICIAL_IMAGES", "auto")
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    init_ray(address="local", num_cpus=1)
    try:
        store = ray.remote(ArtifactStore).options(num_cpus=0).remote("/nonexistent-cache")  # on the driver's daemon
        monkeypatch.setenv("DOCKER_HOST", second_daemon)  # from here on, this process is the other node
        assert _image_id(tag) == ""
        assert artifact_store._node_image(task, store) == "copied"
        assert _image_id(tag) == _image_id(tag, host="unix:///var/run/docker.sock") != ""
        assert artifact_store._node_image(task, store) == "cached"
        stats = ray.get(store.stats.remote())
        assert stats["packed"] == 1 and stats["served"] == 1

        other = _tiny_image()  # in the node's daemon
        pieces = list(save_image(other, chunk=1 << 20))
        assert len(pieces) > 1
        subprocess.run(["docker", "rmi", other], check=True, capture_output=True)
        bad = pieces[:-1] + [pieces[-1][:-1] + b"x"]
        with pytest.raises(SandboxError, match="cut short or damaged"):
            load_image(iter(bad), __import__("hashlib").sha256(b"".join(pieces)).hexdigest(), other)
        assert _image_id(other) == ""  # nothing of the damaged stream was loaded

        lacking = dataclasses.replace(task, environment=dataclasses.replace(
            task.environment, image="harnessadapt/nowhere:1", extra=dict(task.environment.extra or {},
                                                                          official_image="harnessadapt/nowhere:2")))
        assert artifact_store._node_image(lacking, store) == "missing"
    finally:
        ray.shutdown()
        monkeypatch.delenv("DOCKER_HOST", raising=False)
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


def test_a_node_whose_docker_daemon_is_gone_is_drained(tmp_path, monkeypatch, caplog):
    """Two nodes, the second's Docker daemon gone (its DOCKER_HOST answers nothing): the groups
    placed there run nothing and come back; the node is drained, no further group goes there, and
    every episode runs once on the healthy node and is graded there (each (task, run) once)."""
    _docker_or_skip()
    ray = __import__("ray")
    from ray.cluster_utils import Cluster

    dead = Path(tempfile.mkdtemp(prefix="ha-dead-", dir="/tmp"))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {SLOTS: 1}})
    try:
        gone = cluster.add_node(num_cpus=1, resources={SLOTS: 1}, env_vars={"DOCKER_HOST": f"unix://{dead}/sock"})
        cluster.wait_for_nodes()
        head = cluster.head_node.node_id
        monkeypatch.setenv("RAY_ADDRESS", cluster.address)
        ts = [t for t in load_suite("mini")][:4]
        with caplog.at_level(logging.WARNING):
            recs = collect(ts, 1, "oracle", _docker_config(), out=tmp_path / "ray", workers=2, executor="ray",
                           progress_bar=False)
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(dead, ignore_errors=True)
    assert sorted(r["instance_id"] for r in recs) == sorted(t.instance_id for t in ts)
    assert all(r["resolved"] and not r["mask_sample"] for r in recs), [(r["termination"], r["error"]) for r in recs]
    assert {r["node"] for r in recs} == {head}
    assert f"node {gone.node_id} drained" in caplog.text and "re-running" in caplog.text
    assert caplog.text.count("drained: its Docker daemon is gone") == 1
    lines = (tmp_path / "ray" / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == len(ts)


def _docker_config():
    from ha_agents.episode import EpisodeConfig

    return EpisodeConfig.create("h0", sandbox="docker")


def _flaky_daemon_group(task, samples, model, config, skill, artifacts=None):  # noqa: ANN001 - cluster.groups.run_group's signature
    """A group on a node whose daemon is gone for the first ``model`` (``flaky:DIR:N``) groups placed
    there (a counter file per run): handed back unstarted; afterwards it answers again."""
    import ray

    from ha_agents.cluster.groups import DRAIN

    _, where, n = model.split(":")
    node = ray.get_runtime_context().get_node_id()
    counter = Path(where) / "count"
    with open(counter, "a") as f:
        f.write("x")
    if len(counter.read_text()) <= int(n):
        yield {DRAIN: node, "runs": list(samples), "why": "no Docker daemon answers (a test)", "started": False}
        return
    for k in samples:
        yield {"instance_id": task.instance_id, "run": k, "resolved": True, "mask_sample": False, "node": node}


def test_a_drained_node_is_tried_again_and_a_run_with_no_daemon_anywhere_ends(tmp_path, monkeypatch, caplog):
    """The driver's side of draining on one node: a daemon that comes back (a restarted dockerd) takes
    groups again after HA_DRAIN_RETRY_S and nothing is lost or masked; one that never comes back ends
    the run with each (task, run) masked once, after a few hand-backs (the driver never waits forever)."""
    import ray

    from ha_agents.episode import EpisodeConfig
    from ha_agents.cluster.groups import HANDBACKS, collect_on_ray

    monkeypatch.setenv("HA_DRAIN_RETRY_S", "0.5")
    ts = load_suite("mini")[:3]
    todo = [(t, k) for t in ts for k in (1, 2)]
    init_ray(address="local", num_cpus=2)
    try:
        for n, masked in ((2, False), (10 * HANDBACKS * len(ts), True)):
            where = tmp_path / f"run-{n}"
            where.mkdir()
            got: list[dict] = []
            with caplog.at_level(logging.WARNING):
                collect_on_ray(todo, f"flaky:{where}:{n}", EpisodeConfig.of("h0"), 4, got.append, {},
                             group_fn=_flaky_daemon_group, store=None)
            assert sorted((r["instance_id"], r["run"]) for r in got) == sorted((t.instance_id, k) for t, k in todo)
            assert all(bool(r["mask_sample"]) == masked for r in got), [r.get("error") for r in got]
            if masked:
                assert all("Docker daemon is gone" in r["error"] for r in got)
            else:
                assert "answers again; no longer drained" in caplog.text
    finally:
        ray.shutdown()
