"""HarnessSpec: the serialisable genome of a harness.

A spec names a base env, a tool-call parser, an ordered list of tools and an ordered list of hooks
(each with parameters) and the episode limits. It loads from and saves to YAML or JSON, has a
stable content hash (over behaviour only: name and description do not count, and parameters are
hashed with their defaults filled in, so spelling a default out does not change the hash), and
``diff(a, b)`` lists what changed. Hooks run at each lifecycle point in the order listed.

A document is checked against its schema (``schema.py``: types, ranges, unknown keys, catalogue
names) before a spec is built; ``validate`` adds what spans fields (duplicates, a ``submit`` tool, a
hook's required tools). Errors name the file and the field, and suggest a close name.

Presets live in ``presets/*.yaml``: ``h0`` (bash + submit), ``h1`` and ``h2`` (reconstructed from
the paper), and ``openhands`` (a hand-designed baseline modelled on OpenHands' CodeAct tools).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from .custom import CodeHook, CustomComponentError, RuleHook, check_rule_hook, check_script_tool, script_tool
from .hooks import HOOKS, Hook
from .tool_calls import MULTI_CALL, PARSERS
from .schema import BASES, DEFINE_KEY, Limits, ParserSpec, did_you_mean, problems
from .tools import TOOLS, Tool

PRESET_DIR = Path(__file__).parent / "presets"


class HarnessSpecError(ValueError):
    """The spec cannot be built; the message names the component and what is wrong."""


@dataclass(frozen=True)
class Component:
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    define: dict[str, Any] | None = None
    """A data-only component (``custom.py``): a script tool's or a rule hook's whole definition;
    None for a catalogue component."""

    def to_obj(self, kind: str = "tool") -> Any:
        if self.define is not None:
            return {"name": self.name, DEFINE_KEY[kind]: dict(self.define)}
        return {"name": self.name, "params": dict(self.params)} if self.params else self.name

    def definition(self, kind: str) -> dict[str, Any]:
        """The validated definition of a data-only component, defaults filled in (checked once per
        content: the spec's hash needs it, and a script's syntax check starts ``bash -n``)."""
        assert self.define is not None
        return json.loads(_checked_definition(kind, self.name, json.dumps(self.define, sort_keys=True)))


def read_data_file(path: str | Path, what: str, error: type[Exception] = ValueError) -> Any:
    """A JSON (``.json``) or YAML file's data; ``error`` with the path (and ``:line:column`` of a
    syntax error) and the reason when it cannot be read or parsed."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc}") from None
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except yaml.MarkedYAMLError as exc:
        mark, start = exc.problem_mark or exc.context_mark, exc.context_mark
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        context = f"{exc.context} at line {start.line + 1}" if exc.context and start is not None else exc.context
        raise error(f"{path}{where}: not valid YAML: {', '.join(p for p in (context, exc.problem) if p)}") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML: {exc}") from None


@functools.lru_cache(maxsize=256)
def _checked_definition(kind: str, name: str, blob: str) -> str:
    check = check_script_tool if kind == "tool" else check_rule_hook
    try:
        return json.dumps(check(name, json.loads(blob), TOOLS if kind == "tool" else HOOKS))
    except CustomComponentError as exc:
        raise HarnessSpecError(str(exc)) from None


