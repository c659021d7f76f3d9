"""The pipeline's one piece of state in Redis: a pair's previous-turn cluster and its profile.

The pipeline owns nothing persistent but the cluster of the previous turn per pair (SPEC §1),
kept under ``pipeline:cluster:{user_id}:{character_id}``, and how the pair is talked about
(``pipeline:profile:…``). Everything else is reached through the KZG and LZG services' gRPC
contracts (:class:`novaberg_core.peers.KzgPeer`, :class:`~novaberg_core.peers.LzgPeer`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import redis.asyncio as aioredis
import redis.exceptions

from novaberg.common.v1 import common_pb2
from novaberg_core import redis_client
from novaberg_core.errors import Unavailable
from novaberg_core.model import Profile
from novaberg_core.pair_keys import pipeline_cluster_key, pipeline_profile_key

__all__ = ["ClusterStore", "StoredCluster"]


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
        return cls(redis_client.connect(url, decode_responses=True))

    async def get(self, pair: common_pb2.Pair) -> StoredCluster | None:
        try:
            raw = await self.client.get(pipeline_cluster_key(pair))
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
            previous = await self.client.set(pipeline_cluster_key(pair), value, get=True)
        except redis.exceptions.RedisError as error:
            raise Unavailable(f"Redis (previous-turn cluster) failed: {error}") from error
        return None if previous is None else self._parse(previous)

    async def get_with_profile(self, pair: common_pb2.Pair) -> tuple[StoredCluster | None, Profile]:
        """The previous-turn cluster and the pair's profile in one round trip (``MGET``)."""
        try:
            cluster_raw, profile_raw = await self.client.mget([pipeline_cluster_key(pair), pipeline_profile_key(pair)])
        except redis.exceptions.RedisError as error:
            raise Unavailable(f"Redis (pair state) failed: {error}") from error
        cluster = None if cluster_raw is None else self._parse(cluster_raw)
        return cluster, self._profile(profile_raw)

    async def profile(self, pair: common_pb2.Pair) -> Profile:
        try:
            raw = await self.client.get(pipeline_profile_key(pair))
        except redis.exceptions.RedisError as error:
            raise Unavailable(f"Redis (pair profile) failed: {error}") from error
        return self._profile(raw)

    async def put_profile(self, pair: common_pb2.Pair, profile: Profile) -> None:
        try:
            await self.client.set(pipeline_profile_key(pair), profile.to_json())
        except redis.exceptions.RedisError as error:
            raise Unavailable(f"Redis (pair profile) failed: {error}") from error

    @staticmethod
    def _profile(raw: object) -> Profile:
        """A stored profile; the defaults for none, and for a value that does not parse (nothing stored breaks a pair)."""
        return Profile.from_json(raw) or Profile()

    async def ping(self) -> None:
        try:
            await self.client.ping()
        except redis.exceptions.RedisError as error:
            raise Unavailable(f"Redis (previous-turn cluster) cannot be reached: {error}") from error

    async def close(self) -> None:
        await self.client.aclose()

