"""Hybrid KZG retrieval keeps the caller's filters in every source (SPEC §4.5, §11): a lexical or an
entity candidate outside ``filters`` is not returned, and the question's entities narrow a caller's
entity filter instead of replacing it."""

from __future__ import annotations

import numpy as np
import pytest

from novaberg_core.model import Ei, Magnets
from services.kzg.memory import KzgMemory
from services.kzg.types import RetrieveFilters, RetrieveQuery, StoreResult
from tests.integration.kzg.conftest import PAIR, entry, unit_vector


async def _store(kzg: KzgMemory, rng: np.random.Generator) -> tuple[StoreResult, StoreResult]:
    """A (joy, chives, entity 4, timeline 3) and B (anger, night shifts, entities 4 and 9, timeline 5), both far
    from the question's vector: whatever is found is found by words or entities, not by meaning."""
    chives = await kzg.store_entry(entry(
        0.5, ("Garten",), inhalt="Meister grows chives in the garden.", sprache="en", embedding=unit_vector(rng),
        ei=Ei(emotion="freude", modus="alltag"), magnets=Magnets((4,), 3),
    ))  # fmt: skip
    nights = await kzg.store_entry(entry(
        0.5, ("Arbeit",), inhalt="Meister hates the night shifts at the hospital.", sprache="en",
        embedding=unit_vector(rng), ei=Ei(emotion="wut"), magnets=Magnets((4, 9), 5),
    ))  # fmt: skip
    return chives, nights


async def _hits(kzg: KzgMemory, rng: np.random.Generator, **query: object) -> dict[str, tuple[str, ...]]:
    result = await kzg.retrieve(RetrieveQuery(PAIR, query_vector=unit_vector(rng), sprache="en", **query))  # type: ignore[arg-type]
    return {hit.entry.kzg_key: hit.quellen for hit in result.hits}


@pytest.mark.parametrize(
    "filters",
    [
        RetrieveFilters(emotion=("wut",)),
        RetrieveFilters(modus=("arbeit",)),
        RetrieveFilters(entitaet_ids=(9,)),
        RetrieveFilters(themen=("arbeit",)),
        RetrieveFilters(timeline_id=5),
        RetrieveFilters(min_salienz=0.9),
    ],
)
async def test_a_lexical_match_outside_the_filters_is_not_returned(
    kzg: KzgMemory, rng: np.random.Generator, filters: RetrieveFilters
) -> None:
    chives, _ = await _store(kzg, rng)
    assert await _hits(kzg, rng, lexical_text="chives") == {chives.kzg_key: ("lexical",)}  # found by its word
    assert await _hits(kzg, rng, lexical_text="chives", filters=filters) == {}


async def test_a_lexical_match_within_the_filters_is_returned(kzg: KzgMemory, rng: np.random.Generator) -> None:
    chives, _ = await _store(kzg, rng)
    within = RetrieveFilters(emotion=("freude",), entitaet_ids=(4,), timeline_id=3, themen=("garten",))
    assert await _hits(kzg, rng, lexical_text="chives", filters=within) == {chives.kzg_key: ("lexical",)}


async def test_an_entity_candidate_keeps_the_callers_filters(kzg: KzgMemory, rng: np.random.Generator) -> None:
    chives, nights = await _store(kzg, rng)
    both = {chives.kzg_key: ("entity",), nights.kzg_key: ("entity",)}
    assert await _hits(kzg, rng, question_entity_ids=(4,)) == both
    angry = RetrieveFilters(emotion=("wut",))
    assert await _hits(kzg, rng, question_entity_ids=(4,), filters=angry) == {nights.kzg_key: ("entity",)}
    assert await _hits(kzg, rng, question_entity_ids=(4,), filters=RetrieveFilters(min_salienz=0.9)) == {}


async def test_the_questions_entities_narrow_the_callers_entity_filter(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    """Entity 4 named by the question, the caller asks for entity 9: only the entry naming both comes back."""
    _, nights = await _store(kzg, rng)
    named_nine = RetrieveFilters(entitaet_ids=(9,))
    assert await _hits(kzg, rng, question_entity_ids=(4,), filters=named_nine) == {nights.kzg_key: ("entity",)}
    assert await _hits(kzg, rng, question_entity_ids=(7,), filters=named_nine) == {}
