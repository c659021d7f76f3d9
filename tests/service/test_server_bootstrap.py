"""The shared server bootstrap on real servers (port 0) and real channels (STYLE rules 3, 5, 6).

A tiny hand-written service with bytes (de)serializers stands in for the project protos, so these
tests hold for every service built on ``novaberg_core.server``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg
import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from novaberg_core import errors
from novaberg_core.config import CommonConfig
from novaberg_core.errors import NovabergError
from novaberg_core.server import RunningServer, create_server, insecure_channel, wait_for_serving
from novaberg_core.telemetry import (
    ATTR_CHARACTER_ID,
    ATTR_TURN_ID,
    ATTR_USER_ID,
    current_trace_id_hex,
    install_in_memory_exporter,
    set_turn_attributes,
    setup_telemetry,
    tracer,
)
from tests.polling import eventually

SERVICE = "novaberg.test.v1.EchoService"
SECRET = "password=hunter2 at /srv/internal/db.py"


def _all_domain_errors() -> list[type[NovabergError]]:
    found: list[type[NovabergError]] = []
    todo: list[type[NovabergError]] = [NovabergError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted((c for c in found if c.__module__ == errors.__name__), key=lambda c: c.__name__)


DOMAIN_ERRORS = {cls.__name__: cls for cls in _all_domain_errors()}


def _fail(kind: str) -> None:
    """Raise what the request names: a domain error, a downstream failure, or a bug."""
    if kind in DOMAIN_ERRORS:
        raise DOMAIN_ERRORS[kind](f"{kind}: field 'salienz' must lie in 0..1")
    if kind == "postgres-deadlock":  # as asyncpg raises SQLSTATE 40P01, wrapped by the store code
        try:
            raise asyncpg.exceptions.DeadlockDetectedError("deadlock detected")
        except asyncpg.PostgresError as error:
            raise RuntimeError("decay failed") from error
    if kind.startswith("downstream-"):
        code = grpc.StatusCode[kind.removeprefix("downstream-")]
        raise grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details="lzg down")
    raise RuntimeError(SECRET)


class EchoService:
    """Handlers for all four call shapes; ``downstream`` is dialled by ``Relay``."""

    def __init__(self) -> None:
        self.slow_started = asyncio.Event()
        self.slow_finished = False
        self.downstream: str | None = None

    async def unary(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return request

    async def fail(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        _fail(request.decode())
        return b""

    async def slow(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self.slow_started.set()
        await asyncio.sleep(float(request))
        self.slow_finished = True
        return b"done"

    async def trace_id(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return (current_trace_id_hex() or "").encode()

    async def relay(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        assert self.downstream is not None
        async with insecure_channel(self.downstream) as channel:
            reply: bytes = await channel.unary_unary(f"/{SERVICE}/TraceId")(request)
        return reply

    async def turn(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        turn_id, user_id, character_id = request.decode().split(",")
        set_turn_attributes(trace.get_current_span(), turn_id, user_id, character_id)
        return b"ok"

    async def server_stream(self, request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        yield b"first"
        _fail(request.decode())

    async def server_stream_writer(self, request: bytes, context: grpc.aio.ServicerContext) -> None:
        await context.write(b"first")
        _fail(request.decode())

    async def client_stream(self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> bytes:
        kinds = [r async for r in requests]
        _fail(kinds[-1].decode())
        return b""

    async def bidi_stream(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:
        async for request in requests:
            yield b"echo:" + request
            _fail(request.decode())

    def register(self, server: grpc.aio.Server) -> None:
        handlers = {
            "Unary": grpc.unary_unary_rpc_method_handler(self.unary),
            "Fail": grpc.unary_unary_rpc_method_handler(self.fail),
            "Slow": grpc.unary_unary_rpc_method_handler(self.slow),
            "TraceId": grpc.unary_unary_rpc_method_handler(self.trace_id),
            "Relay": grpc.unary_unary_rpc_method_handler(self.relay),
            "Turn": grpc.unary_unary_rpc_method_handler(self.turn),
            "ServerStream": grpc.unary_stream_rpc_method_handler(self.server_stream),
            "ServerStreamWriter": grpc.unary_stream_rpc_method_handler(self.server_stream_writer),
            "ClientStream": grpc.stream_unary_rpc_method_handler(self.client_stream),
            "BidiStream": grpc.stream_stream_rpc_method_handler(self.bidi_stream),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))


async def _start(
    echo: EchoService, on_shutdown: tuple[Callable[[], Awaitable[None]], ...] = ()
) -> RunningServer:
    cfg = CommonConfig(service_name="echo", port=0, grace_seconds=3.0)
    return await create_server(cfg, echo.register, [SERVICE], on_shutdown=on_shutdown)


@pytest.fixture(scope="module")
async def echo_server() -> AsyncIterator[tuple[EchoService, RunningServer]]:
    echo = EchoService()
    running = await _start(echo)
    yield echo, running
    await running.stop(0)


@pytest.fixture(scope="module")
async def channel(echo_server: tuple[EchoService, RunningServer]) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(echo_server[1].target) as ch:
        yield ch


@pytest.fixture
def spans() -> InMemorySpanExporter:
    exporter = install_in_memory_exporter()
    exporter.clear()
    return exporter


async def _health(channel: grpc.aio.Channel, service: str) -> int:
    response = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service))
    return int(response.status)


async def _finished(
    exporter: InMemorySpanExporter, predicate: Callable[[ReadableSpan], bool], count: int = 1
) -> list[ReadableSpan]:
    """Spans matching ``predicate`` once ``count`` of them ended (server spans end just after the reply)."""

    async def matching() -> list[ReadableSpan]:
        return [s for s in exporter.get_finished_spans() if predicate(s)]

    return await eventually(
        matching, lambda found: len(found) >= count, within=2.0, every=0.01, what=f"{count} finished span(s)"
    )


# --- health, drain, shutdown order ---------------------------------------------------------------


async def test_health_serving_then_not_serving_and_in_flight_call_drains() -> None:
    echo = EchoService()
    steps: list[str] = []

    async def close_pool() -> None:
        steps.append(f"close_pool(slow finished={echo.slow_finished})")

    async def broken_flush() -> None:
        raise ConnectionError("buffer target gone")

    async def last_step() -> None:
        steps.append("last_step")

    running = await _start(echo, on_shutdown=(close_pool, broken_flush, last_step))
    async with grpc.aio.insecure_channel(running.target) as ch:
        serving = health_pb2.HealthCheckResponse.SERVING
        assert await _health(ch, "") == serving
        assert await _health(ch, SERVICE) == serving
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await _health(ch, "novaberg.unknown.v1.Nope")
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND

        watch = health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest(service=SERVICE))
        assert (await watch.read()).status == serving

        slow_call = asyncio.ensure_future(ch.unary_unary(f"/{SERVICE}/Slow")(b"0.4"))
        await asyncio.wait_for(echo.slow_started.wait(), 2)
        started = time.monotonic()
        stopping = asyncio.ensure_future(running.stop(3.0))

        assert (await asyncio.wait_for(watch.read(), 2)).status == health_pb2.HealthCheckResponse.NOT_SERVING
        watch.cancel()
        assert not slow_call.done()
        assert await slow_call == b"done"  # started before stop: drained, not cancelled
        await asyncio.wait_for(stopping, 5)
        # Drain ends when the last call ends, not at the end of the grace period.
        assert time.monotonic() - started < 2.5
    # Shutdown steps run after the drain, in order; a failing one does not stop the rest.
    assert steps == ["close_pool(slow finished=True)", "last_step"]
    await running.stop(3.0)  # idempotent
    assert steps == ["close_pool(slow finished=True)", "last_step"]


async def test_wait_for_serving(echo_server: tuple[EchoService, RunningServer]) -> None:
    await wait_for_serving(echo_server[1].target, SERVICE, timeout=2)
    with pytest.raises(errors.Unavailable, match=r"novaberg\.unknown\.v1\.Nope"):
        await wait_for_serving(echo_server[1].target, "novaberg.unknown.v1.Nope", timeout=0.3)


async def test_reflection_lists_service_names(channel: grpc.aio.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    call = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    names = {s.name async for r in call for s in r.list_services_response.service}
    assert names == {SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME}


# --- error mapping -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DOMAIN_ERRORS))
async def test_domain_error_reaches_client_with_its_code_and_message(
    channel: grpc.aio.Channel, name: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await channel.unary_unary(f"/{SERVICE}/Fail")(name.encode())
    assert raised.value.code() == DOMAIN_ERRORS[name].status_code
    assert raised.value.details() == f"{name}: field 'salienz' must lie in 0..1"


def test_every_domain_error_is_exercised() -> None:
    assert {"Aborted", "InvalidArgument", "NotFound", "FailedPrecondition", "ModelMismatch", "Unavailable"} <= set(
        DOMAIN_ERRORS
    )
    assert DOMAIN_ERRORS["ModelMismatch"].status_code == grpc.StatusCode.FAILED_PRECONDITION


async def test_unexpected_exception_is_internal_without_internals(
    channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="novaberg_core.server"):
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await channel.unary_unary(f"/{SERVICE}/Fail")(b"bug")
    assert raised.value.code() == grpc.StatusCode.INTERNAL
    details = raised.value.details()
    assert details.startswith("internal error")
    assert "hunter2" not in details and "RuntimeError" not in details and "/srv" not in details
    # ...but the operator gets the traceback.
    logged = [r for r in caplog.records if r.exc_info and r.exc_info[0] is RuntimeError]
    assert logged and f"/{SERVICE}/Fail" in logged[0].getMessage()


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("downstream-UNAVAILABLE", grpc.StatusCode.UNAVAILABLE),
        ("downstream-DEADLINE_EXCEEDED", grpc.StatusCode.DEADLINE_EXCEEDED),
        ("downstream-ABORTED", grpc.StatusCode.ABORTED),
        ("downstream-INVALID_ARGUMENT", grpc.StatusCode.INTERNAL),
    ],
)
async def test_downstream_failure_keeps_retryable_codes_only(
    channel: grpc.aio.Channel, kind: str, code: grpc.StatusCode
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await channel.unary_unary(f"/{SERVICE}/Fail")(kind.encode())
    assert raised.value.code() == code


async def test_a_transaction_postgresql_rolled_back_in_a_conflict_is_aborted_not_internal(
    channel: grpc.aio.Channel,
) -> None:
    """SQLSTATE class 40 (a deadlock, a serialization failure): retry, not a bug to report."""
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await channel.unary_unary(f"/{SERVICE}/Fail")(b"postgres-deadlock")
    assert raised.value.code() == grpc.StatusCode.ABORTED
    assert raised.value.details() == (
        "PostgreSQL rolled back a transaction in a conflict with a concurrent one, retry "
        "(SQLSTATE 40P01: DeadlockDetectedError)"
    )


async def _stream_shape(channel: grpc.aio.Channel, shape: str, kind: str) -> list[bytes]:
    """Call ``shape`` so that it fails with ``kind`` (raises the call's error)."""
    received: list[bytes] = []
    if shape == "unary_stream":
        async for msg in channel.unary_stream(f"/{SERVICE}/ServerStream")(kind.encode()):
            received.append(msg)
    elif shape == "unary_stream_writer":
        async for msg in channel.unary_stream(f"/{SERVICE}/ServerStreamWriter")(kind.encode()):
            received.append(msg)
    elif shape == "stream_unary":
        received.append(await channel.stream_unary(f"/{SERVICE}/ClientStream")(iter([b"x", kind.encode()])))
    else:
        async for msg in channel.stream_stream(f"/{SERVICE}/BidiStream")(iter([kind.encode()])):
            received.append(msg)
    return received


@pytest.mark.parametrize("shape", ["unary_stream", "unary_stream_writer", "stream_unary", "stream_stream"])
@pytest.mark.parametrize(
    ("kind", "code"),
    [("NotFound", grpc.StatusCode.NOT_FOUND), ("bug", grpc.StatusCode.INTERNAL)],
)
async def test_error_mapping_covers_every_call_shape(
    channel: grpc.aio.Channel, shape: str, kind: str, code: grpc.StatusCode
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await _stream_shape(channel, shape, kind)
    assert raised.value.code() == code
    assert "hunter2" not in (raised.value.details() or "")
    if kind == "NotFound":
        assert raised.value.details() == "NotFound: field 'salienz' must lie in 0..1"


async def test_streams_deliver_messages_before_the_error(channel: grpc.aio.Channel) -> None:
    call = channel.unary_stream(f"/{SERVICE}/ServerStream")(b"InvalidArgument")
    assert await call.read() == b"first"
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call.read()
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT


# --- telemetry -----------------------------------------------------------------------------------


async def test_server_span_for_rpc_and_none_for_health(
    channel: grpc.aio.Channel, spans: InMemorySpanExporter
) -> None:
    assert await channel.unary_unary(f"/{SERVICE}/Unary")(b"hallo") == b"hallo"
    assert await _health(channel, SERVICE) == health_pb2.HealthCheckResponse.SERVING
    server_spans = await _finished(spans, lambda s: s.kind == SpanKind.SERVER)
    assert [s.name for s in server_spans] == [f"/{SERVICE}/Unary"]
    assert server_spans[0].attributes is not None
    assert server_spans[0].attributes["rpc.service"] == SERVICE
    assert not [s for s in spans.get_finished_spans() if "grpc.health" in s.name]


async def test_health_and_reflection_calls_leave_no_span_on_either_side(
    echo_server: tuple[EchoService, RunningServer], spans: InMemorySpanExporter
) -> None:
    async with insecure_channel(echo_server[1].target) as traced:  # client spans on this side too
        assert await _health(traced, SERVICE) == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(traced)
        call = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
        assert [r async for r in call]
        assert await traced.unary_unary(f"/{SERVICE}/Unary")(b"hallo") == b"hallo"
    finished = await _finished(spans, lambda s: s.kind in (SpanKind.CLIENT, SpanKind.SERVER), count=2)
    assert sorted((s.kind.name, s.name) for s in finished) == [
        ("CLIENT", f"/{SERVICE}/Unary"), ("SERVER", f"/{SERVICE}/Unary"),
    ]
    assert not [s for s in spans.get_finished_spans() if "Health" in s.name or "Reflection" in s.name]


async def test_internal_error_span_keeps_the_real_cause(
    channel: grpc.aio.Channel, spans: InMemorySpanExporter
) -> None:
    with pytest.raises(grpc.aio.AioRpcError):
        await channel.unary_unary(f"/{SERVICE}/Fail")(b"bug")
    (span,) = await _finished(spans, lambda s: s.kind == SpanKind.SERVER)
    assert span.status.status_code == StatusCode.ERROR
    assert any(
        e.name == "exception" and e.attributes and e.attributes["exception.type"] == "RuntimeError"
        for e in span.events
    )


async def test_client_interceptor_propagates_trace_across_hops(spans: InMemorySpanExporter) -> None:
    downstream_echo, upstream_echo = EchoService(), EchoService()
    downstream = await _start(downstream_echo)
    upstream = await _start(upstream_echo)
    upstream_echo.downstream = downstream.target
    try:
        with tracer("test").start_as_current_span("turn") as root:
            root_trace = trace.format_trace_id(root.get_span_context().trace_id)
            async with insecure_channel(upstream.target) as ch:
                seen_downstream = await ch.unary_unary(f"/{SERVICE}/Relay")(b"")
        # The handler two hops away ran inside the caller's trace.
        assert seen_downstream.decode() == root_trace
        finished = await _finished(spans, lambda s: s.kind in (SpanKind.CLIENT, SpanKind.SERVER), count=4)
        by_kind_name = {(s.kind, s.name): s for s in finished}
        client = by_kind_name[(SpanKind.CLIENT, f"/{SERVICE}/Relay")]
        server = by_kind_name[(SpanKind.SERVER, f"/{SERVICE}/Relay")]
        hop_client = by_kind_name[(SpanKind.CLIENT, f"/{SERVICE}/TraceId")]
        hop_server = by_kind_name[(SpanKind.SERVER, f"/{SERVICE}/TraceId")]
        assert {s.context.trace_id for s in finished} == {root.get_span_context().trace_id}
        assert server.parent is not None and server.parent.span_id == client.context.span_id
        assert hop_client.parent is not None and hop_client.parent.span_id == server.context.span_id
        assert hop_server.parent is not None and hop_server.parent.span_id == hop_client.context.span_id
    finally:
        await upstream.stop(0)
        await downstream.stop(0)


async def test_turn_attributes_on_server_span(channel: grpc.aio.Channel, spans: InMemorySpanExporter) -> None:
    assert await channel.unary_unary(f"/{SERVICE}/Turn")(b"turn-7,user-1,char-2") == b"ok"
    (span,) = await _finished(spans, lambda s: s.kind == SpanKind.SERVER)
    assert span.attributes is not None
    assert span.attributes[ATTR_TURN_ID] == "turn-7"
    assert span.attributes[ATTR_USER_ID] == "user-1"
    assert span.attributes[ATTR_CHARACTER_ID] == "char-2"


def test_no_trace_id_outside_a_span() -> None:
    assert current_trace_id_hex() is None


def test_blank_turn_attributes_are_left_off(spans: InMemorySpanExporter) -> None:
    with tracer("test").start_as_current_span("step") as span:
        set_turn_attributes(span, "turn-8", "", None)
    (finished,) = spans.get_finished_spans()
    assert dict(finished.attributes or {}) == {ATTR_TURN_ID: "turn-8"}


def test_unknown_exporter_is_refused() -> None:
    with pytest.raises(ValueError, match=r"must be none or a comma list of .*console.*otlp.*, got 'jaeger'"):
        setup_telemetry("echo", "jaeger")
