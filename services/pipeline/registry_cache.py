"""The analyzers' registry lookups remembered per pair for a short while (:class:`RegistryCache`).

Every observed turn names the same few people and places, so the ids the LZG registry gave
are kept in this process: see the class for why that is safe and how long a change made
elsewhere stays unseen.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime

from novaberg.common.v1 import common_pb2
from services.pipeline.dates import DatedMention

__all__ = ["RegistryCache", "entity_key"]


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

