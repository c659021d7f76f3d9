"""The standard OpenTelemetry variables, through the SDK's own configuration (issue 16): exporter
lists, the OTLP protocol (a real HTTP receiver gets the export), the sampler, JSON logs."""

from __future__ import annotations

import http.server
import io
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from novaberg_core.config import CommonConfig
from novaberg_core.env import ConfigError
from novaberg_core.metrics import _push_readers
from novaberg_core.telemetry import JsonFormatter, _TraceIdFilter, exporter_classes, span_processors


def _config(service: str, env: dict[str, str]) -> CommonConfig:
    """The service's common config from ``env`` alone (plaintext: these tests are about telemetry)."""
    return CommonConfig.from_env(service, env={"NOVABERG_TLS_MODE": "plaintext", **env})


@pytest.fixture(autouse=True)
def clean_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OTEL_TRACES_EXPORTER",
        "OTEL_METRICS_EXPORTER",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_TRACES_SAMPLER",
        "OTEL_TRACES_SAMPLER_ARG",
    ):
        monkeypatch.delenv(name, raising=False)


def test_comma_lists_and_the_per_service_override_are_accepted() -> None:
    cfg = _config("kzg", {"OTEL_TRACES_EXPORTER": "otlp, console", "OTEL_METRICS_EXPORTER": "otlp"})
    assert (cfg.otel_exporter, cfg.metrics_exporter) == ("otlp,console", "otlp")
    both = {"OTEL_TRACES_EXPORTER": "otlp,console", "NOVABERG_KZG_OTEL_EXPORTER": "console"}
    assert _config("kzg", both).otel_exporter == "console"
    assert _config("kzg", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}).metrics_exporter == "otlp"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_TRACES_EXPORTER", "jaeger"),
        ("OTEL_TRACES_EXPORTER", "otlp,otlp"),
        ("OTEL_METRICS_EXPORTER", "otlp,"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ("OTEL_TRACES_SAMPLER", "sometimes"),
        ("NOVABERG_LOG_FORMAT", "xml"),
        ("NOVABERG_KZG_METRICS_PORT", "-1"),
    ],
)
def test_a_bad_value_stops_the_service_naming_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _config("kzg", {variable: value})
    assert raised.value.variable == variable and str(raised.value).startswith(f"{variable} must ")


def test_a_ratio_sampler_needs_a_ratio() -> None:
    env = {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"}
    _config("kzg", env)
    with pytest.raises(ConfigError, match="OTEL_TRACES_SAMPLER_ARG must be a ratio"):
        _config("kzg", {**env, "OTEL_TRACES_SAMPLER_ARG": "2"})


def test_the_metrics_port_is_per_service_over_the_shared_one() -> None:
    assert _config("kzg", {}).metrics_port == 0
    shared = {"NOVABERG_METRICS_PORT": "9464"}
    assert _config("kzg", shared).metrics_port == 9464
    assert (
        _config("kzg", {**shared, "NOVABERG_KZG_METRICS_PORT": "9471"}).metrics_port == 9471
    )
    assert (
        _config("lzg", {**shared, "NOVABERG_KZG_METRICS_PORT": "9471"}).metrics_port == 9464
    )


def test_otlp_follows_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [cls for _, cls in exporter_classes("otlp", "traces")] == [GrpcSpanExporter]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    assert [cls for _, cls in exporter_classes("otlp", "traces")] == [HttpSpanExporter]
    assert [cls for _, cls in exporter_classes("otlp", "metrics")] == [HttpMetricExporter]
    named = exporter_classes("otlp,console", "traces")
    assert [cls for _, cls in named] == [HttpSpanExporter, ConsoleSpanExporter]
    processors = span_processors("otlp,console")
    assert isinstance(processors[1], SimpleSpanProcessor)  # the console prints at once
    assert exporter_classes("none", "traces") == []


@dataclass
class Receiver:
    """A tiny OTLP/HTTP receiver on 127.0.0.1: what arrived, by path."""

    port: int = 0
    posts: list[tuple[str, str, int]] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    got = Receiver()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            got.posts.append((self.path, self.headers.get("Content-Type", ""), len(body)))
            got.arrived.set()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    got.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        server.shutdown()
        server.server_close()


def test_http_protobuf_exports_reach_a_local_receiver(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{receiver.port}")
    resource = Resource.create({"service.name": "exporter-test"})
    traces = TracerProvider(resource=resource)
    for processor in span_processors("otlp"):
        traces.add_span_processor(processor)
    with traces.get_tracer("test").start_as_current_span("one span"):
        pass
    assert traces.force_flush(10_000)
    readers = _push_readers("otlp")
    assert [type(r) for r in readers] == [PeriodicExportingMetricReader]
    meters = MeterProvider(resource=resource, metric_readers=readers)
    meters.get_meter("test").create_counter("exported").add(1)
    assert meters.force_flush(10_000)
    traces.shutdown()
    meters.shutdown()
    paths = {(path, kind) for path, kind, size in receiver.posts if size > 0}
    assert ("/v1/traces", "application/x-protobuf") in paths
    assert ("/v1/metrics", "application/x-protobuf") in paths


def test_json_logs_carry_the_trace_and_span_ids() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(_TraceIdFilter())
    logger = logging.getLogger("novaberg.test.json")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        provider = TracerProvider()
        with provider.get_tracer("test").start_as_current_span("work") as span:
            logger.warning("inside %s", "a span")
        logger.warning("outside")
    finally:
        logger.removeHandler(handler)
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    context = span.get_span_context()
    assert inside["message"] == "inside a span" and inside["level"] == "WARNING"
    assert inside["trace_id"] == f"{context.trace_id:032x}" and inside["span_id"] == f"{context.span_id:016x}"
    assert "trace_id" not in outside and outside["logger"] == "novaberg.test.json"
