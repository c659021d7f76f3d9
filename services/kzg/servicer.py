"""gRPC ↔ domain translation of the KZG service (contract: protos/novaberg/kzg/v1/kzg.proto).

No behaviour here: every call is translated, handed to :class:`KzgMemory`, and its result
translated back. Domain errors propagate to the bootstrap's error interceptor.
"""

from __future__ import annotations

from datetime import UTC, datetime

import grpc
import numpy as np
from google.protobuf.timestamp_pb2 import Timestamp

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg_core.embedding import check_vector_model
from novaberg_core.errors import InvalidArgument
from novaberg_core.telemetry import current_traceparent
from services.kzg.memory import KzgMemory
from services.kzg.models import (
    AppendResult,
    EntryInput,
    KzgEntryData,
    Pair,
    PromotionJobData,
    RetrieveFilters,
    RetrieveQuery,
    SessionTurnRecord,
    StoreResult,
)
from services.kzg.rights_servicer import KzgRightsServicer

_BEOBACHTER_NAMES = {
    common_pb2.BEOBACHTER_USER: "user",
    common_pb2.BEOBACHTER_ASSISTANT: "assistant",
}
_BEOBACHTER_ENUM = {name: value for value, name in _BEOBACHTER_NAMES.items()}


def _pair(message: common_pb2.Pair) -> Pair:
    return Pair(user_id=message.user_id, character_id=message.character_id)


def _pair_pb(pair: Pair) -> common_pb2.Pair:
    return common_pb2.Pair(user_id=pair.user_id, character_id=pair.character_id)


