"""gRPC ↔ domain translation of a person's rights on PixieService (mixed into ``PixieServicer``).

The behaviour is in :mod:`services.pixie.erasure` and :mod:`services.pixie.rights`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import cached_property

import grpc.aio

from novaberg.common.v1 import common_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.errors import InvalidArgument
from novaberg_core.timeutil import to_timestamp
from services.pixie.erasure import ErasureRecord, Erasures
from services.pixie.export_format import LINES_PER_CHUNK
from services.pixie.rights import PixieRights
from services.pixie.scheduler import Scheduler

__all__ = ["PixieRightsServicer", "erasures_of", "receipt_to_proto", "rights_of"]

DEFAULT_ERASURES_LIMIT = 20
MAX_LIMIT = 1000


def erasures_of(scheduler: Scheduler) -> Erasures:
    """The erasure runner over the scheduler's store, clients and log."""
    return Erasures(
        store=scheduler.store,
        kzg=scheduler.worker.kzg,
        lzg=scheduler.lzg,
        log=scheduler.log,
        plog=scheduler.plog,
        replica_id=scheduler.replica_id,
        rpc_timeout_s=scheduler.settings.rpc_timeout_s,
        interval_s=scheduler.settings.scheduler_interval_s,
    )


def rights_of(scheduler: Scheduler) -> PixieRights:
    return PixieRights(
        store=scheduler.store,
        kzg=scheduler.worker.kzg,
        lzg=scheduler.lzg,
        plog=scheduler.plog,
        timeout=scheduler.settings.rpc_timeout_s,
    )


def receipt_to_proto(record: ErasureRecord) -> pixie_pb2.ErasureReceipt:
    message = pixie_pb2.ErasureReceipt(
        id=record.id,
        scope=record.scope,
        state=record.state,
        requested_at=to_timestamp(record.requested_at),
        counts=record.counts,
        steps_done=list(record.steps_done),
        token=record.token,
        error=record.error,
        reason=record.reason,
    )
    if record.finished_at is not None:
        message.finished_at.CopyFrom(to_timestamp(record.finished_at))
    return message


class PixieRightsServicer:
    """The rights RPCs of PixieService."""

    scheduler: Scheduler

    @cached_property
    def erasures(self) -> Erasures:
        return erasures_of(self.scheduler)

    @cached_property
    def rights(self) -> PixieRights:
        return rights_of(self.scheduler)

    async def ErasePair(
        self, request: pixie_pb2.ErasePairRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.ErasureReceipt:
        record = await self.erasures.erase_pair(
            request.pair.user_id, request.pair.character_id, request.reason
        )
        return receipt_to_proto(record)

    async def EraseUser(
        self, request: pixie_pb2.EraseUserRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.ErasureReceipt:
        return receipt_to_proto(await self.erasures.erase_user(request.user_id, request.reason))

    async def ListErasures(
        self, request: pixie_pb2.ListErasuresRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.ListErasuresResponse:
        limit = min(request.limit or DEFAULT_ERASURES_LIMIT, MAX_LIMIT)
        return pixie_pb2.ListErasuresResponse(
            erasures=[receipt_to_proto(r) for r in await self.erasures.receipts(limit)]
        )

    async def ExportPair(
        self, request: pixie_pb2.ExportPairRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pixie_pb2.ExportChunk]:
        lines = await self.rights.export(request.pair)
        for start in range(0, len(lines), LINES_PER_CHUNK):
            chunk = pixie_pb2.ExportChunk(lines=lines[start : start + LINES_PER_CHUNK])
            if start == 0:
                chunk.total_lines = len(lines)
            yield chunk

    async def ImportPair(
        self, request_iterator: AsyncIterator[pixie_pb2.ImportPairRequest], context: grpc.aio.ServicerContext
    ) -> pixie_pb2.ImportPairResponse:
        target: common_pb2.Pair | None = None
        lines: list[str] = []
        first = True
        async for request in request_iterator:
            if first and request.HasField("pair"):
                target = request.pair
            elif request.HasField("pair"):
                raise InvalidArgument("only the first message of ImportPair may name the target pair")
            first = False
            lines += request.lines
        pair, counts = await self.rights.import_lines(target, lines)
        return pixie_pb2.ImportPairResponse(pair=pair, counts=counts)

    async def ForgetMemory(
        self, request: pixie_pb2.ForgetMemoryRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.ForgetMemoryResponse:
        which = request.WhichOneof("target")
        if which is None:
            raise InvalidArgument("name the memory by node_id or source_turn_id")
        outcome = await self.rights.forget(
            request.pair,
            request.node_id if which == "node_id" else 0,
            request.source_turn_id if which == "source_turn_id" else "",
            request.reason,
        )
        return pixie_pb2.ForgetMemoryResponse(
            node_ids=outcome.node_ids,
            kzg_keys=outcome.kzg_keys,
            edges=outcome.edges,
            session_turns=outcome.session_turns,
        )

    async def CorrectMemory(
        self, request: pixie_pb2.CorrectMemoryRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.CorrectMemoryResponse:
        which = request.WhichOneof("target")
        if which is None:
            raise InvalidArgument("name the memory by node_id or kzg_key")
        outcome = await self.rights.correct(
            request.pair,
            node_id=request.node_id if which == "node_id" else 0,
            kzg_key=request.kzg_key if which == "kzg_key" else "",
            inhalt=request.inhalt,
            reason=request.reason,
        )
        return pixie_pb2.CorrectMemoryResponse(
            node_id=outcome.node_id,
            kzg_key=outcome.kzg_key,
            edges_removed=outcome.edges_removed,
            edges_created=outcome.edges_created,
            previous_inhalt=outcome.previous_inhalt,
        )

    async def RequeueParkedJobs(
        self, request: pixie_pb2.RequeueParkedJobsRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.RequeueParkedJobsResponse:
        outcome = await self.rights.requeue(list(request.job_ids), request.all)
        return pixie_pb2.RequeueParkedJobsResponse(
            requeued=outcome.requeued, gone=outcome.gone, job_ids=outcome.job_ids
        )
