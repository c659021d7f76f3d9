"""Pipeline-log writer used by every service (SPEC §8, syn §10.3).

``write()`` never blocks, never raises for a log problem and does no I/O: it stamps the record
(time, trace id, sequence number) and appends it to a bounded in-memory buffer. A background
task flushes the buffer every ``flush_seconds`` (``NOVABERG_PIPELINE_LOG_FLUSH_SEKUNDEN``,
default 10 s) or as soon as a batch is full, streaming batches to a sink — the log service over
gRPC in production (:class:`GrpcLogSink`).

When the sink is down the records wait and the flusher retries with backoff. The buffer is
bounded by ``max_buffer``: past it the oldest *forensic* record is dropped and counted in
:attr:`PipelineLog.dropped`; ``turn_roh`` records (the raw stimulus-response pairs, syn §10.5)
are never dropped — if the buffer holds nothing else, it grows for them alone. ``close()`` flushes
what is left (graceful shutdown loses nothing while the sink answers).

Records are checked once more by the flusher with the same rules the log service applies
(:func:`record_problem`): an invalid record is dropped, logged and counted in
:attr:`PipelineLog.rejected` instead of poisoning its batch.

Thread-safety: ``write()`` may be called from any thread; everything else belongs to the event
loop that called :meth:`PipelineLog.start`. ``inhalt`` is serialised by the flusher, so callers
must not mutate an object after passing it (the helpers always build fresh dicts).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import itertools
import json
import logging
import math
import re
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import grpc
from opentelemetry import trace

from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg_core.channels import peer_channel
from novaberg_core.config import env_float, env_int, env_str
from novaberg_core.contract import PAIR_ID_MAX_LEN, TURN_ID_MAX_LEN
from novaberg_core.metrics import register_pipeline_log
from novaberg_core.tls import PLAINTEXT, TlsConfig

__all__ = [
    "ARTEN",
    "SHAPED_ARTEN",
    "TURN_ROH",
    "GrpcLogSink",
    "InMemorySink",
    "LogSink",
    "LogSinkUnavailable",
    "NullSink",
    "PendingRecord",
    "PipelineLog",
    "RejectedRecords",
    "encode_inhalt",
    "record_problem",
]

ARTEN: Final[frozenset[str]] = frozenset(
    {
        "eingang",
        "prompt",
        "berechnung",
        "switch",
        "db_write",
        "db_read",
        "ausgabe",
        "fehler",
        "bemerkung",
        "span_start",
        "span_end",
        "token",
        "turn_roh",
    }
)
"""The 13 ``art`` values of SPEC §8 (syn §10.2)."""

TURN_ROH: Final = "turn_roh"
"""The one art that is not forensic: never dropped by the writer, never purged (syn §10.5)."""

SHAPED_ARTEN: Final[frozenset[str]] = frozenset({"switch", "token", "turn_roh"})
"""Arts whose ``inhalt`` has a fixed shape that :func:`record_problem` checks."""

# Column widths of log.pipeline_log (syn §10.1).
QUELLE_MAX_LEN: Final = 50
NODE_MAX_LEN: Final = 50


DEFAULT_FLUSH_SECONDS: Final = 10.0
"""LZG_PIPELINE_LOG_FLUSH_SEKUNDEN (syn §3 config block)."""
DEFAULT_BATCH_SIZE: Final = 1000
DEFAULT_MAX_BUFFER: Final = 100_000

ENV_LOG_ADDR: Final = "NOVABERG_LOG_ADDR"
ENV_FLUSH_SECONDS: Final = "NOVABERG_PIPELINE_LOG_FLUSH_SEKUNDEN"
ENV_FLUSH_SECONDS_SEED: Final = "LZG_PIPELINE_LOG_FLUSH_SEKUNDEN"
ENV_BATCH_SIZE: Final = "NOVABERG_PIPELINE_LOG_BATCH"
ENV_MAX_BUFFER: Final = "NOVABERG_PIPELINE_LOG_MAX_BUFFER"

_ENTSCHEIDUNG = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_CANONICAL_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# One encoder instance: json.dumps with options builds a new encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=False, separators=(",", ":"))
_STRICT_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))

log = logging.getLogger(__name__)

_get_current_span = trace.get_current_span


# --- record and its rules ---------------------------------------------------------------------


@dataclass(slots=True)
class PendingRecord:
    """One pipeline_log row waiting in the buffer (columns of syn §10.1 plus ``trace_id``)."""

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
    seq: int = 0
    """Write order within this writer; keeps a turn's rows in order across the two buffers."""
    inhalt_text: str | None = field(default=None, repr=False)
    """``inhalt`` as JSON text, filled once by the flusher."""

    def inhalt_json(self) -> str:
        """``inhalt`` as JSON text that PostgreSQL's jsonb accepts (cached)."""
        if self.inhalt_text is None:
            self.inhalt_text = encode_inhalt(self.inhalt)
        return self.inhalt_text


