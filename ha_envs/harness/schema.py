"""The harness spec file's schema: types, ranges and names, checked before a spec is built.

:class:`ParserSpec` and :class:`Limits` are the spec's records, typed and range-checked here. The
whole document is a pydantic model built from the registries (``TOOLS``, ``HOOKS``), so every
catalogue tool and hook has its own entry with typed parameters (the types of its defaults; numbers
``>= 0``), and one registered later is part of it. :func:`problems` lists what is wrong with a
document as ``field.path: message`` lines (unknown keys, wrong types, out-of-range limits, unknown
names with a suggestion); :func:`json_schema` is the same model as JSON Schema (``ha harness
schema``), for spec authors and proposers.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Annotated, Any, Literal, Union

from pydantic import (BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter, ValidationError,
                      create_model)

from ..env import MAX_FORMAT_ERRORS, MAX_TURNS
from ..loaders import close_matches
from ..sandbox.base import COMMAND_TIMEOUT_S, OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES
from .hooks import HOOKS
from .tool_calls import MULTI_CALL, PARSERS
from .tools import TOOLS

BASES = ("repair",)
DEFINE_KEY = {"tool": "script", "hook": "rule"}
"""The key of a data-only component's definition (``custom.py``) in a tool or hook entry."""

_CONFIG = ConfigDict(extra="forbid", use_attribute_docstrings=True)
PositiveInt = Annotated[int, Field(strict=True, ge=1)]
NonNegativeInt = Annotated[int, Field(strict=True, ge=0)]
PositiveFloat = Annotated[float, Field(strict=True, gt=0)]
Text = Annotated[str, Field(strict=True)]


def did_you_mean(name: object, choices: Iterable[str]) -> str:
    """``" did you mean 'x'?"`` for the closest choice, or ``""`` when none is close."""
    close = close_matches(str(name), choices, n=1, cutoff=0.6)
    return f" did you mean {close[0]!r}?" if close else ""


@dataclass(frozen=True)
class ParserSpec:
    """How the model's replies become tool calls (``parsers.py``)."""

    __pydantic_config__ = _CONFIG

    format: Annotated[Text, Field(json_schema_extra={"enum": list(PARSERS)})] = "auto"
    """The tool-call format: ``auto`` (any of the others, by what the reply holds), ``openai``,
    ``hermes``, ``qwen3_xml``, ``fenced_bash`` (bash and submit only)."""
    multi_call: Annotated[Text, Field(json_schema_extra={"enum": list(MULTI_CALL)})] = "reject"
    """A reply with several calls: ``reject`` it as a format error, run the ``first``, or run ``all``."""
    max_format_errors: PositiveInt = MAX_FORMAT_ERRORS
    """Format errors in a row that end the episode (termination ``format_errors``)."""


@dataclass(frozen=True)
class Limits:
    """When an episode ends and how much of a command's output the model sees."""

    __pydantic_config__ = _CONFIG

    max_turns: PositiveInt = MAX_TURNS
    """Model turns before the episode is cut (a vetoed call costs its turn)."""
    command_timeout_s: PositiveFloat = COMMAND_TIMEOUT_S
    """Seconds a command may run; tools with their own cap (``run_check``, script tools) use the smaller."""
    output_head_bytes: NonNegativeInt = OUTPUT_HEAD_BYTES
    """Bytes kept from the start of a long command output."""
    output_tail_bytes: NonNegativeInt = OUTPUT_TAIL_BYTES
    """Bytes kept from its end (the middle is replaced by a note)."""


class _Document(BaseModel):
    """A harness spec (``ha_envs/harness/spec.py``): YAML or JSON."""

    model_config = _CONFIG

    name: Text = "custom"
    """A label; not part of the hash."""
    description: Text = ""
    """Free text; not part of the hash."""
    base: Annotated[Text, Field(json_schema_extra={"enum": list(BASES)})] = "repair"
    """The base environment."""
    parser: ParserSpec | None = None
    """How replies become tool calls (defaults when absent)."""
    limits: Limits | None = None
    """Episode limits (defaults when absent)."""
    system_prompt: Text | None = None
    """Replaces the base env's instructions when set; ``{workdir}`` is filled in."""