@dataclass(frozen=True)
class HarnessSpec:
    """A harness; its file form and field documentation: ``schema.py`` (``ha harness schema``)."""

    name: str = "custom"
    """A label; not hashed."""
    description: str = ""
    """Free text; not hashed."""
    base: str = "repair"
    """The base environment (``schema.BASES``)."""
    parser: ParserSpec = ParserSpec()
    tools: tuple[Component, ...] = ()
    """In the order the model sees them."""
    hooks: tuple[Component, ...] = ()
    """Run in this order at each lifecycle point."""
    limits: Limits = Limits()
    system_prompt: str = ""
    """Replaces the base env's instructions when set; ``{workdir}`` is filled in."""

    # -- serialisation -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "base": self.base,
                "parser": asdict(self.parser), "tools": [c.to_obj("tool") for c in self.tools],
                "hooks": [c.to_obj("hook") for c in self.hooks], "limits": asdict(self.limits),
                "system_prompt": self.system_prompt}

    @classmethod
    def from_dict(cls, data: Any, origin: str = "spec") -> "HarnessSpec":
        """The spec of a document checked against the schema; HarnessSpecError naming ``origin`` and
        each bad field otherwise. Values are kept as written (the hash of ``120`` is not ``120.0``'s)."""
        _raise_problems(problems(data), origin)
        return cls(name=data.get("name", "custom"), description=data.get("description", ""),
                   base=data.get("base", "repair"), parser=ParserSpec(**(data.get("parser") or {})),
                   tools=tuple(_component(c, "tool") for c in data.get("tools") or ()),
                   hooks=tuple(_component(c, "hook") for c in data.get("hooks") or ()),
                   limits=Limits(**(data.get("limits") or {})), system_prompt=data.get("system_prompt") or "")

    @classmethod
    def load(cls, path: str | Path) -> "HarnessSpec":
        return cls.from_dict(read_data_file(path, "harness spec", HarnessSpecError), origin=str(path))

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        data = self.to_dict()
        text = json.dumps(data, indent=2) + "\n" if path.suffix == ".json" else yaml.safe_dump(data, sort_keys=False)
        path.write_text(text)
        return path

    # -- identity --------------------------------------------------------------------------------
    def canonical(self) -> dict[str, Any]:
        """What the hash covers: behaviour, with every parameter's default filled in."""
        return {"base": self.base, "parser": asdict(self.parser), "limits": asdict(self.limits),
                "system_prompt": self.system_prompt,
                "tools": [_canonical(c, "tool") for c in self.tools],
                "hooks": [_canonical(c, "hook") for c in self.hooks]}

    @property
    def hash(self) -> str:
        blob = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def tool_names(self) -> list[str]:
        return [c.name for c in self.tools]

    @property
    def hook_names(self) -> list[str]:
        return [c.name for c in self.hooks]

    # -- editing ---------------------------------------------------------------------------------
    def with_limits(self, max_turns: int | None = None, command_timeout_s: float | None = None,
                    max_format_errors: int | None = None) -> "HarnessSpec":
        """The spec with these limits overridden (None keeps the spec's); the hash changes with them."""
        limits = {k: v for k, v in (("max_turns", max_turns), ("command_timeout_s", command_timeout_s)) if v is not None}
        spec = replace(self, limits=replace(self.limits, **limits)) if limits else self
        if max_format_errors is not None:
            spec = replace(spec, parser=replace(spec.parser, max_format_errors=max_format_errors))
        return spec

    def without(self, *names: str) -> "HarnessSpec":
        """An ablation: the same spec minus the named tools or hooks (each must be present)."""
        present = self.tool_names + self.hook_names
        missing = [n for n in names if n not in present]
        if missing:
            raise HarnessSpecError(f"cannot remove {', '.join(missing)}: not in harness {self.name!r};"
                                   f"{did_you_mean(missing[0], present)} tools: {', '.join(self.tool_names)}; "
                                   f"hooks: {', '.join(self.hook_names) or 'none'}")
        drop = set(names)
        return replace(self, name=f"{self.name}-without-{'-'.join(names)}",
                       tools=tuple(c for c in self.tools if c.name not in drop),
                       hooks=tuple(c for c in self.hooks if c.name not in drop))

    def validate(self) -> "HarnessSpec":
        """Raise HarnessSpecError on anything ``build`` could not honour; return self. A spec is
        immutable, so a validated one is not checked again (a run validates its spec once, at the
        edge, and every episode reuses it)."""
        if self.__dict__.get("_validated"):
            return self
        self._validate()
        object.__setattr__(self, "_validated", True)
        return self

    def _validate(self) -> None:
        _raise_problems(problems(self.to_dict()))
        if self.parser.format not in PARSERS:
            raise HarnessSpecError(f"parser.format: unknown parser {self.parser.format!r};"
                                   f"{did_you_mean(self.parser.format, PARSERS)} available: {', '.join(PARSERS)}")
        if self.parser.multi_call not in MULTI_CALL:
            raise HarnessSpecError(f"parser.multi_call: unknown multi_call policy {self.parser.multi_call!r};"
                                   f"{did_you_mean(self.parser.multi_call, MULTI_CALL)} choose from {', '.join(MULTI_CALL)}")
        if self.base not in BASES:
            raise HarnessSpecError(f"base: unknown base {self.base!r}; available: {', '.join(BASES)}")
        for kind, comps in (("tool", self.tools), ("hook", self.hooks)):
            seen: set[str] = set()
            for i, c in enumerate(comps):
                if c.name in seen:
                    raise HarnessSpecError(f"{kind}s[{i}]: duplicate {kind} {c.name!r}: each {kind} may appear once")
                seen.add(c.name)
                try:
                    if c.define is not None:
                        c.definition(kind)
                    else:
                        resolved_params(c, kind)
                except HarnessSpecError as exc:
                    raise HarnessSpecError(f"{kind}s[{i}]: {exc}") from None
        names = set(self.tool_names)
        if "submit" not in names:
            raise HarnessSpecError("tools: the harness has no `submit` tool, so an episode could only end at its limits")
        if self.parser.format == "fenced_bash" and names - {"bash", "submit"}:
            raise HarnessSpecError("parser.format: the fenced_bash parser can only call bash and submit; "
                                   f"use auto/openai/hermes/qwen3_xml for {', '.join(sorted(names - {'bash', 'submit'}))}")
        for i, c in enumerate(self.hooks):
            if c.define is not None:
                trigger = c.define.get("trigger")
                tool = trigger.get("tool") if isinstance(trigger, dict) else None
                if tool is not None and tool not in names:
                    raise HarnessSpecError(f"hooks[{i}]: rule hook {c.name!r} watches the tool {tool!r}, which the "
                                           f"harness lacks;{did_you_mean(tool, names)} tools: {', '.join(self.tool_names)}")
                continue
            need = HOOKS[c.name].requires_any_tool
            if need and not names & set(need):
                raise HarnessSpecError(f"hooks[{i}]: hook {c.name!r} needs one of the tools {', '.join(need)}, "
                                       "and the harness has none")


