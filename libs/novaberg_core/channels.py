"""The one way a process opens a channel to a peer: :func:`peer_channel` (issue 13).

Every channel carries the trace context, balances round-robin and retries idempotent calls
(``novaberg_core.server.insecure_channel``, ``novaberg_core.peers.CHANNEL_OPTIONS``). Under mTLS it
presents this process's certificate and trusts only the configured CA; the server's certificate
must name the host of the target (DNS or IP SAN).

Certificate renewal: gRPC's channel credentials are fixed when a channel is made, so a
:class:`ReloadingChannel` looks at the files at most every ``client_reload_interval_s`` (on the
next call after that time) and, when they changed, opens a fresh inner channel for new calls and
closes the old one once its calls had time to finish. Stubs keep working across the swap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, Protocol, Self

import grpc
import grpc.aio

from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.log.v1 import log_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg_core.server import client_channel_arguments, insecure_channel
from novaberg_core.tls import PLAINTEXT, CertificateFiles, TlsConfig, channel_credentials

__all__ = ["ClosedOnExit", "Peers", "ReloadingChannel", "peer_channel"]

_LOG = logging.getLogger(__name__)

RETIRE_GRACE_S: Final = 60.0
"""How long calls started on a replaced inner channel may still run before it closes."""


class _Closable(Protocol):
    async def close(self) -> None: ...


class ClosedOnExit:
    """``async with`` for a class with ``async close()``: the block gets the object, leaving it closes it."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self: _Closable,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


def peer_channel(target: str, tls: TlsConfig, *, options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """A traced, balanced, retrying channel to ``target``: mTLS per ``tls`` (reloading), else plaintext."""
    if not tls.enabled:
        return insecure_channel(target, options=options)
    return ReloadingChannel(target, tls, options=options)


def _secure_channel(target: str, credentials: grpc.ChannelCredentials, options: Sequence[tuple[str, Any]]) -> grpc.aio.Channel:
    return grpc.aio.secure_channel(target, credentials, **client_channel_arguments(options))


class _MultiCallable:
    """A stub's method: each call goes to the current inner channel's multicallable of that kind."""

    def __init__(self, owner: ReloadingChannel, kind: str, method: str, args: tuple[Any, ...]) -> None:
        self._owner = owner
        self._kind = kind
        self._method = method
        self._args = args
        self._generation = -1
        self._inner: Any = None

    def _current(self) -> Any:
        channel, generation = self._owner._current()
        if generation != self._generation:
            self._inner = getattr(channel, self._kind)(self._method, *self._args)
            self._generation = generation
        return self._inner

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._current()(*args, **kwargs)


class ReloadingChannel(ClosedOnExit, grpc.aio.Channel):
    """An mTLS channel that moves to a fresh inner channel when the certificate files change."""

    def __init__(
        self,
        target: str,
        tls: TlsConfig,
        *,
        options: Sequence[tuple[str, Any]] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self._options = tuple(options)
        self._files = CertificateFiles(tls)
        self._interval = tls.client_reload_interval_s
        self._clock = clock
        self._channel = _secure_channel(target, channel_credentials(self._files.read()), self._options)
        self._generation = 0
        self._next_check = clock() + self._interval
        self._retiring: dict[asyncio.Task[None], grpc.aio.Channel] = {}
        self._closed = False

    @property
    def generation(self) -> int:
        """How often the inner channel was replaced for renewed files."""
        return self._generation

    def _current(self) -> tuple[grpc.aio.Channel, int]:
        now = self._clock()
        if now >= self._next_check and not self._closed:
            self._next_check = now + self._interval
            pems = self._files.changed()
            if pems is not None:
                self._replace(pems)
        return self._channel, self._generation

    def _replace(self, pems: tuple[bytes, bytes, bytes]) -> None:
        old = self._channel
        self._channel = _secure_channel(self.target, channel_credentials(pems), self._options)
        self._generation += 1
        _LOG.info("channel to %s: certificate files changed, new calls use a new connection", self.target)
        with contextlib.suppress(RuntimeError):  # no running loop: the old channel is left to the GC
            task = asyncio.get_running_loop().create_task(old.close(grace=RETIRE_GRACE_S))
            self._retiring[task] = old
            task.add_done_callback(lambda done: self._retiring.pop(done, None))

    def reload_now(self) -> bool:
        """Look at the files now (not waiting for the interval); whether the channel was replaced."""
        self._next_check = self._clock() + self._interval
        pems = self._files.changed()
        if pems is None:
            return False
        self._replace(pems)
        return True

    # --- grpc.aio.Channel -----------------------------------------------------------------------

    def unary_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _MultiCallable(self, "unary_unary", method, _positional(args, kwargs))

    def unary_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _MultiCallable(self, "unary_stream", method, _positional(args, kwargs))

    def stream_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _MultiCallable(self, "stream_unary", method, _positional(args, kwargs))

    def stream_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _MultiCallable(self, "stream_stream", method, _positional(args, kwargs))

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return self._current()[0].get_state(try_to_connect)

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity) -> None:
        await self._current()[0].wait_for_state_change(last_observed_state)

    async def channel_ready(self) -> None:
        await self._current()[0].channel_ready()

    async def close(self, grace: float | None = None) -> None:
        self._closed = True
        retiring = list(self._retiring.items())
        for task, _ in retiring:
            task.cancel()
        for _, old in retiring:
            await old.close(grace)
        await self._channel.close(grace)


@dataclass(eq=False)
class Peers:
    """Channels and stubs to the peers a service calls: the KZG and the LZG, and the log service
    when its address is given (else ``log`` is None). The typed calls: :mod:`novaberg_core.peers`."""

    kzg: kzg_pb2_grpc.KzgServiceStub
    lzg: lzg_pb2_grpc.LzgServiceStub
    log: log_pb2_grpc.LogServiceStub | None = None
    channels: list[grpc.aio.Channel] = field(default_factory=list)

    @classmethod
    def connect(cls, kzg_addr: str, lzg_addr: str, tls: TlsConfig = PLAINTEXT, *, log_addr: str = "") -> Peers:
        """Channels connect lazily: a service that is down fails the first call, not start-up."""
        kzg_channel, lzg_channel = peer_channel(kzg_addr, tls), peer_channel(lzg_addr, tls)
        peers = cls(kzg_pb2_grpc.KzgServiceStub(kzg_channel), lzg_pb2_grpc.LzgServiceStub(lzg_channel))
        peers.channels += [kzg_channel, lzg_channel]
        if log_addr:
            log_channel = peer_channel(log_addr, tls)
            peers.channels.append(log_channel)
            peers.log = log_pb2_grpc.LogServiceStub(log_channel)
        return peers

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()


def _positional(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """(request_serializer, response_deserializer, _registered_method) from a stub's call."""
    names = ("request_serializer", "response_deserializer", "_registered_method")
    values = list(args) + [None] * (len(names) - len(args))
    for index, name in enumerate(names):
        if name in kwargs:
            values[index] = kwargs[name]
    if values[2] is None:
        values[2] = False
    return tuple(values)
