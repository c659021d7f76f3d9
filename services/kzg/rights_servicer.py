"""gRPC ↔ domain translation of the KZG's rights operations (erase, export, import, forget, correct).

A mixin of :class:`~services.kzg.servicer.KzgServicer`; the behaviour is in :mod:`services.kzg.rights`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg_core.errors import InvalidArgument
from novaberg_core.model import Profile
from novaberg_core.rights import StreamPair
from novaberg_core.servicers import EraseServicer
from services.kzg.convert import (
    erase_to_proto,
    exported_entry_from_proto,
    exported_entry_to_proto,
    import_to_proto,
    session_turn_from_proto,
    session_turn_to_proto,
    turn_ref,
)
from services.kzg.memory import KzgMemory
from services.kzg.rights import KzgRights
from services.kzg.types import EraseCounts, KzgEntry, Pair, SessionTurnRecord

__all__ = ["KzgRightsServicer"]


class KzgRightsServicer(EraseServicer[KzgRights]):
    """The rights RPCs of KzgService (mixed into :class:`~services.kzg.servicer.KzgServicer`)."""

    memory: KzgMemory
    erase_response = kzg_pb2.EraseResponse

    def make_rights(self) -> KzgRights:
        return KzgRights(self.memory)

    def erase_pair(self, pair: common_pb2.Pair) -> Pair:
        return Pair.of_proto(pair)

    def erase_answer(self, counts: EraseCounts) -> kzg_pb2.EraseResponse:
        return erase_to_proto(counts)

    async def ExportPair(
        self, request: kzg_pb2.ExportPairRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[kzg_pb2.ExportPairResponse]:
        async for exported in self.rights.export(Pair.of_proto(request.pair)):
            chunk = kzg_pb2.ExportPairResponse(
                entries=[exported_entry_to_proto(e) for e in exported.entries],
            )
            if (session := exported.session) is not None:
                chunk.session_turns.extend(session_turn_to_proto(t) for t in session.turns)
                chunk.session_summary = session.summary
                chunk.session_ttl_seconds = session.ttl_seconds
            if exported.profile is not None:
                chunk.profile.CopyFrom(exported.profile.to_proto())
            yield chunk

    async def ImportPair(
        self, request_iterator: AsyncIterator[kzg_pb2.ImportPairRequest], context: grpc.aio.ServicerContext
    ) -> kzg_pb2.ImportPairResponse:
        stream = StreamPair()
        entries: list[KzgEntry] = []
        turns: list[SessionTurnRecord] = []
        summary = ""
        profile: Profile | None = None
        validate_only = False
        async for request in request_iterator:
            validate_only = validate_only or request.validate_only
            stream.check(request)
            first = len(entries)
            entries += [
                exported_entry_from_proto(e, f"entries[{first + i}]") for i, e in enumerate(request.entries)
            ]
            turns += [session_turn_from_proto(t) for t in request.session_turns]
            summary = request.session_summary or summary
            if request.HasField("profile"):
                profile = Profile.from_proto(request.profile)
        if stream.pair is None:
            raise InvalidArgument("ImportPair needs at least one message naming the pair")
        pair = Pair.of_proto(stream.pair)
        imported = await self.rights.import_pair(pair, entries, turns, summary, profile, validate_only=validate_only)
        return import_to_proto(imported)

    async def ForgetEntries(
        self, request: kzg_pb2.ForgetEntriesRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.ForgetEntriesResponse:
        deleted, removed = await self.rights.forget(
            Pair.of_proto(request.pair), list(request.kzg_keys), request.source_turn_id,
            **turn_ref(request.turn),
        )
        return kzg_pb2.ForgetEntriesResponse(deleted_keys=deleted, session_turns_removed=removed)

    async def CorrectEntry(
        self, request: kzg_pb2.CorrectEntryRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.CorrectEntryResponse:
        previous = await self.rights.correct(
            Pair.of_proto(request.pair), request.kzg_key, request.inhalt, **turn_ref(request.turn)
        )
        return kzg_pb2.CorrectEntryResponse(previous_inhalt=previous)

    async def EnqueuePromotionJobs(
        self, request: kzg_pb2.EnqueuePromotionJobsRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.EnqueuePromotionJobsResponse:
        ids = await self.rights.enqueue(
            [(Pair.of_proto(j.pair), j.kzg_key, j.ausloeser_turn_id) for j in request.jobs]
        )
        enqueued = sum(1 for i in ids if i)
        return kzg_pb2.EnqueuePromotionJobsResponse(job_ids=ids, enqueued=enqueued, gone=len(ids) - enqueued)
