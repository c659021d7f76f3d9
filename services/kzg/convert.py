"""Proto ↔ domain conversions of the KZG service, one function per type and direction
(contract: protos/novaberg/kzg/v1/kzg.proto, shared messages in protos/novaberg/common/v1)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TypedDict

import numpy as np
from google.protobuf.timestamp_pb2 import Timestamp

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg_core.messages import to_message
from novaberg_core.model import Beobachter, Ei, Magnets, Profile
from novaberg_core.telemetry import current_traceparent
from novaberg_core.timeline import parse_praezision
from novaberg_core.timeutil import from_timestamp, optional_timestamp
from services.kzg.types import (
    AppendResult,
    EntryInput,
    EraseCounts,
    Hit,
    ImportCounts,
    KzgEntry,
    Pair,
    PromotionJobData,
    RetrieveFilters,
    RetrieveQuery,
    RetrieveResult,
    SessionTurnRecord,
    StoreResult,
)

__all__ = [
    "TurnRef",
    "append_to_proto",
    "as_of",
    "entry_input",
    "erase_to_proto",
    "import_to_proto",
    "job_to_proto",
    "retrieve_query",
    "retrieve_to_proto",
    "session_turn_from_proto",
    "session_turn_to_proto",
    "store_to_proto",
    "turn_ref",
]


class TurnRef(TypedDict):
    """The caller's turn as the use cases take it, as keywords: ``**turn_ref(request.turn)``."""

    turn_id: str
    span_id: str


def turn_ref(turn: common_pb2.TurnContext) -> TurnRef:
    """The turn a request names, as given (``app.context.log_scope`` makes it a record's turn and span)."""
    return TurnRef(turn_id=turn.turn_id, span_id=turn.span_id)


def as_of(ts: Timestamp) -> datetime | None:
    """A request's ``as_of``; None when unset or all-zero (→ now)."""
    return _moment(ts)


def _moment(ts: Timestamp) -> datetime | None:
    """A time field; None when unset or all-zero."""
    return None if ts.seconds == 0 and ts.nanos == 0 else from_timestamp(ts)


def exported_entry_to_proto(entry: KzgEntry) -> kzg_pb2.ExportedEntry:
    """An entry of an export: the shared message and whether it waited for promotion."""
    return kzg_pb2.ExportedEntry(entry=entry.to_proto(), promotion_queued=entry.promotion_queued)


def exported_entry_from_proto(message: kzg_pb2.ExportedEntry, field: str = "entry") -> KzgEntry:
    """An exported entry to import (the inverse of :func:`exported_entry_to_proto`); ``field`` names it in a
    refusal."""
    return dataclasses.replace(
        KzgEntry.from_proto(message.entry, field), promotion_queued=message.promotion_queued
    )


def job_to_proto(job: PromotionJobData) -> kzg_pb2.PromotionJob:
    return kzg_pb2.PromotionJob(
        job_id=job.job_id,
        kzg_key=job.kzg_key,
        ausloeser_turn_id=job.ausloeser_turn_id,
        pair=job.pair.to_proto(),
        delivery_count=job.delivery_count,
        ausgeloest_am=optional_timestamp(job.ausgeloest_am),
    )


def session_turn_from_proto(message: kzg_pb2.SessionTurn) -> SessionTurnRecord:
    """A session turn of a request (unset ``created_at`` → None, stamped by the use case)."""
    return SessionTurnRecord(
        role=message.role, text=message.text, turn_id=message.turn_id, created_at=_moment(message.created_at),
        intention=message.intention, emotion=message.emotion, modus=message.modus, arousal=message.arousal,
        emotions_vektor=message.emotions_vektor,
    )


def session_turn_to_proto(turn: SessionTurnRecord) -> kzg_pb2.SessionTurn:
    return kzg_pb2.SessionTurn(
        role=turn.role, text=turn.text, turn_id=turn.turn_id, created_at=optional_timestamp(turn.created_at),
        intention=turn.intention, emotion=turn.emotion, modus=turn.modus, arousal=turn.arousal,
        emotions_vektor=turn.emotions_vektor,
    )


def append_to_proto(result: AppendResult) -> kzg_pb2.AppendSessionTurnResponse:
    return to_message(kzg_pb2.AppendSessionTurnResponse, result)


