"""gRPC ↔ domain translation of the LZG's rights operations (erase, export, import, forget, correct).

A mixin of :class:`~services.lzg.servicer.LzgServicer`; the behaviour is in :mod:`services.lzg.rights`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import grpc

from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.messages import to_message
from novaberg_core.model import Pair
from novaberg_core.rights import StreamPair, chunks, named_target
from novaberg_core.servicers import EraseServicer
from novaberg_core.timeutil import as_of_or_now
from services.lzg.convert import (
    edge_from_proto,
    edge_to_proto,
    entity_from_proto,
    entity_to_proto,
    node_from_proto,
    node_to_proto,
    timeline_from_proto,
    timeline_to_proto,
    turn_of,
)
from services.lzg.engine import LzgEngine
from services.lzg.rights import ImportChunk, LzgRights

__all__ = ["EXPORT_CHUNK", "LzgRightsServicer"]

EXPORT_CHUNK = 500
"""Records per export message (well under gRPC's 4 MB message limit without vectors)."""


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
        kinds: tuple[tuple[str, Sequence[Any], Callable[[Any], Any]], ...] = (
            ("entities", data.entities, entity_to_proto),
            ("timelines", data.timelines, timeline_to_proto),
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
        target = Pair.of_proto(pair)

        async def import_chunks() -> AsyncIterator[ImportChunk]:
            message: lzg_pb2.ImportPairChunk | None = first
            while message is not None:
                stream.check(message)
                yield ImportChunk(
                    entities=[entity_from_proto(target, m) for m in message.entities],
                    timelines=[timeline_from_proto(pair, m) for m in message.timelines],
                    nodes=[node_from_proto(target, m) for m in message.nodes],
                    edges=[edge_from_proto(m) for m in message.edges],
                )
                message = await anext(messages, None)

        result = await self.rights.import_pair(target, import_chunks())

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
