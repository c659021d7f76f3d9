"""gRPC ↔ domain translation of the log service (SPEC §8); errors are mapped by the bootstrap."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime

import grpc.aio
from google.protobuf.timestamp_pb2 import Timestamp
from opentelemetry import trace

from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg_core.errors import InvalidArgument
from novaberg_core.maintenance import check_scope, scope_pairs
from novaberg_core.messages import to_message
from novaberg_core.metrics import record_retention
from novaberg_core.telemetry import set_turn_attributes
from novaberg_core.timeutil import as_of_or_now, to_timestamp, utc_now
from services.log.domain import (
    CLUSTER_WINDOW,
    DEFAULT_LAST_ANSWERS,
    TOKEN_WINDOW,
    LogQuery,
    NewRow,
    new_row,
    pair_filter,
    positive_limit,
    retention_horizon,
    time_from_parts,
    window,
)
from services.log.rights_servicer import LogRightsServicer
from services.log.store import LogStore, StoredRow


def rows_from_batch(batch: log_pb2.WriteBatch, batch_index: int, now: datetime) -> list[NewRow]:
    """Validate every record of one batch; the first bad one fails the call and nothing is inserted."""
    rows: list[NewRow] = []
    for i, r in enumerate(batch.records):
        try:
            rows.append(new_row(r, now))
        except ValueError as exc:
            raise InvalidArgument(f"batch {batch_index}, records[{i}]: {exc}; nothing was written") from None
    return rows


def _optional_time(message: object, field: str) -> datetime | None:
    """A Timestamp field as aware UTC, None when unset."""
    if not message.HasField(field):  # type: ignore[attr-defined]
        return None
    ts: Timestamp = getattr(message, field)
    try:
        return time_from_parts(ts.seconds, ts.nanos)
    except ValueError as exc:
        raise InvalidArgument(f"{field} {exc}") from None


def record_to_proto(row: StoredRow) -> log_pb2.LogRecord:
    """A stored row as the record of the same field names (NULL columns left unset)."""
    return to_message(log_pb2.LogRecord, row)


class LogServicer(LogRightsServicer, log_pb2_grpc.LogServiceServicer):
    """novaberg.log.v1.LogService over a :class:`LogStore` (the erasure: :class:`LogRightsServicer`)."""

    def __init__(self, store: LogStore, *, retention_days: int) -> None:
        self._store = store
        self._retention_days = retention_days

    async def Write(
        self, request_iterator: AsyncIterator[log_pb2.WriteBatch], context: grpc.aio.ServicerContext
    ) -> log_pb2.WriteSummary:
        async def rows() -> AsyncIterator[list[NewRow]]:
            index = 0
            async for batch in request_iterator:
                yield rows_from_batch(batch, index, utc_now())
                index += 1

        inserted = await self._store.write(rows())
        return log_pb2.WriteSummary(inserted=inserted)

    async def Query(
        self, request: log_pb2.QueryRequest, context: grpc.aio.ServicerContext
    ) -> log_pb2.QueryResponse:
        set_turn_attributes(
            trace.get_current_span(), request.turn_id, request.pair.user_id, request.pair.character_id
        )
        query = LogQuery.build(
            turn_id=request.turn_id,
            span_id=request.span_id,
            node=request.node,
            art=request.art,
            user_id=request.pair.user_id,
            character_id=request.pair.character_id,
            since=_optional_time(request, "since"),
            until=_optional_time(request, "until"),
            trace_id=request.trace_id,
            quelle=request.quelle,
            limit=request.limit,
            descending=request.descending,
        )
        rows = await self._store.query(query)
        return log_pb2.QueryResponse(records=[record_to_proto(r) for r in rows])

    async def Purge(
        self, request: log_pb2.PurgeRequest, context: grpc.aio.ServicerContext
    ) -> log_pb2.PurgeResponse:
        if request.retention_days < 0:
            raise InvalidArgument(f"retention_days must be >= 0 (0 = default), got {request.retention_days}")
        as_of = as_of_or_now(request.as_of if request.HasField("as_of") else None)
        pairs = scope_pairs(request.pairs)
        check_scope(as_of, pairs, what="Purge")
        horizon = retention_horizon(as_of, request.retention_days or self._retention_days)
        result = await self._store.purge(horizon, pairs)
        record_retention(result.deleted, result.kept_turn_roh, scoped=bool(pairs))
        return log_pb2.PurgeResponse(deleted=result.deleted, kept_turn_roh=result.kept_turn_roh)

    async def LastAnswers(
        self, request: log_pb2.LastAnswersRequest, context: grpc.aio.ServicerContext
    ) -> log_pb2.LastAnswersResponse:
        if not request.quelle:
            raise InvalidArgument("quelle must be set (the character whose answers to list)")
        limit = positive_limit(request.limit, DEFAULT_LAST_ANSWERS)
        answers = await self._store.last_answers(request.quelle, request.node or None, limit)
        return log_pb2.LastAnswersResponse(
            answers=[
                log_pb2.Answer(text=a.text, erstellt_am=to_timestamp(a.erstellt_am), turn_id=a.turn_id)
                for a in answers
            ]
        )

    async def ClusterCounts(
        self, request: log_pb2.ClusterCountsRequest, context: grpc.aio.ServicerContext
    ) -> log_pb2.ClusterCountsResponse:
        since, until = window(
            _optional_time(request, "since"), _optional_time(request, "until"), CLUSTER_WINDOW, utc_now()
        )
        user_id, character_id = pair_filter(request.pair.user_id, request.pair.character_id)
        counts = await self._store.cluster_counts(since, until, user_id, character_id)
        return log_pb2.ClusterCountsResponse(
            counts=[log_pb2.ClusterCount(cluster=c, count=n) for c, n in counts]
        )

    async def TokenUsage(
        self, request: log_pb2.TokenUsageRequest, context: grpc.aio.ServicerContext
    ) -> log_pb2.TokenUsageResponse:
        since, until = window(
            _optional_time(request, "since"), _optional_time(request, "until"), TOKEN_WINDOW, utc_now()
        )
        totals = await self._store.token_usage(since, until)
        return log_pb2.TokenUsageResponse(
            input_tokens=totals.input_tokens,
            output_tokens=totals.output_tokens,
            kosten_usd=totals.kosten_usd,
            calls=totals.calls,
        )
