"""A run's identity: what makes an output folder's results, recorded in ``run-identity.json``.

Every folder ``ha eval``, ``ha grade``, ``ha evolve run`` and ``ha train`` write holds one. It names
the command that wrote it and the fields its results depend on (model spec and identity, sampling
options, seed, harness hash, sandbox, grader and library versions), and the items it covers
(instance id -> a fingerprint of the task, and for ``ha grade`` of the prediction too).

``claim(out, identity)`` is called before anything is written: a folder that is absent or empty is
taken; a folder of the same run is resumed; anything else is refused with a
:class:`RunIdentityError` naming each differing field, old value against new (``new_out=True``
writes to ``OUT-2``, ``OUT-3``, ... instead: the first that is free or holds this very run).

What may differ on a resume: the number of runs and the set of items (``--runs 3`` after
``--runs 2``, more ``--instances``): the folder then covers the union. An item in both must have
the same fingerprint. A folder written before identities were recorded is read for what it shows
(``ha eval``: the model, harness hash, sampling options and seed of summary.json and the records;
``ha grade``: the grader version of its reports); if those agree the folder is adopted (its identity
written), otherwise refused. A folder no ``ha`` command wrote is used only when none of the files
the commands write is there (``OUTPUTS``): nothing of the user's is written over.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

IDENTITY_FILE = "run-identity.json"
SCHEMA = 1
OUTPUTS = ("harness.yaml", "summary.json", "predictions.jsonl", "trajs", "report.json", "logs", "masked-history.jsonl")
"""What the commands write at the top of a folder: a folder no ``ha`` command wrote that holds one is refused."""
DERIVED = ("model_identity", "model_name")
"""Fields that follow from ``model`` (named only when the spec itself is the same)."""
COMMANDS = {"eval": "ha eval", "grade": "ha grade", "evolve": "ha evolve run", "train": "ha train"}


class RunIdentityError(ValueError):
    """An output folder holds another run; the message names each difference and the way out."""


@dataclass(frozen=True)
class RunIdentity:
    command: str
    """Which command's folder: ``eval``, ``grade``, ``evolve`` or ``train``."""
    fields: Mapping[str, Any]
    """Compared exactly on a resume (JSON values)."""
    items: Mapping[str, str] = field(default_factory=dict)
    """Instance id -> fingerprint; a resume may add items, never change one."""
    runs: int = 0
    """Runs (samples) per item; a resume may ask for more."""

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "command": self.command, **dict(self.fields), "runs": self.runs,
                "items": dict(sorted(self.items.items()))}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RunIdentity":
        rest = {k: v for k, v in data.items() if k not in ("schema", "command", "runs", "items")}
        return cls(str(data.get("command", "")), rest, dict(data.get("items") or {}), int(data.get("runs") or 0))

    def merged(self, old: "RunIdentity") -> "RunIdentity":
        """This identity covering ``old``'s items and runs too (a resume's extension)."""
        return RunIdentity(self.command, self.fields, {**old.items, **self.items}, max(self.runs, old.runs))


def library_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("harnessadapt")
    except PackageNotFoundError:
        return "unknown"


def digest(data: Any) -> str:
    """A short stable hash of JSON-able data (bytes and text hashed as they are)."""
    raw = data if isinstance(data, bytes) else data.encode() if isinstance(data, str) else \
        json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def model_identity(model: Any) -> str:
    """What the spec alone does not pin: a ``replay:`` file's content hash, an ``hf:`` directory's
    files' content hashes (a fine-tune saved over the same directory is another model even where
    every file keeps its size; each file is read once per version, ``ha_agents.llm.weights``); the
    spec itself for the rest (``openai:NAME@URL`` names the model and where it is served), a client
    object's name and type."""
    if not isinstance(model, str):
        return f"{type(model).__name__}:{getattr(model, 'name', '')}"
    from ..llm.weights import file_sha

    kind, _, arg = model.partition(":")
    path = Path(arg.split("@", 1)[0]) if kind in ("replay", "hf") else None
    if path is not None and path.is_file():
        return f"{model} sha256:{file_sha(path)}"
    if path is not None and path.is_dir():
        files = sorted((str(p.relative_to(path)), file_sha(p)) for p in path.rglob("*") if p.is_file())
        return f"{model} files:{digest(files)}"
    return model


def load(out: Path) -> RunIdentity | None:
    path = Path(out) / IDENTITY_FILE
    if not path.is_file():
        return None
    try:
        return RunIdentity.from_json(json.loads(path.read_text()))
    except (ValueError, TypeError) as exc:
        raise RunIdentityError(f"{path}: unreadable run identity ({exc}); use another --out") from None


