"""gRPC ↔ domain translation of the KZG's rights operations (erase, export, import, forget, correct).

A mixin of :class:`~services.kzg.servicer.KzgServicer`; the behaviour is in :mod:`services.kzg.rights`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import cached_property

import grpc

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg_core.errors import InvalidArgument
from services.kzg.memory import KzgMemory
from services.kzg.models import KzgEntryData, Pair, SessionTurnRecord
from services.kzg.rights import ExportedEntryData, KzgRights

__all__ = ["KzgRightsServicer", "entry_from_pb"]

_BEOBACHTER = {common_pb2.BEOBACHTER_USER: "user", common_pb2.BEOBACHTER_ASSISTANT: "assistant"}


def _pair(message: common_pb2.Pair) -> Pair:
    return Pair(user_id=message.user_id, character_id=message.character_id)


def entry_from_pb(message: common_pb2.KzgEntry) -> KzgEntryData:
    """An exported entry message as domain data (the inverse of ``servicer.entry_pb``, no vector)."""
    ei, magnets = message.ei, message.magnets
    return KzgEntryData(
        kzg_key=message.kzg_key,
        entry_id=message.entry_id or message.kzg_key.rsplit(":", 1)[-1],
        pair=_pair(message.pair),
        beobachter=_BEOBACHTER.get(message.beobachter, ""),  # type: ignore[call-overload]
        inhalt=message.inhalt,
        themen=tuple(message.themen),
        salienz=message.salienz,
        salienz_eingang=message.salienz_eingang,
        salienz_eingang_herkunft=message.salienz_eingang_herkunft,
        haeufigkeit=message.haeufigkeit or 1,
        gedaechtnistyp=message.gedaechtnistyp,
        dimension=message.dimension,
        emotion=ei.emotion,
        modus=ei.modus,
        arousal=ei.arousal,
        emotions_vektor=ei.emotions_vektor,
        sprach_stil=ei.sprach_stil,
        beziehungs_dynamik=ei.beziehungs_dynamik,
        tone=ei.tone,
        intentionen=tuple(ei.intentionen),
        entitaet_ids=tuple(magnets.entitaet_ids),
        timeline_id=magnets.timeline_id if magnets.HasField("timeline_id") else None,
        erstellt_am=message.erstellt_am.seconds + message.erstellt_am.nanos / 1e9,
        turn_id=message.turn_id,
        ttl_seconds=message.ttl_seconds,
        sprecher=message.sprecher,
        sprache=message.sprache,
    )


def _turn_pb(turn: SessionTurnRecord) -> kzg_pb2.SessionTurn:
    from services.kzg.servicer import _timestamp

    return kzg_pb2.SessionTurn(
        role=turn.role,
        text=turn.text,
        turn_id=turn.turn_id,
        created_at=_timestamp(turn.created_at),
        intention=turn.intention,
        emotion=turn.emotion,
        modus=turn.modus,
        arousal=turn.arousal,
        emotions_vektor=turn.emotions_vektor,
    )


def _turn(message: kzg_pb2.SessionTurn) -> SessionTurnRecord:
    return SessionTurnRecord(
        role=message.role,
        text=message.text,
        turn_id=message.turn_id,
        created_at=message.created_at.seconds + message.created_at.nanos / 1e9,
        intention=message.intention,
        emotion=message.emotion,
        modus=message.modus,
        arousal=message.arousal,
        emotions_vektor=message.emotions_vektor,
    )


class KzgRightsServicer:
    """The rights RPCs of KzgService (mixed into :class:`~services.kzg.servicer.KzgServicer`)."""

    memory: KzgMemory

    @cached_property
    def rights(self) -> KzgRights:
        return KzgRights(self.memory)

    async def Erase(
        self, request: kzg_pb2.EraseRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.EraseResponse:
        which = request.target.WhichOneof("target")
        if which is None:
            raise InvalidArgument("target must name a pair or a user_id")
        counts = await self.rights.erase(
            _pair(request.target.pair) if which == "pair" else None,
            request.target.user_id if which == "user_id" else None,
        )
        return kzg_pb2.EraseResponse(
            entries=counts.entries,
            session_keys=counts.session_keys,
            hash_dirty=counts.hash_dirty,
            cluster_keys=counts.cluster_keys,
            queue_jobs=counts.queue_jobs,
            stream_cutoff=counts.stream_cutoff,
            characters=len(counts.characters),
        )

    async def ExportPair(
        self, request: kzg_pb2.ExportPairRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[kzg_pb2.ExportPairResponse]:
        from services.kzg.servicer import entry_pb

        async for entries, session in self.rights.export(_pair(request.pair)):
            chunk = kzg_pb2.ExportPairResponse(
                entries=[
                    kzg_pb2.ExportedEntry(entry=entry_pb(e.entry), promotion_queued=e.promotion_queued)
                    for e in entries
                ],
            )
            if session is not None:
                chunk.session_turns.extend(_turn_pb(t) for t in session.turns)
                chunk.session_summary = session.summary
                chunk.session_ttl_seconds = session.ttl_seconds
            yield chunk

    async def ImportPair(
        self, request_iterator: AsyncIterator[kzg_pb2.ImportPairRequest], context: grpc.aio.ServicerContext
    ) -> kzg_pb2.ImportPairResponse:
        pair: Pair | None = None
        entries: list[ExportedEntryData] = []
        turns: list[SessionTurnRecord] = []
        summary = ""
        validate_only = False
        async for request in request_iterator:
            validate_only = validate_only or request.validate_only
            if pair is None:
                if not request.HasField("pair"):
                    raise InvalidArgument("the first message of ImportPair must name the pair")
                pair = _pair(request.pair)
            elif request.HasField("pair") and _pair(request.pair) != pair:
                raise InvalidArgument("every message of one ImportPair must name the same pair")
            entries += [
                ExportedEntryData(entry_from_pb(e.entry), e.promotion_queued) for e in request.entries
            ]
            turns += [_turn(t) for t in request.session_turns]
            summary = request.session_summary or summary
        if pair is None:
            raise InvalidArgument("ImportPair needs at least one message naming the pair")
        counts = await self.rights.import_pair(pair, entries, turns, summary, validate_only=validate_only)
        return kzg_pb2.ImportPairResponse(
            entries=counts.entries,
            queued=counts.queued,
            session_turns=counts.session_turns,
            skipped_expired=counts.skipped_expired,
        )

    async def ForgetEntries(
        self, request: kzg_pb2.ForgetEntriesRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.ForgetEntriesResponse:
        deleted, removed = await self.rights.forget(
            _pair(request.pair),
            list(request.kzg_keys),
            request.source_turn_id,
            turn_id=request.turn.turn_id,
            span_id=request.turn.span_id,
        )
        return kzg_pb2.ForgetEntriesResponse(deleted_keys=deleted, session_turns_removed=removed)

    async def CorrectEntry(
        self, request: kzg_pb2.CorrectEntryRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.CorrectEntryResponse:
        previous = await self.rights.correct(
            _pair(request.pair),
            request.kzg_key,
            request.inhalt,
            turn_id=request.turn.turn_id,
            span_id=request.turn.span_id,
        )
        return kzg_pb2.CorrectEntryResponse(previous_inhalt=previous)

    async def EnqueuePromotionJobs(
        self, request: kzg_pb2.EnqueuePromotionJobsRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.EnqueuePromotionJobsResponse:
        ids = await self.rights.enqueue(
            [(_pair(j.pair), j.kzg_key, j.ausloeser_turn_id) for j in request.jobs]
        )
        enqueued = sum(1 for i in ids if i)
        return kzg_pb2.EnqueuePromotionJobsResponse(job_ids=ids, enqueued=enqueued, gone=len(ids) - enqueued)
