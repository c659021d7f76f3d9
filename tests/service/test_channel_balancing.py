"""Client-side balancing and server connection ageing on real servers and real channels.

Peers are addressed through headless Services (``dns:///<svc>-headless…``) that resolve to every
replica: the channel must spread calls over all addresses (round robin), and a server must age out
connections so clients re-resolve and find replicas added later.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import grpc.aio
import pytest

from novaberg_core.config import CommonConfig
from novaberg_core.server import RunningServer, create_server, insecure_channel

_WHO = "/novaberg.test.v1.Who/Who"


def _register_who(name: str) -> object:
    async def who(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return name.encode()

    def register(server: grpc.aio.Server) -> None:
        handler = grpc.unary_unary_rpc_method_handler(
            who, request_deserializer=lambda b: b, response_serializer=lambda b: b
        )
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("novaberg.test.v1.Who", {"Who": handler}),))

    return register


async def _start(name: str, *, max_age_s: float = 300.0) -> RunningServer:
    cfg = CommonConfig(service_name=name, host="127.0.0.1", port=0, max_connection_age_s=max_age_s)
    return await create_server(cfg, _register_who(name), ["novaberg.test.v1.Who"])  # type: ignore[arg-type]


@pytest.fixture
async def two_replicas() -> AsyncIterator[tuple[RunningServer, RunningServer]]:
    first, second = await _start("replica-a"), await _start("replica-b")
    try:
        yield first, second
    finally:
        await first.stop(None)
        await second.stop(None)


async def _who(channel: grpc.aio.Channel) -> str:
    answer: bytes = await channel.unary_unary(_WHO, request_serializer=lambda b: b, response_deserializer=lambda b: b)(
        b"", timeout=5
    )
    return answer.decode()


async def test_calls_are_spread_over_every_resolved_address(two_replicas: tuple[RunningServer, RunningServer]) -> None:
    first, second = two_replicas
    target = f"ipv4:127.0.0.1:{first.port},127.0.0.1:{second.port}"
    async with insecure_channel(target) as channel:
        answers = [await _who(channel) for _ in range(8)]
    assert set(answers) == {"replica-a", "replica-b"}
    assert min(answers.count("replica-a"), answers.count("replica-b")) >= 3


async def test_a_caller_may_still_pick_the_first_address(two_replicas: tuple[RunningServer, RunningServer]) -> None:
    first, second = two_replicas
    target = f"ipv4:127.0.0.1:{first.port},127.0.0.1:{second.port}"
    async with insecure_channel(target, options=[("grpc.lb_policy_name", "pick_first")]) as channel:
        answers = {await _who(channel) for _ in range(8)}
    assert answers == {"replica-a"}


async def _state_after(channel: grpc.aio.Channel, seconds: float) -> grpc.ChannelConnectivity:
    deadline = asyncio.get_running_loop().time() + seconds
    state = channel.get_state()
    while (remaining := deadline - asyncio.get_running_loop().time()) > 0:
        try:
            await asyncio.wait_for(channel.wait_for_state_change(state), remaining)
        except TimeoutError:
            break
        state = channel.get_state()
        if state != grpc.ChannelConnectivity.READY:
            break
    return state


async def test_the_server_ages_connections_out() -> None:
    server = await _start("aged", max_age_s=0.3)
    try:
        async with insecure_channel(server.target) as channel:
            assert await _who(channel) == "aged"
            assert channel.get_state() == grpc.ChannelConnectivity.READY
            assert await _state_after(channel, 3.0) != grpc.ChannelConnectivity.READY
            assert await _who(channel) == "aged"  # reconnects on the next call
    finally:
        await server.stop(None)


async def test_age_zero_keeps_the_connection() -> None:
    server = await _start("kept", max_age_s=0)
    try:
        async with insecure_channel(server.target) as channel:
            assert await _who(channel) == "kept"
            assert await _state_after(channel, 1.5) == grpc.ChannelConnectivity.READY
    finally:
        await server.stop(None)
