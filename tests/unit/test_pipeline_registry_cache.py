"""The analyzers' registry lookups remembered per pair for a while (services.pipeline.registry_cache.RegistryCache)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.timeutil import to_timestamp
from services.pipeline.dates import DatedMention
from services.pipeline.lzg_registry import LzgRegistry
from services.pipeline.registry_cache import RegistryCache

A = common_pb2.Pair(user_id="meister", character_id="nova")
B = common_pb2.Pair(user_id="gast", character_id="nova")
MONDAY = DatedMention(datetime(2026, 6, 1, tzinfo=UTC), "tag", "heute")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeLzg:
    """The LZG registry: names (case-insensitive) → ids per pair; records every request."""

    def __init__(self) -> None:
        self.entities: dict[tuple[str, str], int] = {("meister", "anna"): 7, ("gast", "anna"): 9}
        self.timelines: list[lzg_pb2.Timeline] = []
        self.calls: list[tuple[str, Any]] = []

    async def ResolveEntities(self, request: Any, **_: Any) -> lzg_pb2.ResolveEntitiesResponse:
        self.calls.append(("ResolveEntities", request))
        ids = []
        for name in request.names:
            key = (request.pair.user_id, name.strip().casefold())
            if key not in self.entities and request.create_missing:
                self.entities[key] = 100 + len(self.entities)
            ids.append(self.entities.get(key, 0))
        return lzg_pb2.ResolveEntitiesResponse(entitaet_ids=ids)

    async def ListTimelines(self, request: Any, **_: Any) -> lzg_pb2.ListTimelinesResponse:
        self.calls.append(("ListTimelines", request))
        matching = [t for t in self.timelines
                    if not request.HasField("zeitpunkt")
                    or (t.zeitpunkt == request.zeitpunkt and t.praezision == request.praezision)]  # fmt: skip
        return lzg_pb2.ListTimelinesResponse(timelines=matching)

    async def UpsertTimeline(self, request: Any, **_: Any) -> lzg_pb2.UpsertTimelineResponse:
        self.calls.append(("UpsertTimeline", request))
        timeline = lzg_pb2.Timeline(id=50 + len(self.timelines))
        timeline.MergeFrom(request.timeline)
        self.timelines.append(timeline)
        return lzg_pb2.UpsertTimelineResponse(timeline=timeline, created=True)

    def asked(self, rpc: str = "ResolveEntities") -> list[list[str]]:
        return [list(r.names) if rpc == "ResolveEntities" else [] for name, r in self.calls if name == rpc]


def registry(ttl_s: float = 60.0, **bounds: int) -> tuple[LzgRegistry, FakeLzg, Clock]:
    lzg, clock = FakeLzg(), Clock()
    return LzgRegistry(lzg, 5.0, RegistryCache(ttl_s, clock=clock, **bounds)), lzg, clock  # type: ignore[arg-type]


async def test_a_resolved_name_is_answered_from_memory_in_its_pair_only() -> None:
    reg, lzg, _ = registry()
    assert await reg.resolve_entities(A, ["Anna"], create_missing=False) == [7]
    assert await reg.resolve_entities(A, [" anna ", "ANNA"], create_missing=True) == [7, 7]
    assert lzg.asked() == [["Anna"]]
    assert await reg.resolve_entities(B, ["Anna"], create_missing=False) == [9]  # another pair asks itself
    assert lzg.asked() == [["Anna"], ["Anna"]]


async def test_only_names_not_remembered_are_asked_for_in_request_order() -> None:
    reg, lzg, _ = registry()
    await reg.resolve_entities(A, ["Anna"], create_missing=False)
    assert await reg.resolve_entities(A, ["Tom", "Anna", "Lena", "Tom"], create_missing=True) == [
        102,
        7,
        103,
        102,
    ]
    assert lzg.asked() == [["Anna"], ["Tom", "Lena"]]


async def test_unknown_is_remembered_but_never_stops_a_creation() -> None:
    reg, lzg, _ = registry()
    assert await reg.resolve_entities(A, ["Zahnarzt"], create_missing=False) == [0]
    assert await reg.resolve_entities(A, ["Zahnarzt"], create_missing=False) == [0]
    assert lzg.asked() == [["Zahnarzt"]]  # "unknown" answered from memory for a plain lookup
    created = await reg.resolve_entities(A, ["Zahnarzt"], create_missing=True)
    assert created == [102] and lzg.asked() == [["Zahnarzt"], ["Zahnarzt"]]
    assert await reg.resolve_entities(A, ["Zahnarzt"], create_missing=False) == [102]
    assert len(lzg.asked()) == 2


async def test_remembered_ids_expire_after_the_ttl() -> None:
    reg, lzg, clock = registry(ttl_s=60.0)
    await reg.resolve_entities(A, ["Anna"], create_missing=False)
    lzg.entities[("meister", "anna")] = 8  # merged elsewhere: "Anna" now names entity 8
    clock.now += 59.9
    assert await reg.resolve_entities(A, ["Anna"], create_missing=False) == [7]
    clock.now += 0.1
    assert await reg.resolve_entities(A, ["Anna"], create_missing=False) == [8]
    assert len(lzg.asked()) == 2


async def test_ttl_zero_asks_every_time_and_forget_drops_a_pair() -> None:
    reg, lzg, _ = registry(ttl_s=0.0)
    for _ in range(3):
        assert await reg.resolve_entities(A, ["Anna"], create_missing=False) == [7]
    assert len(lzg.asked()) == 3
    reg, lzg, _ = registry()
    await reg.resolve_entities(A, ["Anna"], create_missing=False)
    reg.cache.forget(A)
    await reg.resolve_entities(A, ["Anna"], create_missing=False)
    assert len(lzg.asked()) == 2


async def test_bounds_forget_the_least_recently_used_pair_and_restart_a_full_pair() -> None:
    reg, lzg, _ = registry(max_pairs=1, max_names=2)
    await reg.resolve_entities(A, ["Anna", "Tom"], create_missing=True)
    await reg.resolve_entities(A, ["Lena"], create_missing=True)  # a third name: A starts afresh
    await reg.resolve_entities(A, ["Lena"], create_missing=False)
    await reg.resolve_entities(A, ["Anna"], create_missing=False)
    assert lzg.asked() == [["Anna", "Tom"], ["Lena"], ["Anna"]]
    await reg.resolve_entities(B, ["Anna"], create_missing=False)  # one pair only: A is forgotten
    await reg.resolve_entities(A, ["Lena"], create_missing=False)
    assert lzg.asked()[-2:] == [["Anna"], ["Lena"]]


async def test_a_timeline_ref_is_looked_up_or_created_once_per_instant_and_precision() -> None:
    reg, lzg, _ = registry()
    first = await reg.timeline_for(A, MONDAY, titel="heute", themen=["arzt"])
    again = await reg.timeline_for(A, MONDAY, titel="heute", themen=["arzt"])
    assert first == again == 50
    assert [name for name, _ in lzg.calls] == ["ListTimelines", "UpsertTimeline"]
    week = DatedMention(MONDAY.zeitpunkt, "woche", "diese Woche")
    lzg.timelines.append(lzg_pb2.Timeline(id=61, zeitpunkt=to_timestamp(week.zeitpunkt), praezision="woche"))
    assert await reg.timeline_for(A, week, titel="", themen=[]) == 61  # found by listing, then remembered
    assert await reg.timeline_for(A, week, titel="", themen=[]) == 61
    assert [name for name, _ in lzg.calls] == ["ListTimelines", "UpsertTimeline", "ListTimelines"]
    assert await reg.timeline_for(B, MONDAY, titel="", themen=[]) == 50  # B asks for itself
    assert [name for name, _ in lzg.calls][-1] == "ListTimelines"
