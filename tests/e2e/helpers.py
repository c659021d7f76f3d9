"""Helpers of the end-to-end tests: clients of the five services, polling."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

import grpc
import grpc.aio

from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.log.v1 import log_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2_grpc
from novaberg_core.tls import PLAINTEXT, CertificateFiles, TlsConfig, channel_credentials

_T = TypeVar("_T")


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


@overload
async def eventually(
    probe: Callable[[], Awaitable[_T]],
    done: Callable[[_T], bool],
    *,
    within: float = ...,
    what: str | Callable[[], str] = ...,
    every: float = ...,
) -> _T: ...


@overload
async def eventually(
    probe: Callable[[], _T],
    done: Callable[[_T], bool],
    *,
    within: float = ...,
    what: str | Callable[[], str] = ...,
    every: float = ...,
) -> _T: ...


async def eventually(
    probe: Callable[[], Any],
    done: Callable[[Any], bool],
    *,
    within: float = 20.0,
    what: str | Callable[[], str] = "",
    every: float = 0.1,
) -> Any:
    """Poll ``probe`` (a coroutine function or a plain one) every ``every`` s until ``done(result)``;
    fail with the last result after ``within`` s.

    ``what`` names the condition in the failure; a callable is asked then (e.g. for a process's log).
    """
    deadline = time.monotonic() + within
    while True:
        result = probe()
        if inspect.isawaitable(result):
            result = await result
        if done(result):
            return result
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out waiting for {said or 'a condition'}; last: {result!r}")
        await asyncio.sleep(every)
