"""Harbor's ``task.toml`` (schema 1.0-1.4), read with the standard library and pydantic.

Only the fields this library acts on are modelled strictly (timeouts, the environment's image or
Dockerfile, cpus and memory, network modes, multi-step ``[[steps]]``); other keys Harbor knows
(MCP servers, artifacts, healthchecks, GPUs) are kept as read but ignored, as Harbor itself ignores
unknown keys. A malformed file is a :class:`HarborTaskError` naming the file and the field.
"""

from __future__ import annotations

import math
import re
import tomllib
import unicodedata
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..task import TaskError

SCHEMA_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4")
"""``schema_version`` values read (Harbor 0.25 writes 1.4; 1.0-1.3 differ in fields we ignore)."""


class HarborTaskError(TaskError):
    """A Harbor task directory or its ``task.toml`` is missing or malformed."""


class NetworkMode(str, Enum):
    NO_NETWORK = "no-network"
    PUBLIC = "public"
    ALLOWLIST = "allowlist"


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


def _finite_positive(value: float | None, name: str) -> float | None:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise ValueError(f"{name} must be a finite number above 0, not {value}")
    return value


class PhaseConfig(_Model):
    """``[agent]`` or ``[verifier]``."""

    timeout_sec: float | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None

    @field_validator("timeout_sec")
    @classmethod
    def _timeout(cls, v: float | None) -> float | None:
        return _finite_positive(v, "timeout_sec")


def _size_mb(text: str) -> int:
    """Harbor's legacy ``memory = "2G"`` / ``"512M"``."""
    t = text.strip().upper()
    units = {"G": 1024, "M": 1, "K": 1 / 1024}
    if not t or t[-1] not in units:
        raise ValueError(f"size {text!r} must end in G, M or K (e.g. '2G', '512M')")
    try:
        return int(float(t[:-1]) * units[t[-1]])
    except ValueError:
        raise ValueError(f"size {text!r} is not a number followed by G, M or K") from None