def _seconds(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def _as_of(ts: Timestamp) -> float | None:
    """A request's ``as_of`` in unix seconds; None when unset or all-zero (→ now)."""
    if ts.seconds == 0 and ts.nanos == 0:
        return None
    return _seconds(ts)


def _timestamp(seconds: float) -> Timestamp:
    ts = Timestamp()
    if seconds:
        ts.FromDatetime(datetime.fromtimestamp(seconds, tz=UTC))
    return ts


def _beobachter_for_write(value: int) -> str:
    # UNSPECIFIED or an unknown number: the write path refuses it with a message naming the field.
    return _BEOBACHTER_NAMES.get(value, f"<{value}>")  # type: ignore[call-overload]


def _beobachter_for_read(value: int) -> str | None:
    if value == common_pb2.BEOBACHTER_UNSPECIFIED:
        return None
    name = _BEOBACHTER_NAMES.get(value)  # type: ignore[call-overload]
    if name is None:
        raise InvalidArgument(f"beobachter {value} is not a known perspective")
    return name


def entry_pb(entry: KzgEntryData) -> common_pb2.KzgEntry:
    """A domain entry as the shared proto message (SPEC §4.1)."""
    message = common_pb2.KzgEntry(
        kzg_key=entry.kzg_key,
        entry_id=entry.entry_id,
        pair=_pair_pb(entry.pair),
        beobachter=_BEOBACHTER_ENUM.get(entry.beobachter, common_pb2.BEOBACHTER_UNSPECIFIED),
        inhalt=entry.inhalt,
        themen=list(entry.themen),
        salienz=entry.salienz,
        salienz_eingang=entry.salienz_eingang if entry.salienz_eingang is not None else 0.0,
        salienz_eingang_herkunft=entry.salienz_eingang_herkunft,
        haeufigkeit=entry.haeufigkeit,
        gedaechtnistyp=entry.gedaechtnistyp,
        dimension=entry.dimension,
        ei=common_pb2.EiFields(
            emotion=entry.emotion,
            modus=entry.modus,
            arousal=entry.arousal,
            emotions_vektor=entry.emotions_vektor,
            sprach_stil=entry.sprach_stil,
            beziehungs_dynamik=entry.beziehungs_dynamik,
            tone=entry.tone,
            intentionen=list(entry.intentionen),
        ),
        magnets=common_pb2.Magnets(entitaet_ids=list(entry.entitaet_ids)),
        erstellt_am=_timestamp(entry.erstellt_am),
        turn_id=entry.turn_id,
        ttl_seconds=entry.ttl_seconds,
        sprecher=entry.sprecher,
        sprache=entry.sprache,
        traceparent=entry.traceparent,
    )
    if entry.ablauf_am is not None:
        message.ablauf_am.CopyFrom(_timestamp(entry.ablauf_am))
    if entry.timeline_id is not None:
        message.magnets.timeline_id = entry.timeline_id
    if entry.embedding is not None:
        message.embedding.extend(entry.embedding.tolist())
    return message


def _job_pb(job: PromotionJobData) -> kzg_pb2.PromotionJob:
    return kzg_pb2.PromotionJob(
        job_id=job.job_id,
        kzg_key=job.kzg_key,
        ausloeser_turn_id=job.ausloeser_turn_id,
        pair=_pair_pb(job.pair),
        delivery_count=job.delivery_count,
        ausgeloest_am=_timestamp(job.ausgeloest_am) if job.ausgeloest_am else None,
    )


def _session_turn(t: kzg_pb2.SessionTurn) -> SessionTurnRecord:
    return SessionTurnRecord(
        role=t.role, text=t.text, turn_id=t.turn_id,
        created_at=_seconds(t.created_at) if t.HasField("created_at") else 0.0,
        intention=t.intention, emotion=t.emotion, modus=t.modus, arousal=t.arousal,
        emotions_vektor=t.emotions_vektor,
    )


def _append_pb(result: AppendResult) -> kzg_pb2.AppendSessionTurnResponse:
    return kzg_pb2.AppendSessionTurnResponse(
        turn_count=result.turn_count, summarized=result.summarized, trimmed=result.trimmed
    )


def _entry_input(request: kzg_pb2.StoreEntryRequest) -> EntryInput:
    ei, salience, magnets = request.ei, request.salience, request.magnets
    return EntryInput(
        pair=_pair(request.pair),
        beobachter=_beobachter_for_write(request.beobachter),
        inhalt=request.inhalt,
        salienz=salience.salienz,
        themen=tuple(salience.themen),
        gedaechtnistyp=salience.gedaechtnistyp,
        dimension=salience.dimension,
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
        turn_id=request.turn.turn_id,
        span_id=request.turn.span_id,
        embedding=np.asarray(request.embedding, dtype=np.float32) if len(request.embedding) else None,
        entry_id=request.entry_id,
        as_of=_as_of(request.as_of),
        writer=request.writer,
        sprecher=request.sprecher,
        sprache=request.sprache,
        traceparent=current_traceparent(),
    )


def _store_pb(result: StoreResult) -> kzg_pb2.StoreEntryResponse:
    return kzg_pb2.StoreEntryResponse(
        outcome=kzg_pb2.STORE_OUTCOME_STORED if result.stored else kzg_pb2.STORE_OUTCOME_REJECTED_BELOW_GATE,
        kzg_key=result.kzg_key,
        tier=int(result.tier) if result.tier is not None else kzg_pb2.TIER_UNSPECIFIED,  # type: ignore[arg-type]
        salienz=result.salienz,
        ttl_seconds=result.ttl_seconds,
        queued_for_promotion=result.queued_for_promotion,
        reinforced_count=result.reinforced_count,
        reinforced_queued_count=result.reinforced_queued_count,
        canon_rejections=list(result.canon_rejections),
    )


class KzgServicer(KzgRightsServicer, kzg_pb2_grpc.KzgServiceServicer):
    """KzgService over one :class:`KzgMemory` (the rights RPCs: :class:`KzgRightsServicer`)."""

    def __init__(self, memory: KzgMemory) -> None:
        self.memory = memory

    async def AppendSessionTurn(
        self, request: kzg_pb2.AppendSessionTurnRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.AppendSessionTurnResponse:
        result = await self.memory.append_session_turn(
            _pair(request.pair), _session_turn(request.turn), as_of=_as_of(request.as_of)
        )
        return _append_pb(result)

    async def AppendSessionTurns(
        self, request: kzg_pb2.AppendSessionTurnsRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.AppendSessionTurnsResponse:
        results = await self.memory.append_session_turns(
            [(_pair(a.pair), _session_turn(a.turn), _as_of(a.as_of)) for a in request.appends]
        )
        return kzg_pb2.AppendSessionTurnsResponse(results=[_append_pb(result) for result in results])

    async def GetSession(
        self, request: kzg_pb2.GetSessionRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.GetSessionResponse:
        state = await self.memory.get_session(_pair(request.pair), as_of=_as_of(request.as_of))
        return kzg_pb2.GetSessionResponse(
            turns=[
                kzg_pb2.SessionTurn(
                    role=t.role, text=t.text, turn_id=t.turn_id, created_at=_timestamp(t.created_at),
                    intention=t.intention, emotion=t.emotion, modus=t.modus, arousal=t.arousal,
                    emotions_vektor=t.emotions_vektor,
                )
                for t in state.turns
            ],
            summary=state.summary,
            ttl_seconds=state.ttl_seconds,
        )

    async def GetModel(
        self, request: common_pb2.GetModelRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.ModelInfo:
        stamp = self.memory.provider.stamp
        return common_pb2.ModelInfo(model_id=stamp.model_id, dimension=stamp.dimension, recipe=stamp.recipe)

    async def StoreEntry(
        self, request: kzg_pb2.StoreEntryRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.StoreEntryResponse:
        check_vector_model("embedding", request.embedding_model_id, self.memory.provider.stamp)
        return _store_pb(await self.memory.store_entry(_entry_input(request)))

    async def StoreEntries(
        self, request: kzg_pb2.StoreEntriesRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.StoreEntriesResponse:
        for index, entry in enumerate(request.entries):
            check_vector_model(f"entries[{index}].embedding", entry.embedding_model_id, self.memory.provider.stamp)
        results = await self.memory.store_entries([_entry_input(entry) for entry in request.entries])
        return kzg_pb2.StoreEntriesResponse(results=[_store_pb(result) for result in results])

    async def Retrieve(
        self, request: kzg_pb2.RetrieveRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.RetrieveResponse:
        f = request.filters
        which = request.WhichOneof("query")
        if which == "query_vector":
            check_vector_model("query_vector", request.query_vector.model_id, self.memory.provider.stamp)
        query = RetrieveQuery(
            pair=_pair(request.pair),
            query_text=request.query_text if which == "query_text" else None,
            query_vector=(
                np.asarray(request.query_vector.values, dtype=np.float32) if which == "query_vector" else None
            ),
            beobachter=_beobachter_for_read(request.beobachter),
            filters=RetrieveFilters(
                emotion=tuple(f.emotion),
                modus=tuple(f.modus),
                entitaet_ids=tuple(f.entitaet_ids),
                themen=tuple(f.themen),
                timeline_id=f.timeline_id if f.HasField("timeline_id") else None,
                min_salienz=f.min_salienz if f.HasField("min_salienz") else None,
            ),
            top_k=request.top_k,
            turn_id=request.turn.turn_id,
            span_id=request.turn.span_id,
            as_of=_as_of(request.as_of),
            lexical_text=request.lexical_text,
            sprache=request.sprache,
            question_entity_ids=tuple(dict.fromkeys(request.question_entity_ids)),
        )
        result = await self.memory.retrieve(query)
        return kzg_pb2.RetrieveResponse(
            hits=[
                kzg_pb2.RetrieveHit(entry=entry_pb(h.entry), similarity=h.similarity, quellen=list(h.quellen))
                for h in result.hits
            ],
            threshold=result.threshold,
            model_id=result.model_id,
            dropped_below_threshold=result.dropped_below_threshold,
        )

    async def GetEntry(
        self, request: kzg_pb2.GetEntryRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.GetEntryResponse:
        entry = await self.memory.get_entry(
            _pair(request.pair), request.kzg_key, include_embedding=request.include_embedding
        )
        return kzg_pb2.GetEntryResponse(entry=entry_pb(entry))

    async def DeleteEntry(
        self, request: kzg_pb2.DeleteEntryRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.DeleteEntryResponse:
        if request.HasField("as_of") and not request.hash_dirty_reason:
            raise InvalidArgument("as_of is the hash_dirty marker's time; it needs hash_dirty_reason")
        deleted, gone = await self.memory.delete_entry(
            _pair(request.pair), request.kzg_key, turn_id=request.turn.turn_id, span_id=request.turn.span_id,
            hash_dirty_reason=request.hash_dirty_reason, as_of=_as_of(request.as_of),
        )  # fmt: skip
        return kzg_pb2.DeleteEntryResponse(
            deleted=deleted, verified_gone=gone, hash_dirty_set=bool(request.hash_dirty_reason)
        )

    async def MarkHashDirty(
        self, request: kzg_pb2.MarkHashDirtyRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.MarkHashDirtyResponse:
        await self.memory.mark_hash_dirty(_pair(request.pair), request.reason, as_of=_as_of(request.as_of))
        return kzg_pb2.MarkHashDirtyResponse()

    async def ReadPromotionJobs(
        self, request: kzg_pb2.ReadPromotionJobsRequest, context: grpc.aio.ServicerContext
    ) -> kzg_pb2.ReadPromotionJobsResponse:
        jobs = await self.memory.read_promotion_jobs(
            request.consumer, request.count, block_ms=request.block_ms, reclaim_idle_ms=request.reclaim_idle_ms
        )
        return kzg_pb2.ReadPromotionJobsResponse(jobs=[_job_pb(j) for j in jobs])

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
            pending_jobs=[_job_pb(j) for j in state.pending_jobs],
        )
