"""gRPC ↔ domain translation of a person's rights on PixieService (mixed into ``PixieServicer``).

The behaviour is in :mod:`services.pixie.app.erasure` and :mod:`services.pixie.app.rights`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import cached_property
from typing import Any

import grpc.aio

from novaberg.common.v1 import common_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.errors import InvalidArgument
from novaberg_core.messages import to_message
from novaberg_core.rights import chunks, named_target
from novaberg_core.servicers import RightsServicer
from services.pixie.app.erasure import Erasures
from services.pixie.app.rights import PixieRights
from services.pixie.export_format import LINES_PER_CHUNK
from services.pixie.paging import page_limit
from services.pixie.scheduler import Scheduler
from services.pixie.store import ErasureRecord

__all__ = ["PixieRightsServicer", "erasures_of", "receipt_to_proto", "rights_of"]

DEFAULT_ERASURES_LIMIT = 20


def _store_and_peers(scheduler: Scheduler) -> dict[str, Any]:
    """What every rights use case drives, taken from the scheduler: the store, the KZG, the LZG, the log."""
    return {"store": scheduler.store, "kzg": scheduler.worker.kzg, "lzg": scheduler.lzg, "plog": scheduler.plog}


def erasures_of(scheduler: Scheduler) -> Erasures:
    """The erasure runner over the scheduler's store, clients and log."""
    settings = scheduler.settings
    return Erasures(
        **_store_and_peers(scheduler), log=scheduler.log, replica_id=scheduler.replica_id,
        rpc_timeout_s=settings.rpc_timeout_s, interval_s=settings.scheduler_interval_s,
    )  # fmt: skip


def rights_of(scheduler: Scheduler) -> PixieRights:
    return PixieRights(**_store_and_peers(scheduler), timeout=scheduler.settings.rpc_timeout_s)


def receipt_to_proto(record: ErasureRecord) -> pixie_pb2.ErasureReceipt:
    return to_message(pixie_pb2.ErasureReceipt, record)


class PixieRightsServicer(RightsServicer[PixieRights]):
    """The rights RPCs of PixieService."""

    scheduler: Scheduler

    @cached_property
    def erasures(self) -> Erasures:
        return erasures_of(self.scheduler)

    def make_rights(self) -> PixieRights:
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
        limit = page_limit(request.limit, DEFAULT_ERASURES_LIMIT)
        return pixie_pb2.ListErasuresResponse(
            erasures=[receipt_to_proto(r) for r in await self.erasures.receipts(limit)]
        )

    async def ExportPair(
        self, request: pixie_pb2.ExportPairRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pixie_pb2.ExportChunk]:
        lines = await self.rights.export(request.pair)
        for index, part in enumerate(chunks(lines, LINES_PER_CHUNK)):
            chunk = pixie_pb2.ExportChunk(lines=part)
            if index == 0:
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
        target = named_target(request, "name the memory by node_id or source_turn_id")
        outcome = await self.rights.forget(
            request.pair, target.get("node_id", 0), target.get("source_turn_id", ""), request.reason
        )
        return to_message(pixie_pb2.ForgetMemoryResponse, outcome)

    async def CorrectMemory(
        self, request: pixie_pb2.CorrectMemoryRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.CorrectMemoryResponse:
        target = named_target(request, "name the memory by node_id or kzg_key")
        outcome = await self.rights.correct(
            request.pair,
            node_id=target.get("node_id", 0),
            kzg_key=target.get("kzg_key", ""),
            inhalt=request.inhalt,
            reason=request.reason,
        )
        return to_message(pixie_pb2.CorrectMemoryResponse, outcome)

    async def RequeueParkedJobs(
        self, request: pixie_pb2.RequeueParkedJobsRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.RequeueParkedJobsResponse:
        outcome = await self.rights.requeue(list(request.job_ids), request.all)
        return to_message(pixie_pb2.RequeueParkedJobsResponse, outcome)
