"""All I/O of the pipeline: its one piece of state (the previous-turn cluster) and its peers.

The pipeline owns nothing persistent but the cluster of the previous turn per pair (SPEC §1),
kept in Redis under ``pipeline:cluster:{user_id}:{character_id}``. Everything else is reached
through the KZG and LZG services' gRPC contracts.

The analyzers' registry lookups (:class:`LzgRegistry`) are remembered per pair for a short
while (:class:`RegistryCache`), because every observed turn names the same few people and places:
see the class for why that is safe and how long a change made elsewhere stays unseen.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import grpc
import redis.asyncio as aioredis
import redis.exceptions

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core import redis_client
from novaberg_core.channels import peer_channel
from novaberg_core.embedding import DEFAULT_CHARACTER_NAME, DEFAULT_USER_NAME
from novaberg_core.errors import Unavailable
from novaberg_core.lexical import DEFAULT_LANGUAGE, language_of
from novaberg_core.timeutil import to_timestamp
from novaberg_core.tls import PLAINTEXT, TlsConfig
from services.pipeline.analyzer import NEW_ENTITY_TYP
from services.pipeline.dates import DatedMention

__all__ = [
    "CLUSTER_KEY",
    "PROFILE_KEY",
    "ClusterStore",
    "LzgRegistry",
    "Peers",
    "Profile",
    "RegistryCache",
    "StoredCluster",
]

CLUSTER_KEY = "pipeline:cluster:{user_id}:{character_id}"
"""Redis key of a pair's previous-turn cluster (a JSON object, no TTL)."""
PROFILE_KEY = "pipeline:profile:{user_id}:{character_id}"
"""Redis key of a pair's profile: display names and language (SPEC §11; a JSON object, no TTL)."""


@dataclass(frozen=True, slots=True)
class Profile:
    """How a pair is talked about (SPEC §11): its speakers' display names and its language."""

    user_name: str = DEFAULT_USER_NAME
    character_name: str = DEFAULT_CHARACTER_NAME
    sprache: str = DEFAULT_LANGUAGE

    def speaker(self, beobachter: int) -> str:
        """The display name of the turn's speaker (user or character)."""
        return self.user_name if beobachter == common_pb2.BEOBACHTER_USER else self.character_name

    def merged(self, given: common_pb2.PairProfile) -> Profile:
        """This profile with the fields a caller gave (empty fields keep the stored value)."""
        return Profile(
            user_name=given.user_name.strip() or self.user_name,
            character_name=given.character_name.strip() or self.character_name,
            sprache=language_of(given.sprache) if given.sprache else self.sprache,
        )


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

    @staticmethod
    def profile_key(pair: common_pb2.Pair) -> str:
        return PROFILE_KEY.format(user_id=pair.user_id, character_id=pair.character_id)

    async def get_with_profile(self, pair: common_pb2.Pair) -> tuple[StoredCluster | None, Profile]:
        """The previous-turn cluster and the pair's profile in one round trip (``MGET``)."""
        try:
            cluster_raw, profile_raw = await self.client.mget([self.key(pair), self.profile_key(pair)])
        except redis.exceptions.RedisError as error:
            raise Unavailable(f"Redis (pair state) failed: {error}") from error
        cluster = None if cluster_raw is None else self._parse(cluster_raw)
        return cluster, self._profile(profile_raw)

    async def profile(self, pair: common_pb2.Pair) -> Profile:
        try:
            raw = await self.client.get(self.profile_key(pair))
        except redis.exceptions.RedisError as error:
            raise Unavailable(f"Redis (pair profile) failed: {error}") from error
        return self._profile(raw)

    async def put_profile(self, pair: common_pb2.Pair, profile: Profile) -> None:
        value = json.dumps(
            {"user_name": profile.user_name, "character_name": profile.character_name, "sprache": profile.sprache},
            ensure_ascii=False,
        )
        try:
            await self.client.set(self.profile_key(pair), value)
        except redis.exceptions.RedisError as error:
            raise Unavailable(f"Redis (pair profile) failed: {error}") from error

    @staticmethod
    def _profile(raw: object) -> Profile:
        """A stored profile; defaults for none, and for a value that does not parse (nothing stored breaks a pair)."""
        if not isinstance(raw, str | bytes):
            return Profile()
        try:
            data = json.loads(raw)
            return Profile(
                user_name=str(data.get("user_name") or DEFAULT_USER_NAME),
                character_name=str(data.get("character_name") or DEFAULT_CHARACTER_NAME),
                sprache=language_of(str(data.get("sprache") or DEFAULT_LANGUAGE)),
            )
        except (ValueError, AttributeError):
            return Profile()

    async def ping(self) -> None:
        try:
            await self.client.ping()
        except redis.exceptions.RedisError as error:
            raise Unavailable(f"Redis (previous-turn cluster) cannot be reached: {error}") from error

    async def close(self) -> None:
        await self.client.aclose()


