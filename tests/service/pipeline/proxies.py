"""A proxy in front of a real peer that passes every call on, except the ones a test makes fail,
wait or lose their answer; and what the ``proxied`` fixture (conftest) gives a test: a pipeline over
proxies of the real KZG and LZG."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc
import grpc.aio

from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2_grpc
from novaberg_core.pipeline_log import InMemorySink, PipelineLog

__all__ = ["PAUSE_S", "Behaviour", "PeerProxy", "Proxied", "answer_lost", "down", "first", "late", "unary_methods"]

PAUSE_S = 0.5
"""How long the pipeline leaves a peer out after it gave no answer (NOVABERG_PIPELINE_SILENT_PEER_PAUSE_S)."""

Behaviour = Callable[[bytes, grpc.aio.ServicerContext, Callable[[bytes], Awaitable[bytes]]], Awaitable[bytes]]
"""What a proxy does with one method's call: (request, context, pass_on) → response."""


def _identity(data: bytes) -> bytes:
    return data


@dataclass
class PeerProxy:
    """Passes each unary call of ``service`` on to ``target``, or lets ``behaviours[method]`` answer."""

    service: str
    methods: list[str]
    target: str
    behaviours: dict[str, Behaviour] = field(default_factory=dict)
    calls: collections.Counter[str] = field(default_factory=collections.Counter)
    address: str = ""

    async def start(self) -> tuple[grpc.aio.Server, grpc.aio.Channel]:
        channel = grpc.aio.insecure_channel(self.target)
        server = grpc.aio.server()
        handlers = {method: self._handler(channel, method) for method in self.methods}
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(self.service, handlers),))
        self.address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
        await server.start()
        return server, channel

    def _handler(self, channel: grpc.aio.Channel, method: str) -> grpc.RpcMethodHandler:
        upstream = channel.unary_unary(f"/{self.service}/{method}", _identity, _identity)

        async def pass_on(request: bytes) -> bytes:
            return await upstream(request)  # type: ignore[no-any-return]

        async def handle(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            self.calls[method] += 1
            behaviour = self.behaviours.get(method)
            return await (behaviour(request, context, pass_on) if behaviour else pass_on(request))

        return grpc.unary_unary_rpc_method_handler(handle, _identity, _identity)


def down(code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE, details: str = "the peer is down") -> Behaviour:
    async def behave(request: bytes, context: grpc.aio.ServicerContext, pass_on: Callable[..., object]) -> bytes:
        await context.abort(code, details)
        raise AssertionError("abort returns no answer")

    return behave


def answer_lost(details: str = "the connection broke before the answer") -> Behaviour:
    """The call reaches the peer and takes effect, but its answer is lost on the way back (UNAVAILABLE)."""

    async def behave(
        request: bytes, context: grpc.aio.ServicerContext, pass_on: Callable[[bytes], Awaitable[bytes]]
    ) -> bytes:
        await pass_on(request)
        await context.abort(grpc.StatusCode.UNAVAILABLE, details)
        raise AssertionError("abort returns no answer")

    return behave


def first(behaviour: Behaviour) -> Behaviour:
    """``behaviour`` for the method's first call only; every later call passes on."""
    used = False

    async def behave(
        request: bytes, context: grpc.aio.ServicerContext, pass_on: Callable[[bytes], Awaitable[bytes]]
    ) -> bytes:
        nonlocal used
        if used:
            return await pass_on(request)
        used = True
        return await behaviour(request, context, pass_on)

    return behave


def late(seconds: float) -> Behaviour:
    async def behave(
        request: bytes, context: grpc.aio.ServicerContext, pass_on: Callable[[bytes], Awaitable[bytes]]
    ) -> bytes:
        await asyncio.sleep(seconds)
        return await pass_on(request)

    return behave


def unary_methods(descriptor: object) -> list[str]:
    return [m.name for m in descriptor.methods if not m.client_streaming and not m.server_streaming]  # type: ignore[attr-defined]


@dataclass
class Proxied:
    """The pipeline (over the proxies), the proxies, the pipeline's own log, and the real KZG and LZG unproxied."""

    pipeline: pipeline_pb2_grpc.PipelineServiceStub
    kzg: PeerProxy
    lzg: PeerProxy
    sink: InMemorySink
    log: PipelineLog
    kzg_stub: kzg_pb2_grpc.KzgServiceStub
    lzg_stub: lzg_pb2_grpc.LzgServiceStub
