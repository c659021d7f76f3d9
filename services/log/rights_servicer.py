"""gRPC ↔ domain translation of the log's erasure (mixed into ``services.log.servicer.LogServicer``)."""

from __future__ import annotations

from functools import cached_property

import grpc.aio

from novaberg.log.v1 import log_pb2
from novaberg_core.rights import erasure_target_of, pair_ids
from services.log.rights import LogRights
from services.log.store import LogStore

__all__ = ["LogRightsServicer"]


class LogRightsServicer:
    """The rights RPCs of LogService."""

    _store: LogStore

    @cached_property
    def rights(self) -> LogRights:
        return LogRights(self._store)

    async def Erase(
        self, request: log_pb2.EraseRequest, context: grpc.aio.ServicerContext
    ) -> log_pb2.EraseResponse:
        counts = await self.rights.erase(*erasure_target_of(request.target, pair_ids))
        return log_pb2.EraseResponse(
            rows=counts.rows, turn_roh=counts.turn_roh, unpaired_rows=counts.unpaired_rows
        )
