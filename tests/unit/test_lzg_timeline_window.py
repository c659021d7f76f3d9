"""The window around a date a question names is exactly the §5.4 tolerance in its unit (SPEC §5.4, §11).

Every instant whose ``timeline_distance`` to the named date is within the tolerance lies in the window,
and no other: whole calendar units for tag … jahr, ± 7 days for minute and stunde.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from services.lzg.layers import LZG_TIMELINE_TOLERANZ, Praezision, timeline_distance, timeline_window

MICRO = timedelta(microseconds=1)
LAST = datetime.max.replace(tzinfo=UTC)
FIRST = datetime.min.replace(tzinfo=UTC)


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


WINDOWS = [
    (Praezision.MINUTE, at(2026, 3, 10, 14, 5), at(2026, 3, 3, 14, 5), at(2026, 3, 17, 14, 5)),
    (Praezision.STUNDE, at(2026, 3, 10, 14), at(2026, 3, 3, 14), at(2026, 3, 17, 14)),
    (Praezision.TAG, at(2026, 3, 10, 15, 30), at(2026, 2, 17), at(2026, 4, 1) - MICRO),
    (Praezision.WOCHE, at(2026, 3, 11), at(2026, 1, 12), at(2026, 5, 11) - MICRO),  # a Wednesday; Mondays
    (Praezision.MONAT, at(2026, 3, 1), at(2025, 9, 1), at(2026, 10, 1) - MICRO),
    (Praezision.QUARTAL, at(2026, 5, 15), at(2025, 4, 1), at(2027, 7, 1) - MICRO),
    (Praezision.JAHR, at(2026, 7, 4), at(2024, 1, 1), at(2029, 1, 1) - MICRO),
]


@pytest.mark.parametrize(("praezision", "named", "first", "last"), WINDOWS, ids=[w[0].value for w in WINDOWS])
def test_the_window_ends_where_the_tolerance_does(
    praezision: Praezision, named: datetime, first: datetime, last: datetime
) -> None:
    toleranz = LZG_TIMELINE_TOLERANZ[praezision]
    assert timeline_window(named, praezision) == (first, last)
    assert timeline_distance(named, first, praezision) == toleranz  # just inside
    assert timeline_distance(named, last, praezision) == toleranz
    assert timeline_distance(named, first - MICRO, praezision) > toleranz  # just outside
    assert timeline_distance(named, last + MICRO, praezision) > toleranz


def test_the_units_a_tolerance_away_are_in_on_both_sides_alike() -> None:
    """The old window was centred on the middle of the named unit with mean unit lengths: of two dates
    the same number of units away, one was in and the other out."""
    month_first, month_last = timeline_window(at(2026, 3, 1), Praezision.MONAT)
    assert month_first <= at(2025, 9, 1) and at(2026, 9, 1) <= month_last
    day_first, day_last = timeline_window(at(2026, 3, 10), Praezision.TAG)
    assert day_first <= at(2026, 2, 17) and at(2026, 3, 31) <= day_last
    year_first, year_last = timeline_window(at(2026, 1, 1), Praezision.JAHR)
    assert year_first <= at(2024, 1, 1) and at(2028, 12, 31, 23, 59) <= year_last


@pytest.mark.parametrize("praezision", list(Praezision), ids=lambda p: p.value)
def test_an_instant_is_in_the_window_exactly_when_it_is_within_the_tolerance(praezision: Praezision) -> None:
    rng = np.random.default_rng(511)
    span = timeline_window(at(2000, 1, 1), praezision)[1] - at(2000, 1, 1)
    for _ in range(2000):
        named = at(1990, 1, 1) + timedelta(seconds=float(rng.uniform(0, 40 * 365 * 86_400)))
        other = named + span * float(rng.uniform(-2.0, 2.0))
        first, last = timeline_window(named, praezision)
        within = timeline_distance(named, other, praezision) <= LZG_TIMELINE_TOLERANZ[praezision]
        assert (first <= other <= last) == within, (named, other)


def test_a_window_at_the_ends_of_time_is_held_there() -> None:
    assert timeline_window(at(9999, 6, 1), Praezision.JAHR) == (at(9997, 1, 1), LAST)
    assert timeline_window(at(1, 3, 1), Praezision.JAHR) == (FIRST, at(4, 1, 1) - MICRO)
    assert timeline_window(at(9999, 12, 30), Praezision.TAG) == (at(9999, 12, 9), LAST)
    assert timeline_window(at(1, 1, 2), Praezision.WOCHE) == (FIRST, at(1, 3, 5) - MICRO)
    assert timeline_window(at(9999, 12, 30), Praezision.MINUTE)[1] == LAST
