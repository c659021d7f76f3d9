"""A peer that vanished without a word is found by keepalive pings, not by TCP's retransmissions.

When a node dies its pods send no FIN and no RST: the packets just vanish. A channel holding a
connection to such a peer sends calls into it, and without keepalive each of them waits for its
deadline until TCP gives up (about fifteen minutes). The peers' channels ping (novaberg_core.server:
``KEEPALIVE_TIME_S``, ``KEEPALIVE_TIMEOUT_S``), so the dead connection is dropped within half a
minute and the next call goes over a new one. A proxy that swallows every byte of its open
connections plays the dead node; the channels' own keepalive options are used, their times a hundredth.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc
import grpc.aio
import pytest

from novaberg_core.config import CommonConfig
from novaberg_core.server import CLIENT_CHANNEL_OPTIONS, create_server, insecure_channel

SERVICE = "novaberg.test.v1.EchoService"


@dataclass
class VanishingProxy:
    """Forwards TCP to ``upstream``; :meth:`vanish` makes the connections open so far swallow every
    byte from then on while staying open. Connections made later are forwarded."""

    upstream: int
    swallowing: list[asyncio.Event] = field(default_factory=list)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> asyncio.Server:
        return await asyncio.start_server(self._connection, "127.0.0.1", 0)

    async def _connection(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        dead = asyncio.Event()
        self.swallowing.append(dead)

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await source.read(65536):
                    if not dead.is_set():
                        sink.write(data)
                        await sink.drain()

        await asyncio.gather(pump(client_reader, server_writer), pump(server_reader, client_writer))
        for writer in (client_writer, server_writer):
            writer.close()

    def vanish(self) -> None:
        for dead in self.swallowing:
            dead.set()


async def _echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return request


@pytest.fixture
async def proxied() -> AsyncIterator[tuple[VanishingProxy, str]]:
    """An echo server behind a :class:`VanishingProxy`; yields the proxy and its address."""

    def register(server: grpc.aio.Server) -> None:
        handlers = {"Unary": grpc.unary_unary_rpc_method_handler(_echo)}
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))

    running = await create_server(CommonConfig(service_name="echo", port=0), register, [SERVICE])
    proxy = VanishingProxy(running.port)
    listener = await proxy.start()
    try:
        yield proxy, f"127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    finally:
        listener.close()
        await running.stop(None)


@pytest.mark.parametrize(
    ("keepalive", "lost_as"),
    [(True, grpc.StatusCode.UNAVAILABLE), (False, grpc.StatusCode.DEADLINE_EXCEEDED)],
    ids=["pinging: dropped at once", "silent: the call waits for its deadline"],
)
async def test_a_connection_to_a_vanished_peer_is_dropped_and_the_next_call_goes_through(
    proxied: tuple[VanishingProxy, str], keepalive: bool, lost_as: grpc.StatusCode
) -> None:
    proxy, target = proxied
    if keepalive:  # the channels' own keepalive options, their times a hundredth
        times = [(key, value // 100) for key, value in CLIENT_CHANNEL_OPTIONS if key.endswith("_ms")]
        assert {key for key, _ in times} >= {"grpc.keepalive_time_ms", "grpc.http2.ping_timeout_ms"}
    else:
        times = [("grpc.keepalive_time_ms", 2**31 - 1)]  # gRPC's "never"
    async with insecure_channel(target, options=times) as channel:
        call = channel.unary_unary(f"/{SERVICE}/Unary")
        assert await call(b"before", timeout=5) == b"before"
        proxy.vanish()
        started = time.monotonic()
        with pytest.raises(grpc.aio.AioRpcError) as lost:
            await call(b"into the void", timeout=4)
        assert lost.value.code() == lost_as, lost.value
        if keepalive:
            assert time.monotonic() - started < 3.0  # long before the deadline
            assert await call(b"after", timeout=5) == b"after"  # over a new connection
