"""gRPC clients of the five services for tools outside them: the ``novaberg`` CLI and the demo.

One channel per service, opened on first use; every call names its service and RPC so a
failure reads as one line (``pipeline.BuildDossier: INVALID_ARGUMENT: unknown cluster …``).

    async with DevClients(addresses) as clients:
        reply = await clients.call("pipeline", "BuildDossier", request)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc
from google.protobuf.message import Message

from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.log.v1 import log_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2_grpc
from novaberg_core.channels import ClosedOnExit, peer_channel
from novaberg_core.tls import PLAINTEXT, TlsConfig

__all__ = ["MAX_RECEIVE_BYTES", "STUBS", "DevClients", "ServiceCallError"]

MAX_RECEIVE_BYTES = 512 * 1024 * 1024
"""Largest reply a tool accepts (gRPC's default is 4 MiB): a pair's whole graph, e.g. ListEdges of
5,000 nodes with 300,000 rows, is tens of MiB."""

STUBS: Mapping[str, Any] = {
    "log": log_pb2_grpc.LogServiceStub,
    "kzg": kzg_pb2_grpc.KzgServiceStub,
    "lzg": lzg_pb2_grpc.LzgServiceStub,
    "pixie": pixie_pb2_grpc.PixieServiceStub,
    "pipeline": pipeline_pb2_grpc.PipelineServiceStub,
}
"""Stub class per service name (the names of ``stack.SERVICES``)."""


class ServiceCallError(Exception):
    """A failed RPC, naming where it failed: ``<service>.<Rpc>: <CODE>: <details>``."""

    def __init__(self, service: str, rpc: str, code: str, details: str) -> None:
        self.service = service
        self.rpc = rpc
        self.code = code
        self.details = details
        super().__init__(f"{service}.{rpc}: {code}: {details}")


class DevClients(ClosedOnExit):
    """Lazily opened channels to the services at ``addresses`` (service name → ``host:port``),
    with the caller's certificate under mTLS (``tls``; the CLI's is the ``operator`` identity).

    Generic by service and RPC name, for tools; the services call each other through the typed
    clients of :mod:`novaberg_core.peers` instead."""

    def __init__(self, addresses: Mapping[str, str], *, timeout: float = 60.0, tls: TlsConfig = PLAINTEXT) -> None:
        self.addresses = dict(addresses)
        self.timeout = timeout
        self.tls = tls
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._stubs: dict[str, Any] = {}

    def stub(self, service: str) -> Any:
        """The stub of ``service``; a service without an address is a :class:`ServiceCallError`."""
        if service not in STUBS:
            raise ValueError(f"unknown service {service!r}; known: {', '.join(STUBS)}")
        stub = self._stubs.get(service)
        if stub is None:
            address = self.addresses.get(service)
            if not address:
                raise ServiceCallError(service, "-", "UNAVAILABLE", "no address configured for this service")
            channel = peer_channel(address, self.tls, options=[("grpc.max_receive_message_length", MAX_RECEIVE_BYTES)])
            self._channels[service] = channel
            stub = STUBS[service](channel)
            self._stubs[service] = stub
        return stub

    async def call(self, service: str, rpc: str, request: Message, *, timeout: float | None = None) -> Any:  # noqa: ASYNC109
        """Calls ``service.rpc(request)``; a gRPC error becomes :class:`ServiceCallError`."""
        method = getattr(self.stub(service), rpc)
        try:
            return await method(request, timeout=self.timeout if timeout is None else timeout)
        except grpc.aio.AioRpcError as error:
            details = " ".join((error.details() or "").split())
            raise ServiceCallError(service, rpc, error.code().name, details) from None

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
        self._stubs.clear()
