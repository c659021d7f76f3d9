"""Configuration from the environment, loaded once at start-up and failing fast (STYLE rule 2).

Every service has a frozen dataclass config with a ``from_env()`` built from the ``env_*`` helpers
below; it embeds :class:`CommonConfig` for what all servers share. A bad or missing variable raises
:class:`ConfigError` naming the variable, so a misconfigured pod dies at start with a message that
says what to fix instead of failing on the first request.

An empty value counts as unset (deployment templates often render absent values as ``""``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

from novaberg_core.tls import PLAINTEXT, TlsConfig

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "MAX_CONCURRENT_RPCS_DEFAULT",
    "OTEL_EXPORTERS",
    "REQUIRED",
    "CommonConfig",
    "ConfigError",
    "env_bool",
    "env_choice",
    "env_float",
    "env_int",
    "env_prefix",
    "env_str",
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

OTEL_EXPORTERS: Final = ("none", "console", "otlp")
"""The common values of :attr:`CommonConfig.otel_exporter`; any exporter the SDK registers is accepted,
also as a comma list (:mod:`novaberg_core.otel_config`)."""

MAX_CONCURRENT_RPCS_DEFAULT: Final = 256
"""Calls a service handles at once unless it or ``<prefix>MAX_CONCURRENT_RPCS`` says otherwise: room for
the fan-out of the pipeline's replicas and Pixie's workers (the pipeline, the edge, takes 64)."""

LOG_FORMATS: Final = ("text", "json")
"""Accepted values of :attr:`CommonConfig.log_format` (``NOVABERG_LOG_FORMAT``)."""

LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
"""Accepted values of :attr:`CommonConfig.log_level`."""


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


@dataclass(frozen=True, slots=True)
class CommonConfig:
    """Settings every server has; each service's config embeds one (STYLE rules 2 and 3)."""

    service_name: str
    """Short service name (``kzg``, ``lzg``, ``log``, ``pixie``, ``pipeline``); names logs and traces."""

    host: str = "[::]"
    """Address to bind; ``[::]`` listens on all interfaces (IPv4 too on dual-stack hosts)."""

    port: int = 0
    """TCP port to bind; 0 picks a free port (tests), the bound port is reported by the server."""

    grace_seconds: float = 5.0
    """How long a stopping server lets in-flight calls finish before cancelling them."""

    otel_exporter: str = "none"
    """Where spans go: ``none`` or a comma list of SDK exporter names (``otlp``, ``console`` …); ``otlp``
    follows ``OTEL_EXPORTER_OTLP_PROTOCOL`` (grpc or http/protobuf) and ``OTEL_EXPORTER_OTLP_ENDPOINT``."""

    metrics_exporter: str = "none"
    """Where metrics are pushed besides the Prometheus endpoint: ``none`` or SDK exporter names
    (``OTEL_METRICS_EXPORTER``)."""

    metrics_port: int = 0
    """Port of the Prometheus scrape endpoint; 0 = none (``NOVABERG_<SVC>_METRICS_PORT``, else
    ``NOVABERG_METRICS_PORT``)."""

    log_format: str = "text"
    """``text`` (one line with ``[trace=…]``) or ``json`` (one object per line with trace and span ids)."""

    log_level: str = "INFO"
    """Root log level: DEBUG, INFO, WARNING, ERROR or CRITICAL."""

    max_connection_age_s: float = 300.0
    """The server closes (GOAWAY) each client connection after about this long, so clients re-resolve
    the peers' DNS and spread over replicas added since; 0 = never (``NOVABERG_GRPC_MAX_CONNECTION_AGE_S``)."""

    tls: TlsConfig = PLAINTEXT
    """Transport security and authorisation (``NOVABERG_TLS_*``); plaintext here, mTLS by default from the
    environment (novaberg_core.tls)."""

    max_concurrent_rpcs: int = MAX_CONCURRENT_RPCS_DEFAULT
    """Calls handled at once; more are answered UNAVAILABLE at once (novaberg_core.load_shedding); 0 = no
    limit (``<prefix>MAX_CONCURRENT_RPCS``; from the environment the service may set its own default)."""

    health_port: int | None = None
    """A second, plaintext listener serving only grpc.health.v1 (kubelet's gRPC probes cannot do TLS);
    None = off, 0 = a free port (``<prefix>HEALTH_PORT``)."""

    @classmethod
    def from_env(
        cls,
        service_name: str,
        prefix: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        max_concurrent_rpcs: int = MAX_CONCURRENT_RPCS_DEFAULT,
    ) -> CommonConfig:
        """Read ``<prefix>HOST``, ``PORT``, ``GRACE_SECONDS``, ``OTEL_EXPORTER``, ``LOG_LEVEL``,
        ``METRICS_PORT``, ``MAX_CONCURRENT_RPCS`` (default ``max_concurrent_rpcs``) and the standard
        OpenTelemetry variables.

        ``prefix`` defaults to ``NOVABERG_<SERVICE>_``. Spans go where ``<prefix>OTEL_EXPORTER``
        says (a per-service override), else ``OTEL_TRACES_EXPORTER``, else ``otlp`` when
        ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or its traces variant) is set, else ``none``; metrics
        likewise from ``OTEL_METRICS_EXPORTER``; the sampler is the SDK's (``OTEL_TRACES_SAMPLER``).
        Without ``<prefix>LOG_LEVEL`` the process-wide ``NOVABERG_LOG_LEVEL`` applies, else INFO.
        ``NOVABERG_GRPC_MAX_CONNECTION_AGE_S`` (process-wide, 300) bounds a client connection's age.
        ``<prefix>HEALTH_PORT`` opens the plaintext health listener; the process-wide ``NOVABERG_TLS_*``
        are read last (:meth:`TlsConfig.from_env`: mTLS unless ``NOVABERG_TLS_MODE=plaintext``).
        """
        from novaberg_core.otel_config import check_sampler, signal_exporters

        p = env_prefix(service_name) if prefix is None else prefix
        source = os.environ if env is None else env
        exporter = signal_exporters("traces", source, override=f"{p}OTEL_EXPORTER")
        metrics_exporter = signal_exporters("metrics", source)
        check_sampler(source)
        if _raw(f"{p}METRICS_PORT", env) is not None:
            metrics_port = env_int(f"{p}METRICS_PORT", min_value=0, max_value=65535, env=env)
        else:
            metrics_port = env_int("NOVABERG_METRICS_PORT", 0, min_value=0, max_value=65535, env=env)
        if _raw(f"{p}LOG_LEVEL", env) is not None:
            log_level = env_choice(f"{p}LOG_LEVEL", LOG_LEVELS, env=env)
        else:
            log_level = env_choice("NOVABERG_LOG_LEVEL", LOG_LEVELS, "INFO", env=env)
        return cls(
            service_name=service_name,
            host=env_str(f"{p}HOST", "[::]", env=env),
            port=env_int(f"{p}PORT", 0, min_value=0, max_value=65535, env=env),
            grace_seconds=env_float(f"{p}GRACE_SECONDS", 5.0, min_value=0.0, env=env),
            otel_exporter=exporter,
            metrics_exporter=metrics_exporter,
            metrics_port=metrics_port,
            log_format=env_choice("NOVABERG_LOG_FORMAT", LOG_FORMATS, "text", env=env),
            log_level=log_level,
            max_connection_age_s=env_float(
                "NOVABERG_GRPC_MAX_CONNECTION_AGE_S", 300.0, min_value=0.0, env=env
            ),
            max_concurrent_rpcs=env_int(f"{p}MAX_CONCURRENT_RPCS", max_concurrent_rpcs, min_value=0, env=env),
            health_port=(
                env_int(f"{p}HEALTH_PORT", min_value=0, max_value=65535, env=env)
                if _raw(f"{p}HEALTH_PORT", env) is not None
                else None
            ),
            tls=TlsConfig.from_env(env),
        )