def save(out: Path, identity: RunIdentity) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (IDENTITY_FILE + ".tmp")
    tmp.write_text(json.dumps(identity.to_json(), indent=2) + "\n")
    tmp.replace(out / IDENTITY_FILE)


def folder_command(out: Path) -> str | None:
    """The command whose outputs ``out`` holds (its identity, else what its files show: ``eval``,
    ``grade``, ``evolve``, ``train``, or ``unknown``: other files, one of them named as an output);
    None for an absent or empty folder, or one holding none of those."""
    out = Path(out)
    if not out.is_dir() or not any(out.iterdir()):
        return None
    ident = load(out)
    if ident is not None:
        if all(p.name in (IDENTITY_FILE, "harness.yaml") or (p.is_file() and not p.stat().st_size)
               for p in out.iterdir()):
            return None  # claimed, then stopped before any result (a bad flag found late): free again
        return ident.command
    if (out / "evolution.jsonl").exists():
        return "evolve"
    if (out / "metrics.jsonl").exists() or (out / "checkpoint").exists() or (out / "rollouts").exists():
        return "train"
    if (out / "trajectories.jsonl").exists() or (out / "summary.json").exists():
        return "eval"
    if (out / "report.json").exists() or (out / "logs").is_dir():
        return "grade"
    if any((out / name).exists() for name in OUTPUTS):
        return "unknown"  # a lone harness.yaml too: it may be the user's own, never overwritten
    return None  # other files only: nothing of theirs is written over


def differences(old: RunIdentity, new: RunIdentity) -> list[tuple[str, Any, Any]]:
    """(field, old value, new value) for each field that keeps ``new`` from resuming ``old``."""
    diffs: list[tuple[str, Any, Any]] = []
    if old.command != new.command:
        return [("command", COMMANDS.get(old.command, old.command), COMMANDS.get(new.command, new.command))]
    for key in sorted(set(old.fields) | set(new.fields), key=lambda k: (k != "model", k)):
        if key in old.fields and old.fields.get(key) != new.fields.get(key):
            if key in DERIVED and diffs and diffs[0][0] == "model":
                continue  # the spec's difference says it
            diffs.append((key, old.fields.get(key), new.fields.get(key)))
    changed = sorted(i for i in set(old.items) & set(new.items) if old.items[i] != new.items[i])
    if changed:
        what = "task and patch" if new.command == "grade" else "task"
        more = f", +{len(changed) - 5} more" if len(changed) > 5 else ""
        diffs.append((f"items (instance -> {what} fingerprint{more})", {i: old.items[i] for i in changed[:5]},
                      {i: new.items[i] for i in changed[:5]}))
    return diffs


def legacy_identity(out: Path, command: str) -> RunIdentity | None:
    """What a folder written before identities were recorded shows of its run (only those fields
    are compared); None when it shows nothing."""
    from ha_envs.grading.faults import records_under

    fields: dict[str, Any] = {}
    if command == "eval":
        records = records_under(out / "trajectories.jsonl") if (out / "trajectories.jsonl").exists() else []
        summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").is_file() else {}
        models = {r.get("model") for r in records if r.get("model")} | ({summary["model"]} if summary.get("model") else set())
        hashes = {r.get("harness_hash") for r in records if r.get("harness_hash")}
        hashes |= {summary["harness_hash"]} if summary.get("harness_hash") else set()
        if len(models) == 1:
            fields["model_name"] = models.pop()
        if len(hashes) == 1:
            fields["harness_hash"] = hashes.pop()
        if summary:
            options = summary.get("model_options") or {}
            fields.update(temperature=options.get("temperature"), top_p=options.get("top_p"),
                          max_tokens=options.get("max_tokens"), model_kwargs=options.get("extra") or {},
                          seed=summary.get("seed"))
    elif command == "grade":
        versions = {json.loads(p.read_text()).popitem()[1].get("grader_version")
                    for p in (out / "logs").glob("*/report.json")}
        versions.discard("")
        if len(versions) == 1:
            fields["grader_version"] = versions.pop()
    return RunIdentity(command, fields) if fields else None


def _refusal(out: Path, old: RunIdentity, diffs: list[tuple[str, Any, Any]], legacy: bool) -> RunIdentityError:
    lines = [f"{out} holds another run (written by `{COMMANDS.get(old.command, old.command)}`"
             + (", before run identities were recorded" if legacy else "") + "); this command differs in:"]
    lines += [f"  {name}: {a!r} (in the folder) vs {b!r} (this command)" for name, a, b in diffs]
    way_out = (f", or pass --new-out to write to the next free {out.name}-N folder beside it"
               if diffs[0][0] != "command" and old.command in ("eval", "grade") else "")
    lines.append(f"Nothing was run or overwritten. Use another --out{way_out}.")
    return RunIdentityError("\n".join(lines))


