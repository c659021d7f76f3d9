"""gRPC ↔ domain translation of the KZG service (contract: protos/novaberg/kzg/v1/kzg.proto).

No behaviour here: every call is translated (``convert``), handed to :class:`KzgMemory`, and its
result translated back. Domain errors propagate to the bootstrap's error interceptor.
"""

from __future__ import annotations

import grpc

from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg_core.errors import InvalidArgument
from novaberg_core.model import Pair
from novaberg_core.servicers import ModelServicer
from services.kzg.convert import (
    append_to_proto,
    as_of,
    entry_input,
    job_to_proto,
    retrieve_query,
    retrieve_to_proto,
    session_turn_from_proto,
    session_turn_to_proto,
    store_to_proto,
    turn_ref,
)
from services.kzg.memory import KzgMemory
from services.kzg.rights_servicer import KzgRightsServicer

__all__ = ["KzgServicer"]


class KzgServicer(ModelServicer, KzgRightsServicer, kzg_pb2_grpc.KzgServiceServicer):
    """KzgService over one :class:`KzgMemory` (the rights RPCs: :class:`KzgRightsServicer`)."""

    def __init__(self, memory: KzgMemory) -> None:
        super().__init__(memory.provider.stamp)
        self.memory = memory

    async def AppendSessionTurn(
        self, request: kzg_pb2.AppendSessionTurnRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.AppendSessionTurnResponse:
        result = await self.memory.append_session_turn(
            Pair.of_proto(request.pair), session_turn_from_proto(request.turn), as_of=as_of(request.as_of),
            resend_safe=request.resend_safe,
        )
        return append_to_proto(result)

    async def AppendSessionTurns(
        self, request: kzg_pb2.AppendSessionTurnsRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.AppendSessionTurnsResponse:
        results = await self.memory.append_session_turns(
            [
                (Pair.of_proto(a.pair), session_turn_from_proto(a.turn), as_of(a.as_of), a.resend_safe)
                for a in request.appends
            ]
        )
        return kzg_pb2.AppendSessionTurnsResponse(results=[append_to_proto(result) for result in results])

    async def GetSession(
        self, request: kzg_pb2.GetSessionRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.GetSessionResponse:
        state = await self.memory.get_session(
            Pair.of_proto(request.pair), as_of=as_of(request.as_of), **turn_ref(request.turn)
        )
        return kzg_pb2.GetSessionResponse(
            turns=[session_turn_to_proto(t) for t in state.turns], summary=state.summary, ttl_seconds=state.ttl_seconds
        )

    async def StoreEntry(
        self, request: kzg_pb2.StoreEntryRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.StoreEntryResponse:
        self.check_model("embedding", request.embedding_model_id)
        return store_to_proto(await self.memory.store_entry(entry_input(request)))

    async def StoreEntries(
        self, request: kzg_pb2.StoreEntriesRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.StoreEntriesResponse:
        for index, entry in enumerate(request.entries):
            self.check_model(f"entries[{index}].embedding", entry.embedding_model_id)
        results = await self.memory.store_entries([entry_input(entry) for entry in request.entries])
        return kzg_pb2.StoreEntriesResponse(results=[store_to_proto(result) for result in results])

    async def Retrieve(
        self, request: kzg_pb2.RetrieveRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.RetrieveResponse:
        if request.WhichOneof("query") == "query_vector":
            self.check_model("query_vector", request.query_vector.model_id)
        return retrieve_to_proto(await self.memory.retrieve(retrieve_query(request)))

    async def GetEntry(
        self, request: kzg_pb2.GetEntryRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.GetEntryResponse:
        entry = await self.memory.get_entry(
            Pair.of_proto(request.pair), request.kzg_key, include_embedding=request.include_embedding,
            **turn_ref(request.turn), as_of=as_of(request.as_of),
        )  # fmt: skip
        return kzg_pb2.GetEntryResponse(entry=entry.to_proto())

    async def DeleteEntry(
        self, request: kzg_pb2.DeleteEntryRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.DeleteEntryResponse:
        if request.HasField("as_of") and not request.hash_dirty_reason:
            raise InvalidArgument("as_of is the hash_dirty marker's time; it needs hash_dirty_reason")
        deleted, gone = await self.memory.delete_entry(
            Pair.of_proto(request.pair), request.kzg_key, **turn_ref(request.turn),
            hash_dirty_reason=request.hash_dirty_reason, as_of=as_of(request.as_of),
        )  # fmt: skip
        return kzg_pb2.DeleteEntryResponse(
            deleted=deleted, verified_gone=gone, hash_dirty_set=bool(request.hash_dirty_reason)
        )

    async def MarkHashDirty(
        self, request: kzg_pb2.MarkHashDirtyRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.MarkHashDirtyResponse:
        await self.memory.mark_hash_dirty(Pair.of_proto(request.pair), request.reason, as_of=as_of(request.as_of))
        return kzg_pb2.MarkHashDirtyResponse()

    async def ReadPromotionJobs(
        self, request: kzg_pb2.ReadPromotionJobsRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.ReadPromotionJobsResponse:
        jobs = await self.memory.read_promotion_jobs(
            request.consumer, request.count, block_ms=request.block_ms, reclaim_idle_ms=request.reclaim_idle_ms
        )
        return kzg_pb2.ReadPromotionJobsResponse(jobs=[job_to_proto(j) for j in jobs])

    async def AckPromotionJobs(
        self, request: kzg_pb2.AckPromotionJobsRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.AckPromotionJobsResponse:
        return kzg_pb2.AckPromotionJobsResponse(acked=await self.memory.ack_promotion_jobs(list(request.job_ids)))

    async def InspectPromotionQueue(
        self, request: kzg_pb2.InspectPromotionQueueRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.InspectPromotionQueueResponse:
        state = await self.memory.inspect_promotion_queue(request.limit)
        return kzg_pb2.InspectPromotionQueueResponse(
            length=state.length,
            pending=state.pending,
            consumers=list(state.consumers),
            pending_jobs=[job_to_proto(j) for j in state.pending_jobs],
        )
