"""All I/O of the pipeline: its one piece of state (the previous-turn cluster) and its peers.

The pipeline owns nothing persistent but the cluster of the previous turn per pair (SPEC §1),
kept in Redis under ``pipeline:cluster:{user_id}:{character_id}``. Everything else is reached
through the KZG and LZG services' gRPC contracts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import grpc
import redis.asyncio as aioredis
import redis.exceptions

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.errors import Unavailable
from novaberg_core.server import insecure_channel
from novaberg_core.timeutil import from_timestamp, to_timestamp
from services.pipeline.analyzer import NEW_ENTITY_TYP
from services.pipeline.text_rules import DatedMention

__all__ = ["CLUSTER_KEY", "ClusterStore", "LzgRegistry", "Peers", "StoredCluster"]

CLUSTER_KEY = "pipeline:cluster:{user_id}:{character_id}"
"""Redis key of a pair's previous-turn cluster (a JSON object, no TTL)."""


@dataclass(frozen=True, slots=True)
class StoredCluster:
    """The persisted cluster of a pair's previous turn and where it came from."""

    cluster: str
    turn_id: str
    gesetzt_am: str


class ClusterStore:
    """The previous-turn cluster per pair in Redis (SPEC §6: survives restarts; none → ``paradox``)."""

    def __init__(self, client: aioredis.Redis) -> None:
        self.client = client

    @classmethod
    def from_url(cls, url: str) -> ClusterStore:
        return cls(aioredis.from_url(url, decode_responses=True))

    @staticmethod
    def key(pair: common_pb2.Pair) -> str:
        return CLUSTER_KEY.format(user_id=pair.user_id, character_id=pair.character_id)

    async def get(self, pair: common_pb2.Pair) -> StoredCluster | None:
        try:
            raw = await self.client.get(self.key(pair))
        except redis.exceptions.RedisError as error:
            raise Unavailable(f"Redis (previous-turn cluster) failed: {error}") from error
        if raw is None:
            return None
        return self._parse(raw)

    @staticmethod
    def _parse(raw: object) -> StoredCluster:
        if not isinstance(raw, str | bytes):
            raise Unavailable(f"Redis (previous-turn cluster) answered {raw!r}, not a JSON text")
        data = json.loads(raw)
        return StoredCluster(
            cluster=str(data["cluster"]), turn_id=str(data.get("turn_id", "")), gesetzt_am=str(data.get("gesetzt_am", ""))
        )

    async def put(
        self, pair: common_pb2.Pair, cluster: str, *, turn_id: str, as_of: datetime
    ) -> StoredCluster | None:
        """Store this turn's cluster; returns the one it replaced (one round trip: ``SET … GET``)."""
        value = json.dumps({"cluster": cluster, "turn_id": turn_id, "gesetzt_am": as_of.isoformat()})
        try:
            previous = await self.client.set(self.key(pair), value, get=True)
        except redis.exceptions.RedisError as error:
            raise Unavailable(f"Redis (previous-turn cluster) failed: {error}") from error
        return None if previous is None else self._parse(previous)

    async def ping(self) -> None:
        try:
            await self.client.ping()
        except redis.exceptions.RedisError as error:
            raise Unavailable(f"Redis (previous-turn cluster) cannot be reached: {error}") from error

    async def close(self) -> None:
        await self.client.aclose()


class LzgRegistry:
    """The analyzers' :class:`~services.pipeline.analyzer.EntityRegistry` over the LZG service."""

    def __init__(self, stub: lzg_pb2_grpc.LzgServiceStub, timeout_s: float) -> None:
        self.stub = stub
        self.timeout_s = timeout_s

    async def resolve_entities(
        self, pair: common_pb2.Pair, names: Sequence[str], *, create_missing: bool
    ) -> list[int]:
        response = await self.stub.ResolveEntities(
            lzg_pb2.ResolveEntitiesRequest(
                pair=pair, names=list(names), create_missing=create_missing, typ_for_new=NEW_ENTITY_TYP
            ),
            timeout=self.timeout_s, wait_for_ready=True,
        )
        ids = list(response.entitaet_ids)
        if len(ids) != len(names):
            raise Unavailable(f"LZG ResolveEntities answered {len(ids)} ids for {len(names)} names")
        return ids

    async def timeline_for(
        self, pair: common_pb2.Pair, mention: DatedMention, *, titel: str, themen: Sequence[str]
    ) -> int:
        """Reuses the pair's ref at the same instant and precision, else creates one."""
        listed = await self.stub.ListTimelines(lzg_pb2.ListTimelinesRequest(pair=pair), timeout=self.timeout_s, wait_for_ready=True)
        for timeline in listed.timelines:
            if timeline.praezision == mention.praezision and from_timestamp(timeline.zeitpunkt) == mention.zeitpunkt:
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
        return int(created.timeline.id)


@dataclass(eq=False)
class Peers:
    """Channels and stubs to the KZG and LZG services."""

    kzg_channel: grpc.aio.Channel
    lzg_channel: grpc.aio.Channel
    kzg: kzg_pb2_grpc.KzgServiceStub
    lzg: lzg_pb2_grpc.LzgServiceStub

    @classmethod
    def connect(cls, kzg_addr: str, lzg_addr: str) -> Peers:
        kzg_channel = insecure_channel(kzg_addr)
        lzg_channel = insecure_channel(lzg_addr)
        return cls(
            kzg_channel=kzg_channel,
            lzg_channel=lzg_channel,
            kzg=kzg_pb2_grpc.KzgServiceStub(kzg_channel),
            lzg=lzg_pb2_grpc.LzgServiceStub(lzg_channel),
        )

    async def close(self) -> None:
        await self.kzg_channel.close()
        await self.lzg_channel.close()