def _raise_problems(found: list[str], origin: str = "") -> None:
    """HarnessSpecError listing the schema's findings (one per line when several)."""
    if found:
        text = found[0] if len(found) == 1 else f"{len(found)} problems:" + "".join(f"\n  - {p}" for p in found)
        raise HarnessSpecError(f"{origin}: {text}" if origin else text)


def _component(obj: str | dict[str, Any], kind: str) -> Component:
    """The record of a schema-checked tool or hook entry."""
    if isinstance(obj, str):
        return Component(obj)
    key = DEFINE_KEY[kind]
    if key in obj:
        return Component(obj["name"], {}, dict(obj[key]))
    return Component(obj["name"], dict(obj.get("params") or {}))


def _canonical(c: Component, kind: str) -> dict[str, Any]:
    if c.define is not None:
        return {"name": c.name, DEFINE_KEY[kind]: c.definition(kind)}
    return {"name": c.name, "params": resolved_params(c, kind)}


def tool_of(c: Component) -> tuple[Tool, dict[str, Any]]:
    """The runnable tool of a spec entry and its options."""
    if c.define is not None:
        return script_tool(c.name, c.definition("tool")), {}
    return TOOLS[c.name], resolved_params(c, "tool")


def hook_of(c: Component) -> Hook:
    """A fresh instance of a spec entry's hook."""
    if c.define is not None:
        d = c.definition("hook")
        return CodeHook(c.name, d) if "code" in d else RuleHook(c.name, d)
    return HOOKS[c.name](**c.params)


def resolved_params(c: Component, kind: str) -> dict[str, Any]:
    """The component's parameters with defaults filled in; raises HarnessSpecError if invalid (their
    types are the schema's to check: ``validate``)."""
    registry: dict[str, Any] = TOOLS if kind == "tool" else HOOKS
    if c.name not in registry:
        raise HarnessSpecError(f"unknown {kind} {c.name!r};{did_you_mean(c.name, registry)} "
                               f"available: {', '.join(sorted(registry))}")
    if kind == "tool":
        return {**TOOLS[c.name].options, **c.params}
    cls = HOOKS[c.name]
    try:
        return dict(cls(**copy.deepcopy(c.params)).params)
    except ValueError as exc:
        raise HarnessSpecError(str(exc)) from None


def diff(a: HarnessSpec, b: HarnessSpec) -> list[str]:
    """What changed from ``a`` to ``b``, one line per change (empty when they behave the same)."""
    out: list[str] = []
    ca, cb = a.canonical(), b.canonical()
    for section in ("base", "system_prompt"):
        if ca[section] != cb[section]:
            out.append(f"{section}: {_short(ca[section])} -> {_short(cb[section])}")
    for section in ("parser", "limits"):
        for key in ca[section]:
            if ca[section][key] != cb[section][key]:
                out.append(f"{section}.{key}: {ca[section][key]!r} -> {cb[section][key]!r}")
    for kind in ("tools", "hooks"):
        pa = {c["name"]: c.get("params", c.get("script", c.get("rule"))) for c in ca[kind]}
        pb = {c["name"]: c.get("params", c.get("script", c.get("rule"))) for c in cb[kind]}
        for name in pa:
            if name not in pb:
                out.append(f"- {kind[:-1]} {name}")
        for name in pb:
            if name not in pa:
                out.append(f"+ {kind[:-1]} {name}" + (f" {_short(pb[name])}" if pb[name] else ""))
        for name in pa:
            if name in pb:
                for key in sorted(set(pa[name]) | set(pb[name])):
                    if pa[name].get(key) != pb[name].get(key):
                        out.append(f"~ {kind[:-1]} {name}.{key}: {_short(pa[name].get(key))} -> {_short(pb[name].get(key))}")
        common_a = [n for n in pa if n in pb]
        common_b = [n for n in pb if n in pa]
        if common_a != common_b:
            out.append(f"~ {kind} order: {', '.join(common_a)} -> {', '.join(common_b)}")
    return out


def _short(value: Any, n: int = 60) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= n else text[:n - 3] + "..."


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def load_spec(ref: "str | Path | HarnessSpec") -> HarnessSpec:
    """A preset name (``h2``), a path to a YAML/JSON spec, or a spec; validated (a file's errors
    name the file)."""
    if isinstance(ref, HarnessSpec):
        return ref.validate()
    path = Path(ref)
    if str(ref) in preset_names():
        path = PRESET_DIR / f"{ref}.yaml"
    elif path.suffix not in (".yaml", ".yml", ".json") and not path.exists():
        raise HarnessSpecError(f"unknown harness {str(ref)!r} (not a preset nor a spec file);"
                               f"{did_you_mean(ref, preset_names())} presets: {', '.join(preset_names())}")
    spec = HarnessSpec.load(path)
    try:
        return spec.validate()
    except HarnessSpecError as exc:
        raise HarnessSpecError(f"{path}: {exc}") from None
