"""Beyond its limit of concurrent calls a server answers UNAVAILABLE at once (novaberg_core.load_shedding),
on real servers built by the shared bootstrap; a tiny hand-written service stands in for the protos."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from novaberg_core.config import CommonConfig
from novaberg_core.server import RunningServer, create_server
from tests.polling import eventually

SERVICE = "novaberg.test.v1.HoldService"


class HoldService:
    """``Hold`` and ``HoldStream`` wait until the test releases them; ``Unary`` answers at once."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.holding = 0

    async def hold(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self.holding += 1
        try:
            await self.release.wait()
        finally:
            self.holding -= 1
        return b"held"

    async def hold_stream(self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> bytes:
        return b"".join([r async for r in requests])

    async def unary(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return request

    async def fail(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        raise RuntimeError("a bug")

    def register(self, server: grpc.aio.Server) -> None:
        handlers = {
            "Hold": grpc.unary_unary_rpc_method_handler(self.hold),
            "HoldStream": grpc.stream_unary_rpc_method_handler(self.hold_stream),
            "Unary": grpc.unary_unary_rpc_method_handler(self.unary),
            "Fail": grpc.unary_unary_rpc_method_handler(self.fail),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))


@pytest.fixture
async def limited(request: pytest.FixtureRequest) -> AsyncIterator[tuple[HoldService, grpc.aio.Channel]]:
    """A server admitting ``request.param`` calls at a time, and a channel to it."""
    service = HoldService()
    cfg = CommonConfig(service_name="hold", port=0, grace_seconds=1.0, max_concurrent_rpcs=request.param)
    running: RunningServer = await create_server(cfg, service.register, [SERVICE])
    try:
        async with grpc.aio.insecure_channel(running.target) as channel:
            yield service, channel
    finally:
        service.release.set()
        await running.stop(1.0)


async def _holding(service: HoldService, count: int, what: str) -> None:
    async def holding() -> int:
        return service.holding

    await eventually(holding, lambda n: n == count, within=5.0, every=0.01, what=what)


async def _unary(channel: grpc.aio.Channel, payload: bytes = b"ping") -> bytes:
    reply: bytes = await channel.unary_unary(f"/{SERVICE}/Unary")(payload, timeout=5)
    return reply


@pytest.mark.parametrize("limited", [2], indirect=True)
async def test_a_call_beyond_the_limit_is_unavailable_at_once_and_health_is_never_refused(
    limited: tuple[HoldService, grpc.aio.Channel],
) -> None:
    service, channel = limited
    held = [asyncio.ensure_future(channel.unary_unary(f"/{SERVICE}/Hold")(b"", timeout=10)) for _ in range(2)]
    await _holding(service, 2, "two calls held")

    started = time.monotonic()
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _unary(channel)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert refused.value.details() == "hold is at its limit (2 calls at once); retry with backoff"
    assert time.monotonic() - started < 1.0  # refused, not queued behind the held calls

    health = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=SERVICE))
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    listing = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")])
    )
    assert SERVICE in [s.name async for r in listing for s in r.list_services_response.service]

    service.release.set()
    assert await asyncio.gather(*held) == [b"held", b"held"]
    assert await _unary(channel, b"after") == b"after"  # the places are free again


@pytest.mark.parametrize("limited", [1], indirect=True)
async def test_a_failed_or_abandoned_call_gives_its_place_back(limited: tuple[HoldService, grpc.aio.Channel]) -> None:
    service, channel = limited
    for _ in range(3):
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await channel.unary_unary(f"/{SERVICE}/Fail")(b"", timeout=5)
        assert failed.value.code() == grpc.StatusCode.INTERNAL
        assert await _unary(channel) == b"ping"

    with pytest.raises(grpc.aio.AioRpcError) as late:
        await channel.unary_unary(f"/{SERVICE}/Hold")(b"", timeout=0.2)
    assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    await _holding(service, 0, "the abandoned call cancelled on the server")
    assert await _unary(channel, b"after") == b"after"


@pytest.mark.parametrize("limited", [1], indirect=True)
async def test_an_open_stream_holds_its_place_until_it_ends(limited: tuple[HoldService, grpc.aio.Channel]) -> None:
    _, channel = limited
    stream = channel.stream_unary(f"/{SERVICE}/HoldStream")(timeout=10)
    await stream.write(b"a")

    async def refused() -> bool:
        try:
            await _unary(channel)
        except grpc.aio.AioRpcError as error:
            assert error.code() == grpc.StatusCode.UNAVAILABLE, error
            return True
        return False  # the stream's handler had not started yet

    await eventually(refused, bool, within=5.0, every=0.01, what="the open stream holding the only place")
    await stream.write(b"b")
    await stream.done_writing()
    assert await stream == b"ab"
    assert await _unary(channel) == b"ping"
