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

from novaberg_core.pipeline_log.records import (
    ARTEN,
    SHAPED_ARTEN,
    TURN_ROH,
    LogScope,
    PendingRecord,
    RecordColumns,
    count_fields,
    count_names,
    encode_inhalt,
    record_problem,
)
from novaberg_core.pipeline_log.sinks import (
    GrpcLogSink,
    InMemorySink,
    LogSink,
    LogSinkUnavailable,
    NullSink,
    RejectedRecords,
)
from novaberg_core.pipeline_log.writer import PipelineLog

__all__ = [
    "ARTEN",
    "SHAPED_ARTEN",
    "TURN_ROH",
    "GrpcLogSink",
    "InMemorySink",
    "LogScope",
    "LogSink",
    "LogSinkUnavailable",
    "NullSink",
    "PendingRecord",
    "PipelineLog",
    "RecordColumns",
    "RejectedRecords",
    "count_fields",
    "count_names",
    "encode_inhalt",
    "record_problem",
]
