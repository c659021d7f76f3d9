"""Pipeline-log writer used by every service (SPEC §8, syn §10.3).

``write()`` never blocks and does no I/O: it appends to a bounded in-memory buffer; a
background task flushes the buffer to a sink (the log service over gRPC in production).
This first version defines the public interface; the log service issue completes the sinks.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

ARTEN: frozenset[str] = frozenset(
    {
        "eingang", "prompt", "berechnung", "switch", "db_write", "db_read", "ausgabe",
        "fehler", "bemerkung", "span_start", "span_end", "token", "turn_roh",
    }
)

log = logging.getLogger(__name__)


@dataclass(slots=True)
class PendingRecord:
    """One pipeline_log row waiting in the buffer."""

    erstellt_am: datetime
    turn_id: str
    node: str
    art: str
    inhalt: Any
    quelle: str
    span_id: str | None = None
    user_id: str | None = None
    character_id: str | None = None
    trace_id: str | None = None

    def inhalt_json(self) -> str:
        return json.dumps(self.inhalt, ensure_ascii=False, default=str)


class LogSink(Protocol):
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
    """Keeps every record (tests)."""

    records: list[PendingRecord] = field(default_factory=list)

    async def send(self, records: Sequence[PendingRecord]) -> None:
        self.records.extend(records)

    async def close(self) -> None:
        return None


class PipelineLog:
    """Non-blocking pipeline_log writer with a bounded buffer and a background flusher."""

    def __init__(
        self,
        sink: LogSink | None = None,
        *,
        quelle: str = "System",
        flush_seconds: float = 10.0,
        batch_size: int = 1000,
        max_buffer: int = 100_000,
    ) -> None:
        self.sink: LogSink = sink or NullSink()
        self.quelle = quelle
        self.flush_seconds = flush_seconds
        self.batch_size = batch_size
        self.max_buffer = max_buffer
        self.dropped = 0
        self._buffer: collections.deque[PendingRecord] = collections.deque()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    # --- writing ------------------------------------------------------------------------

    def write(
        self,
        *,
        turn_id: str,
        node: str,
        art: str,
        inhalt: Any,
        quelle: str | None = None,
        span_id: str | None = None,
        user_id: str | None = None,
        character_id: str | None = None,
        erstellt_am: datetime | None = None,
    ) -> None:
        """Enqueues one record and returns at once."""
        if len(self._buffer) >= self.max_buffer and art != "turn_roh":
            self._drop_oldest_forensic()
        self._buffer.append(
            PendingRecord(
                erstellt_am=erstellt_am or datetime.now(UTC),
                turn_id=turn_id,
                node=node,
                art=art,
                inhalt=inhalt,
                quelle=quelle or self.quelle,
                span_id=span_id,
                user_id=user_id,
                character_id=character_id,
                trace_id=_current_trace_id(),
            )
        )
        if len(self._buffer) >= self.batch_size:
            self._wake.set()

    def decision(
        self,
        *,
        turn_id: str,
        node: str,
        entscheidung: str,
        ausgang: Any,
        eingang: Any = None,
        massstab: Any = None,
        **kwargs: Any,
    ) -> None:
        """A `switch` entry in the fixed decision shape (SPEC §8)."""
        self.write(
            turn_id=turn_id,
            node=node,
            art="switch",
            inhalt={"entscheidung": entscheidung, "ausgang": ausgang, "eingang": eingang, "massstab": massstab},
            **kwargs,
        )

    def db_write(self, *, turn_id: str, node: str, tabelle: str, operation: str, **details: Any) -> None:
        kwargs = _split_kwargs(details)
        self.write(turn_id=turn_id, node=node, art="db_write",
                   inhalt={"tabelle": tabelle, "operation": operation, **details}, **kwargs)

    def db_read(self, *, turn_id: str, node: str, tabelle: str, treffer: int, **details: Any) -> None:
        kwargs = _split_kwargs(details)
        self.write(turn_id=turn_id, node=node, art="db_read",
                   inhalt={"tabelle": tabelle, "treffer": treffer, **details}, **kwargs)

    def error(self, *, turn_id: str, node: str, typ: str, message: str, **kwargs: Any) -> None:
        self.write(turn_id=turn_id, node=node, art="fehler", inhalt={"typ": typ, "message": message}, **kwargs)

    def token(
        self, *, turn_id: str, node: str, modell: str, input_tokens: int, output_tokens: int,
        kosten_usd: float, **kwargs: Any,
    ) -> None:
        self.write(turn_id=turn_id, node=node, art="token", inhalt={
            "modell": modell, "input_tokens": input_tokens, "output_tokens": output_tokens,
            "kosten_usd": kosten_usd}, **kwargs)

    def turn_roh(self, *, turn_id: str, node: str, inhalt: dict[str, Any], **kwargs: Any) -> None:
        """The turn's stimulus-response pair; never dropped, never purged."""
        self.write(turn_id=turn_id, node=node, art="turn_roh", inhalt=inhalt, **kwargs)

    @contextlib.asynccontextmanager
    async def span(self, *, turn_id: str, node: str, **kwargs: Any) -> AsyncIterator[str]:
        """Writes span_start/span_end with one span_id; yields the span_id."""
        span_id = str(uuid.uuid4())
        self.write(turn_id=turn_id, node=node, art="span_start", inhalt=None, span_id=span_id, **kwargs)
        status = "ok"
        try:
            yield span_id
        except BaseException as exc:
            status = f"error: {type(exc).__name__}"
            raise
        finally:
            self.write(turn_id=turn_id, node=node, art="span_end", inhalt={"status": status},
                       span_id=span_id, **kwargs)

    # --- lifecycle ----------------------------------------------------------------------

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="pipeline-log-flusher")

    async def flush(self) -> None:
        while self._buffer:
            batch = [self._buffer.popleft() for _ in range(min(self.batch_size, len(self._buffer)))]
            try:
                await self.sink.send(batch)
            except Exception:
                self._buffer.extendleft(reversed(batch))
                raise

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:
            await self.flush()
        except Exception:
            log.exception("pipeline log: final flush failed, %d records lost", len(self._buffer))
        await self.sink.close()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.flush_seconds)
            self._wake.clear()
            try:
                await self.flush()
            except Exception as exc:
                log.warning("pipeline log: flush failed (%s); %d records wait", exc, len(self._buffer))

    def _drop_oldest_forensic(self) -> None:
        for i, record in enumerate(self._buffer):
            if record.art != "turn_roh":
                del self._buffer[i]
                self.dropped += 1
                return


def _split_kwargs(details: dict[str, Any]) -> dict[str, Any]:
    keys = ("quelle", "span_id", "user_id", "character_id", "erstellt_am")
    return {k: details.pop(k) for k in keys if k in details}


def _current_trace_id() -> str | None:
    from opentelemetry import trace

    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None
