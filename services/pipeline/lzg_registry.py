"""The analyzers' entity and timeline registry over the LZG service (SPEC §5.1, §7).

Its calls go through :class:`~novaberg_core.peers.LzgPeer` (written once in ``novaberg_core.peers``,
shared with Pixie and the pipeline's use cases): with the peer deadline, waiting for the channel to
be ready, and a refusal turned into the domain error naming the peer and the method.

The lookups are remembered per pair for a short while
(:class:`~services.pipeline.registry_cache.RegistryCache`), because every observed turn names the
same few people and places.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.errors import Unavailable
from novaberg_core.timeutil import to_timestamp
from services.pipeline.analyzer import NEW_ENTITY_TYP
from services.pipeline.dates import DatedMention
from services.pipeline.deadline import DOING_WITHOUT, PeerSilence, answer_or_none
from services.pipeline.registry_cache import RegistryCache

__all__ = ["LzgRegistry"]

_T = TypeVar("_T")


class LzgRegistry:
    """The analyzers' :class:`~services.pipeline.analyzer.EntityRegistry` over the LZG service.

    Ids the LZG gave are remembered in ``cache`` (:class:`RegistryCache`); only names and dates
    not remembered are asked for, so a turn naming known people costs no round trip.
    """

    def __init__(
        self,
        stub: lzg_pb2_grpc.LzgServiceStub,
        timeout_s: float,
        cache: RegistryCache | None = None,
        silence: PeerSilence | None = None,
    ) -> None:
        self.stub = stub
        self.timeout_s = timeout_s
        self.cache = cache if cache is not None else RegistryCache(ttl_s=0.0)
        self.silence = silence

    async def resolve_entities(
        self, pair: common_pb2.Pair, names: Sequence[str], *, create_missing: bool
    ) -> list[int]:
        known = {name: self.cache.entity(pair, name) for name in names}
        if create_missing:  # a name to create is never answered "unknown" from memory
            known = {name: found or None for name, found in known.items()}
        ask = list(dict.fromkeys(name for name, found in known.items() if found is None))
        if ask:
            request = lzg_pb2.ResolveEntitiesRequest(
                pair=pair, names=ask, create_missing=create_missing, typ_for_new=NEW_ENTITY_TYP
            )
            response = await self._answer("ResolveEntities", lambda: self.stub.ResolveEntities(
                request, timeout=self.timeout_s, wait_for_ready=True
            ))  # fmt: skip
            if response is None:  # the turn goes without (DOING_WITHOUT): its names stay unresolved
                return [known[name] or 0 for name in names]
            ids = list(response.entitaet_ids)
            if len(ids) != len(ask):
                raise Unavailable(f"LZG ResolveEntities answered {len(ids)} ids for {len(ask)} names")
            for name, entity_id in zip(ask, ids, strict=True):
                known[name] = entity_id
                self.cache.remember_entity(pair, name, entity_id)
        return [known[name] or 0 for name in names]

    async def _answer(self, method: str, call: Callable[[], Awaitable[_T]]) -> _T | None:
        """``call()``'s answer; None when the LZG gives none and the turn can do without (:data:`DOING_WITHOUT`)."""
        missing = DOING_WITHOUT.get()
        if missing is None:
            return await call()
        return await answer_or_none("LZG", method, call, missing, self.silence)

    async def timeline_for(
        self, pair: common_pb2.Pair, mention: DatedMention, *, titel: str, themen: Sequence[str]
    ) -> int | None:
        """Reuses the pair's ref at the same instant and precision, else creates one (None: the LZG
        gave no answer and the turn goes without, :data:`DOING_WITHOUT`)."""
        remembered = self.cache.timeline(pair, mention)
        if remembered is not None:
            return remembered
        return await self._answer("ListTimelines/UpsertTimeline", lambda: self._timeline(pair, mention, titel, themen))

    async def _timeline(self, pair: common_pb2.Pair, mention: DatedMention, titel: str, themen: Sequence[str]) -> int:
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
