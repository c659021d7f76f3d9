"""LzgService over gRPC: proto → use case → proto only (STYLE rule 2); the message conversions
are in ``convert.py``, the use cases in ``app/`` (composed by ``engine.LzgEngine``).

Errors are domain exceptions raised by the use cases; the server bootstrap maps them to status codes.

Two contract conveniences live here because they only combine engine calls:

- ``SpreadingRead.readers`` renders the memory blocks of the read in the same call (SPEC §5.9),
  every reader checked before anything is read;
- ``ReinforceUsed.answer_vector`` is the caller's embedding of ``answer_text``: checked here
  (``convert.answer_vector``: dimension, finite values; a bad one changes nothing, SPEC §10) and
  handed to the use case, which then embeds nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.errors import InvalidArgument
from novaberg_core.maintenance import scope_pairs
from novaberg_core.messages import to_message
from novaberg_core.model import Pair
from novaberg_core.pipeline_log import LogScope
from novaberg_core.servicers import ModelServicer
from novaberg_core.timeutil import from_timestamp
from services.lzg.convert import (
    answer_vector,
    edge_to_proto,
    entity_to_proto,
    erinnerungen_from_proto,
    node_to_proto,
    promotion_input,
    protokoll_to_proto,
    recall_to_proto,
    request_as_of,
    resonanz_to_proto,
    timeline_from_proto,
    timeline_to_proto,
    trigger3_to_proto,
    turn_of,
)
from services.lzg.engine import LzgEngine
from services.lzg.rights_servicer import LzgRightsServicer
from services.lzg.types import Entity

__all__ = ["LzgServicer"]

_LOG = logging.getLogger(__name__)


def _trigger3_rpc(operation: str, *ids: str) -> Callable[..., Awaitable[lzg_pb2.Trigger3Response]]:
    """An RPC whose registry change ends in Trigger 3 (SPEC §5.5): the engine's ``operation`` with
    the request's pair, its fields ``ids`` and its turn (not its span: the record never carried it);
    the counts as the response."""

    async def rpc(
        self: LzgServicer, request: Any, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.Trigger3Response:
        change = getattr(self.engine, operation)
        values = [getattr(request, name) for name in ids]
        turn = LogScope(request.turn.turn_id)
        return trigger3_to_proto(await change(Pair.of_proto(request.pair), *values, turn=turn))

    rpc.__name__ = rpc.__qualname__ = "".join(part.title() for part in operation.split("_"))
    return rpc


class LzgServicer(ModelServicer, LzgRightsServicer, lzg_pb2_grpc.LzgServiceServicer):  # type: ignore[misc]
    """Translates each RPC to one engine call (SpreadingRead with readers: the read and its renders)."""

    MergeEntities = _trigger3_rpc("merge_entities", "source_id", "target_id")
    DeleteEntity = _trigger3_rpc("delete_entity", "entity_id")
    DeleteTimeline = _trigger3_rpc("delete_timeline", "timeline_id")

    def __init__(self, engine: LzgEngine) -> None:
        super().__init__(engine.provider.stamp)
        self.engine = engine

    async def Promote(
        self, request: lzg_pb2.PromoteRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.PromoteResponse:
        result = await self.engine.promote(promotion_input(request))
        return to_message(lzg_pb2.PromoteResponse, result, outcome=result.outcome.to_proto())

    async def SpreadingRead(
        self, request: lzg_pb2.SpreadingReadRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.SpreadingReadResponse:
        which = request.WhichOneof("query")
        if which == "query_vector":
            self.check_model("query_vector", request.query_vector.model_id)
        result = await self.engine.spreading_read(
            Pair.of_proto(request.pair),
            query_values=list(request.query_vector.values) if which == "query_vector" else None,
            query_text=request.query_text if which == "query_text" else None,
            cluster=request.cluster,
            nova_emotion=request.nova_emotion,
            turn=turn_of(request),
            readers=list(dict.fromkeys(request.readers)),
            user_name=request.user_name,
            character_name=request.character_name,
            as_of=request_as_of(request) if request.HasField("as_of") else None,
            lexical_text=request.lexical_text,
            sprache=request.sprache,
            question_entity_ids=list(request.question_entity_ids),
            zeitfenster=[(from_timestamp(z.zeitpunkt), z.praezision) for z in request.zeitfenster],
            recall_k=request.recall_k,
        )
        response = lzg_pb2.SpreadingReadResponse(
            lzg_resonanz=resonanz_to_proto(result.resonanz),
            pool_size=result.pool_size,
            memory_blocks=result.memory_blocks,
            recall=[recall_to_proto(c) for c in result.recall],
        )
        if result.query_terms is not None:
            response.query_terms.extend(
                lzg_pb2.TermGewicht(term=t, idf=i)
                for t, i in zip(result.query_terms.terms, result.query_terms.idf, strict=True)
            )
            response.mittlere_laenge = result.query_terms.average_length
        return response

    async def RenderMemoryBlock(
        self, request: lzg_pb2.RenderMemoryBlockRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.RenderMemoryBlockResponse:
        text = await self.engine.render(
            Pair.of_proto(request.pair),
            erinnerungen_from_proto(request.lzg_resonanz),
            request.reader,
            user_name=request.user_name,
            character_name=request.character_name,
        )
        return lzg_pb2.RenderMemoryBlockResponse(text=text)

    async def CheckNodes(
        self, request: lzg_pb2.CheckNodesRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.CheckNodesResponse:
        missing = await self.engine.missing_nodes(
            Pair.of_proto(request.pair), list(dict.fromkeys(request.node_ids))
        )
        return lzg_pb2.CheckNodesResponse(missing=missing)

    async def ReinforceUsed(
        self, request: lzg_pb2.ReinforceUsedRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.ReinforceUsedResponse:
        if request.HasField("answer_vector"):
            self.check_model("answer_vector", request.answer_vector.model_id)
        given = (
            answer_vector(
                request.answer_vector.values, self.engine.provider.dimension, self.engine.provider.model_id
            )
            if request.HasField("answer_vector")
            else None
        )
        record = await self.engine.reinforce_used(
            Pair.of_proto(request.pair),
            request.answer_text,
            list(request.served_node_ids),
            as_of=request_as_of(request),
            turn=turn_of(request),
            answer_vector=given,
        )
        return lzg_pb2.ReinforceUsedResponse(protokoll=protokoll_to_proto(record))

    async def RunDecay(
        self, request: lzg_pb2.RunDecayRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.RunDecayResponse:
        decayed, deactivated, duration_ms = await self.engine.run_decay(
            request_as_of(request), pairs=scope_pairs(request.pairs), turn=turn_of(request)
        )
        return lzg_pb2.RunDecayResponse(
            nodes_decayed=decayed, nodes_deactivated=deactivated, duration_ms=duration_ms
        )

    async def GetNode(
        self, request: lzg_pb2.GetNodeRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.GetNodeResponse:
        node = await self.engine.node(Pair.of_proto(request.pair), request.node_id)
        return lzg_pb2.GetNodeResponse(node=node_to_proto(node, request.include_embedding))

    async def ListNodes(
        self, request: lzg_pb2.ListNodesRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.ListNodesResponse:
        nodes = await self.engine.nodes(Pair.of_proto(request.pair), request.limit, request.include_inactive)
        return lzg_pb2.ListNodesResponse(nodes=[node_to_proto(n) for n in nodes])

    async def ListEdges(
        self, request: lzg_pb2.ListEdgesRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.ListEdgesResponse:
        edges = await self.engine.edges(Pair.of_proto(request.pair), request.node_id, request.limit)
        return lzg_pb2.ListEdgesResponse(edges=[edge_to_proto(e) for e in edges])

    async def GetPairStats(
        self, request: lzg_pb2.GetPairStatsRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.GetPairStatsResponse:
        stats, model_id = await self.engine.pair_stats(Pair.of_proto(request.pair))
        return to_message(lzg_pb2.GetPairStatsResponse, stats, model_id=model_id)

    async def UpsertEntity(
        self, request: lzg_pb2.UpsertEntityRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.UpsertEntityResponse:
        pair, e = Pair.of_proto(request.pair), request.entity
        entity, created = await self.engine.upsert_entity(
            pair, Entity(e.id, pair, e.name, e.typ, tuple(e.aliases))
        )
        return lzg_pb2.UpsertEntityResponse(entity=entity_to_proto(entity), created=created)

    async def ResolveEntities(
        self, request: lzg_pb2.ResolveEntitiesRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.ResolveEntitiesResponse:
        ids = await self.engine.resolve_entities(
            Pair.of_proto(request.pair), list(request.names), request.create_missing, request.typ_for_new
        )
        return lzg_pb2.ResolveEntitiesResponse(entitaet_ids=ids)

    async def ListEntities(
        self, request: lzg_pb2.ListEntitiesRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.ListEntitiesResponse:
        entities = await self.engine.entities(Pair.of_proto(request.pair), list(request.ids))
        return lzg_pb2.ListEntitiesResponse(entities=[entity_to_proto(e) for e in entities])

    async def UpsertTimeline(
        self, request: lzg_pb2.UpsertTimelineRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.UpsertTimelineResponse:
        timeline, created = await self.engine.upsert_timeline(
            Pair.of_proto(request.pair), timeline_from_proto(request.pair, request.timeline)
        )
        return lzg_pb2.UpsertTimelineResponse(timeline=timeline_to_proto(timeline), created=created)

    async def UpdateTimeline(
        self, request: lzg_pb2.UpdateTimelineRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.Trigger3Response:
        timeline = timeline_from_proto(request.pair, request.timeline)
        _, result = await self.engine.update_timeline(
            Pair.of_proto(request.pair), timeline, turn=LogScope(request.turn.turn_id)
        )
        return trigger3_to_proto(result)

    async def ListTimelines(
        self, request: lzg_pb2.ListTimelinesRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.ListTimelinesResponse:
        if request.HasField("zeitpunkt") != bool(request.praezision):
            raise InvalidArgument("zeitpunkt and praezision go together: set both, or neither")
        at = (
            (from_timestamp(request.zeitpunkt), request.praezision) if request.HasField("zeitpunkt") else None
        )
        timelines = await self.engine.timelines(Pair.of_proto(request.pair), list(request.ids), at)
        listed = []
        for timeline in timelines:
            try:
                listed.append(timeline_to_proto(timeline))
            except (ValueError, OverflowError) as error:  # stored before the contract bounded times
                _LOG.error("timeline %d of %s:%s cannot be listed (%s); left out", timeline.id,
                           request.pair.user_id, request.pair.character_id, error)  # fmt: skip
        return lzg_pb2.ListTimelinesResponse(timelines=listed)
