"""Artifacts on a node that lacks them: built there, or moved from the driver's copy (side by side).

For each artifact a cluster node needs before a group of a real SWE-bench instance can start, the
two ways a node without it can get it, timed on this machine:

- **snapshot** (the repository at the base commit): built from the mirror (``prepare_snapshot``)
  vs packed on the driver, through Ray's object store, installed (``pack_snapshot`` /
  ``install_snapshot``: what ``ArtifactStore`` does);
- **environment** (the instance's Python prefix with its dependencies): built (``python_env``:
  the dependency layer, then the instance, from PyPI; cold: empty package-download caches, as on
  a new node; warm: this machine's caches) vs packed, moved through the object store
  and installed relocated (``artifacts.pack_env`` / ``install_env``); the moved copy then grades
  the gold patch and the empty patch as the built one does (checked, not timed);
- **image** (``--image``; the bundled base image, 1.5 GB): built into a second, empty Docker
  daemon (``debootstrap`` + ``docker import``, from the Debian mirror) vs ``docker save`` from the
  driver's daemon in pieces through the object store and ``docker load`` (``images.save_image`` /
  ``load_image``). Needs root and ``dockerd``.

Each side starts from an empty cache (a fresh ``HA_CACHE_DIR``); the baseline of each ratio is the
build. A private local Ray gives the object store (one machine: a real cluster adds the network
transfer, ``bytes`` is reported for that).

    python benchmarks/bench_artifacts.py --instance psf__requests-6028 --repos /work/.mirror [--image]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _fresh_cache(tag: str) -> Path:
    root = Path(tempfile.mkdtemp(prefix=f"ha-bench-artifacts-{tag}-"))
    os.environ["HA_CACHE_DIR"] = str(root)
    return root


def _move(data: bytes) -> bytes:
    """Through Ray's object store (put by the 'driver', got by the 'node')."""
    import ray

    return ray.get(ray.put(data))


def bench_snapshot(task) -> dict:  # noqa: ANN001
    from ha_envs.sandbox.provision.workcopy import install_snapshot, pack_snapshot, prepare_snapshot, snapshot_key

    driver = _fresh_cache("driver")
    t0 = time.monotonic()
    snap = prepare_snapshot(task)
    built = time.monotonic() - t0
    node = _fresh_cache("node")
    t0 = time.monotonic()
    data = pack_snapshot(snap.path)
    got = _move(data)
    install_snapshot(task, snapshot_key(task), got, hashlib.sha256(data).hexdigest())
    moved = time.monotonic() - t0
    shutil.rmtree(node, ignore_errors=True)
    os.environ["HA_CACHE_DIR"] = str(driver)
    return {"built_s": round(built, 2), "moved_s": round(moved, 2), "bytes": len(data),
            "moved_over_built": round(moved / built, 3)}


def _cold_build(task) -> float:  # noqa: ANN001
    """The environment built in a fresh cache with empty package-download caches (a new node's)."""
    from ha_envs.sandbox.provision.pyenv import python_env

    driver = os.environ["HA_CACHE_DIR"]
    root = _fresh_cache("cold")
    (root / "snapshots").symlink_to(Path(driver) / "snapshots")
    saved = {k: os.environ.get(k) for k in ("UV_CACHE_DIR", "PIP_CACHE_DIR")}
    os.environ["UV_CACHE_DIR"], os.environ["PIP_CACHE_DIR"] = str(root / "uv-cache"), str(root / "pip-cache")
    try:
        t0 = time.monotonic()
        python_env(task)
        return time.monotonic() - t0
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        (root / "snapshots").unlink()
        shutil.rmtree(root, ignore_errors=True)
        os.environ["HA_CACHE_DIR"] = driver


def bench_env(task) -> dict:  # noqa: ANN001
    from ha_envs.grading.grader import Grader
    from ha_envs.sandbox.provision.artifacts import env_dest, install_env, pack_env
    from ha_envs.sandbox.provision.pyenv import python_env

    driver = Path(os.environ["HA_CACHE_DIR"])  # holds the snapshot: not part of the environment's time
    cold = _cold_build(task)
    t0 = time.monotonic()
    env = python_env(task)  # with this machine's package caches as they are (warm after the cold build)
    built = time.monotonic() - t0
    node = _fresh_cache("node")
    (node / "snapshots").symlink_to(driver / "snapshots")
    kind, dest = env_dest(task)
    t0 = time.monotonic()
    data = pack_env(env)
    got = _move(data)
    install_env(kind, dest, got, hashlib.sha256(data).hexdigest(), str(env))
    moved = time.monotonic() - t0
    away = env.with_name(env.name + ".away")
    env.rename(away)  # the moved copy alone
    try:
        g = Grader()
        gold, empty = g.grade(task, task.gold_patch), g.grade(task, "")
    finally:
        away.rename(env)
    (node / "snapshots").unlink()
    shutil.rmtree(node, ignore_errors=True)
    os.environ["HA_CACHE_DIR"] = str(driver)
    return {"built_cold_s": round(cold, 1), "built_warm_s": round(built, 1), "moved_s": round(moved, 2),
            "bytes": len(data), "moved_over_built_cold": round(moved / cold, 3),
            "moved_over_built_warm": round(moved / built, 3),
            "moved_copy_grades": {"gold_resolved": gold.resolved, "empty_resolved": empty.resolved}}