def entry_input(request: kzg_pb2.StoreEntryRequest) -> EntryInput:
    """A write request as domain input; an unknown perspective is refused by the write path, named.

    Without a speaker's name the role's default one (SPEC §11: "default the role"), so the KZG's own
    embedding and full-text field name a speaker as the pipeline's do and re-embedding builds the same text.
    """
    salience = request.salience
    return EntryInput(
        pair=Pair.of_proto(request.pair),
        beobachter=Beobachter.name_of_proto(request.beobachter, f"<{request.beobachter}>"),
        inhalt=request.inhalt,
        salienz=salience.salienz,
        themen=tuple(salience.themen),
        gedaechtnistyp=salience.gedaechtnistyp,
        dimension=salience.dimension,
        ei=Ei.from_proto(request.ei),
        magnets=Magnets.from_proto(request.magnets),
        **turn_ref(request.turn),
        embedding=np.asarray(request.embedding, dtype=np.float32) if len(request.embedding) else None,
        entry_id=request.entry_id,
        resend_safe=request.resend_safe,
        as_of=as_of(request.as_of),
        writer=request.writer,
        sprecher=request.sprecher or Profile().speaker(request.beobachter),
        sprache=request.sprache,
        antwort_auf=request.antwort_auf,
        traceparent=current_traceparent(),
    )


def store_to_proto(result: StoreResult) -> kzg_pb2.StoreEntryResponse:
    """A store's result, field for field; ``stored`` and ``repeated`` as the outcome, the tier as its number."""
    if result.repeated:
        outcome = kzg_pb2.STORE_OUTCOME_REPEATED
    else:
        outcome = kzg_pb2.STORE_OUTCOME_STORED if result.stored else kzg_pb2.STORE_OUTCOME_REJECTED_BELOW_GATE
    return to_message(
        kzg_pb2.StoreEntryResponse,
        result,
        outcome=outcome,
        tier=int(result.tier) if result.tier is not None else kzg_pb2.TIER_UNSPECIFIED,
    )


def retrieve_query(request: kzg_pb2.RetrieveRequest) -> RetrieveQuery:
    f = request.filters
    which = request.WhichOneof("query")
    return RetrieveQuery(
        pair=Pair.of_proto(request.pair),
        query_text=request.query_text if which == "query_text" else None,
        query_vector=(
            np.asarray(request.query_vector.values, dtype=np.float32) if which == "query_vector" else None
        ),
        beobachter=Beobachter.filter_from_proto(request.beobachter),
        filters=RetrieveFilters(
            emotion=tuple(f.emotion),
            modus=tuple(f.modus),
            entitaet_ids=tuple(f.entitaet_ids),
            themen=tuple(f.themen),
            timeline_id=f.timeline_id if f.HasField("timeline_id") else None,
            min_salienz=f.min_salienz if f.HasField("min_salienz") else None,
        ),
        top_k=request.top_k,
        **turn_ref(request.turn),
        as_of=as_of(request.as_of),
        lexical_text=request.lexical_text,
        sprache=request.sprache,
        question_entity_ids=tuple(dict.fromkeys(request.question_entity_ids)),
        full_entries=request.full_entries,
        zeitfenster=tuple(
            (from_timestamp(z.zeitpunkt), parse_praezision(z.praezision, f"zeitfenster[{i}].praezision"))
            for i, z in enumerate(request.zeitfenster)
        ),
    )


def hit_to_proto(hit: Hit) -> kzg_pb2.RetrieveHit:
    """One hit, its entry whole or brief (``RetrieveRequest.full_entries``)."""
    return kzg_pb2.RetrieveHit(
        entry=hit.entry.brief_proto() if hit.brief else hit.entry.to_proto(),
        similarity=hit.similarity,
        quellen=list(hit.quellen),
        brief=hit.brief,
    )


def retrieve_to_proto(result: RetrieveResult) -> kzg_pb2.RetrieveResponse:
    return kzg_pb2.RetrieveResponse(
        hits=[hit_to_proto(h) for h in result.hits],
        threshold=result.threshold,
        model_id=result.model_id,
        dropped_below_threshold=result.dropped_below_threshold,
    )


def erase_to_proto(counts: EraseCounts) -> kzg_pb2.EraseResponse:
    """An erasure's counts (field for field; the characters as their number)."""
    fields = dataclasses.asdict(counts)
    fields["characters"] = len(counts.characters)
    return kzg_pb2.EraseResponse(**fields)


def import_to_proto(counts: ImportCounts) -> kzg_pb2.ImportPairResponse:
    """An import's counts, field for field."""
    return kzg_pb2.ImportPairResponse(**dataclasses.asdict(counts))
