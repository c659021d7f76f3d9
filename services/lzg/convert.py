"""The LZG's messages ↔ its domain types: what the servicers translate with (STYLE rule 2)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.embedding.base import Vectors
from novaberg_core.messages import from_message, to_message
from novaberg_core.model import Beobachter, Ei, KzgEntry, Magnets, Pair, check_vector
from novaberg_core.pipeline_log import LogScope
from novaberg_core.timeutil import as_of_or_now, from_timestamp, optional_timestamp, to_timestamp
from services.lzg.reading import RecallCandidate
from services.lzg.rows import StoredEdge, StoredNode
from services.lzg.spreading import Erinnerung, LzgResonanz, NodeDetails, PfadSchritt
from services.lzg.types import Entity, PromotionInput, Timeline, Trigger3Result
from services.lzg.usage import Ausgang, Verwendungsprotokoll

__all__ = [
    "answer_vector",
    "edge_from_proto",
    "edge_to_proto",
    "entity_from_proto",
    "entity_to_proto",
    "erinnerungen_from_proto",
    "node_from_proto",
    "node_to_proto",
    "promotion_input",
    "protokoll_to_proto",
    "recall_to_proto",
    "request_as_of",
    "resonanz_to_proto",
    "span_of",
    "timeline_from_proto",
    "timeline_to_proto",
    "trigger3_to_proto",
    "turn_of",
]

_AUSGANG = {
    Ausgang.GERECHNET: lzg_pb2.VERWENDUNG_AUSGANG_GERECHNET,
    Ausgang.ANTWORT_LEER: lzg_pb2.VERWENDUNG_AUSGANG_ANTWORT_LEER,
    Ausgang.OHNE_KANDIDAT: lzg_pb2.VERWENDUNG_AUSGANG_OHNE_KANDIDAT,
    Ausgang.EMBED_FEHLER: lzg_pb2.VERWENDUNG_AUSGANG_EMBED_FEHLER,
    Ausgang.VEKTOR_LEER: lzg_pb2.VERWENDUNG_AUSGANG_VEKTOR_LEER,
    Ausgang.DB_FEHLER: lzg_pb2.VERWENDUNG_AUSGANG_DB_FEHLER,
}


def _optional_ts(message: Any, field: str) -> datetime | None:
    return from_timestamp(getattr(message, field)) if message.HasField(field) else None


def request_as_of(message: Any) -> datetime:
    return as_of_or_now(message.as_of if message.HasField("as_of") else None)


def turn_of(request: Any) -> LogScope:
    """The turn a request names, as the use cases take it: its ``turn_id`` and ``span_id`` (the
    use case places its records with its own pair and time)."""
    return LogScope(request.turn.turn_id, span_of(request.turn))


def span_of(turn: common_pb2.TurnContext) -> str | None:
    return turn.span_id or None


def node_to_proto(node: StoredNode, include_embedding: bool = False) -> lzg_pb2.Node:
    """A stored node as a Node message (its vector only if asked and present)."""
    vector = node.embedding.tolist() if include_embedding and node.embedding is not None else []
    return to_message(
        lzg_pb2.Node,
        node,
        pair=node.pair.to_proto(),
        beobachter=Beobachter.proto_of_name(node.beobachter),
        themen=list(node.themen),
        gedaechtnistyp=node.gedaechtnistyp or "",
        ei=node.ei.to_proto(),
        magnets=node.magnets.to_proto(),
        embedding=vector,
    )


def edge_to_proto(edge: StoredEdge) -> lzg_pb2.Edge:
    """A stored directed edge as an Edge message (a NULL frozen value left unset)."""
    return to_message(lzg_pb2.Edge, edge)


def resonanz_to_proto(resonanz: LzgResonanz) -> lzg_pb2.LzgResonanz:
    """The domain ``lzg_resonanz`` as its message (syn §8.4.2)."""
    message = lzg_pb2.LzgResonanz(
        anker_anzahl=resonanz.anker_anzahl,
        sprung_tiefe=resonanz.sprung_tiefe,
        cluster=resonanz.cluster,
        nova_sektor=resonanz.nova_sektor,
    )
    for e in resonanz.erinnerungen:
        message.erinnerungen.append(
            lzg_pb2.Erinnerung(
                rang=e.rang,
                knoten_id=e.knoten_id,
                inhalt=e.details.inhalt,
                themen=list(e.details.themen),
                entitaet_ids=list(e.details.entitaet_ids),
                emotion=e.details.emotion,
                erstellt_am=optional_timestamp(e.details.erstellt_am),
                gewicht_decay=e.details.gewicht_decay,
                schale=e.schale,
                sortier_gewicht=e.sortier_gewicht,
                beobachter=Beobachter.proto_of_name(e.details.beobachter),
                pfad=_pfad_to_proto(e.pfad),
            )
        )
    return message


def _pfad_to_proto(pfad: Sequence[PfadSchritt]) -> list[lzg_pb2.PfadSchritt]:
    return [
        lzg_pb2.PfadSchritt(
            von_knoten_id=s.von_knoten_id,
            kante_id=s.kante_id,
            verbindungs_gruende=list(s.verbindungs_gruende),
            geteilte_entitaet_ids=list(s.geteilte_entitaet_ids),
            geteilte_themen=list(s.geteilte_themen),
        )
        for s in pfad
    ]


def recall_to_proto(candidate: RecallCandidate) -> lzg_pb2.RecallKandidat:
    """One recall candidate (SPEC §11) as its message."""
    details = candidate.details
    return lzg_pb2.RecallKandidat(
        knoten_id=candidate.knoten_id,
        inhalt=details.inhalt,
        beobachter=Beobachter.proto_of_name(details.beobachter),
        sprecher=details.sprecher,
        zeitpunkt=optional_timestamp(details.kzg_erstellt_am or details.erstellt_am),
        turn_id=details.quell_turn_id,
        kzg_quell_key=details.kzg_quell_key,
        cosine=candidate.cosine,
        lexical_score=candidate.lexical_score,
        lexical_strength=candidate.lexical_strength,
        quellen=list(candidate.quellen),
        schale=candidate.schale,
        pfad=_pfad_to_proto(candidate.pfad),
        score=candidate.score,
        antwort_auf=details.antwort_auf,
    )  # in the message's field order


def erinnerungen_from_proto(message: lzg_pb2.LzgResonanz) -> list[Erinnerung]:
    """The memories of a caller's ``lzg_resonanz`` (for rendering)."""
    return [
        Erinnerung(
            rang=e.rang,
            knoten_id=e.knoten_id,
            schale=e.schale,
            sortier_gewicht=e.sortier_gewicht,
            details=NodeDetails(
                inhalt=e.inhalt,
                themen=tuple(e.themen),
                entitaet_ids=tuple(e.entitaet_ids),
                emotion=e.emotion,
                erstellt_am=from_timestamp(e.erstellt_am),
                gewicht_decay=e.gewicht_decay,
                beobachter=Beobachter.name_of_proto(e.beobachter),
            ),
            pfad=tuple(
                PfadSchritt(
                    von_knoten_id=s.von_knoten_id,
                    kante_id=s.kante_id,
                    verbindungs_gruende=tuple(s.verbindungs_gruende),
                    geteilte_entitaet_ids=tuple(s.geteilte_entitaet_ids),
                    geteilte_themen=tuple(s.geteilte_themen),
                )
                for s in e.pfad
            ),
        )
        for e in message.erinnerungen
    ]


