"""Where the pipeline-log writer's flushed records go: the log service over gRPC, memory, nowhere."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

import grpc

from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg_core.channels import peer_channel
from novaberg_core.pipeline_log.records import (
    DEFAULT_BATCH_SIZE,
    PendingRecord,
)
from novaberg_core.tls import PLAINTEXT, TlsConfig

log = logging.getLogger("novaberg_core.pipeline_log")  # the package's one logger (as before the split)


class RejectedRecords(Exception):
    """The receiver refused the records as invalid; sending them again cannot succeed."""


class LogSinkUnavailable(Exception):
    """The receiver could not be reached or failed; the records are kept and sent again."""


class LogSink(Protocol):
    """Where flushed records go. ``send`` is all-or-nothing for the records it is given."""

    async def send(self, records: Sequence[PendingRecord]) -> None: ...

    async def close(self) -> None: ...


class NullSink:
    """Discards records (no log service configured)."""

    async def send(self, records: Sequence[PendingRecord]) -> None:
        return None

    async def close(self) -> None:
        return None


@dataclass
class InMemorySink:
    """Keeps every record (tests). Set ``down`` to make sends fail like an unreachable service."""

    records: list[PendingRecord] = field(default_factory=list)
    down: bool = False
    sends: int = 0
    failed_sends: int = 0

    async def send(self, records: Sequence[PendingRecord]) -> None:
        if self.down:
            self.failed_sends += 1
            raise LogSinkUnavailable("in-memory sink is down")
        self.sends += 1
        self.records.extend(records)

    async def close(self) -> None:
        return None


class GrpcLogSink:
    """Streams records to the log service's ``Write``: one call per send, all-or-nothing.

    A call carries ``WriteBatch`` messages of at most ``batch_size`` records and about
    ``max_message_bytes`` (below gRPC's 4 MiB default, so large ``turn_roh`` rows fit). The channel
    comes from :func:`novaberg_core.channels.peer_channel` (mTLS per ``tls``), so the calls are traced
    like every other client call. INVALID_ARGUMENT (and a message too large) → :class:`RejectedRecords`;
    every other failure → :class:`LogSinkUnavailable` (retried).
    """

    def __init__(
        self,
        target: str,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout_seconds: float = 10.0,
        max_message_bytes: int = 2 * 1024 * 1024,
        tls: TlsConfig = PLAINTEXT,
    ) -> None:
        self.target = target
        self.tls = tls
        self.batch_size = batch_size
        self.timeout_seconds = timeout_seconds
        self.max_message_bytes = max_message_bytes
        self._channel: grpc.aio.Channel | None = None
        self._stub: log_pb2_grpc.LogServiceStub | None = None

    async def send(self, records: Sequence[PendingRecord]) -> None:
        if not records:
            return
        stub = self._stub
        if stub is None:
            self._channel = peer_channel(self.target, self.tls, options=_SINK_CHANNEL_OPTIONS)
            stub = self._stub = log_pb2_grpc.LogServiceStub(self._channel)
        try:
            # Batches are built lazily: the service COPYs one while the next is being built.
            summary = await stub.Write(self._batches(records), timeout=self.timeout_seconds)
        except grpc.aio.AioRpcError as error:
            task = asyncio.current_task()
            if error.code() == grpc.StatusCode.CANCELLED and task is not None and task.cancelling():
                raise asyncio.CancelledError() from error  # our own cancellation, reported as a status
            if error.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED):
                raise RejectedRecords(error.details() or error.code().name) from error
            raise LogSinkUnavailable(
                f"log service {self.target}: {error.code().name}: {error.details()}"
            ) from error
        if summary.inserted != len(records):
            log.warning(
                "pipeline log: sent %d records, log service inserted %d", len(records), summary.inserted
            )

    def _batches(self, records: Sequence[PendingRecord]) -> Iterator[log_pb2.WriteBatch]:
        """The records as WriteBatch messages (filled in place: copying messages costs more)."""
        batch = log_pb2.WriteBatch()
        add = batch.records.add
        count = size = 0
        for r in records:
            text = r.inhalt_json()
            approx = (len(text) if text.isascii() else len(text.encode())) + 300
            if count and (count >= self.batch_size or size + approx > self.max_message_bytes):
                yield batch
                batch = log_pb2.WriteBatch()
                add = batch.records.add
                count = size = 0
            us = round(r.erstellt_am.timestamp() * 1_000_000)
            proto = add(
                turn_id=r.turn_id,
                span_id=r.span_id or "",
                quelle=r.quelle,
                node=r.node,
                art=r.art,
                inhalt_json=text,
                user_id=r.user_id or "",
                character_id=r.character_id or "",
                trace_id=r.trace_id or "",
            )
            ts = proto.erstellt_am
            ts.seconds, micros = divmod(us, 1_000_000)
            ts.nanos = micros * 1000
            count += 1
            size += approx
        if count:
            yield batch

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
            self._stub = None


# gRPC backs off reconnecting up to 120 s by default; a writer whose records wait should notice a
# restarted log service within seconds. Its own subchannel keeps that backoff from other channels.
_SINK_CHANNEL_OPTIONS: Final = (
    ("grpc.initial_reconnect_backoff_ms", 500),
    ("grpc.min_reconnect_backoff_ms", 500),
    ("grpc.max_reconnect_backoff_ms", 5000),
    ("grpc.use_local_subchannel_pool", 1),
)