def _param_type(default: Any) -> Any:
    """A parameter's type from its default: strict, numbers ``>= 0``."""
    if isinstance(default, bool):
        return Annotated[bool, Field(strict=True)]
    if isinstance(default, int):
        return NonNegativeInt
    if isinstance(default, float):
        return Annotated[float, Field(strict=True, ge=0)]
    if isinstance(default, str):
        return Text
    if isinstance(default, list):
        return Annotated[list[_param_type(default[0]) if default else Any], Field(strict=True)]  # type: ignore[misc]
    return Any


def _entry(kind: str, name: str, description: str, defaults: dict[str, Any]) -> type[BaseModel]:
    params = create_model(f"{kind}_{name}_params", __config__=_CONFIG,  # type: ignore[call-overload]
                          **{k: (_param_type(v), v) for k, v in defaults.items()})
    return create_model(f"{kind}_{name}", __config__=_CONFIG, __doc__=description,  # type: ignore[call-overload]
                        name=(Literal[name], ...), params=(params | None, None))


def _entries(kind: str, catalogue: dict[str, tuple[str, dict[str, Any]]]) -> Any:
    """One tool or hook entry: a catalogue name, ``{name, params}``, or ``{name, script|rule}``."""
    key = DEFINE_KEY[kind]
    define = create_model(f"{kind}_{key}", __config__=_CONFIG,  # type: ignore[call-overload]
                          __doc__=f"A data-only {kind} (``custom.py``): its whole definition under ``{key}``.",
                          name=(Text, ...), **{key: (dict[str, Any], ...)})
    members: list[Any] = [Annotated[Literal[tuple(catalogue)], Tag("plain")], Annotated[define, Tag(key)]]
    members += [Annotated[_entry(kind, n, doc, d), Tag(n)] for n, (doc, d) in catalogue.items()]

    def tag(entry: Any) -> str | None:
        if isinstance(entry, str):
            return "plain" if entry in catalogue else None
        if not isinstance(entry, dict):
            return None
        if key in entry:
            return key
        return entry["name"] if isinstance(entry.get("name"), str) and entry["name"] in catalogue else None

    return Annotated[Union[tuple(members)],  # noqa: UP007
                     Discriminator(tag, custom_error_type=f"unknown_{kind}", custom_error_message=f"unknown {kind}")]


def _registries() -> str:
    """What the document model depends on, as a cache key."""
    return json.dumps([[(n, t.description, t.options) for n, t in TOOLS.items()],
                       [(n, (h.__doc__ or "").strip(), h.defaults) for n, h in HOOKS.items()]], default=str)


@functools.lru_cache(maxsize=4)
def _schema(registries: str) -> dict[str, Any]:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **_adapter(registries).json_schema()}


