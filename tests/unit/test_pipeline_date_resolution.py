"""Dated mentions resolved against the turn's own time, English and German (SPEC §11): relative days,
written-out and abbreviated months, two-digit years, and dates told in the past."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from services.pipeline.dates import find_dated_mention
from services.pipeline.tense import told_in_the_past

THURSDAY = datetime(2026, 3, 5, 10, 0, tzinfo=UTC)
FRIDAY = datetime(2026, 3, 6, 10, 0, tzinfo=UTC)
NEW_YEAR = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)  # a Thursday
JANUARY = datetime(2026, 1, 6, 10, 0, tzinfo=UTC)  # a Tuesday


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def resolved(text: str, as_of: datetime) -> tuple[datetime, str] | None:
    mention = find_dated_mention(text, as_of)
    return None if mention is None else (mention.zeitpunkt, mention.praezision)


@pytest.mark.parametrize(
    ("text", "as_of", "expected"),
    [
        ("the day before yesterday I saw her", THURSDAY, day(2026, 3, 3)),
        ("The day after tomorrow we fly", THURSDAY, day(2026, 3, 7)),
        ("day before yesterday was rainy", THURSDAY, day(2026, 3, 3)),
        ("vorgestern war ich dort", THURSDAY, day(2026, 3, 3)),
        ("übermorgen fliegen wir", THURSDAY, day(2026, 3, 7)),
        ("the day before yesterday we moved", NEW_YEAR, day(2025, 12, 30)),
        ("the day after tomorrow is Saturday", datetime(2026, 2, 27, tzinfo=UTC), day(2026, 3, 1)),
    ],
)
def test_the_day_before_yesterday_and_after_tomorrow_are_two_days_away(
    text: str, as_of: datetime, expected: datetime
) -> None:
    assert resolved(text, as_of) == (expected, "tag")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We met on 8 May, 2023 in Paris", day(2023, 5, 8)),
        ("We met on 8 May 2023", day(2023, 5, 8)),
        ("We met on May 8, 2023", day(2023, 5, 8)),
        ("am 8. Mai, 2023 war es", day(2023, 5, 8)),
    ],
)
def test_a_year_after_a_comma_belongs_to_the_date(text: str, expected: datetime) -> None:
    assert resolved(text, FRIDAY) == (expected, "tag")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mar 8 is the deadline", day(2026, 3, 8)),
        ("on 1 Jun we start", day(2026, 6, 1)),
        ("Jul 4 is a holiday", day(2026, 7, 4)),
        ("am 8. Mär. fängt es an", day(2026, 3, 8)),
        ("am 8. Mrz. fängt es an", day(2026, 3, 8)),
        ("am 3. Jän. fängt es an", day(2026, 1, 3)),
        ("Sept 9 it begins", day(2026, 9, 9)),
        ("am 3. Okt. ist Feiertag", day(2026, 10, 3)),
        ("am 24. Dez. kommt Besuch", day(2026, 12, 24)),
        ("Feb 2 and Apr 3", day(2026, 2, 2)),
    ],
)
def test_abbreviated_months_name_their_month(text: str, expected: datetime) -> None:
    assert resolved(text, FRIDAY) == (expected, "tag")


@pytest.mark.parametrize(
    ("text", "as_of", "expected"),
    [
        ("geboren am 12.03.85", FRIDAY, day(1985, 3, 12)),
        ("bis zum 12.03.36", FRIDAY, day(2036, 3, 12)),  # 10 years after the turn's year: ahead
        ("am 12.03.37", FRIDAY, day(1937, 3, 12)),  # 11 years after: the century before
        ("am 1.1.26", FRIDAY, day(2026, 1, 1)),
        ("am 1.1.00", datetime(2095, 5, 1, tzinfo=UTC), day(2100, 1, 1)),  # the pivot moves with the turn
        ("am 1.1.06", datetime(2095, 5, 1, tzinfo=UTC), day(2006, 1, 1)),
    ],
)
def test_a_two_digit_year_lies_at_most_ten_years_after_the_turns_year(
    text: str, as_of: datetime, expected: datetime
) -> None:
    assert resolved(text, as_of) == (expected, "tag")


@pytest.mark.parametrize(
    ("text", "as_of", "expected"),
    [
        ("last December was cold", JANUARY, day(2025, 12, 1)),
        ("letzten Dezember war es kalt", JANUARY, day(2025, 12, 1)),
        ("last December was cold", datetime(2026, 12, 20, tzinfo=UTC), day(2025, 12, 1)),  # not this one
        ("vergangenen März bin ich umgezogen", datetime(2026, 11, 29, tzinfo=UTC), day(2026, 3, 1)),
        ("last March I moved", datetime(2026, 3, 31, tzinfo=UTC), day(2025, 3, 1)),
        ("seit Dezember bin ich krank", JANUARY, day(2025, 12, 1)),
        ("since January I run", JANUARY, day(2026, 1, 1)),
        ("Im Dezember war ich in Rom", JANUARY, day(2025, 12, 1)),
        ("In December we went to Rome", JANUARY, day(2025, 12, 1)),
        ("Im Januar war ich krank", JANUARY, day(2026, 1, 1)),  # this month: not a year back
        ("Im Dezember fliege ich nach Rom", JANUARY, day(2026, 12, 1)),  # no past cue: this year's
        ("Im Dezember 2024 war ich in Rom", JANUARY, day(2024, 12, 1)),  # a year given stays
    ],
)
def test_a_month_told_in_the_past_is_the_latest_such_month(text: str, as_of: datetime, expected: datetime) -> None:
    assert resolved(text, as_of) == (expected, "monat")


@pytest.mark.parametrize(
    ("text", "as_of", "expected"),
    [
        ("Am Freitag war ich im Kino", FRIDAY, day(2026, 2, 27)),  # said on a Friday: the one before
        ("Am Freitag gehe ich ins Kino", FRIDAY, day(2026, 3, 13)),
        ("Ich bin am Mittwoch ins Kino gegangen", FRIDAY, day(2026, 3, 4)),
        ("Am Mittwoch habe ich gegen Mittag Zeit", FRIDAY, day(2026, 3, 11)),  # "gegen" is no participle
        ("Am Mittwoch habe ich Geburtstag", FRIDAY, day(2026, 3, 11)),  # a noun is no participle
        ("On Saturday, we went to the lake", FRIDAY, day(2026, 2, 28)),
        ("What did you do on Saturday?", FRIDAY, day(2026, 2, 28)),
        ("On Saturday we go to the lake", FRIDAY, day(2026, 3, 7)),
        ("I had planned to go next Saturday", FRIDAY, day(2026, 3, 7)),  # "next" says ahead
        ("Ich war krank, am Samstag gehe ich wieder", FRIDAY, day(2026, 3, 7)),  # the cue in another clause
        ("On Wednesday I was sick", NEW_YEAR, day(2025, 12, 31)),  # across the year
        ("Am 12. Dezember war ich in Rom", JANUARY, day(2025, 12, 12)),
        ("On March 12 we went hiking", JANUARY, day(2025, 3, 12)),
        ("Am 12.12. war ich da", JANUARY, day(2025, 12, 12)),
        ("Am 29.02. hatte ich Geburtstag", JANUARY, day(2024, 2, 29)),  # the last leap year's
        ("Am 6.1. war ich da", JANUARY, day(2026, 1, 6)),  # the turn's day itself
        ("Am 12. Dezember fliege ich nach Rom", JANUARY, day(2026, 12, 12)),
    ],
)
def test_a_day_told_in_the_past_is_the_latest_such_day(text: str, as_of: datetime, expected: datetime) -> None:
    assert resolved(text, as_of) == (expected, "tag")


@pytest.mark.parametrize(
    ("text", "phrase", "past"),
    [
        ("Am Freitag war ich im Kino", "Am Freitag", True),
        ("Am Freitag wurde ich operiert", "Am Freitag", True),
        ("Ich habe am Freitag lange gearbeitet", "am Freitag", True),
        ("On Friday, I went home", "On Friday", True),
        ("On Friday I didn't sleep", "On Friday", True),
        ("Am Freitag gehe ich ins Kino", "Am Freitag", False),
        ("Gestern war ich müde, am Freitag gehe ich", "am Freitag", False),
        ("On Friday we meet. I was glad.", "On Friday", False),
        ("Am 12. März war ich dort", "12. März", True),  # the ordinal's dot ends no clause
    ],
)
def test_a_clause_is_told_in_the_past_by_a_clear_cue_only(text: str, phrase: str, past: bool) -> None:
    start = text.index(phrase)
    assert told_in_the_past(text, start, start + len(phrase)) is past


BERLIN = ZoneInfo("Europe/Berlin")
LOS_ANGELES = ZoneInfo("America/Los_Angeles")


@pytest.mark.parametrize(
    ("text", "instant", "zone", "expected"),
    [
        # 23:30 UTC on New Year's Eve is 00:30 on 1 January in Berlin: "gestern" is New Year's Eve there.
        ("Gestern war ich beim Zahnarzt", datetime(2025, 12, 31, 23, 30, tzinfo=UTC), BERLIN, (day(2025, 12, 31), "tag")),
        ("Gestern war ich beim Zahnarzt", datetime(2025, 12, 31, 23, 30, tzinfo=UTC), UTC, (day(2025, 12, 30), "tag")),
        ("heute habe ich frei", datetime(2026, 3, 31, 22, 30, tzinfo=UTC), BERLIN, (day(2026, 4, 1), "tag")),
        ("nächsten Monat ziehen wir um", datetime(2026, 3, 31, 22, 30, tzinfo=UTC), BERLIN, (day(2026, 5, 1), "monat")),
        ("letztes Jahr war schwer", datetime(2025, 12, 31, 23, 30, tzinfo=UTC), BERLIN, (day(2025, 1, 1), "jahr")),
        # 03:00 UTC on 1 March is still 28 February (19:00) in Los Angeles.
        ("I moved here yesterday", datetime(2026, 3, 1, 3, 0, tzinfo=UTC), LOS_ANGELES, (day(2026, 2, 27), "tag")),
        ("I start next week", datetime(2026, 3, 2, 3, 0, tzinfo=UTC), LOS_ANGELES, (day(2026, 3, 2), "woche")),
        ("I start next week", datetime(2026, 3, 2, 3, 0, tzinfo=UTC), UTC, (day(2026, 3, 9), "woche")),
    ],
)
def test_relative_dates_count_on_the_pairs_calendar(
    text: str, instant: datetime, zone: ZoneInfo, expected: tuple[datetime, str]
) -> None:
    # The turn's instant in the pair's zone; the date found is that calendar's date, kept at 00:00 UTC.
    assert resolved(text, instant.astimezone(zone)) == expected