def bench_image() -> dict:
    from ha_envs.sandbox.provision.images import base_tag, build_base_image, load_image, save_image
    from ha_envs.sandbox.daemon import docker_client

    tag = base_tag()
    docker_client().images.get(tag)  # the driver's daemon has it (`ha images build --base-only`)
    sides = {}
    for side in ("built", "moved"):
        root = Path(tempfile.mkdtemp(prefix="ha-d2-", dir="/tmp"))
        host = f"unix://{root}/sock"
        # in a network namespace of its own: a second daemon in the host's would remove the first's docker0
        proc = subprocess.Popen(["unshare", "--net", "dockerd", "--data-root", str(root / "data"), "--exec-root",
                                 str(root / "exec"), "--pidfile", str(root / "pid"), "-H", host, "--iptables=false",
                                 "--ip6tables=false"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(60):
                if subprocess.run(["docker", "-H", host, "info"], capture_output=True).returncode == 0:
                    break
                time.sleep(0.5)
            t0 = time.monotonic()
            if side == "built":
                os.environ["DOCKER_HOST"] = host
                build_base_image(docker_client())
            else:
                import ray

                os.environ.pop("DOCKER_HOST", None)
                digest, refs = hashlib.sha256(), []
                for piece in save_image(tag):
                    digest.update(piece)
                    refs.append(ray.put(piece))
                os.environ["DOCKER_HOST"] = host
                load_image((ray.get(r) for r in refs), digest.hexdigest(), tag)
                sides["bytes"] = sum(len(ray.get(r)) for r in refs)
            sides[f"{side}_s"] = round(time.monotonic() - t0, 1)
            sides[f"{side}_id"] = docker_client().images.get(tag).id
        finally:
            os.environ.pop("DOCKER_HOST", None)
            proc.terminate()
            proc.wait(timeout=60)
            subprocess.run(["umount", "-R", str(root / "data")], capture_output=True)
            shutil.rmtree(root, ignore_errors=True)
    sides["moved_over_built"] = round(sides["moved_s"] / sides["built_s"], 3)
    sides["same_image_id_when_moved"] = sides["moved_id"] == docker_client().images.get(tag).id
    return sides


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instance", default="psf__requests-6028")
    ap.add_argument("--benchmark", default="verified")
    ap.add_argument("--source", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "swebench_verified"
                                            / "test.jsonl"), help="the benchmark's rows (a JSONL file)")
    ap.add_argument("--repos", help="mirrors directory (HA_REPOS_DIR)")
    ap.add_argument("--image", action="store_true", help="also the base image (about 2-3 minutes, needs dockerd)")
    args = ap.parse_args()
    if args.repos:
        os.environ["HA_REPOS_DIR"] = args.repos
    from ha_agents.cluster.ray_start import init_ray
    from ha_envs.swe_datasets import load_benchmark

    task = next((t for t in load_benchmark(args.benchmark, args.source) if t.instance_id == args.instance), None)
    if task is None:
        print(f"{args.instance} is not in {args.benchmark}", file=sys.stderr)
        return 2
    init_ray(address="local", num_cpus=1)
    result = {"instance": task.instance_id, "snapshot": bench_snapshot(task)}
    print(json.dumps(result), file=sys.stderr, flush=True)
    result["environment"] = bench_env(task)
    print(json.dumps(result), file=sys.stderr, flush=True)
    if args.image:
        result["image"] = bench_image()
    print(json.dumps(result, indent=1))
    ok = result["environment"]["moved_copy_grades"] == {"gold_resolved": True, "empty_resolved": False}
    return 0 if ok and result.get("image", {}).get("same_image_id_when_moved", True) else 1


if __name__ == "__main__":
    sys.exit(main())
