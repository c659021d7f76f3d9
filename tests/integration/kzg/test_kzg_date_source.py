"""KZG retrieval takes the dates a question names, as the LZG does (SPEC §11, "hybrid the same way"):
entries made within the §5.4 tolerance of a named date are candidates (source ``timeline``), nearest
to the date first, within the caller's filters; outside the window they are not."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from novaberg_core.model import Ei, Praezision
from services.kzg.memory import KzgMemory
from services.kzg.types import RetrieveFilters, RetrieveQuery
from tests.integration.kzg.conftest import PAIR, entry, unit_vector

APRIL_20 = datetime(2026, 4, 20, 9, 0, tzinfo=UTC)
MAY_1 = datetime(2026, 5, 1, 18, 0, tzinfo=UTC)
MAY_10 = datetime(2026, 5, 10, 8, 0, tzinfo=UTC)
READ_AT = datetime(2026, 5, 12, 12, 0, tzinfo=UTC)
"""All three alive then: HIGH entries live 30 days in turn time."""


async def _store_three(kzg: KzgMemory, rng: np.random.Generator) -> dict[datetime, str]:
    """Three entries far from any query vector (whatever is found is found by its date), one theme each."""
    keys = {}
    for made, theme in ((APRIL_20, "Garten"), (MAY_1, "Arbeit"), (MAY_10, "Reise")):
        stored = await kzg.store_entry(entry(
            0.7, (theme,), inhalt=f"Meister spricht über {theme}.", embedding=unit_vector(rng), as_of=made,
            ei=Ei(emotion="freude"),
        ))  # fmt: skip
        keys[made] = stored.kzg_key
    return keys


async def _found_by_date(
    kzg: KzgMemory, rng: np.random.Generator, *windows: tuple[datetime, Praezision], **query: object
) -> list[str]:
    result = await kzg.retrieve(RetrieveQuery(
        PAIR, query_vector=unit_vector(rng), as_of=READ_AT, zeitfenster=windows, **query,  # type: ignore[arg-type]
    ))  # fmt: skip
    return [hit.entry.kzg_key for hit in result.hits if "timeline" in hit.quellen]


async def test_entries_made_within_a_named_dates_tolerance_are_candidates(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    keys = await _store_three(kzg, rng)
    # A day ± 21 days (SPEC §5.4): 2026-04-11 … 2026-05-23, all three.
    assert set(await _found_by_date(kzg, rng, (datetime(2026, 5, 2, tzinfo=UTC), Praezision.TAG))) == set(
        keys.values()
    )
    # A minute ± 7 days: 2026-05-02 10:00 … 2026-05-16 10:00 — the entry of 1 May at 18:00 lies outside.
    minute = (datetime(2026, 5, 9, 10, 0, tzinfo=UTC), Praezision.MINUTE)
    assert await _found_by_date(kzg, rng, minute) == [keys[MAY_10]]
    # No date named: no date candidates.
    assert await _found_by_date(kzg, rng) == []


async def test_the_nearest_to_the_named_date_come_first(kzg: KzgMemory, rng: np.random.Generator) -> None:
    keys = await _store_three(kzg, rng)
    day = (datetime(2026, 5, 2, tzinfo=UTC), Praezision.TAG)  # its middle: 2 May, 12:00
    assert await _found_by_date(kzg, rng, day, top_k=1) == [keys[MAY_1]]
    assert set(await _found_by_date(kzg, rng, day, top_k=2)) == {keys[MAY_1], keys[MAY_10]}


async def test_date_candidates_keep_the_callers_filters_and_the_read_time(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    keys = await _store_three(kzg, rng)
    month = (datetime(2026, 5, 1, tzinfo=UTC), Praezision.MONAT)
    assert await _found_by_date(kzg, rng, month, filters=RetrieveFilters(emotion=("wut",))) == []
    early = await kzg.retrieve(RetrieveQuery(
        PAIR, query_vector=unit_vector(rng), as_of=datetime(2026, 5, 5, tzinfo=UTC), zeitfenster=(month,),
    ))  # fmt: skip
    assert {hit.entry.kzg_key for hit in early.hits if "timeline" in hit.quellen} == {keys[APRIL_20], keys[MAY_1]}
