"""Helpers of the end-to-end tests: clients of the five services."""

from __future__ import annotations

from dataclasses import dataclass

import grpc
import grpc.aio

from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.log.v1 import log_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2_grpc
from novaberg_core.tls import PLAINTEXT, CertificateFiles, TlsConfig, channel_credentials


@dataclass
class Clients:
    """One channel per service and its stub."""

    channels: list[grpc.aio.Channel]
    pipeline: pipeline_pb2_grpc.PipelineServiceStub
    kzg: kzg_pb2_grpc.KzgServiceStub
    lzg: lzg_pb2_grpc.LzgServiceStub
    log: log_pb2_grpc.LogServiceStub
    pixie: pixie_pb2_grpc.PixieServiceStub

    @classmethod
    def connect(cls, addresses: dict[str, str], tls: TlsConfig = PLAINTEXT) -> Clients:
        """Plain channels (no retries, no tracing); under mTLS with ``tls``'s certificate (the stack's
        ``client_tls``: the operator)."""
        channels = {name: open_channel(address, tls) for name, address in addresses.items()}
        return cls(
            channels=list(channels.values()),
            pipeline=pipeline_pb2_grpc.PipelineServiceStub(channels["pipeline"]),
            kzg=kzg_pb2_grpc.KzgServiceStub(channels["kzg"]),
            lzg=lzg_pb2_grpc.LzgServiceStub(channels["lzg"]),
            log=log_pb2_grpc.LogServiceStub(channels["log"]),
            pixie=pixie_pb2_grpc.PixieServiceStub(channels["pixie"]),
        )

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()



def open_channel(address: str, tls: TlsConfig) -> grpc.aio.Channel:
    """A bare channel to ``address``: TLS with ``tls``'s certificate, or plaintext."""
    if not tls.enabled:
        return grpc.aio.insecure_channel(address)
    return grpc.aio.secure_channel(address, channel_credentials(CertificateFiles(tls).read()))
