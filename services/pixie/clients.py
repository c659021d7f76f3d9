"""gRPC clients of the services Pixie drives: KZG (queue, entries), LZG (promote, decay), log (purge)."""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc
import grpc.aio

from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.log.v1 import log_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg_core.channels import peer_channel
from novaberg_core.tls import PLAINTEXT, TlsConfig


@dataclass
class ServiceClients:
    """Stubs over traced channels; ``log`` is None when no log service address is configured."""

    kzg: kzg_pb2_grpc.KzgServiceStub
    lzg: lzg_pb2_grpc.LzgServiceStub
    log: log_pb2_grpc.LogServiceStub | None
    channels: list[grpc.aio.Channel] = field(default_factory=list)

    @classmethod
    def connect(cls, kzg_addr: str, lzg_addr: str, log_addr: str = "", tls: TlsConfig = PLAINTEXT) -> ServiceClients:
        """Channels connect lazily: a service that is down fails the first call, not start-up."""
        kzg_channel = peer_channel(kzg_addr, tls)
        lzg_channel = peer_channel(lzg_addr, tls)
        channels = [kzg_channel, lzg_channel]
        log_stub = None
        if log_addr:
            log_channel = peer_channel(log_addr, tls)
            channels.append(log_channel)
            log_stub = log_pb2_grpc.LogServiceStub(log_channel)
        return cls(
            kzg=kzg_pb2_grpc.KzgServiceStub(kzg_channel),
            lzg=lzg_pb2_grpc.LzgServiceStub(lzg_channel),
            log=log_stub,
            channels=channels,
        )

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()
