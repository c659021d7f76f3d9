"""gRPC ↔ domain translation of the LZG's rights operations (erase, export, import, forget, correct).

A mixin of :class:`~services.lzg.servicer.LzgServicer`; the behaviour is in :mod:`services.lzg.rights`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import grpc

from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.messages import to_message
from novaberg_core.model import Beobachter, Ei, Magnets, Pair
from novaberg_core.rights import StreamPair, chunks, named_target
from novaberg_core.servicers import EraseServicer
from novaberg_core.timeutil import as_of_or_now, from_timestamp, to_timestamp
from services.lzg.convert import edge_to_proto, node_to_proto, turn_of
from services.lzg.engine import LzgEngine
from services.lzg.rights import ImportChunk, LzgRights

__all__ = ["EXPORT_CHUNK", "LzgRightsServicer"]

EXPORT_CHUNK = 500
"""Records per export message (well under gRPC's 4 MB message limit without vectors)."""

def _ts(message: Any, name: str) -> Any:
    return from_timestamp(getattr(message, name)) if message.HasField(name) else None


def _entity_row(message: lzg_pb2.Entity) -> Mapping[str, Any]:
    return {"id": message.id, "name": message.name, "typ": message.typ, "aliases": list(message.aliases)}


def _timeline_row(message: lzg_pb2.Timeline) -> Mapping[str, Any]:
    return {
        "id": message.id,
        "zeitpunkt": _ts(message, "zeitpunkt"),
        "praezision": message.praezision,
        "titel": message.titel,
        "themen": list(message.themen),
    }


def _node_row(message: lzg_pb2.Node) -> Mapping[str, Any]:
    magnets = Magnets.from_proto(message.magnets)
    return {
        "id": message.id,
        "kzg_quell_key": message.kzg_quell_key,
        "beobachter": Beobachter.name_of_proto(message.beobachter),
        "inhalt": message.inhalt,
        "dimension": message.dimension,
        "gewicht_roh": message.gewicht_roh,
        "gewicht_absolut": message.gewicht_absolut,
        "gewicht_decay": message.gewicht_decay,
        "haeufigkeit": message.haeufigkeit,
        "aktiv": message.aktiv,
        "erstellt_am": _ts(message, "erstellt_am"),
        "verstaerkt_am": _ts(message, "verstaerkt_am"),
        "decay_am": _ts(message, "decay_am"),
        "kzg_erstellt_am": _ts(message, "kzg_erstellt_am"),
        "themen": list(message.themen),
        "gedaechtnistyp": message.gedaechtnistyp,
        "entitaet_ids": list(magnets.entitaet_ids),
        "timeline_id": magnets.timeline_id,
        **Ei.from_proto(message.ei).as_dict(),
        "sprecher": message.sprecher,
        "sprache": message.sprache,
        "quell_turn_id": message.quell_turn_id,
    }


def _edge_row(message: lzg_pb2.Edge) -> Mapping[str, Any]:
    return {
        "id": message.id,
        "knoten_a_id": message.knoten_a_id,
        "knoten_b_id": message.knoten_b_id,
        "gewicht_roh": message.gewicht_roh,
        "gewicht_absolut": message.gewicht_absolut,
        "erstellt_am": _ts(message, "erstellt_am") or as_of_or_now(None),
        "verbindungs_gruende": list(message.verbindungs_gruende),
        "geteilte_entitaet_ids": list(message.geteilte_entitaet_ids),
        "geteilte_themen": list(message.geteilte_themen),
        "timeline_naehe_tage": message.timeline_naehe_tage
        if message.HasField("timeline_naehe_tage")
        else None,
        "embedding_cosine_initial": (
            message.embedding_cosine_initial if message.HasField("embedding_cosine_initial") else None
        ),
        "anzahl_schichten": message.anzahl_schichten or 1,
    }


def _entity_pb(row: Mapping[str, Any]) -> lzg_pb2.Entity:
    message = lzg_pb2.Entity(
        id=row["id"], name=row["name"], typ=row["typ"], aliases=list(row["aliases"] or ())
    )
    message.pair.user_id, message.pair.character_id = row["user_id"], row["character_id"]
    return message


def _timeline_pb(row: Mapping[str, Any]) -> lzg_pb2.Timeline:
    message = lzg_pb2.Timeline(
        id=row["id"],
        zeitpunkt=to_timestamp(row["zeitpunkt"]),
        praezision=row["praezision"],
        titel=row["titel"],
        themen=list(row["themen"] or ()),
    )
    message.pair.user_id, message.pair.character_id = row["user_id"], row["character_id"]
    return message


class LzgRightsServicer(EraseServicer[LzgRights]):
    """The rights RPCs of LzgService (mixed into :class:`~services.lzg.servicer.LzgServicer`)."""

    engine: LzgEngine
    erase_response = lzg_pb2.EraseResponse

    def make_rights(self) -> LzgRights:
        return LzgRights(self.engine)

    async def ExportPair(
        self, request: lzg_pb2.ExportPairRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[lzg_pb2.ExportPairChunk]:
        data = await self.rights.export(Pair.of_proto(request.pair))
        yield lzg_pb2.ExportPairChunk(
            counts=lzg_pb2.ExportCounts(
                entities=len(data.entities),
                timelines=len(data.timelines),
                nodes=len(data.nodes),
                edges=len(data.edges),
            ),
            model_id=data.model_id,
        )
        kinds: tuple[tuple[str, Sequence[Mapping[str, Any]], Callable[[Mapping[str, Any]], Any]], ...] = (
            ("entities", data.entities, _entity_pb),
            ("timelines", data.timelines, _timeline_pb),
            ("nodes", data.nodes, node_to_proto),
            ("edges", data.edges, edge_to_proto),
        )
        for kind, rows, to_proto in kinds:  # each kind in chunks, in this order
            for part in chunks(rows, EXPORT_CHUNK):
                message = lzg_pb2.ExportPairChunk()
                getattr(message, kind).extend(to_proto(r) for r in part)
                yield message

    async def ImportPair(
        self, request_iterator: AsyncIterator[lzg_pb2.ImportPairChunk], context: grpc.aio.ServicerContext
    ) -> lzg_pb2.ImportPairResponse:
        messages = aiter(request_iterator)
        first = await anext(messages, None)
        stream = StreamPair()
        pair = stream.check(first if first is not None else lzg_pb2.ImportPairChunk())

        async def import_chunks() -> AsyncIterator[ImportChunk]:
            message: lzg_pb2.ImportPairChunk | None = first
            while message is not None:
                stream.check(message)
                yield ImportChunk(
                    entities=[_entity_row(m) for m in message.entities],
                    timelines=[_timeline_row(m) for m in message.timelines],
                    nodes=[_node_row(m) for m in message.nodes],
                    edges=[_edge_row(m) for m in message.edges],
                )
                message = await anext(messages, None)

        result = await self.rights.import_pair(Pair.of_proto(pair), import_chunks())

        def mapped(ids: Mapping[int, int]) -> list[lzg_pb2.IdMapping]:
            return [lzg_pb2.IdMapping(old_id=old, new_id=new) for old, new in ids.items()]

        return lzg_pb2.ImportPairResponse(
            entity_ids=mapped(result.entity_ids),
            timeline_ids=mapped(result.timeline_ids),
            node_ids=mapped(result.node_ids),
            edges=result.edges,
        )

    async def ForgetNodes(
        self, request: lzg_pb2.ForgetNodesRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.ForgetNodesResponse:
        result = await self.rights.forget(
            Pair.of_proto(request.pair), list(request.node_ids), request.source_turn_id,
            turn=turn_of(request),
        )  # fmt: skip
        return lzg_pb2.ForgetNodesResponse(
            nodes=[to_message(lzg_pb2.ForgottenNode, n) for n in result.nodes],
            edges=result.edges,
        )

    async def CorrectNode(
        self, request: lzg_pb2.CorrectNodeRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.CorrectNodeResponse:
        target = named_target(request, "name the node by node_id or kzg_quell_key")
        result = await self.rights.correct(
            Pair.of_proto(request.pair),
            node_id=target.get("node_id", 0),
            kzg_quell_key=target.get("kzg_quell_key", ""),
            inhalt=request.inhalt,
            as_of=as_of_or_now(request.as_of if request.HasField("as_of") else None),
            turn=turn_of(request),
        )
        return to_message(lzg_pb2.CorrectNodeResponse, result, node=node_to_proto(result.node))
