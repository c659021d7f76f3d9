"""A person's correction, seen by what it leaves in Redis: a corrected entry is found by its new words
only (SPEC §11). Real Redis with the search module."""

from __future__ import annotations

import numpy as np
import pytest

from services.kzg.memory import KzgMemory
from services.kzg.models import RetrieveQuery
from services.kzg.rights import KzgRights
from tests.integration.kzg.conftest import PAIR, entry, unit_vector

pytestmark = pytest.mark.integration

async def _lexical(kzg: KzgMemory, words: str, rng: np.random.Generator) -> list[str]:
    """The keys full-text retrieval finds for ``words`` (a random query vector: nothing by meaning)."""
    result = await kzg.retrieve(
        RetrieveQuery(pair=PAIR, query_vector=unit_vector(rng), lexical_text=words, sprache="de")
    )
    return [hit.entry.kzg_key for hit in result.hits if "lexical" in hit.quellen]


async def _field(kzg: KzgMemory, key: str, name: str) -> str | None:
    value = await kzg.store.redis.hget(key, name)
    return None if value is None else value.decode()


async def test_a_corrected_entry_is_found_by_its_new_words_and_no_longer_by_the_old(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    stored = await kzg.store_entry(
        entry(0.5, ("Haustiere",), inhalt="Meister liebt Katzen.", sprecher="Anna", sprache="de")
    )
    key = stored.kzg_key
    assert await _lexical(kzg, "Katzen", rng) == [key]
    assert await _field(kzg, key, "suchtext") == "Anna: Meister liebt Katzen."

    previous = await KzgRights(kzg).correct(PAIR, key, "Meister liebt Hunde.")

    assert previous == "Meister liebt Katzen."
    assert await _lexical(kzg, "Katzen", rng) == []
    assert await _lexical(kzg, "Hunde", rng) == [key]
    # The text the write path indexes, made by its own function, and its language as before.
    assert await _field(kzg, key, "suchtext") == "Anna: Meister liebt Hunde."
    assert await _field(kzg, key, "suchsprache") == "german"
    assert (await kzg.get_entry(PAIR, key)).inhalt == "Meister liebt Hunde."