class EnvironmentConfig(_Model):
    """``[environment]``."""

    build_timeout_sec: float = 600.0
    docker_image: str | None = None
    os: str = "linux"
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    gpus: int | None = None
    network_mode: NetworkMode | None = None
    allow_internet: bool | None = None
    """Schema <= 1.2's switch; ``network_mode`` wins when both are given."""
    workdir: str | None = None
    env: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _legacy_sizes(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
                if isinstance(data.get(old), str):
                    data.setdefault(new, _size_mb(data.pop(old)))
        return data

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, v: float | None) -> float | None:
        return _finite_positive(v, "cpus")

    @field_validator("memory_mb", "storage_mb")
    @classmethod
    def _mb(cls, v: int | None) -> int | None:
        if v is not None and v <= 0:
            raise ValueError(f"must be above 0 MB, not {v}")
        return v

    @field_validator("os", mode="before")
    @classmethod
    def _os(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v

    @property
    def network(self) -> NetworkMode:
        if self.network_mode is not None:
            return self.network_mode
        if self.allow_internet is not None:
            return NetworkMode.PUBLIC if self.allow_internet else NetworkMode.NO_NETWORK
        return NetworkMode.PUBLIC


_BAD_NAME_CHARS = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_DEVICE_NAMES = re.compile(r"(con|prn|aux|nul|conin\$|conout\$|com[1-9]|lpt[1-9])", re.IGNORECASE)


def check_step_name(name: str) -> str:
    """A step's name is the name of its folder ``steps/<name>/``: one portable folder name, as
    Harbor demands (no separators, control or reserved characters, no trailing dot or space, not
    ``.``/``..`` nor a Windows device name, at most 255 bytes)."""
    why = ("is empty" if not name.strip() else "is . or .." if name in (".", "..")
           else "ends in a dot or a space" if name.endswith((".", " "))
           else "holds a path separator, a control character or one of <>:\"|?*" if _BAD_NAME_CHARS.search(name)
           else "is a Windows device name" if _DEVICE_NAMES.fullmatch(name.partition(".")[0].rstrip(" "))
           else "is longer than 255 bytes" if len(name.encode()) > 255 else "")
    if why:
        raise ValueError(f"step name {name!r} {why}: a step's name must be one portable folder name (steps/<name>/)")
    return name


class StepConfig(_Model):
    """One ``[[steps]]`` entry of a multi-step task (``ha_envs/harbor/steps.py`` runs them)."""

    name: str
    agent: PhaseConfig = Field(default_factory=PhaseConfig)
    verifier: PhaseConfig = Field(default_factory=PhaseConfig)
    min_reward: float | dict[str, float] | None = None
    """Below it the remaining steps are not run. A number gates the ``reward`` key; a table gates
    each key it names (only ``reward`` is read here: the grader keeps no other key)."""

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_step_name(v)

    @field_validator("min_reward")
    @classmethod
    def _min_reward(cls, v: float | dict[str, float] | None) -> float | dict[str, float] | None:
        values = v.values() if isinstance(v, dict) else [] if v is None else [v]
        if any(not math.isfinite(x) for x in values):
            raise ValueError(f"min_reward must be finite, not {v}")
        if isinstance(v, dict) and set(v) - {"reward"}:
            raise ValueError(f"min_reward gates keys {sorted(set(v) - {'reward'})}: only the 'reward' key of a "
                             "step's reward file is read here (docs/interop.md)")
        return v


class TaskConfig(_Model):
    """The whole ``task.toml``."""

    schema_version: str = "1.4"
    task: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent: PhaseConfig = Field(default_factory=PhaseConfig)
    verifier: PhaseConfig = Field(default_factory=lambda: PhaseConfig(timeout_sec=600.0))
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    solution: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None
    multi_step_reward_strategy: str | None = None
    steps: list[StepConfig] | None = None

    @model_validator(mode="before")
    @classmethod
    def _version_rename(cls, data: Any) -> Any:
        if isinstance(data, dict) and "version" in data:  # schema <= 1.1 called it ``version``
            data = dict(data)
            data.setdefault("schema_version", data.pop("version"))
        return data

    @field_validator("schema_version", mode="before")
    @classmethod
    def _known_version(cls, v: Any) -> str:
        v = str(v)
        if v not in SCHEMA_VERSIONS:
            raise ValueError(f"schema_version {v!r} is not one this reader knows ({', '.join(SCHEMA_VERSIONS)})")
        return v

    @field_validator("multi_step_reward_strategy")
    @classmethod
    def _strategy(cls, v: str | None) -> str | None:
        if v is not None and v not in ("mean", "final"):
            raise ValueError(f"multi_step_reward_strategy must be 'mean' or 'final', not {v!r}")
        return v

    @field_validator("steps")
    @classmethod
    def _unique_steps(cls, v: list[StepConfig] | None) -> list[StepConfig] | None:
        seen: dict[str, str] = {}
        for step in v or []:  # folders that would collide on a case-insensitive, normalising filesystem
            key = unicodedata.normalize("NFC", step.name).casefold()
            if key in seen:
                raise ValueError(f"step names {seen[key]!r} and {step.name!r} name the same folder")
            seen[key] = step.name
        return v

    @property
    def verifier_timeout_s(self) -> float:
        return self.verifier.timeout_sec or 600.0


def read_task_config(path: Path) -> TaskConfig:
    """``task.toml`` at ``path``, validated; errors name the file, the line (TOML) or the field."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise HarborTaskError(f"{path}: no task.toml (a Harbor task directory holds task.toml, instruction.md "
                              "and tests/test.sh)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HarborTaskError(f"{path}: cannot read it ({exc})") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HarborTaskError(f"{path}: not valid TOML ({exc})") from None
    try:
        return TaskConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors())
        raise HarborTaskError(f"{path}: {problems}") from None
