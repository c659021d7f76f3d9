"""The buffered pipeline-log writer: a bounded buffer and its background flusher (SPEC §8, syn §10.3)."""

from __future__ import annotations

import asyncio
import collections
import contextvars
import itertools
import json
import logging
from collections.abc import Mapping

from novaberg_core.config import ENV_LOG_ADDR
from novaberg_core.env import env_float, env_int, env_str
from novaberg_core.metrics import register_pipeline_log
from novaberg_core.pipeline_log.kinds import RecordKinds
from novaberg_core.pipeline_log.records import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_FLUSH_SECONDS,
    DEFAULT_MAX_BUFFER,
    ENV_BATCH_SIZE,
    ENV_FLUSH_SECONDS,
    ENV_FLUSH_SECONDS_SEED,
    ENV_MAX_BUFFER,
    SHAPED_ARTEN,
    TURN_ROH,
    PendingRecord,
    record_problem,
)
from novaberg_core.pipeline_log.sinks import (
    GrpcLogSink,
    LogSink,
    LogSinkUnavailable,
    NullSink,
    RejectedRecords,
)
from novaberg_core.tls import TlsConfig

log = logging.getLogger("novaberg_core.pipeline_log")  # the package's one logger (as before the split)


class _Undelivered(Exception):
    """A retryable failure after part of a flush; ``rest`` are the records still to send, in order."""

    def __init__(self, rest: list[PendingRecord], cause: BaseException) -> None:
        super().__init__(str(cause))
        self.rest = rest
        self.cause = cause


# --- the writer -------------------------------------------------------------------------------


class PipelineLog(RecordKinds):
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

    def _enqueue(self, record: PendingRecord) -> None:
        """Number the record in write order and buffer it; past ``max_buffer`` the oldest
        forensic record gives way (never a ``turn_roh``)."""
        record.seq = next(self._seq)
        art = record.art
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
            problem = record_problem(r, json.loads(text) if r.art in SHAPED_ARTEN else None)
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
