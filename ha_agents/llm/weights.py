"""What weights a model spec stands for, so that a cache of its outcomes is keyed by the weights and
not by a name that new weights can be served under.

``weights_identity(spec, revision)`` is a JSON-able mapping:

- ``hf:DIR`` (a local directory): the SHA-256 of ``config.json`` and of every other file (weights,
  tokenizer, generation config), by path; a fine-tune saved over the same directory changes it even
  where every file keeps its size. ``hf:NAME`` of a hub model: the name and ``revision``;
- ``replay:FILE``, ``menu:FILE``: the file's SHA-256;
- ``openai:NAME@URL``: the id (and ``root``, the served weights' path, where vLLM gives it) that
  ``GET URL/models`` lists for NAME, and ``revision``, which the user supplies: a server's name for
  its model does not change when it is restarted on new weights, so without a revision the identity
  trusts the name (``weights_warning`` says so);
- a scripted policy (``hasty``, ``oracle``, ...): its name and a hash of the source of the modules
  its class and the classes it builds on live in, and of the registry's (where its plans are);
- a client object: its type and name.

Files are hashed once for a given (path, inode, size, mtime): in this process, and across processes
through the cache folder (``$HA_CACHE_DIR/file-sha/``), so a 16 GB model is read once per version,
not once per command. The run identity of ``ha eval``/``ha grade``/``ha train`` folders uses the same
hashes (``ha_agents.runs.identity.model_identity``).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from .options import ModelOptions


@lru_cache(maxsize=4096)
def _file_sha(path: str, inode: int, size: int, mtime_ns: int) -> str:
    from ha_envs.sandbox.provision.workcopy import cache_root

    key = hashlib.sha256(f"{path}\0{inode}\0{size}\0{mtime_ns}".encode()).hexdigest()
    kept = cache_root() / "file-sha" / key[:2] / key
    try:
        known = kept.read_text().strip()
        if len(known) == 64:
            return known
    except OSError:
        pass
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    if path_unchanged(path, inode, size, mtime_ns):  # a file written while read is not remembered
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp = kept.with_name(f".{key}.{os.getpid()}")
        tmp.write_text(h.hexdigest() + "\n")
        tmp.replace(kept)
    return h.hexdigest()


def path_unchanged(path: str, inode: int, size: int, mtime_ns: int) -> bool:
    st = os.stat(path)
    return (st.st_ino, st.st_size, st.st_mtime_ns) == (inode, size, mtime_ns)


def file_sha(path: Path) -> str:
    """The SHA-256 of ``path``'s bytes (read once per path, inode, size and mtime; see the module's text)."""
    real = path.resolve()
    st = real.stat()
    return _file_sha(str(real), st.st_ino, st.st_size, st.st_mtime_ns)


def _hf_identity(arg: str, revision: str | None) -> dict[str, Any]:
    path = Path(arg)
    if not path.is_dir():
        return {"kind": "hf", "name": arg, "revision": revision}
    if not (path / "config.json").is_file():
        raise ValueError(f"hf:{arg}: no config.json in the directory (not a model directory)")
    files = {str(p.relative_to(path)): file_sha(p) for p in sorted(path.rglob("*")) if p.is_file()}
    return {"kind": "hf", "config": files.pop("config.json"), "files": files, "revision": revision}


def _openai_identity(arg: str, revision: str | None, options: ModelOptions | None) -> dict[str, Any]:
    from .openai_http import parse_model_spec
    from .preflight import ModelCheckError, _request

    cfg = parse_model_spec("openai:" + arg)
    base = cfg.base_url.rstrip("/")
    try:
        status, raw = _request(base + "/models", options or ModelOptions(), None, 30.0)
    except ModelCheckError as exc:
        raise ValueError(f"openai:{arg}: cannot tell which weights are served ({exc})") from None
    entry: dict[str, Any] = {}
    if status == 200:
        try:
            entry = next((m for m in json.loads(raw)["data"] if str(m.get("id")) == cfg.model), {})
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            entry = {}
        if not entry:
            raise ValueError(f"openai:{arg}: GET {base}/models does not list {cfg.model!r}")
    return {"kind": "openai", "url": base, "id": str(entry.get("id", cfg.model)), "root": entry.get("root"),
            "revision": revision}


def weights_identity(spec: Any, revision: str | None = None, options: ModelOptions | None = None) -> dict[str, Any]:
    """The identity of the weights behind ``spec`` (see the module's text); ValueError where it cannot
    be told (a model directory without ``config.json``, a server that does not list the model)."""
    if not isinstance(spec, str):
        return {"kind": "client", "type": type(spec).__name__, "name": getattr(spec, "name", ""), "revision": revision}
    from .policies import PARAMETRIC, POLICIES, make_policy

    base, sep, params = spec.partition(":")
    if spec in POLICIES or (sep and base in PARAMETRIC):
        cls = type(make_policy(spec) if spec in POLICIES else PARAMETRIC[base](params))  # the parameters in the name
        mods = {c.__module__ for c in cls.__mro__ if c.__module__.startswith("ha_agents.")}
        # the modules its class and the library classes it builds on live in, the registry's (its plans),
        # and the class itself (a policy a user registers from elsewhere)
        source = "".join(inspect.getsource(sys.modules[m]) for m in sorted(mods | {"ha_agents.llm.policies"}))
        try:
            source += inspect.getsource(cls)
        except (OSError, TypeError):  # a class made at run time: its qualified name only
            source += f"{cls.__module__}.{cls.__qualname__}"
        return {"kind": "scripted", "name": spec, "source": hashlib.sha256(source.encode()).hexdigest()}
    kind, _, arg = spec.partition(":")
    if kind == "hf":
        return _hf_identity(arg, revision)
    if kind in ("replay", "menu"):
        path = Path(arg)
        if not path.is_file():
            raise ValueError(f"{spec}: no such file")
        return {"kind": kind, "sha256": file_sha(path), "revision": revision}
    if kind == "openai":
        return _openai_identity(arg, revision, options)
    raise ValueError(f"{spec}: no way to tell its weights (a scripted model, hf:, replay:, menu: or openai:)")


def weights_warning(spec: Any, revision: str | None) -> str | None:
    """A warning for a spec whose identity is only the served name (an openai server, a hub model,
    without ``revision``)."""
    if revision is None and isinstance(spec, str) and (spec.startswith("openai:") or
                                                       (spec.startswith("hf:") and not Path(spec[3:]).is_dir())):
        return (f"warning: {spec}: the outcome cache knows these weights only by the served name; pass "
                "--model-revision (a checkpoint's tag or hash) so new weights under the same name are never "
                "read as these")
    return None
