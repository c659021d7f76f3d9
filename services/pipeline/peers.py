"""The pipeline's gRPC peers: channels to the KZG and LZG services, their typed clients, the registry.

Every call the use cases make goes through :class:`KzgPeer` / :class:`LzgPeer`: with the peer
deadline, waiting for the channel to be ready, and a refusal turned into the domain error naming
the peer and the method (:func:`novaberg_core.peers.call_peer`). A method hands back the call
itself (no coroutine of its own), so the client costs a use case nothing per call.

The analyzers' registry lookups (:class:`LzgRegistry`) are remembered per pair for a short while
(:class:`~services.pipeline.registry_cache.RegistryCache`), because every observed turn names the
same few people and places.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass

import grpc

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.channels import peer_channel
from novaberg_core.errors import Unavailable
from novaberg_core.peers import call_peer
from novaberg_core.timeutil import to_timestamp
from novaberg_core.tls import PLAINTEXT, TlsConfig
from services.pipeline.analyzer import NEW_ENTITY_TYP
from services.pipeline.dates import DatedMention
from services.pipeline.registry_cache import RegistryCache

__all__ = ["KzgPeer", "LzgPeer", "LzgRegistry", "Peers"]

_GET_MODEL = common_pb2.GetModelRequest()


class KzgPeer:
    """The KZG service's calls the pipeline makes (SPEC §3, §4, §7), each with ``timeout_s`` unless given."""

    def __init__(self, kzg: kzg_pb2_grpc.KzgServiceStub, timeout_s: float) -> None:
        self.kzg = kzg
        self.timeout_s = timeout_s

    def get_model(self) -> Awaitable[common_pb2.ModelInfo]:
        return call_peer("KZG", "GetModel", self.kzg.GetModel(_GET_MODEL, timeout=self.timeout_s, wait_for_ready=True))

    def append_session_turn(self, request: kzg_pb2.AppendSessionTurnRequest) -> Awaitable[kzg_pb2.AppendSessionTurnResponse]:
        call = self.kzg.AppendSessionTurn(request, timeout=self.timeout_s, wait_for_ready=True)
        return call_peer("KZG", "AppendSessionTurn", call)

    def store_entry(self, request: kzg_pb2.StoreEntryRequest) -> Awaitable[kzg_pb2.StoreEntryResponse]:
        return call_peer("KZG", "StoreEntry", self.kzg.StoreEntry(request, timeout=self.timeout_s, wait_for_ready=True))

    def append_session_turns(
        self, request: kzg_pb2.AppendSessionTurnsRequest, timeout_s: float
    ) -> Awaitable[kzg_pb2.AppendSessionTurnsResponse]:
        call = self.kzg.AppendSessionTurns(request, timeout=timeout_s, wait_for_ready=True)
        return call_peer("KZG", "AppendSessionTurns", call)

    def store_entries(self, request: kzg_pb2.StoreEntriesRequest, timeout_s: float) -> Awaitable[kzg_pb2.StoreEntriesResponse]:
        return call_peer("KZG", "StoreEntries", self.kzg.StoreEntries(request, timeout=timeout_s, wait_for_ready=True))

    def retrieve(self, request: kzg_pb2.RetrieveRequest) -> Awaitable[kzg_pb2.RetrieveResponse]:
        return call_peer("KZG", "Retrieve", self.kzg.Retrieve(request, timeout=self.timeout_s, wait_for_ready=True))


class LzgPeer:
    """The LZG service's calls the pipeline's steps make (SPEC §5.6, §5.8, §7, §10), each with ``timeout_s``."""

    def __init__(self, lzg: lzg_pb2_grpc.LzgServiceStub, timeout_s: float) -> None:
        self.lzg = lzg
        self.timeout_s = timeout_s

    def get_model(self) -> Awaitable[common_pb2.ModelInfo]:
        return call_peer("LZG", "GetModel", self.lzg.GetModel(_GET_MODEL, timeout=self.timeout_s, wait_for_ready=True))

    def list_entities(self, request: lzg_pb2.ListEntitiesRequest) -> Awaitable[lzg_pb2.ListEntitiesResponse]:
        call = self.lzg.ListEntities(request, timeout=self.timeout_s, wait_for_ready=True)
        return call_peer("LZG", "ListEntities", call)

    def list_timelines(self, request: lzg_pb2.ListTimelinesRequest) -> Awaitable[lzg_pb2.ListTimelinesResponse]:
        call = self.lzg.ListTimelines(request, timeout=self.timeout_s, wait_for_ready=True)
        return call_peer("LZG", "ListTimelines", call)

    def check_nodes(self, request: lzg_pb2.CheckNodesRequest) -> Awaitable[lzg_pb2.CheckNodesResponse]:
        return call_peer("LZG", "CheckNodes", self.lzg.CheckNodes(request, timeout=self.timeout_s, wait_for_ready=True))

    def spreading_read(self, request: lzg_pb2.SpreadingReadRequest) -> Awaitable[lzg_pb2.SpreadingReadResponse]:
        call = self.lzg.SpreadingRead(request, timeout=self.timeout_s, wait_for_ready=True)
        return call_peer("LZG", "SpreadingRead", call)

    def reinforce_used(self, request: lzg_pb2.ReinforceUsedRequest) -> Awaitable[lzg_pb2.ReinforceUsedResponse]:
        call = self.lzg.ReinforceUsed(request, timeout=self.timeout_s, wait_for_ready=True)
        return call_peer("LZG", "ReinforceUsed", call)


