"""Configuration from the environment, loaded once at start-up and failing fast (STYLE rule 2).

Every service has a frozen dataclass config with a ``from_env()`` built from the ``env_*`` helpers
(:mod:`novaberg_core.env`); it embeds :class:`CommonConfig` for what all servers share. A bad or
missing variable raises :class:`~novaberg_core.env.ConfigError` naming the variable, so a
misconfigured pod dies at start with a message that says what to fix instead of failing on the
first request.

An empty value counts as unset (deployment templates often render absent values as ``""``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from novaberg_core.env import env_choice, env_float, env_int, env_prefix, env_str, is_set
from novaberg_core.otel_config import check_sampler, signal_exporters
from novaberg_core.tls import PLAINTEXT, TlsConfig

__all__ = [
    "ENV_KZG_ADDR",
    "ENV_LOG_ADDR",
    "ENV_LZG_ADDR",
    "ENV_POSTGRES_URL",
    "ENV_REDIS_URL",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "MAX_CONCURRENT_RPCS_DEFAULT",
    "OTEL_EXPORTERS",
    "CommonConfig",
]

# The shared stores and the peers: one variable each, read alike by every service that needs it
# (and set alike by the chart and the dev stack).
ENV_POSTGRES_URL: Final = "NOVABERG_POSTGRES_URL"
"""PostgreSQL with pgvector: the LZG's, Pixie's and the log's schemas."""
ENV_REDIS_URL: Final = "NOVABERG_REDIS_URL"
"""Redis with the search module: the KZG's memory and the pipeline's per-pair state."""
ENV_KZG_ADDR: Final = "NOVABERG_KZG_ADDR"
"""``host:port`` of the KZG service (the pipeline's and Pixie's peer)."""
ENV_LZG_ADDR: Final = "NOVABERG_LZG_ADDR"
"""``host:port`` of the LZG service (the pipeline's and Pixie's peer)."""
ENV_LOG_ADDR: Final = "NOVABERG_LOG_ADDR"
"""``host:port`` of the log service: every service's pipeline-log writer, and Pixie's retention."""

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
        p = env_prefix(service_name) if prefix is None else prefix
        source = os.environ if env is None else env
        exporter = signal_exporters("traces", source, override=f"{p}OTEL_EXPORTER")
        metrics_exporter = signal_exporters("metrics", source)
        check_sampler(source)
        if is_set(f"{p}METRICS_PORT", env):
            metrics_port = env_int(f"{p}METRICS_PORT", min_value=0, max_value=65535, env=env)
        else:
            metrics_port = env_int("NOVABERG_METRICS_PORT", 0, min_value=0, max_value=65535, env=env)
        if is_set(f"{p}LOG_LEVEL", env):
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
                if is_set(f"{p}HEALTH_PORT", env)
                else None
            ),
            tls=TlsConfig.from_env(env),
        )
