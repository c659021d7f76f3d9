"""OpenTelemetry tracing and logging, set up once per process (STYLE rules 3 and 9; SPEC §7: every
step has a span).

OpenTelemetry allows one global tracer provider per process, and tests host several servers in
one process, so there is exactly one SDK :class:`TracerProvider` here: the first call of
:func:`setup_telemetry` or :func:`install_in_memory_exporter` creates and registers it (with the
first caller's ``service.name``); later calls only add exporters not yet present. In production
each service is its own process, so the resource names the right service.

Exporters and the sampler come from the SDK's own configuration (``opentelemetry.sdk._configuration``,
what ``opentelemetry-instrument`` runs): ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console``, ``none``,
comma lists), ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``grpc`` or ``http/protobuf``), ``OTEL_TRACES_SAMPLER``
/ ``_ARG``. ``NOVABERG_<SVC>_OTEL_EXPORTER`` overrides the exporters of one service. Logs are text
with ``[trace=…]`` or, with ``NOVABERG_LOG_FORMAT=json``, one JSON object per line with the trace
and span ids.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from datetime import UTC, datetime
from typing import Protocol

from opentelemetry import trace
from opentelemetry.sdk._configuration import (
    _get_exporter_entry_point,
    _get_sampler,
    _import_config_components,
    _import_sampler,
)
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_NAMESPACE, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from novaberg_core.otel_config import ENTRY_POINT_GROUPS, Signal, exporter_names

__all__ = [
    "ATTR_CHARACTER_ID",
    "ATTR_TURN_ID",
    "ATTR_USER_ID",
    "Flushable",
    "configure_logging",
    "current_trace_id_hex",
    "current_traceparent",
    "exporter_classes",
    "flush_provider",
    "flush_telemetry",
    "install_in_memory_exporter",
    "link_to",
    "service_resource",
    "set_turn_attributes",
    "setup_telemetry",
    "span_processors",
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
_resource: Resource | None = None

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [trace=%(trace_id)s] %(message)s"


def service_resource(service_name: str) -> Resource:
    """The process's resource (first caller's name; ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``
    apply), shared by traces and metrics."""
    global _resource
    with _lock:
        if _resource is None:
            name = os.environ.get("OTEL_SERVICE_NAME", "").strip() or service_name
            _resource = Resource.create({SERVICE_NAME: name, SERVICE_NAMESPACE: "novaberg"})
        return _resource


def _ensure_provider(service_name: str) -> TracerProvider:
    """The process's SDK provider, created and registered globally on first use."""
    global _provider
    resource = service_resource(service_name)
    with _lock:
        if _provider is None:
            existing = trace.get_tracer_provider()
            if isinstance(existing, TracerProvider):
                # Someone (e.g. `opentelemetry-instrument`) already installed an SDK provider: share it.
                _provider = existing
            else:
                # The SDK's sampler (OTEL_TRACES_SAMPLER / _ARG); None → its default, parentbased_always_on.
                _provider = TracerProvider(resource=resource, sampler=_import_sampler(_get_sampler()))
                trace.set_tracer_provider(_provider)
        return _provider


def exporter_classes(names: str, signal: Signal) -> list[tuple[str, type]]:
    """The SDK's exporter classes for a checked comma list (``otlp`` → gRPC or HTTP by
    ``OTEL_EXPORTER_OTLP_PROTOCOL``), as ``(entry point name, class)``; ``none`` → []."""
    checked = exporter_names("exporters", names, signal)
    if checked == "none":
        return []
    resolved = [_get_exporter_entry_point(name, signal) for name in checked.split(",")]
    return _import_config_components(resolved, ENTRY_POINT_GROUPS[signal])


def _processor(exporter: SpanExporter) -> SpanProcessor:
    """Console prints at once (simple processor); every other exporter batches."""
    if isinstance(exporter, ConsoleSpanExporter):
        return SimpleSpanProcessor(exporter)
    return BatchSpanProcessor(exporter)


def span_processors(names: str) -> list[SpanProcessor]:
    """One processor per exporter of the comma list ``names`` (see :func:`exporter_classes`)."""
    return [_processor(cls()) for _, cls in exporter_classes(names, "traces")]


def setup_telemetry(service_name: str, exporter: str = "none") -> TracerProvider:
    """Create (once) the global provider and add the span exporters of ``exporter`` not yet added.

    ``exporter`` is ``none`` (spans recorded for interceptors and tests, nothing exported) or a comma
    list of SDK exporter names: ``otlp`` (gRPC or HTTP by ``OTEL_EXPORTER_OTLP_PROTOCOL``, to
    ``OTEL_EXPORTER_OTLP_ENDPOINT``), ``console`` (prints spans) … ``OTEL_SERVICE_NAME`` overrides
    ``service_name`` in the resource.
    """
    provider = _ensure_provider(service_name)
    with _lock:
        for name, cls in exporter_classes(exporter, "traces"):
            if name in _installed_exporters:
                continue
            provider.add_span_processor(_processor(cls()))
            _installed_exporters.add(name)
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


class Flushable(Protocol):
    """An OpenTelemetry SDK provider (traces or metrics): it can export what it buffered."""

    def force_flush(self, timeout_millis: int = ...) -> bool: ...


def flush_provider(provider: Flushable | None, timeout_s: float) -> bool:
    """Export what ``provider`` buffered now, blocking up to ``timeout_s``; True without a provider."""
    return True if provider is None else provider.force_flush(timeout_millis=int(timeout_s * 1000))


def flush_telemetry(timeout_s: float = 5.0) -> bool:
    """Export buffered spans now (blocking; call via ``asyncio.to_thread`` from async code)."""
    return flush_provider(_provider, timeout_s)


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
    """Adds ``record.trace_id`` and ``record.span_id`` (the active span's, or ``-``) so log lines can be
    joined to traces."""

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = trace.get_current_span().get_span_context()
        record.trace_id = trace.format_trace_id(ctx.trace_id) if ctx.is_valid else "-"
        record.span_id = trace.format_span_id(ctx.span_id) if ctx.is_valid else "-"
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, trace and span ids, the exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("trace_id", "span_id"):
            value = getattr(record, key, "-")
            if value and value != "-":
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def _log_formatter() -> logging.Formatter:
    """``NOVABERG_LOG_FORMAT``: ``json`` or the text line (the default; also for unknown values,
    which the service's configuration then refuses by name)."""
    if os.environ.get("NOVABERG_LOG_FORMAT", "").strip().lower() == "json":
        return JsonFormatter()
    return logging.Formatter(LOG_FORMAT)


def configure_logging(level: str = "INFO", log_format: str | None = None) -> None:
    """Install one stderr handler with trace ids on the root logger (once) and set the root level.

    Later calls only change the level (and the format, when given), so ``run_service`` can start
    logging before the configuration is read and the service can apply it afterwards.
    """
    global _logging_handler
    root = logging.getLogger()
    with _lock:
        if _logging_handler is None:
            handler = logging.StreamHandler()
            handler.setFormatter(_log_formatter())
            handler.addFilter(_TraceIdFilter())
            root.addHandler(handler)
            _logging_handler = handler
        if log_format is not None:
            formatter = JsonFormatter() if log_format == "json" else logging.Formatter(LOG_FORMAT)
            _logging_handler.setFormatter(formatter)
    root.setLevel(level.upper())