def encode_inhalt(inhalt: Any) -> str:
    """JSON text for ``inhalt`` that jsonb stores (SPEC §8: string, object or null).

    Values JSON cannot express are made expressible instead of failing a forensic write:
    unknown types become their ``str()``, NaN/±inf become strings, non-string keys become strings
    and NUL characters (which jsonb refuses) become U+FFFD.
    """
    try:
        text = _ENCODER.encode(inhalt)
    except (TypeError, ValueError):
        return _STRICT_ENCODER.encode(_jsonable(inhalt))
    if "\\u0000" in text:
        return _STRICT_ENCODER.encode(_jsonable(inhalt))
    return text


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, Mapping):
        return {_jsonable(str(k)): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    return _jsonable(str(value))


def record_problem(
    *,
    turn_id: str,
    node: str,
    art: str,
    quelle: str,
    inhalt: Any,
    span_id: str | None,
    user_id: str | None,
    character_id: str | None,
    trace_id: str | None,
) -> str | None:
    """What is wrong with one record under SPEC §8, naming the field; None when it is valid.

    The same rules run in the writer's flusher and in the log service. ``inhalt`` is the decoded
    JSON value; it is only inspected for :data:`SHAPED_ARTEN`. Empty strings count as NULL for
    ``span_id``, ``user_id``, ``character_id`` and ``trace_id``.
    """
    if art not in ARTEN:
        return f"art {art!r} is not one of {', '.join(sorted(ARTEN))}"
    if not turn_id:
        return "turn_id must be set"
    if len(turn_id) > TURN_ID_MAX_LEN:
        return f"turn_id is longer than {TURN_ID_MAX_LEN} characters"
    if not node:
        return "node must be set"
    if len(node) > NODE_MAX_LEN:
        return f"node is longer than {NODE_MAX_LEN} characters"
    if not quelle:
        return "quelle must be set"
    if len(quelle) > QUELLE_MAX_LEN:
        return f"quelle is longer than {QUELLE_MAX_LEN} characters"
    if bool(user_id) != bool(character_id):
        return "user_id and character_id must be both set or both empty (a half pair)"
    if user_id and len(user_id) > PAIR_ID_MAX_LEN:
        return f"user_id is longer than {PAIR_ID_MAX_LEN} characters"
    if character_id and len(character_id) > PAIR_ID_MAX_LEN:
        return f"character_id is longer than {PAIR_ID_MAX_LEN} characters"
    if span_id and not _CANONICAL_UUID.match(span_id):
        return f"span_id {span_id!r} is not a UUID (8-4-4-4-12 hex digits)"
    if trace_id and (not _TRACE_ID.match(trace_id) or trace_id == "0" * 32):
        return f"trace_id {trace_id!r} is not 32 lowercase hex digits of a valid trace"
    if art == "switch":
        return _decision_problem(inhalt)
    if art == "token":
        return _token_problem(inhalt)
    if art == TURN_ROH and not isinstance(inhalt, dict):
        return "inhalt of a turn_roh record must be a JSON object"
    return None


def _decision_problem(inhalt: Any) -> str | None:
    """The decision shape of SPEC §8: ``entscheidung`` = ``<node>.<weiche>``, ``ausgang``, ``eingang``, ``massstab``."""
    if not isinstance(inhalt, dict):
        return "inhalt of a switch record must be a JSON object with entscheidung, ausgang, eingang, massstab"
    missing = [key for key in ("entscheidung", "ausgang", "eingang", "massstab") if key not in inhalt]
    if missing:
        return f"inhalt of a switch record lacks {', '.join(missing)}"
    entscheidung = inhalt["entscheidung"]
    if not isinstance(entscheidung, str) or not _ENTSCHEIDUNG.match(entscheidung):
        return f"inhalt.entscheidung {entscheidung!r} must be '<node>.<weiche>'"
    if inhalt["ausgang"] is None:
        return "inhalt.ausgang of a switch record must not be null"
    if inhalt["eingang"] is not None and not isinstance(inhalt["eingang"], dict):
        return "inhalt.eingang of a switch record must be a JSON object (the inputs one by one) or null"
    return None


def _token_problem(inhalt: Any) -> str | None:
    """The token shape of syn §10.2: ``input_tokens``, ``output_tokens``, ``kosten_usd`` (``modell``)."""
    if not isinstance(inhalt, dict):
        return "inhalt of a token record must be a JSON object"
    for key in ("input_tokens", "output_tokens"):
        value = inhalt.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"inhalt.{key} of a token record must be a non-negative integer"
    kosten = inhalt.get("kosten_usd")
    if isinstance(kosten, bool) or not isinstance(kosten, int | float) or not kosten >= 0:
        return "inhalt.kosten_usd of a token record must be a non-negative number"
    if "modell" in inhalt and not isinstance(inhalt["modell"], str):
        return "inhalt.modell of a token record must be a string"
    return None


# --- sinks ------------------------------------------------------------------------------------


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


class _Undelivered(Exception):
    """A retryable failure after part of a flush; ``rest`` are the records still to send, in order."""

    def __init__(self, rest: list[PendingRecord], cause: BaseException) -> None:
        super().__init__(str(cause))
        self.rest = rest
        self.cause = cause


# --- the writer -------------------------------------------------------------------------------


class PipelineLog:
    """Non-blocking pipeline_log writer with a bounded buffer and a background flusher (SPEC §8)."""

    def __init__(
        self,
        sink: LogSink | None = None,
        *,
        quelle: str = "System",
        flush_seconds: float = DEFAULT_FLUSH_SECONDS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_buffer: int = DEFAULT_MAX_BUFFER,
        batches_per_send: int = 8,
        max_backoff_seconds: float = 30.0,
        close_timeout_seconds: float = 10.0,
    ) -> None:
        if flush_seconds <= 0:
            raise ValueError(f"flush_seconds must be > 0, got {flush_seconds}")
        if batch_size < 1 or max_buffer < 1 or batches_per_send < 1:
            raise ValueError("batch_size, max_buffer and batches_per_send must be >= 1")
        self.sink: LogSink = sink or NullSink()
        self.quelle = quelle
        self.flush_seconds = flush_seconds
        self.batch_size = batch_size
        self.max_buffer = max_buffer
        self.batches_per_send = batches_per_send
        self.max_backoff_seconds = max_backoff_seconds
        self.close_timeout_seconds = close_timeout_seconds
        self.dropped = 0
        """Forensic records dropped because the buffer was full (never ``turn_roh``)."""
        self.rejected = 0
        """Records dropped because they break SPEC §8 (logged with the reason)."""
        self.sent = 0
        """Records the sink accepted."""
        self.lost = 0
        """Records still buffered when :meth:`close` gave up (sink down past the close timeout)."""
        self._forensic: collections.deque[PendingRecord] = collections.deque()
        self._roh: collections.deque[PendingRecord] = collections.deque()
        self._seq = itertools.count(1)
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._failures = 0
        self._dropped_reported = 0
        register_pipeline_log(self)  # its buffer fill, capacity and drops as metrics

    @classmethod
    def from_env(
        cls, quelle: str = "System", *, env: Mapping[str, str] | None = None, tls: TlsConfig | None = None
    ) -> PipelineLog:
        """A writer to the log service at ``NOVABERG_LOG_ADDR``, or discarding records when unset.

        ``NOVABERG_PIPELINE_LOG_FLUSH_SEKUNDEN`` (or the seed's ``LZG_PIPELINE_LOG_FLUSH_SEKUNDEN``,
        default 10), ``NOVABERG_PIPELINE_LOG_BATCH`` (1000), ``NOVABERG_PIPELINE_LOG_MAX_BUFFER`` (100000).
        ``tls`` is the service's (``cfg.common.tls``); None reads ``NOVABERG_TLS_*`` when there is an address.
        """
        seed_flush = env_float(ENV_FLUSH_SECONDS_SEED, DEFAULT_FLUSH_SECONDS, min_value=0.001, env=env)
        flush_seconds = env_float(ENV_FLUSH_SECONDS, seed_flush, min_value=0.001, env=env)
        batch_size = env_int(ENV_BATCH_SIZE, DEFAULT_BATCH_SIZE, min_value=1, env=env)
        max_buffer = env_int(ENV_MAX_BUFFER, DEFAULT_MAX_BUFFER, min_value=1, env=env)
        address = env_str(ENV_LOG_ADDR, "", env=env)
        sink: LogSink = NullSink()
        if address:
            sink = GrpcLogSink(address, batch_size=batch_size, tls=TlsConfig.from_env(env) if tls is None else tls)
        return cls(
            sink, quelle=quelle, flush_seconds=flush_seconds, batch_size=batch_size, max_buffer=max_buffer
        )

    # --- writing ------------------------------------------------------------------------------

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
        """Enqueue one record and return at once (no I/O, never raises for a log problem).

        ``erstellt_am`` defaults to now; pass the request's ``as_of`` to place a replayed step at
        its simulated time. The current OpenTelemetry trace id is stored with the record.
        """
        ctx = _get_current_span().get_span_context()
        record = PendingRecord(
            erstellt_am or datetime.now(UTC),
            turn_id,
            node,
            art,
            inhalt,
            quelle or self.quelle,
            span_id,
            user_id,
            character_id,
            format(ctx.trace_id, "032x") if ctx.is_valid else None,
            next(self._seq),
        )
        forensic = self._forensic
        if len(forensic) + len(self._roh) >= self.max_buffer:
            if forensic:
                forensic.popleft()
                self.dropped += 1
            elif art != TURN_ROH:
                self.dropped += 1  # only turn_roh is buffered: the new forensic record gives way
                return
        if art == TURN_ROH:
            self._roh.append(record)
        else:
            forensic.append(record)
        if len(forensic) + len(self._roh) >= self.batch_size and not self._wake.is_set():
            self._signal_flush()

    def _signal_flush(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._wake.set()
        else:
            loop.call_soon_threadsafe(self._wake.set)

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
        """A ``switch`` entry in the decision shape of SPEC §8.

        ``entscheidung`` is ``<node>.<weiche>``; a bare ``<weiche>`` is prefixed with ``node``.
        """
        if "." not in entscheidung:
            entscheidung = f"{node}.{entscheidung}"
        self.write(
            turn_id=turn_id,
            node=node,
            art="switch",
            inhalt={
                "entscheidung": entscheidung,
                "ausgang": ausgang,
                "eingang": eingang,
                "massstab": massstab,
            },
            **kwargs,
        )

    def db_write(self, *, turn_id: str, node: str, tabelle: str, operation: str, **details: Any) -> None:
        """A ``db_write`` entry (insert/update/delete); extra keywords go into ``inhalt``."""
        kwargs = _split_kwargs(details)
        self.write(
            turn_id=turn_id,
            node=node,
            art="db_write",
            inhalt={"tabelle": tabelle, "operation": operation, **details},
            **kwargs,
        )

    def db_read(self, *, turn_id: str, node: str, tabelle: str, treffer: int, **details: Any) -> None:
        """A ``db_read`` entry (SELECT, Redis read, cache lookup); extra keywords go into ``inhalt``."""
        kwargs = _split_kwargs(details)
        self.write(
            turn_id=turn_id,
            node=node,
            art="db_read",
            inhalt={"tabelle": tabelle, "treffer": treffer, **details},
            **kwargs,
        )

    def error(self, *, turn_id: str, node: str, typ: str, message: str, **kwargs: Any) -> None:
        """A ``fehler`` entry: exception type name and message."""
        self.write(
            turn_id=turn_id, node=node, art="fehler", inhalt={"typ": typ, "message": message}, **kwargs
        )

    def token(
        self,
        *,
        turn_id: str,
        node: str,
        modell: str,
        input_tokens: int,
        output_tokens: int,
        kosten_usd: float,
        **kwargs: Any,
    ) -> None:
        """A ``token`` entry: tokens and cost of one LLM call (syn §10.2)."""
        self.write(
            turn_id=turn_id,
            node=node,
            art="token",
            inhalt={
                "modell": modell,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "kosten_usd": kosten_usd,
            },
            **kwargs,
        )

    def turn_roh(self, *, turn_id: str, node: str, inhalt: dict[str, Any], **kwargs: Any) -> None:
        """The turn's stimulus-response pair; never dropped, never purged (syn §10.5)."""
        self.write(turn_id=turn_id, node=node, art=TURN_ROH, inhalt=inhalt, **kwargs)

    @contextlib.asynccontextmanager
    async def span(self, *, turn_id: str, node: str, **kwargs: Any) -> AsyncIterator[str]:
        """Writes ``span_start``/``span_end`` with one ``span_id`` (syn §10.2); yields the span_id.

        Pass the span_id to the records written inside so ``WHERE span_id = X`` shows the run.
        """
        span_id = str(uuid.uuid4())
        self.write(turn_id=turn_id, node=node, art="span_start", inhalt=None, span_id=span_id, **kwargs)
        status = "ok"
        try:
            yield span_id
        except BaseException as exc:
            status = f"error: {type(exc).__name__}"
            raise
        finally:
            self.write(
                turn_id=turn_id,
                node=node,
                art="span_end",
                inhalt={"status": status},
                span_id=span_id,
                **kwargs,
            )

    # --- lifecycle ----------------------------------------------------------------------------

    @property
    def buffered(self) -> int:
        """Records waiting to be sent (not counting a send in flight)."""
        return len(self._forensic) + len(self._roh)

    async def start(self) -> None:
        """Start the background flusher on the running loop (idempotent)."""
        if self._task is not None or self._closed:
            return
        self._loop = asyncio.get_running_loop()
        if self.buffered >= self.batch_size:
            self._wake.set()
        # An empty context: the flusher's client spans must not join the trace of whoever started it.
        self._task = self._loop.create_task(
            self._run(), name="pipeline-log-flusher", context=contextvars.Context()
        )

    async def flush(self) -> None:
        """Send everything buffered now; on a sink failure the records stay buffered and this raises."""
        try:
            await self._flush_pending()
        except _Undelivered as undelivered:
            raise LogSinkUnavailable(str(undelivered.cause)) from undelivered.cause

    async def close(self) -> None:
        """Stop the flusher and flush the rest, retrying for up to ``close_timeout_seconds``.

        A send in flight is allowed to finish (a cancelled but committed call would duplicate rows);
        only past the timeout is the flusher cancelled.
        """
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.close_timeout_seconds
        task, self._task = self._task, None
        if task is not None:
            self._wake.set()  # the flusher sees _closed and returns after any send in flight
            done, _ = await asyncio.wait({task}, timeout=self.close_timeout_seconds)
            if not done:
                task.cancel()
                await asyncio.wait({task})
        attempt = 0
        while self.buffered:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                async with asyncio.timeout(remaining):
                    await self._flush_pending()
            except (_Undelivered, TimeoutError) as exc:
                attempt += 1
                log.warning("pipeline log: flush at close failed (%s); %d records wait", exc, self.buffered)
                await asyncio.sleep(min(self._backoff(attempt), max(deadline - loop.time(), 0)))
        self._report_drops()
        if self.buffered:
            self.lost = self.buffered
            log.error("pipeline log: sink still failing at close, %d records lost", self.lost)
        await self.sink.close()

    async def _run(self) -> None:
        while not self._closed:
            # After a failure wait out the backoff; a full batch does not cut it short, close does.
            await self._wait_for_wake(
                self.flush_seconds if self._failures == 0 else self._backoff(self._failures)
            )
            if self._closed:
                return
            self._wake.clear()
            try:
                await self._flush_pending()
            except _Undelivered as exc:
                self._failures += 1
                if self._failures == 1 or self._failures % 10 == 0:
                    log.warning(
                        "pipeline log: sink failing (%s, attempt %d); %d records wait, %d dropped",
                        exc.cause,
                        self._failures,
                        self.buffered,
                        self.dropped,
                    )
            except Exception:
                self._failures += 1
                log.exception("pipeline log: unexpected flush failure; %d records wait", self.buffered)
            else:
                if self._failures:
                    log.info("pipeline log: sink back after %d failed attempts", self._failures)
                self._failures = 0
            self._report_drops()

    async def _wait_for_wake(self, seconds: float) -> None:
        """Sleep ``seconds`` or until woken (a full batch; during a backoff only ``close``)."""
        deadline = asyncio.get_running_loop().time() + seconds
        try:
            async with asyncio.timeout_at(deadline):
                while True:
                    await self._wake.wait()
                    if self._failures == 0 or self._closed:
                        return
                    self._wake.clear()  # a full batch during a backoff: keep waiting
        except TimeoutError:
            return

    def _backoff(self, attempt: int) -> float:
        base = min(self.flush_seconds, 0.5)
        return float(min(self.max_backoff_seconds, base * 2 ** min(attempt - 1, 30)))

    def _report_drops(self) -> None:
        if self.dropped > self._dropped_reported:
            log.warning(
                "pipeline log: buffer full (%d), dropped %d oldest forensic records (%d in total)",
                self.max_buffer,
                self.dropped - self._dropped_reported,
                self.dropped,
            )
            self._dropped_reported = self.dropped

    async def _flush_pending(self) -> None:
        """Send what is buffered at the call, oldest first, in sends of up to ``batches_per_send`` batches."""
        async with self._lock:
            remaining = self.buffered
            chunk = self.batch_size * self.batches_per_send
            while remaining > 0:
                taken = self._take(min(remaining, chunk))
                if not taken:
                    return
                remaining -= len(taken)
                try:
                    await self._deliver(self._prepare(taken))
                except _Undelivered as undelivered:
                    self._requeue(undelivered.rest)
                    raise
                except BaseException:
                    self._requeue(taken)  # cancelled mid-send: keep everything for the next try
                    raise

    def _take(self, n: int) -> list[PendingRecord]:
        forensic, roh = self._forensic, self._roh
        if not roh:
            return [forensic.popleft() for _ in range(min(n, len(forensic)))]
        out: list[PendingRecord] = []
        while len(out) < n and (forensic or roh):
            if forensic and (not roh or forensic[0].seq < roh[0].seq):
                out.append(forensic.popleft())
            else:
                out.append(roh.popleft())
        return out

    def _requeue(self, records: list[PendingRecord]) -> None:
        """Put unsent records back in front (they are the oldest) and restore the bound."""
        self._forensic.extendleft(reversed([r for r in records if r.art != TURN_ROH]))
        self._roh.extendleft(reversed([r for r in records if r.art == TURN_ROH]))
        while self._forensic and len(self._forensic) + len(self._roh) > self.max_buffer:
            self._forensic.popleft()
            self.dropped += 1

    def _prepare(self, records: list[PendingRecord]) -> list[PendingRecord]:
        """Encode ``inhalt`` and drop (and count) records that break SPEC §8."""
        valid: list[PendingRecord] = []
        for r in records:
            text = r.inhalt_json()
            problem = record_problem(
                turn_id=r.turn_id,
                node=r.node,
                art=r.art,
                quelle=r.quelle,
                inhalt=json.loads(text) if r.art in SHAPED_ARTEN else None,
                span_id=r.span_id,
                user_id=r.user_id,
                character_id=r.character_id,
                trace_id=r.trace_id,
            )
            if problem is None and (r.erstellt_am.tzinfo is None or r.erstellt_am.utcoffset() is None):
                problem = "erstellt_am must be timezone-aware"
            if problem is None:
                valid.append(r)
            else:
                self.rejected += 1
                log.error(
                    "pipeline log: dropped invalid record (turn_id=%r node=%r art=%r): %s",
                    r.turn_id,
                    r.node,
                    r.art,
                    problem,
                )
        return valid

    async def _deliver(self, records: list[PendingRecord]) -> None:
        """Send ``records``; a rejected send is bisected so only the refused records are dropped."""
        stack = [records] if records else []
        while stack:
            part = stack.pop()
            try:
                await self.sink.send(part)
            except (RejectedRecords, ValueError, TypeError) as exc:
                # Refused, or not even encodable (e.g. a string protobuf cannot carry): never retried.
                if len(part) == 1:
                    self.rejected += 1
                    r = part[0]
                    log.error(
                        "pipeline log: log service refused record (turn_id=%r node=%r art=%r): %s",
                        r.turn_id,
                        r.node,
                        r.art,
                        exc,
                    )
                    continue
                mid = len(part) // 2
                stack.append(part[mid:])
                stack.append(part[:mid])
            except Exception as exc:
                rest = list(part)
                for pending in reversed(stack):
                    rest.extend(pending)
                raise _Undelivered(rest, exc) from exc
            else:
                self.sent += len(part)


def _split_kwargs(details: dict[str, Any]) -> dict[str, Any]:
    keys = ("quelle", "span_id", "user_id", "character_id", "erstellt_am")
    return {k: details.pop(k) for k in keys if k in details}
