"""KZG write path against the embedded Redis (SPEC §4.1–§4.4, §4.6)."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np
import pytest

from novaberg_core.errors import AlreadyExists, InvalidArgument
from novaberg_core.model import Ei, Magnets
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from services.kzg.domain import (
    KZG_SALIENZ_HIGH,
    KZG_TTL_HIGH_SEKUNDEN,
    KZG_TTL_LOW_SEKUNDEN,
    KZG_TTL_MID_SEKUNDEN,
    Tier,
    salienz_berechnen,
)
from services.kzg.memory import KzgMemory
from services.kzg.store import PROMOTION_STREAM, KzgStore, hash_dirty_key, pair_prefix
from services.kzg.types import EntryInput, Pair
from tests.integration.kzg.conftest import OTHER_PAIR, PAIR, entry, unit_vector
from tests.redis_values import as_bytes, bytes_hash, bytes_stream

FIELDS_OF_SPEC_4_1 = {
    "inhalt", "themen", "salienz", "salienz_eingang", "salienz_eingang_herkunft", "haeufigkeit",
    "gedaechtnistyp", "dimension", "intentionen", "emotion", "modus", "arousal", "emotions_vektor",
    "sprach_stil", "beziehungs_dynamik", "tone", "user_id", "character_id", "beobachter",
    "entitaet_ids", "timeline_id", "embedding", "erstellt_am", "turn_id",
}
NEVER_TOUCHED = ("inhalt", "embedding", "emotion", "modus", "arousal")


@pytest.fixture
def retrieval_threshold() -> float:
    """The write path never reads the retrieval threshold; these tests need no model profile."""
    return 0.5


async def _hash(kzg: KzgMemory, key: str) -> dict[str, bytes]:
    raw = bytes_hash(await kzg.store.redis.hgetall(key))
    return {k.decode(): v for k, v in raw.items()}


async def _kzg_keys(kzg: KzgMemory) -> list[str]:
    return sorted(as_bytes(k).decode() for k in await kzg.store.redis.keys(f"{pair_prefix(PAIR)}*"))


async def test_tiers_set_ttl_and_only_high_queues(kzg: KzgMemory, rng: np.random.Generator) -> None:
    low = await kzg.store_entry(entry(0.3, ("a",), embedding=unit_vector(rng)))
    mid = await kzg.store_entry(entry(0.5, ("b",), embedding=unit_vector(rng)))
    high = await kzg.store_entry(entry(0.7, ("c",), embedding=unit_vector(rng), turn_id="turn-7"))
    below = await kzg.store_entry(entry(0.29999, ("d",), embedding=unit_vector(rng)))

    assert (low.tier, mid.tier, high.tier) == (Tier.MINIMUM, Tier.MID, Tier.HIGH)
    for result, ttl in ((low, KZG_TTL_LOW_SEKUNDEN), (mid, KZG_TTL_MID_SEKUNDEN), (high, KZG_TTL_HIGH_SEKUNDEN)):
        assert result.ttl_seconds == ttl
        assert ttl - 2 <= await kzg.store.redis.ttl(result.kzg_key) <= ttl
    assert not below.stored and below.kzg_key == ""
    assert len(await _kzg_keys(kzg)) == 3

    assert (low.queued_for_promotion, mid.queued_for_promotion, high.queued_for_promotion) == (False, False, True)
    jobs = bytes_stream(await kzg.store.redis.xrange(PROMOTION_STREAM))
    assert len(jobs) == 1
    fields = jobs[0][1]
    assert fields[b"kzg_key"] == high.kzg_key.encode()
    assert fields[b"ausloeser_turn_id"] == b"turn-7"
    assert (fields[b"user_id"], fields[b"character_id"]) == (PAIR.user_id.encode(), PAIR.character_id.encode())
    dirty = await kzg.store.hash_dirty(PAIR)
    assert dirty["kzg_key"] == high.kzg_key and dirty["reason"]


async def test_hash_carries_every_field_and_canon_is_enforced(
    kzg: KzgMemory, caplog: pytest.LogCaptureFixture, sink: InMemorySink
) -> None:
    caplog.set_level(logging.ERROR, logger="novaberg.kzg")
    result = await kzg.store_entry(
        entry(
            0.55, (" Garten ", "Kräuter", ""),
            inhalt="Meister pflanzt Schnittlauch.", gedaechtnistyp="episodisch", dimension="interessen",
            ei=Ei(emotion="freude", modus="Alltag", arousal=0.4, emotions_vektor="hin", sprach_stil="locker",
                  tone="warm", intentionen=("planung", "plaudern", "anweisung")),
            magnets=Magnets(entitaet_ids=(3, 1, 3, 2, 1), timeline_id=42), turn_id="turn-1", as_of=datetime.fromtimestamp(1_790_000_000.25, UTC), writer="pipeline.observe",
        )
    )
    stored = await _hash(kzg, result.kzg_key)
    assert FIELDS_OF_SPEC_4_1 <= set(stored)
    assert stored["themen"] == "Garten|Kräuter".encode()
    assert stored["salienz_eingang"] == b"0.55"
    assert stored["salienz_eingang_herkunft"] == b"gemessen"
    assert stored["haeufigkeit"] == b"1"
    assert float(stored["salienz"]) == salienz_berechnen(0.55, 1)
    assert stored["entitaet_ids"] == b"3,1,2"
    assert stored["timeline_id"] == b"42"
    assert stored["modus"] == b""
    assert stored["intentionen"] == b"planung,anweisung"
    assert stored["beziehungs_dynamik"] == b"neutral"
    assert stored["erstellt_am"] == b"1790000000.25"
    assert len(stored["embedding"]) == 384 * 4
    # The vector is the model's embedding of the KZG embed text (SPEC §2).
    expected = await kzg.provider.embed_one("Thema: Garten, Kräuter. Aussage: Meister pflanzt Schnittlauch.")
    assert np.allclose(np.frombuffer(stored["embedding"], dtype=np.float32), expected, atol=1e-6)
    assert set(result.canon_rejections) == {"modus=Alltag", "intentionen=plaudern"}
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("writer=pipeline.observe" in line and "field=modus" in line and "'Alltag'" in line for line in lines)
    assert any("writer=pipeline.observe" in line and "field=intentionen" in line and "'plaudern'" in line
               for line in lines)
    await kzg.log.flush()
    arten = [(r.node, r.art) for r in sink.records]
    assert ("kzg_speicher", "db_write") in arten and ("kzg_speicher", "switch") in arten


async def test_timeline_id_omitted_when_none(kzg: KzgMemory, rng: np.random.Generator) -> None:
    result = await kzg.store_entry(entry(0.4, embedding=unit_vector(rng)))
    assert "timeline_id" not in await _hash(kzg, result.kzg_key)


async def test_reinforcement_touches_only_same_pair_entries_sharing_a_theme(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    garten = await kzg.store_entry(entry(0.4, ("Garten",), embedding=unit_vector(rng),
                                         ei=Ei(emotion="freude", modus="alltag", arousal=0.3)))
    garten_musik = await kzg.store_entry(entry(0.6, (" garten ", "Musik"), embedding=unit_vector(rng)))
    kochen = await kzg.store_entry(entry(0.4, ("Kochen",), embedding=unit_vector(rng)))
    other_pair = await kzg.store_entry(entry(0.4, ("Garten",), pair=OTHER_PAIR, embedding=unit_vector(rng)))
    before = {r.kzg_key: await _hash(kzg, r.kzg_key) for r in (garten, garten_musik, kochen, other_pair)}

    new = await kzg.store_entry(entry(0.35, ("GARTEN", "Urlaub"), embedding=unit_vector(rng)))

    assert new.reinforced_count == 2
    after = {key: await _hash(kzg, key) for key in before}
    # garten was reinforced once already, by garten_musik's write.
    for result, score, haeufigkeit in ((garten, 0.4, 3), (garten_musik, 0.6, 2)):
        assert int(before[result.kzg_key]["haeufigkeit"]) == haeufigkeit - 1
        assert after[result.kzg_key]["haeufigkeit"] == str(haeufigkeit).encode()
        assert float(after[result.kzg_key]["salienz"]) == salienz_berechnen(score, haeufigkeit)
        for name in NEVER_TOUCHED:
            assert after[result.kzg_key].get(name) == before[result.kzg_key].get(name), name
        changed = {k for k in after[result.kzg_key] if after[result.kzg_key][k] != before[result.kzg_key].get(k)}
        # ablauf_am mirrors the TTL in the turn's own time: max(remaining, new tier), never earlier (SPEC §11).
        assert changed - {"ablauf_am"} == {"haeufigkeit", "salienz"}
        assert float(after[result.kzg_key]["ablauf_am"]) >= float(before[result.kzg_key]["ablauf_am"])
    assert after[kochen.kzg_key] == before[kochen.kzg_key]
    assert after[other_pair.kzg_key] == before[other_pair.kzg_key]
    assert (await _hash(kzg, new.kzg_key))["haeufigkeit"] == b"1"


async def test_reinforcement_ttl_is_max_of_remaining_and_new_tier(kzg: KzgMemory, rng: np.random.Generator) -> None:
    short = await kzg.store_entry(entry(0.3, ("Garten",), embedding=unit_vector(rng)))
    long = await kzg.store_entry(entry(0.3, ("Garten",), embedding=unit_vector(rng)))
    rising = await kzg.store_entry(entry(0.48, ("Garten",), embedding=unit_vector(rng)))
    redis = kzg.store.redis
    await redis.expire(short.kzg_key, 100)
    await redis.expire(long.kzg_key, 20 * 86_400)
    await redis.expire(rising.kzg_key, 5 * 86_400)
    assert await redis.hget(rising.kzg_key, "haeufigkeit") == b"1"

    await kzg.store_entry(entry(0.3, ("garten",), embedding=unit_vector(rng)))

    # 7-day tier beats 100 s remaining; 20 days remaining beat the 7-day tier.
    assert KZG_TTL_LOW_SEKUNDEN - 2 <= await redis.ttl(short.kzg_key) <= KZG_TTL_LOW_SEKUNDEN
    assert 20 * 86_400 - 2 <= await redis.ttl(long.kzg_key) <= 20 * 86_400
    # 0.48 + 0.03 = 0.51 crosses MID: 14 days beat 5 days remaining.
    assert KZG_TTL_MID_SEKUNDEN - 2 <= await redis.ttl(rising.kzg_key) <= KZG_TTL_MID_SEKUNDEN


async def test_crossing_high_by_reinforcement_queues_once(kzg: KzgMemory, rng: np.random.Generator) -> None:
    target = await kzg.store_entry(entry(0.5, ("Schach",), embedding=unit_vector(rng), turn_id="turn-origin"))
    queued = []
    for _ in range(8):
        result = await kzg.store_entry(entry(0.3, ("schach",), embedding=unit_vector(rng)))
        queued.append(result.reinforced_queued_count)
        # The earlier 0.3 writers are reinforced too; they stay far below HIGH here.
    stored = await _hash(kzg, target.kzg_key)
    assert stored["haeufigkeit"] == b"9"
    # (0.5, h=8) is the first to reach HIGH: the 7th reinforcing write queues it, the 8th does not.
    assert queued == [0, 0, 0, 0, 0, 0, 1, 0]
    assert float(stored["salienz"]) >= KZG_SALIENZ_HIGH
    assert KZG_TTL_HIGH_SEKUNDEN - 2 <= await kzg.store.redis.ttl(target.kzg_key) <= KZG_TTL_HIGH_SEKUNDEN
    jobs = bytes_stream(await kzg.store.redis.xrange(PROMOTION_STREAM))
    assert [j[1][b"kzg_key"].decode() for j in jobs] == [target.kzg_key]
    assert jobs[0][1][b"ausloeser_turn_id"] == b"turn-origin"
    # Reinforcement queues, but hash_dirty belongs to a write at HIGH only (SPEC §4.3, §4.4).
    assert not await kzg.store.redis.exists(hash_dirty_key(PAIR))


async def test_entry_without_salienz_eingang_is_skipped_with_an_error(
    kzg: KzgMemory, rng: np.random.Generator, caplog: pytest.LogCaptureFixture, sink: InMemorySink
) -> None:
    # Made a minute before the second write's turn time: a neighbour must be alive then (SPEC §11).
    made = datetime.fromtimestamp(1_790_000_000 - 60, UTC)
    legacy = await kzg.store_entry(entry(0.4, ("Garten",), embedding=unit_vector(rng), as_of=made))
    await kzg.store.redis.hdel(legacy.kzg_key, "salienz_eingang")
    before = await _hash(kzg, legacy.kzg_key)
    caplog.set_level(logging.ERROR, logger="novaberg.kzg")
    span = "0b7d6a52-9a51-4c1e-8f5e-3f1f2b9c1d00"

    result = await kzg.store_entry(
        entry(0.4, ("Garten",), embedding=unit_vector(rng), turn_id="turn-7", span_id=span, as_of=datetime.fromtimestamp(1_790_000_000, UTC))
    )

    assert result.reinforced_count == 0
    assert await _hash(kzg, legacy.kzg_key) == before
    assert any(legacy.kzg_key in r.getMessage() and "salienz_eingang" in r.getMessage() for r in caplog.records)
    # The pipeline-log record sits where the write's other records sit: its turn, span, pair and time.
    await kzg.log.flush()
    (skipped,) = [r for r in sink.records if r.art == "fehler" and r.inhalt.get("typ") == "verstaerkung_uebersprungen"]
    written = [r for r in sink.records if r.art == "db_write"][-1]  # the second write's
    place = [(r.turn_id, r.span_id, r.user_id, r.character_id, r.erstellt_am) for r in (skipped, written)]
    assert place[0] == place[1] == ("turn-7", span, PAIR.user_id, PAIR.character_id, place[1][4])
    assert place[0][4].timestamp() == 1_790_000_000.0


async def test_reinforcement_can_be_switched_off(
    redis_url: str, kzg: KzgMemory, rng: np.random.Generator
) -> None:
    first = await kzg.store_entry(entry(0.4, ("Garten",), embedding=unit_vector(rng)))
    off = KzgMemory(kzg.store, kzg.provider, PipelineLog(), retrieval_threshold=0.5, reinforcement="aus")
    result = await off.store_entry(entry(0.4, ("Garten",), embedding=unit_vector(rng)))
    assert result.reinforced_count == 0
    assert (await _hash(kzg, first.kzg_key))["haeufigkeit"] == b"1"


async def test_concurrent_writes_lose_no_reinforcement(kzg: KzgMemory, rng: np.random.Generator) -> None:
    target = await kzg.store_entry(entry(0.3, ("Tee",), embedding=unit_vector(rng)))
    vectors = [unit_vector(rng) for _ in range(12)]
    await asyncio.gather(*(kzg.store_entry(entry(0.3, ("tee",), embedding=v)) for v in vectors))
    stored = await _hash(kzg, target.kzg_key)
    assert stored["haeufigkeit"] == b"13"
    assert float(stored["salienz"]) == salienz_berechnen(0.3, 13)


async def test_two_replicas_writing_one_pair_lose_no_reinforcement(
    redis_url: str, kzg: KzgMemory, rng: np.random.Generator
) -> None:
    """Two service processes share no lock; the compare-and-set in the script keeps every increment."""
    other_store = KzgStore.from_url(redis_url, dimension=kzg.store.dimension)
    replica = KzgMemory(other_store, kzg.provider, PipelineLog(), retrieval_threshold=0.5)
    try:
        target = await kzg.store_entry(entry(0.3, ("Tee",), embedding=unit_vector(rng)))
        writes = [
            memory.store_entry(entry(0.3, ("tee",), embedding=unit_vector(rng)))
            for memory in (kzg, replica)
            for _ in range(6)
        ]
        await asyncio.gather(*writes)
    finally:
        await other_store.close()
    assert (await _hash(kzg, target.kzg_key))["haeufigkeit"] == b"13"


def _bad(**change: object) -> Callable[[np.random.Generator], EntryInput]:
    """A request that would be stored at HIGH (queue, hash_dirty, reinforce) but for ``change``."""

    def build(rng: np.random.Generator) -> EntryInput:
        fields: dict[str, object] = {"embedding": unit_vector(rng), "pair": PAIR, **change}
        return entry(float(fields.pop("salienz", 0.9)), tuple(fields.pop("themen", ("Garten",))), **fields)  # type: ignore[arg-type]

    return build


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (_bad(embedding=np.ones(383, dtype=np.float32) / math.sqrt(383)), "embedding"),
        (_bad(embedding=np.full(384, np.nan, dtype=np.float32)), "embedding"),
        (_bad(salienz=1.2), "salience.salienz"),
        (_bad(salienz=-0.1), "salience.salienz"),
        (_bad(salienz=float("nan")), "salience.salienz"),
        (_bad(pair=Pair("", PAIR.character_id)), "pair.user_id"),
        (_bad(pair=Pair(PAIR.user_id, "")), "pair.character_id"),
        (_bad(beobachter=""), "beobachter"),
        (_bad(beobachter="narrator"), "beobachter"),
        (_bad(inhalt="  "), "inhalt"),
        (_bad(themen=("a|b",)), "salience.themen"),
        (_bad(ei=Ei(arousal=1.5)), "ei.arousal"),
    ],
)
async def test_bad_input_is_refused_and_nothing_is_written(
    kzg: KzgMemory, rng: np.random.Generator, build: Callable[[np.random.Generator], EntryInput], field: str
) -> None:
    neighbour = await kzg.store_entry(entry(0.7, ("Garten",), embedding=unit_vector(rng)))
    before_keys = sorted(await kzg.store.redis.keys("*"))
    before_neighbour = await _hash(kzg, neighbour.kzg_key)
    stream_before = await kzg.store.redis.xlen(PROMOTION_STREAM)
    with pytest.raises(InvalidArgument, match=field.replace(".", r"\.")):
        await kzg.store_entry(build(rng))
    assert sorted(await kzg.store.redis.keys("*")) == before_keys
    assert await _hash(kzg, neighbour.kzg_key) == before_neighbour
    assert await kzg.store.redis.xlen(PROMOTION_STREAM) == stream_before


async def test_an_explicit_entry_id_is_written_once(kzg: KzgMemory, rng: np.random.Generator) -> None:
    first = await kzg.store_entry(entry(0.4, embedding=unit_vector(rng), entry_id="turn-42-user"))
    assert first.kzg_key == f"kzg:{PAIR.user_id}:{PAIR.character_id}:turn-42-user"
    neighbour = await kzg.store_entry(entry(0.4, embedding=unit_vector(rng)))
    before = {key: await _hash(kzg, key) for key in (first.kzg_key, neighbour.kzg_key)}
    with pytest.raises(AlreadyExists):
        await kzg.store_entry(entry(0.9, embedding=unit_vector(rng), entry_id="turn-42-user"))
    # Refused atomically: neither the entry nor its theme neighbour changed, nothing queued.
    assert {key: await _hash(kzg, key) for key in before} == before
    assert await kzg.store.redis.xlen(PROMOTION_STREAM) == 0


@pytest.mark.parametrize("magnets", [Magnets.of([], 0), Magnets.of([], -4), Magnets.of([2, 0], None), Magnets.of([-1], 3)])
async def test_magnets_that_name_no_registry_row_are_refused(
    kzg: KzgMemory, rng: np.random.Generator, magnets: Magnets
) -> None:
    """The LZG refuses to promote them (SPEC §5.3): the KZG refuses them first, so no entry waits as a poison job."""
    with pytest.raises(InvalidArgument, match=r"^magnets\.(timeline_id must be a positive id|entitaet_ids must be positive ids)"):
        await kzg.store_entry(entry(0.9, embedding=unit_vector(rng), magnets=magnets))
    assert await _kzg_keys(kzg) == []


async def test_a_refused_duplicate_leaves_no_log_record(
    kzg: KzgMemory, rng: np.random.Generator, sink: InMemorySink
) -> None:
    """A caller's retry of a write that already happened is refused and logs nothing: no gate decision,
    no canon error of a write that did not happen (SPEC §8: the forensic log tells what happened)."""
    await kzg.store_entry(entry(0.9, embedding=unit_vector(rng), entry_id="turn-7-user"))
    retry = entry(0.9, embedding=unit_vector(rng), entry_id="turn-7-user", turn_id="retry", ei=Ei(modus="kein_modus"))
    with pytest.raises(AlreadyExists):
        await kzg.store_entry(retry)
    await kzg.log.flush()
    assert [r for r in sink.records if r.turn_id == "retry"] == []