def check(out: Path, identity: RunIdentity) -> RunIdentityError | None:
    """Why ``identity`` cannot write to ``out`` (None: it can: a new folder or the same run)."""
    command = folder_command(out)
    if command is None:
        return None
    old, legacy = load(out), False
    if old is None:
        legacy = True
        if command == "unknown":
            clash = ", ".join(n for n in OUTPUTS if (out / n).exists())
            return RunIdentityError(f"{out} holds no run of ha but files a run would write over ({clash}); nothing "
                                    "was written: use another --out (or --new-out)")
        old = legacy_identity(out, command) or RunIdentity(command, {})  # legacy records name the model, not its spec
    diffs = differences(old, identity)
    return _refusal(out, old, diffs, legacy) if diffs else None


def claim(out: Path | str, identity: RunIdentity, *, new_out: bool = False) -> Path:
    """The folder this run writes to, its identity recorded there: ``out`` when it is free or holds
    this run (resumed; the identity then covers both runs' items and runs); with ``new_out`` the
    first of ``out-2``, ``out-3``, ... that is; else :class:`RunIdentityError`."""
    out = Path(out)
    problem = check(out, identity)
    if problem is not None and new_out:
        k = 2
        while check(out.with_name(f"{out.name}-{k}"), identity) is not None:
            k += 1
        out = out.with_name(f"{out.name}-{k}")
        problem = None
    if problem is not None:
        raise problem
    old = load(out)
    save(out, identity.merged(old) if old is not None else identity)
    return out


def command_identity(command: str, fields: Mapping[str, Any], tasks: list[Any], runs: int = 0) -> RunIdentity:
    """An identity of ``fields`` with the grader and library versions, over ``tasks``' fingerprints."""
    from ha_envs.grading.report import GRADER_VERSION

    return RunIdentity(command, {**fields, "grader_version": GRADER_VERSION, "library_version": library_version()},
                       {t.instance_id: t.fingerprint() for t in tasks}, runs)


def eval_identity(tasks: list[Any], model: Any, config: Any, runs: int) -> RunIdentity:
    """The identity of an ``ha eval`` run (``config``: its ``EpisodeConfig``)."""
    options = config.model_options
    token_mode = config.token_mode
    fields = {
        **model_fields(model), "temperature": getattr(options, "temperature", None),
        "top_p": getattr(options, "top_p", None), "max_tokens": getattr(options, "max_tokens", None),
        "model_kwargs": dict(getattr(options, "extra", None) or {}), "seed": config.seed,
        "harness": config.harness.name, "harness_hash": config.harness.hash,
        "sandbox": config.sandbox if isinstance(config.sandbox, str) else getattr(config.sandbox, "__name__", "custom"),
        "token_mode": None if token_mode is None else [str(token_mode.template), str(token_mode.tokenizer),
                                                      token_mode.context_tokens],
    }
    return command_identity("eval", fields, tasks, runs)


def model_fields(model: Any) -> dict[str, str]:
    """``model`` (the spec), ``model_identity`` and ``model_name`` (what records call it)."""
    spec = model if isinstance(model, str) else model_identity(model)
    return {"model": spec, "model_identity": model_identity(model), "model_name": display_name(model)}


def display_name(model: Any) -> str:
    """The name records give a model (``openai:NAME@URL`` -> NAME)."""
    if not isinstance(model, str):
        return str(getattr(model, "name", type(model).__name__))
    kind, _, arg = model.partition(":")
    return arg.split("@", 1)[0] if kind == "openai" else model


def grade_identity(tasks: list[Any], predictions: Mapping[str, Mapping[str, Any]], *, sandbox: str,
                   verdict_rules: str) -> RunIdentity:
    """The identity of an ``ha grade`` run: each graded instance's task and patch, the rules, the grader."""
    from ha_envs.grading.report import GRADER_VERSION

    items = {t.instance_id: digest([t.fingerprint(), predictions[t.instance_id].get("model_patch") or ""])
             for t in tasks if t.instance_id in predictions}
    fields = {"sandbox": sandbox, "verdict_rules": verdict_rules, "grader_version": GRADER_VERSION,
              "library_version": library_version()}
    return RunIdentity("grade", fields, items)