def entity_key(name: str) -> str:
    """How the LZG matches a name to an entity: trimmed, case-insensitive (``casefold``)."""
    return name.strip().casefold()


_PairKey = tuple[str, str]
_TimelineKey = tuple[datetime, str]


class RegistryCache:
    """Entity and timeline ids the LZG gave this process, per pair, each for ``ttl_s`` seconds.

    Why this is safe: an id names the same entity (timeline ref) until a merge, delete, rename
    or update in the registry — Trigger 3 calls, made by a curator or a tool, never by a turn.
    A turn that uses a remembered id after such a change records what a turn written just
    before the change records: an id that promotion later drops with an ERROR if it is gone
    (SPEC §5.3, the LZG's known-entity and known-timeline checks), and KZG entries wait days for
    promotion anyway. The cache only shortens the lookup; it adds at most ``ttl_s`` to that
    window. What it remembers:

    - the ids the LZG returned, "unknown" (0) included — but an unknown name is only answered
      from here for a lookup that would not create it (a name the turn wants created is always
      asked for, so it is created or found); an entity another caller registers for a name
      remembered as unknown is seen at most ``ttl_s`` later, like any other change;
    - per pair, under the LZG's own matching key (:func:`entity_key`; a timeline by instant and
      ``praezision``), so another pair's ids are never used;
    - bounded: ``max_pairs`` pairs (least recently used forgotten first), ``max_names`` names
      and timelines per pair (over that the pair starts afresh).

    ``ttl_s = 0`` turns it off. A process learns of no change made elsewhere: restart or wait
    ``ttl_s`` after a merge to have every new turn use the merged entity (:meth:`forget` drops a
    pair at once, e.g. from a test or an admin hook).
    """

    def __init__(
        self,
        ttl_s: float = 60.0,
        *,
        max_pairs: int = 10_000,
        max_names: int = 2_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_pairs = max_pairs
        self.max_names = max_names
        self.clock = clock
        self._pairs: OrderedDict[_PairKey, dict[str | _TimelineKey, tuple[int, float]]] = OrderedDict()

    def _pair(
        self, pair: common_pb2.Pair, *, create: bool
    ) -> dict[str | _TimelineKey, tuple[int, float]] | None:
        key = (pair.user_id, pair.character_id)
        known = self._pairs.get(key)
        if known is None and create:
            known = self._pairs[key] = {}
            while len(self._pairs) > self.max_pairs:
                self._pairs.popitem(last=False)
        if known is not None:
            self._pairs.move_to_end(key)
        return known

    def _get(self, pair: common_pb2.Pair, key: str | _TimelineKey) -> int | None:
        if self.ttl_s <= 0:
            return None
        known = self._pair(pair, create=False)
        if known is None or key not in known:
            return None
        value, expires = known[key]
        if self.clock() >= expires:
            del known[key]
            return None
        return value

    def _put(self, pair: common_pb2.Pair, key: str | _TimelineKey, value: int) -> None:
        if self.ttl_s <= 0 or value < 0:
            return
        known = self._pair(pair, create=True)
        assert known is not None
        if key not in known and len(known) >= self.max_names:
            known.clear()
        known[key] = (value, self.clock() + self.ttl_s)

    def entity(self, pair: common_pb2.Pair, name: str) -> int | None:
        """The remembered id of ``name`` in ``pair`` (0: the LZG knew no such entity); None: ask the LZG."""
        return self._get(pair, entity_key(name))

    def remember_entity(self, pair: common_pb2.Pair, name: str, entity_id: int) -> None:
        self._put(pair, entity_key(name), entity_id)

    def timeline(self, pair: common_pb2.Pair, mention: DatedMention) -> int | None:
        return self._get(pair, (mention.zeitpunkt, mention.praezision))

    def remember_timeline(self, pair: common_pb2.Pair, mention: DatedMention, timeline_id: int) -> None:
        if timeline_id > 0:
            self._put(pair, (mention.zeitpunkt, mention.praezision), timeline_id)

    def forget(self, pair: common_pb2.Pair) -> None:
        """Drop everything remembered for ``pair``."""
        self._pairs.pop((pair.user_id, pair.character_id), None)


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
