"""Real Python environments for the environment-fault tests: one with pytest, one without (an
uninstallable runner), one whose interpreter is gone (a dangling interpreter); and Docker images of
the bundled base with the same faults."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import _pytest
import iniconfig
import packaging
import pluggy
import pygments
import pytest

RUNNER_PACKAGES = (pytest, _pytest, pluggy, iniconfig, packaging, pygments)


def bare_venv(path: Path) -> Path:
    """A real venv of this machine's base interpreter, without pip and without pytest."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


def runner_venv(path: Path) -> Path:
    """A real venv with pytest installed (its packages copied from this interpreter's)."""
    bare_venv(path)
    site = next(path.glob("lib/python3*/site-packages"))
    for mod in RUNNER_PACKAGES:
        src = Path(mod.__file__).parent
        shutil.copytree(src, site / src.name, ignore=shutil.ignore_patterns("__pycache__"))
    here = Path(pytest.__file__).parents[1]
    shutil.copy(here / "py.py", site / "py.py")  # pytest's shim of `py`
    for dist in ("pytest", "pluggy", "iniconfig", "packaging", "pygments"):  # their versions are read
        for info in here.glob(f"{dist}-*.dist-info"):
            shutil.copytree(info, site / info.name)
    return path


def dangling_venv(path: Path) -> Path:
    """A venv whose interpreter is gone: ``python`` is a launcher of an interpreter that was removed
    (as a venv left behind by an uninstalled pyenv version)."""
    bare_venv(path)
    gone = path / "gone" / "python3"
    for name in ("python", "python3"):
        exe = path / "bin" / name
        exe.unlink()
        exe.write_text(f"#!/bin/sh\nexec {gone} \"$@\"\n")
        exe.chmod(0o755)
    return path


def through_link(target: Path, link: Path) -> Path:
    link.symlink_to(target)
    return link


def broken_image(client, tag: str, script: str) -> str:
    """The bundled base image with ``script`` run in it (as root), committed as ``tag``."""
    from ha_envs.sandbox.provision.images import BASE_REPO, BASE_SUITE

    c = client.containers.create(f"{BASE_REPO}:{BASE_SUITE}", entrypoint=["sleep", "infinity"], network_mode="none",
                                 labels={"harnessadapt.test": "1"})
    try:
        c.start()
        code, out = c.exec_run(["sh", "-c", script])
        assert code == 0, out
        repository, name = tag.rsplit(":", 1)
        c.commit(repository=repository, tag=name)
    finally:
        c.remove(force=True)
    return tag


NO_PYTHON = "rm -f /usr/bin/python3.11 /usr/bin/python3 && test -L /usr/bin/python"
"""The base image with its interpreter removed: ``python`` is a dangling link."""
NO_PYTEST = "rm -rf /usr/lib/python3/dist-packages/pytest /usr/lib/python3/dist-packages/_pytest"
"""The base image with pytest uninstalled."""


def env_without(var: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != var}


def borrowing_venv(path: Path) -> Path:
    """A real venv that imports this interpreter's packages (``ha`` runs in it) through a ``.pth``
    line naming their directory, which no sandbox shows: inside one, pytest cannot be imported (an
    uninstallable runner, at base too)."""
    bare_venv(path)
    site = next(path.glob("lib/python3*/site-packages"))
    (site / "borrowed.pth").write_text(os.path.realpath(Path(pytest.__file__).parents[1]) + "\n")
    return path
