"""Retrieval: KNN within the pair, the model's threshold, perspective and field filters (SPEC §4.5)."""

from __future__ import annotations

import numpy as np
import pytest

from novaberg_core.errors import InvalidArgument
from novaberg_core.model import Ei, Magnets
from novaberg_core.pipeline_log import InMemorySink
from services.kzg.memory import KzgMemory
from services.kzg.store import entry_scope
from services.kzg.types import RetrieveFilters, RetrieveQuery, Vector
from tests.integration.kzg.conftest import OTHER_PAIR, PAIR, entry, unit_vector

ANNA = [
    (("Schach",), "Anna plays chess every Sunday with her grandfather in the park."),
    (("Garten", "Schnittlauch"), "Anna grows chives and basil in her small garden."),
    (("Hund",), "Anna's dog Bruno is afraid of thunderstorms."),
    (("Arbeit",), "Anna works as a nurse at the city hospital on night shifts."),
]


def _near(base: Vector, rng: np.random.Generator, noise: float = 0.05) -> Vector:
    """A vector close to ``base`` (cosine well above any threshold)."""
    v = base + noise * unit_vector(rng, base.size)
    return (v / np.linalg.norm(v)).astype(np.float32)


async def test_threshold_drops_far_hits_and_an_unrelated_question_gets_nothing(
    kzg: KzgMemory, sink: InMemorySink
) -> None:
    """Real model, real sentences: the profile's kzg_retrieval decides whether anything fits."""
    keys = {}
    for themen, inhalt in ANNA:
        keys[themen[0]] = (await kzg.store_entry(entry(0.5, themen, inhalt=inhalt))).kzg_key

    chess = await kzg.retrieve(RetrieveQuery(PAIR, query_text="Who does Anna play chess with on Sundays?",
                                             turn_id="turn-q"))
    assert chess.threshold == kzg.retrieval_threshold and chess.model_id == kzg.provider.model_id
    assert chess.hits[0].entry.kzg_key == keys["Schach"]
    assert chess.hits[0].entry.inhalt == ANNA[0][1] and chess.hits[0].entry.ttl_seconds > 0
    assert all(h.similarity >= kzg.retrieval_threshold for h in chess.hits)
    assert keys["Hund"] not in {h.entry.kzg_key for h in chess.hits}  # the far hit
    assert chess.dropped_below_threshold >= 1
    assert len(chess.hits) + chess.dropped_below_threshold == len(ANNA)

    for question in ("Which grammatical cases does Sanskrit have?", "How does a jet engine produce thrust?",
                     "And how is that connected?"):
        result = await kzg.retrieve(RetrieveQuery(PAIR, query_text=question))
        assert result.hits == (), question  # empty is an answer, not a failure
        assert result.dropped_below_threshold == len(ANNA)

    await kzg.log.flush()
    reads = [r for r in sink.records if r.art == "db_read" and r.turn_id == "turn-q"]
    assert reads and reads[0].inhalt["treffer"] == len(chess.hits)