def protokoll_to_proto(record: Verwendungsprotokoll) -> lzg_pb2.VerwendungsProtokoll:
    """The usage record, field for field; the outcome as its enum, the closenesses as NodeNaehe."""
    closest = record.knappster_verworfener
    return to_message(
        lzg_pb2.VerwendungsProtokoll,
        record,
        ausgang=_AUSGANG[record.ausgang],
        naehen_alle=[lzg_pb2.NodeNaehe(knoten_id=k, naehe=n) for k, n in record.naehen_alle],
        knappster_verworfener=None if closest is None else lzg_pb2.NodeNaehe(knoten_id=closest[0], naehe=closest[1]),
    )


def entity_to_proto(entity: Entity) -> lzg_pb2.Entity:
    return lzg_pb2.Entity(
        id=entity.id,
        pair=entity.pair.to_proto(),
        name=entity.name,
        typ=entity.typ,
        aliases=list(entity.aliases),
    )


def timeline_to_proto(timeline: Timeline) -> lzg_pb2.Timeline:
    return lzg_pb2.Timeline(
        id=timeline.id,
        pair=timeline.pair.to_proto(),
        zeitpunkt=to_timestamp(timeline.zeitpunkt),
        praezision=timeline.praezision,
        titel=timeline.titel,
        themen=list(timeline.themen),
    )