@functools.lru_cache(maxsize=4)
def _adapter(registries: str) -> TypeAdapter[Any]:
    tools, hooks = json.loads(registries)
    model = create_model(  # type: ignore[call-overload]
        "HarnessSpec", __base__=_Document, __doc__=_Document.__doc__,
        tools=(list[_entries("tool", {n: (doc, d) for n, doc, d in tools})] | None,
               Field(None, description="The tools, in the order the model sees them.")),
        hooks=(list[_entries("hook", {n: (doc, d) for n, doc, d in hooks})] | None,
               Field(None, description="The hooks, run in this order at each lifecycle point.")))
    return TypeAdapter(model)


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a harness spec file under the current registries."""
    return copy.deepcopy(_schema(_registries()))


def problems(data: Any) -> list[str]:
    """What is wrong with a spec document, one ``field.path: message`` line each (empty: none)."""
    if not isinstance(data, dict):
        return [f"a harness spec must be a mapping, got {'nothing' if data is None else type(data).__name__}"]
    try:
        _adapter(_registries()).validate_python(data)
    except ValidationError as exc:
        return [_describe(e) for e in exc.errors(include_url=False)]
    return []


_EXPECTED = {"int_type": "an integer", "float_type": "a number", "string_type": "a string",
             "bool_type": "true or false", "list_type": "a list", "dict_type": "a mapping",
             "model_type": "a mapping", "dataclass_type": "a mapping", "model_attributes_type": "a mapping"}
_BOUND = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}


def _describe(error: Any) -> str:
    loc, kind, value = list(error["loc"]), error["type"], error.get("input")
    if kind.startswith("unknown_"):
        what = kind.removeprefix("unknown_")
        name = value if isinstance(value, str) else value.get("name") if isinstance(value, dict) else None
        registry: dict[str, Any] = TOOLS if what == "tool" else HOOKS
        if isinstance(name, str):
            why = f"unknown {what} {name!r};{did_you_mean(name, registry)} available: {', '.join(sorted(registry))}"
        else:
            why = (f"a {what} entry must be a name or {{name: ..., params: {{...}}}} (or {{name: ..., "
                   f"{DEFINE_KEY[what]}: {{...}}}} for a data-only one), got {value!r}")
    elif kind in ("extra_forbidden", "unexpected_keyword_argument"):
        keys = _keys(loc[:-1])
        why = f"unknown key;{did_you_mean(loc[-1], keys)} allowed: {', '.join(keys) or 'none'}"
    elif kind in _EXPECTED or kind in _BOUND:
        bound = f"a number {_BOUND[kind]} {next(iter(error['ctx'].values()))}" if kind in _BOUND else None
        why = f"expected {_number(loc) or bound or _EXPECTED[kind]}, got {value!r}"
    elif kind == "missing":
        why = "required"
    else:
        why = error["msg"]
    if loc[:1] in (["tools"], ["hooks"]) and len(loc) > 2:
        del loc[2]  # the entry's union tag
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    return f"{path}: {why}" if path else why


def _number(loc: list[Any]) -> str | None:
    """What the schema wants at ``loc`` (union tags included), as ``an integer >= 1``, if a number."""
    if len(loc) >= 2 and loc[0] in ("parser", "limits"):
        model, field, rest = "ParserSpec" if loc[0] == "parser" else "Limits", loc[1], loc[2:]
    elif len(loc) >= 5 and loc[0] in ("tools", "hooks") and loc[3] == "params":
        model, field, rest = f"{loc[0][:-1]}_{loc[2]}_params", loc[4], loc[5:]
    else:
        return None
    prop = _schema(_registries())["$defs"].get(model, {}).get("properties", {}).get(field, {})
    for _ in rest:  # list items
        prop = prop.get("items", {})
    if prop.get("type") not in ("integer", "number"):
        return None
    word = "an integer" if prop["type"] == "integer" else "a number"
    if "minimum" in prop:
        return f"{word} >= {prop['minimum']}"
    return f"{word} > {prop['exclusiveMinimum']}" if "exclusiveMinimum" in prop else word


def _keys(parent: list[Any]) -> list[str]:
    """The keys allowed in the mapping at ``parent`` (an error's location, union tags included)."""
    if not parent:
        return [*_Document.model_fields, "tools", "hooks"]
    if parent in (["parser"], ["limits"]):
        return [f.name for f in fields(ParserSpec if parent == ["parser"] else Limits)]
    if len(parent) < 3 or parent[0] not in ("tools", "hooks"):
        return []
    kind, tag = parent[0][:-1], parent[2]
    if len(parent) == 3:
        return ["name", DEFINE_KEY[kind] if tag == DEFINE_KEY[kind] else "params"]
    if parent[3:] == ["params"]:
        return list(TOOLS[tag].options if kind == "tool" else HOOKS[tag].defaults)
    return []
