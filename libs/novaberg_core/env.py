"""Reading one environment variable, typed and checked: the helpers every config is built from
(STYLE rule 2).

A bad or missing variable raises :class:`ConfigError` naming the variable. An empty value counts as
unset (deployment templates often render absent values as ``""``). Kept apart from
:mod:`novaberg_core.config` so that the modules that config embeds (TLS, OpenTelemetry) read their
variables with the same helpers without importing it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Final, TypeVar

__all__ = [
    "REQUIRED",
    "ConfigError",
    "env_bool",
    "env_choice",
    "env_float",
    "env_int",
    "env_prefix",
    "env_str",
    "is_set",
]


class ConfigError(ValueError):
    """A configuration variable is missing or malformed; ``variable`` names it."""

    def __init__(self, variable: str, message: str) -> None:
        super().__init__(message)
        self.variable = variable


class _Required:
    """Marker type for "no default: the variable must be set"."""

    _instance: _Required | None = None

    def __new__(cls) -> _Required:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()
"""Default meaning "this variable must be set"."""

_T = TypeVar("_T")
_N = TypeVar("_N", int, float)

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _raw(name: str, env: Mapping[str, str] | None) -> str | None:
    value = (os.environ if env is None else env).get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def _missing(name: str, default: _T | _Required) -> _T:
    if isinstance(default, _Required):
        raise ConfigError(name, f"{name} must be set")
    return default


def _read(
    name: str, default: _T | _Required, env: Mapping[str, str] | None, parse: Callable[[str, str], _T]
) -> _T:
    """``parse(name, raw)`` of the variable; ``default`` when unset, :class:`ConfigError` if required."""
    raw = _raw(name, env)
    return _missing(name, default) if raw is None else parse(name, raw)


def env_str(name: str, default: str | _Required = REQUIRED, *, env: Mapping[str, str] | None = None) -> str:
    """The variable's value (stripped); ``default`` when unset, or :class:`ConfigError` if required."""
    return _read(name, default, env, lambda _, raw: raw)


def env_int(
    name: str,
    default: int | _Required = REQUIRED,
    *,
    min_value: int | None = None,
    max_value: int | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """The variable as an integer within ``[min_value, max_value]`` (bounds also checked on the default)."""
    return _in_range(name, _read(name, default, env, _parse_int), min_value, max_value)


def env_float(
    name: str,
    default: float | _Required = REQUIRED,
    *,
    min_value: float | None = None,
    max_value: float | None = None,
    env: Mapping[str, str] | None = None,
) -> float:
    """The variable as a finite float within ``[min_value, max_value]``."""
    return _in_range(name, _read(name, default, env, _parse_float), min_value, max_value)


def _parse_int(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(name, f"{name} must be an integer, got {raw!r}") from None


def _parse_float(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(name, f"{name} must be a number, got {raw!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ConfigError(name, f"{name} must be a finite number, got {raw!r}")
    return value


def env_bool(
    name: str, default: bool | _Required = REQUIRED, *, env: Mapping[str, str] | None = None
) -> bool:
    """The variable as a boolean: 1/true/yes/on or 0/false/no/off, any case."""
    return _read(name, default, env, _parse_bool)


def _parse_bool(name: str, raw: str) -> bool:
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigError(name, f"{name} must be a boolean (true/false, 1/0, yes/no, on/off), got {raw!r}")


def env_choice(
    name: str,
    choices: Sequence[str],
    default: str | _Required = REQUIRED,
    *,
    env: Mapping[str, str] | None = None,
) -> str:
    """The variable as one of ``choices`` (matched ignoring case, returned as spelled in ``choices``)."""

    def parse(name: str, raw: str) -> str:
        for choice in choices:
            if choice.lower() == raw.lower():
                return choice
        raise ConfigError(name, f"{name} must be one of {', '.join(choices)}, got {raw!r}")

    return _read(name, default, env, parse)


def _in_range(name: str, value: _N, min_value: _N | None, max_value: _N | None) -> _N:
    if min_value is not None and value < min_value:
        raise ConfigError(name, f"{name} must be >= {min_value}, got {value}")
    if max_value is not None and value > max_value:
        raise ConfigError(name, f"{name} must be <= {max_value}, got {value}")
    return value


def env_prefix(service_name: str) -> str:
    """The variable prefix of a service: ``"kzg"`` → ``"NOVABERG_KZG_"``."""
    return f"NOVABERG_{service_name.upper().replace('-', '_').replace('.', '_')}_"


def is_set(name: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether the variable has a value (an empty one counts as unset)."""
    return _raw(name, env) is not None