class LzgRegistry:
    """The analyzers' :class:`~services.pipeline.analyzer.EntityRegistry` over the LZG service.

    Ids the LZG gave are remembered in ``cache`` (:class:`RegistryCache`); only names and dates
    not remembered are asked for, so a turn naming known people costs no round trip.
    """

    def __init__(
        self, stub: lzg_pb2_grpc.LzgServiceStub, timeout_s: float, cache: RegistryCache | None = None
    ) -> None:
        self.stub = stub
        self.timeout_s = timeout_s
        self.cache = cache if cache is not None else RegistryCache(ttl_s=0.0)

    async def resolve_entities(
        self, pair: common_pb2.Pair, names: Sequence[str], *, create_missing: bool
    ) -> list[int]:
        known = {name: self.cache.entity(pair, name) for name in names}
        if create_missing:  # a name to create is never answered "unknown" from memory
            known = {name: found or None for name, found in known.items()}
        ask = list(dict.fromkeys(name for name, found in known.items() if found is None))
        if ask:
            response = await self.stub.ResolveEntities(
                lzg_pb2.ResolveEntitiesRequest(
                    pair=pair, names=ask, create_missing=create_missing, typ_for_new=NEW_ENTITY_TYP
                ),
                timeout=self.timeout_s, wait_for_ready=True,
            )
            ids = list(response.entitaet_ids)
            if len(ids) != len(ask):
                raise Unavailable(f"LZG ResolveEntities answered {len(ids)} ids for {len(ask)} names")
            for name, entity_id in zip(ask, ids, strict=True):
                known[name] = entity_id
                self.cache.remember_entity(pair, name, entity_id)
        return [known[name] or 0 for name in names]

    async def timeline_for(
        self, pair: common_pb2.Pair, mention: DatedMention, *, titel: str, themen: Sequence[str]
    ) -> int:
        """Reuses the pair's ref at the same instant and precision, else creates one."""
        remembered = self.cache.timeline(pair, mention)
        if remembered is not None:
            return remembered
        listed = await self.stub.ListTimelines(
            lzg_pb2.ListTimelinesRequest(
                pair=pair, zeitpunkt=to_timestamp(mention.zeitpunkt), praezision=mention.praezision
            ),
            timeout=self.timeout_s, wait_for_ready=True,
        )
        for timeline in listed.timelines:  # one indexed lookup of this instant and precision
            self.cache.remember_timeline(pair, mention, int(timeline.id))
            return int(timeline.id)
        created = await self.stub.UpsertTimeline(
            lzg_pb2.UpsertTimelineRequest(
                pair=pair,
                timeline=lzg_pb2.Timeline(
                    zeitpunkt=to_timestamp(mention.zeitpunkt),
                    praezision=mention.praezision,
                    titel=titel,
                    themen=list(themen),
                ),
            ),
            timeout=self.timeout_s, wait_for_ready=True,
        )
        self.cache.remember_timeline(pair, mention, int(created.timeline.id))
        return int(created.timeline.id)


@dataclass(eq=False)
class Peers:
    """Channels and stubs to the KZG and LZG services."""

    kzg_channel: grpc.aio.Channel
    lzg_channel: grpc.aio.Channel
    kzg: kzg_pb2_grpc.KzgServiceStub
    lzg: lzg_pb2_grpc.LzgServiceStub

    @classmethod
    def connect(cls, kzg_addr: str, lzg_addr: str, tls: TlsConfig = PLAINTEXT) -> Peers:
        kzg_channel = peer_channel(kzg_addr, tls)
        lzg_channel = peer_channel(lzg_addr, tls)
        return cls(
            kzg_channel=kzg_channel,
            lzg_channel=lzg_channel,
            kzg=kzg_pb2_grpc.KzgServiceStub(kzg_channel),
            lzg=lzg_pb2_grpc.LzgServiceStub(lzg_channel),
        )

    async def close(self) -> None:
        await self.kzg_channel.close()
        await self.lzg_channel.close()