def timeline_from_proto(pair: common_pb2.Pair, message: lzg_pb2.Timeline) -> Timeline:
    """A timeline as UpsertTimeline and the import take it; an unset zeitpunkt is None, refused by the use case."""
    return from_message(Timeline, message, pair=Pair.of_proto(pair))


def entity_from_proto(pair: Pair, message: lzg_pb2.Entity) -> Entity:
    """An exported entity as the import takes it, in the pair it is imported into."""
    return from_message(Entity, message, pair=pair)


def node_from_proto(pair: Pair, message: lzg_pb2.Node) -> StoredNode:
    """An exported node as the import takes it, in the pair it is imported into, without its vector
    (the import embeds the text); an unset time is None, refused by the use case."""
    return from_message(
        StoredNode,
        message,
        pair=pair,
        beobachter=Beobachter.name_of_proto(message.beobachter),
        magnets=Magnets.from_proto(message.magnets),
        ei=Ei.from_proto(message.ei),
        embedding=None,
    )


def edge_from_proto(message: lzg_pb2.Edge) -> StoredEdge:
    """An exported edge as the import takes it (no time: now; no layer count: one)."""
    return from_message(
        StoredEdge,
        message,
        erstellt_am=_optional_ts(message, "erstellt_am") or as_of_or_now(None),
        anzahl_schichten=message.anzahl_schichten or 1,
    )


def trigger3_to_proto(result: Trigger3Result) -> lzg_pb2.Trigger3Response:
    return to_message(lzg_pb2.Trigger3Response, result)


def promotion_input(request: lzg_pb2.PromoteRequest) -> PromotionInput:
    """A PromoteRequest as the promotion's input (the entry's checks happen in ``app/promotion.py``)."""
    entry = KzgEntry.from_proto(request.entry, "entry")
    return PromotionInput(
        entry=entry,
        ausloeser_turn_id=request.ausloeser_turn_id,
        log_turn_id=request.turn.turn_id or request.ausloeser_turn_id or f"promotion:{entry.kzg_key}",
        span_id=span_of(request.turn),
        as_of=request_as_of(request),
    )


_UNIT_NORM_TOLERANCE = 1e-6
"""A vector whose norm is this close to 1 is a model's L2-normalised output and is used bit for bit."""


def answer_vector(values: Sequence[float], dimension: int, model_id: str) -> Vectors:
    """A caller's answer embedding: the model's dimension, finite values, scaled to norm 1 (SPEC §2).

    A vector already of norm 1 (within float32 rounding) is used as sent, so the caller's
    embedding of the answer gives the same nearness values as the service's own. An all-zero
    vector passes: ``app/usage.py`` records it as ``vektor_leer`` like an empty vector of its model.
    """
    vector = check_vector(values, dimension, "answer_vector", model_id)
    norm = float(np.linalg.norm(vector.astype(np.float64)))
    if norm == 0.0 or abs(norm - 1.0) <= _UNIT_NORM_TOLERANCE:
        return vector
    return (vector.astype(np.float64) / norm).astype(np.float32)