async def test_beobachter_filter_never_returns_the_other_perspective(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    base = unit_vector(rng)
    user = [await kzg.store_entry(entry(0.5, embedding=_near(base, rng), beobachter="user")) for _ in range(3)]
    assistant = [await kzg.store_entry(entry(0.5, embedding=_near(base, rng), beobachter="assistant"))
                 for _ in range(3)]
    for beobachter, expected in (("user", user), ("assistant", assistant)):
        result = await kzg.retrieve(RetrieveQuery(PAIR, query_vector=base, beobachter=beobachter))
        assert {h.entry.kzg_key for h in result.hits} == {r.kzg_key for r in expected}
        assert {h.entry.beobachter for h in result.hits} == {beobachter}
    both = await kzg.retrieve(RetrieveQuery(PAIR, query_vector=base))
    assert len(both.hits) == 6


async def test_another_pairs_entries_never_appear(kzg: KzgMemory, rng: np.random.Generator) -> None:
    base = unit_vector(rng)
    mine = await kzg.store_entry(entry(0.5, embedding=_near(base, rng, 0.3)))
    # The other pair's entries are nearer and their user id is a prefix of ours.
    for pair in (OTHER_PAIR, type(PAIR)(PAIR.user_id, "nova"), type(PAIR)(PAIR.user_id.upper(), PAIR.character_id)):
        for _ in range(3):
            await kzg.store_entry(entry(0.5, pair=pair, embedding=_near(base, rng, 0.01)))
    result = await kzg.retrieve(RetrieveQuery(PAIR, query_vector=base, top_k=10))
    assert [h.entry.kzg_key for h in result.hits] == [mine.kzg_key]
    assert result.hits[0].entry.pair == PAIR


async def test_top_k_defaults_to_ten_and_hits_come_best_first(kzg: KzgMemory, rng: np.random.Generator) -> None:
    base = unit_vector(rng)
    for i in range(14):
        await kzg.store_entry(entry(0.5, embedding=_near(base, rng, 0.02 * (i + 1))))
    result = await kzg.retrieve(RetrieveQuery(PAIR, query_vector=base))
    assert len(result.hits) == 10
    similarities = [h.similarity for h in result.hits]
    assert similarities == sorted(similarities, reverse=True)
    assert len((await kzg.retrieve(RetrieveQuery(PAIR, query_vector=base, top_k=3))).hits) == 3


async def test_field_filters(kzg: KzgMemory, rng: np.random.Generator) -> None:
    base = unit_vector(rng)
    a = await kzg.store_entry(entry(0.5, ("Grüner Tee",), embedding=_near(base, rng),
                                    ei=Ei(emotion="freude", modus="alltag"), magnets=Magnets((4, 7), 3)))
    b = await kzg.store_entry(entry(0.8, ("Kaffee am Morgen",), embedding=_near(base, rng),
                                    ei=Ei(emotion="wut"), magnets=Magnets((7,), 5)))

    async def keys(filters: RetrieveFilters) -> set[str]:
        result = await kzg.retrieve(RetrieveQuery(PAIR, query_vector=base, filters=filters))
        return {h.entry.kzg_key for h in result.hits}

    assert await keys(RetrieveFilters(emotion=("freude",))) == {a.kzg_key}
    assert await keys(RetrieveFilters(emotion=("freude", "wut"))) == {a.kzg_key, b.kzg_key}
    assert await keys(RetrieveFilters(modus=("alltag",))) == {a.kzg_key}
    assert await keys(RetrieveFilters(entitaet_ids=(4,))) == {a.kzg_key}
    assert await keys(RetrieveFilters(entitaet_ids=(7,))) == {a.kzg_key, b.kzg_key}
    assert await keys(RetrieveFilters(themen=(" GRÜNER TEE",))) == {a.kzg_key}
    assert await keys(RetrieveFilters(themen=("kaffee am morgen",))) == {b.kzg_key}
    assert await keys(RetrieveFilters(timeline_id=5)) == {b.kzg_key}
    assert await keys(RetrieveFilters(min_salienz=0.8)) == {b.kzg_key}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        (RetrieveQuery(PAIR, query_vector=np.ones(10, dtype=np.float32)), "query_vector"),
        (RetrieveQuery(PAIR), "query_text"),
        (RetrieveQuery(PAIR, query_text="  "), "query_text"),
        (RetrieveQuery(type(PAIR)("", "nova"), query_text="x"), "pair.user_id"),
        (RetrieveQuery(PAIR, query_text="x", beobachter="narrator"), "beobachter"),
        (RetrieveQuery(PAIR, query_text="x", top_k=-1), "top_k"),
    ],
)
async def test_bad_queries_are_refused(kzg: KzgMemory, query: RetrieveQuery, field: str) -> None:
    with pytest.raises(InvalidArgument, match=field.replace(".", r"\.")):
        await kzg.retrieve(query)


async def test_independent_searches_share_one_round_trip_and_answer_in_place(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    """The retrieval's sources (dense, lexical, entity) go to Redis as one pipeline (SPEC §11); each
    reply is read by its own search, and a search not asked stays None in its place."""
    base = unit_vector(rng)
    chives = await kzg.store_entry(entry(0.5, ("Garten",), inhalt="Meister grows chives in the garden.",
                                         embedding=_near(base, rng, 0.05), magnets=Magnets((4,), None)))
    nights = await kzg.store_entry(entry(0.5, ("Arbeit",), inhalt="Meister works nights at the hospital.",
                                         embedding=_near(base, rng, 0.01)))
    store = kzg.store
    scope = entry_scope(PAIR)
    dense, nothing, lexical, named = await store.search_all([
        store.knn_search(scope, base, 2),
        None,
        store.full_text_search(scope, ["chives"], "english", 5),
        store.knn_search(scope, base, 2, entitaet_ids=(4,)),
    ])  # fmt: skip
    assert [key for key, _ in dense] == [nights.kzg_key, chives.kzg_key]  # the nearer first
    assert dense[0][1] > dense[1][1] > 0.9
    assert nothing is None
    assert lexical == [chives.kzg_key]
    assert [key for key, _ in named] == [chives.kzg_key] and named[0][1] == pytest.approx(dense[1][1])
    assert store.full_text_search(scope, [""], "english", 5) is None  # no word, no search
    assert await store.search_all([None, None]) == [None, None]
