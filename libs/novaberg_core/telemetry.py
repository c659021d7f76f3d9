"""OpenTelemetry tracing, set up once per process (STYLE rules 3 and 9; SPEC §7: every step has a span).

OpenTelemetry allows one global tracer provider per process, and tests host several servers in
one process, so there is exactly one SDK :class:`TracerProvider` here: the first call of
:func:`setup_telemetry` or :func:`install_in_memory_exporter` creates and registers it (with the
first caller's ``service.name``); later calls only add exporters not yet present. In production
each service is its own process, so the resource names the right service.
"""

from __future__ import annotations

import logging
import os
import threading

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_NAMESPACE, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from novaberg_core.config import OTEL_EXPORTERS

__all__ = [
    "ATTR_CHARACTER_ID",
    "ATTR_TURN_ID",
    "ATTR_USER_ID",
    "configure_logging",
    "current_trace_id_hex",
    "current_traceparent",
    "flush_telemetry",
    "install_in_memory_exporter",
    "link_to",
    "set_turn_attributes",
    "setup_telemetry",
    "tracer",
    "tracer_provider",
]

ATTR_TURN_ID = "novaberg.turn_id"
ATTR_USER_ID = "novaberg.user_id"
ATTR_CHARACTER_ID = "novaberg.character_id"

_lock = threading.Lock()
_provider: TracerProvider | None = None
_installed_exporters: set[str] = set()
_memory_exporter: InMemorySpanExporter | None = None
_logging_handler: logging.Handler | None = None

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [trace=%(trace_id)s] %(message)s"


def _ensure_provider(service_name: str) -> TracerProvider:
    """The process's SDK provider, created and registered globally on first use."""
    global _provider
    with _lock:
        if _provider is None:
            existing = trace.get_tracer_provider()
            if isinstance(existing, TracerProvider):
                # Someone (e.g. `opentelemetry-instrument`) already installed an SDK provider: share it.
                _provider = existing
            else:
                name = os.environ.get("OTEL_SERVICE_NAME", "").strip() or service_name
                resource = Resource.create({SERVICE_NAME: name, SERVICE_NAMESPACE: "novaberg"})
                _provider = TracerProvider(resource=resource)
                trace.set_tracer_provider(_provider)
        return _provider


def setup_telemetry(service_name: str, exporter: str = "none") -> TracerProvider:
    """Create (once) the global provider and add the span exporter ``exporter`` if not yet added.

    ``otlp`` exports over gRPC to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (standard OTel variables apply),
    ``console`` prints spans, ``none`` records spans for interceptors and tests but exports nothing.
    ``OTEL_SERVICE_NAME`` overrides ``service_name`` in the resource.
    """
    if exporter not in OTEL_EXPORTERS:
        raise ValueError(f"unknown span exporter {exporter!r}; expected one of {', '.join(OTEL_EXPORTERS)}")
    provider = _ensure_provider(service_name)
    with _lock:
        if exporter != "none" and exporter not in _installed_exporters:
            if exporter == "otlp":
                # Imported here: the OTLP exporter pulls in its own gRPC channel machinery.
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                    OTLPSpanExporter,
                )

                provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            else:
                provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
            _installed_exporters.add(exporter)
    return provider


def install_in_memory_exporter() -> InMemorySpanExporter:
    """For tests: the process's in-memory span exporter (one; call ``.clear()`` between tests)."""
    global _memory_exporter
    provider = _ensure_provider("novaberg-test")
    with _lock:
        if _memory_exporter is None:
            _memory_exporter = InMemorySpanExporter()
            provider.add_span_processor(SimpleSpanProcessor(_memory_exporter))
        return _memory_exporter


def tracer_provider() -> TracerProvider | None:
    """The provider created here, or None before :func:`setup_telemetry` ran."""
    return _provider


def flush_telemetry(timeout_s: float = 5.0) -> bool:
    """Export buffered spans now (blocking; call via ``asyncio.to_thread`` from async code)."""
    provider = _provider
    if provider is None:
        return True
    return provider.force_flush(timeout_millis=int(timeout_s * 1000))


def tracer(name: str) -> trace.Tracer:
    """A tracer for module ``name``; safe at import time (resolves to the provider once set up)."""
    provider = _provider
    if provider is not None:
        return provider.get_tracer(name)
    return trace.get_tracer(name)


def current_trace_id_hex() -> str | None:
    """The active trace id as 32 hex digits (for logs and pipeline_log correlation), or None."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return trace.format_trace_id(ctx.trace_id)


def current_traceparent() -> str:
    """The active span as a W3C ``traceparent`` (to link later work to this call), or '' without one."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return ""
    return f"00-{trace.format_trace_id(ctx.trace_id)}-{trace.format_span_id(ctx.span_id)}-{int(ctx.trace_flags):02x}"


def link_to(traceparent: str) -> list[trace.Link]:
    """A span link to the call a ``traceparent`` names (none for an empty or malformed one)."""
    parts = traceparent.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return []
    try:
        context = trace.SpanContext(
            trace_id=int(parts[1], 16), span_id=int(parts[2], 16), is_remote=True,
            trace_flags=trace.TraceFlags(int(parts[3], 16)),
        )  # fmt: skip
    except ValueError:
        return []
    return [trace.Link(context)] if context.is_valid else []


def set_turn_attributes(
    span: trace.Span,
    turn_id: str | None,
    user_id: str | None,
    character_id: str | None,
) -> None:
    """Tag ``span`` with the turn and pair (SPEC §7: a turn_id threads through every service).

    Empty or None values are left off rather than recorded as blanks.
    """
    for key, value in ((ATTR_TURN_ID, turn_id), (ATTR_USER_ID, user_id), (ATTR_CHARACTER_ID, character_id)):
        if value:
            span.set_attribute(key, value)


class _TraceIdFilter(logging.Filter):
    """Adds ``record.trace_id`` (the active trace, or ``-``) so log lines can be joined to traces."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.trace_id = current_trace_id_hex() or "-"
        return True


def configure_logging(level: str = "INFO") -> None:
    """Install one stderr handler with trace ids on the root logger (once) and set the root level.

    Later calls only change the level, so ``run_service`` can start logging before the
    configuration is read and the service can apply the configured level afterwards.
    """
    global _logging_handler
    root = logging.getLogger()
    with _lock:
        if _logging_handler is None:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter(LOG_FORMAT))
            handler.addFilter(_TraceIdFilter())
            root.addHandler(handler)
            _logging_handler = handler
    root.setLevel(level.upper())
