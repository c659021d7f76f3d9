"""Dated mentions: the first date a turn refers to, resolved against the turn's instant.

Pure text work like :mod:`services.pipeline.text_rules` (which uses it for the ``dated`` cue);
the analyzer turns the mention into a timeline ref through the LZG registry afterwards.

Dated mention
    The first of: ISO date, ``12.03.2026`` / ``12.3.`` / ``12.03.85``, ``12. März [2026]``,
    ``March 12`` / ``12 March`` / ``8 May, 2023`` (months written out or abbreviated, ``Mar``,
    ``Mär``, ``Sept``), ``heute``/``morgen``/``übermorgen``/``gestern``/``vorgestern`` (and English,
    ``the day before yesterday`` included), ``in N Tagen`` / ``vor N Tagen`` / ``N days ago``, a
    weekday (``am Freitag``: the next one; ``letzten Freitag``: the last one),
    ``letzte/nächste/diese Woche``, ``letzten/nächsten Monat``, ``im März [2026]``, ``letzten März``
    (the last March before this month), ``letztes/nächstes Jahr``, ``im Jahr 2019``. Resolved
    against ``as_of`` (SPEC §11: the turn's own time) on the calendar of ``as_of``'s own zone (the
    pair's, ``Profile.zeitzone``: "gestern" said at 00:30 in Berlin is the day before that Berlin
    day), to the start of its day / ISO week (Monday) / month / year, kept as that calendar date at
    00:00 UTC (the timeline's dates are calendar dates), with that ``praezision``. A date outside
    what the stores hold (``novaberg_core.contract``: year 1 to 9999-12-30) is none: "next year" said
    on 9999-12-30 names nothing to search for or to register.

Years and tense
    A two-digit year is the one with those digits from 89 years before the turn's year to 10 after
    (said in 2026: ``85`` is 1985, ``36`` is 2036, ``37`` is 1937). A date without its year, a bare
    weekday or ``im <Monat>`` lies ahead (this year's month) unless its clause is told in the past
    (:func:`told_in_the_past`: ``war``, ``hatte``, ``habe … ge…t``, ``was``, ``went``, ``did`` …); then
    it is the latest one not after the turn's day (a weekday: before it). ``seit <Monat>`` is always
    the latest such month.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from novaberg_core.contract import TIME_MAX, ZEITPUNKT_MIN
from novaberg_core.model import Praezision
from services.pipeline.tense import told_in_the_past
from services.pipeline.tokens import sentence_initial

__all__ = ["DATE_WORDS", "PRAEZISIONEN", "DatedMention", "find_dated_mention"]

_MONTHS: dict[str, int] = {
    "januar": 1, "jänner": 1, "jän": 1, "january": 1, "jan": 1, "februar": 2, "february": 2, "feb": 2,
    "märz": 3, "maerz": 3, "mär": 3, "mrz": 3, "march": 3, "mar": 3, "april": 4, "apr": 4, "mai": 5, "may": 5,
    "juni": 6, "june": 6, "jun": 6, "juli": 7, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sept": 9, "sep": 9, "oktober": 10, "october": 10, "okt": 10, "oct": 10, "november": 11, "nov": 11,
    "dezember": 12, "december": 12, "dez": 12, "dec": 12,
}
_WEEKDAYS: dict[str, int] = {
    "montag": 0, "monday": 0, "dienstag": 1, "tuesday": 1, "mittwoch": 2, "wednesday": 2,
    "donnerstag": 3, "thursday": 3, "freitag": 4, "friday": 4, "samstag": 5, "sonnabend": 5,
    "saturday": 5, "sonntag": 6, "sunday": 6,
}
DATE_WORDS = frozenset(
    [*_MONTHS, *_WEEKDAYS, "heute", "morgen", "übermorgen", "gestern", "vorgestern", "woche", "monat",
     "jahr", "today", "tomorrow", "yesterday", "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat",
     "sun"]
)
"""Words that name a date or a unit of time: never a theme, never a name."""

_MONTH_ALT = "|".join(sorted((re.escape(m) for m in _MONTHS), key=len, reverse=True))
_WEEKDAY_ALT = "|".join(sorted(_WEEKDAYS, key=len, reverse=True))

PRAEZISIONEN: tuple[str, ...] = tuple(p.value for p in Praezision)
"""The timeline precisions by name, finest first (the shared model's :class:`Praezision`)."""


@dataclass(frozen=True, slots=True)
class DatedMention:
    """A date the text refers to, normalised to the start of its unit (a calendar date at 00:00 UTC)."""

    zeitpunkt: datetime
    praezision: str
    phrase: str

    def record(self) -> dict[str, str]:
        """The pipeline-log form: the instant (ISO 8601), the precision and the words that named it."""
        return {"zeitpunkt": self.zeitpunkt.isoformat(), "praezision": self.praezision, "phrase": self.phrase}


def _day(dt: datetime) -> datetime:
    return datetime(dt.year, dt.month, dt.day, tzinfo=UTC)


def _week(dt: datetime) -> datetime:
    day = _day(dt)
    return day - timedelta(days=day.weekday())


def _month(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _add_months(dt: datetime, months: int) -> datetime:
    index = dt.year * 12 + (dt.month - 1) + months
    return _month(index // 12, index % 12 + 1)


def _safe_date(year: int, month: int, day: int) -> datetime | None:
    if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year, month)[1]:
        return None
    return datetime(year, month, day, tzinfo=UTC)


TWO_DIGIT_YEARS_AHEAD = 10
"""How far past the turn's year a two-digit year may lie; beyond, it is the century before's."""


def _year(raw: str | None, as_of: datetime) -> int:
    """A written year; two digits: the year with those digits from 89 years before the turn's to
    :data:`TWO_DIGIT_YEARS_AHEAD` after (module docstring)."""
    if raw is None:
        return as_of.year
    value = int(raw)
    if len(raw) > 2:
        return value
    latest = as_of.year + TWO_DIGIT_YEARS_AHEAD
    return latest - (latest - value) % 100


_RELATIVE_DAYS = {
    "heute": 0, "today": 0, "morgen": 1, "tomorrow": 1, "übermorgen": 2, "uebermorgen": 2,
    "gestern": -1, "yesterday": -1, "vorgestern": -2, "the day before yesterday": -2, "day before yesterday": -2,
    "the day after tomorrow": 2, "day after tomorrow": 2,
}

_COUNT_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "a few": 3, "a couple of": 2, "einem": 1, "einer": 1, "zwei": 2, "drei": 3, "vier": 4,
    "fünf": 5, "fuenf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "ein paar": 3,
}  # fmt: skip
_COUNT_ALT = r"\d{1,3}|" + "|".join(sorted((re.escape(w) for w in _COUNT_WORDS), key=len, reverse=True))

_UNITS_EN = "days?|weeks?|months?|years?"
_UNITS_DE = "tag(?:en)?|woche(?:n)?|monat(?:en)?|jahr(?:en)?"
_NEUTER_DIRECTIONS = "letztes|letzten|vergangenes|nächstes|naechstes|kommendes|dieses|last|next|this"
"""``letztes Jahr``, ``nächstes Wochenende``: the directions before a neuter unit."""


def _relative_unit(directions: str, units: str) -> re.Pattern[str]:
    """``<direction> <unit>`` (``letzte Woche``, ``next year``): the unit before, after or holding ``as_of``."""
    return re.compile(rf"\b({directions})\s+({units})\b", re.IGNORECASE)


_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("iso", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("numeric", re.compile(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4}|\d{2})?(?!\d)")),
    ("day_month", re.compile(rf"\b(\d{{1,2}})\.?\s+({_MONTH_ALT})\.?(?:,?\s+(\d{{4}}))?\b", re.IGNORECASE)),
    ("month_day", re.compile(rf"\b({_MONTH_ALT})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b",
                             re.IGNORECASE)),
    ("relative_day", re.compile(r"(?<![\w])((?:the\s+)?day\s+(?:before\s+yesterday|after\s+tomorrow)|übermorgen|"
                                r"uebermorgen|vorgestern|heute|morgen|gestern|today|tomorrow|yesterday)(?![\w])",
                                re.IGNORECASE)),
    ("ago", re.compile(rf"\b(?:({_COUNT_ALT})\s+({_UNITS_EN})\s+ago|vor\s+({_COUNT_ALT})\s+({_UNITS_DE}))\b",
                       re.IGNORECASE)),
    ("ahead", re.compile(rf"\bin\s+({_COUNT_ALT})\s+({_UNITS_EN}|{_UNITS_DE})\b", re.IGNORECASE)),
    ("weekend", _relative_unit(_NEUTER_DIRECTIONS, "wochenende|weekend")),
    ("weekday", re.compile(rf"\b(?:(letzten|letzter|vergangenen|last)\s+)?(?:am\s+|on\s+|diesen\s+|this\s+)?"
                           rf"({_WEEKDAY_ALT})\b", re.IGNORECASE)),
    ("week", _relative_unit("letzte|letzten|vergangene|vergangenen|nächste|nächsten|naechste|naechsten|"
                            "kommende|kommenden|diese|dieser|last|next|this", "woche|week")),
    ("month_rel", _relative_unit("letzten|vergangenen|nächsten|naechsten|kommenden|diesen|last|next|this",
                                 "monat|month")),
    ("month_past", re.compile(rf"\b(?:letzten|vergangenen|last)\s+({_MONTH_ALT})\b", re.IGNORECASE)),
    ("month_name", re.compile(rf"\b(im|in|seit|since|bis)\s+({_MONTH_ALT})(?:\s+(\d{{4}}))?\b", re.IGNORECASE)),
    ("year_rel", _relative_unit(_NEUTER_DIRECTIONS, "jahr|year")),
    ("year", re.compile(r"\b(?:im\s+jahr|in|seit)\s+((?:19|20)\d{2})\b", re.IGNORECASE)),
)

_PAST = ("letzt", "vergangen", "last")
_UNIT_PRAEZISION = {"day": "tag", "tag": "tag", "week": "woche", "woche": "woche", "month": "monat", "monat": "monat",
                    "year": "jahr", "jahr": "jahr"}  # fmt: skip
_NEXT = ("nächst", "naechst", "kommend", "next")
_NAMED_AHEAD = re.compile(r"\b(?:next|coming|nächsten|naechsten|kommenden)\s+$", re.IGNORECASE)
"""``next Friday``: ahead, whatever tense the clause is told in."""
_SINCE = ("seit", "since")


def _count(word: str) -> int:
    """A count written as digits or as an English/German number word."""
    lowered = word.lower()
    return int(lowered) if lowered.isdigit() else _COUNT_WORDS[lowered]


def _shifted(as_of: datetime, count: int, unit: str) -> tuple[datetime, str]:
    """``as_of`` moved by ``count`` units (negative: back), at the unit's own precision."""
    lowered = unit.lower()
    praezision = next(p for stem, p in _UNIT_PRAEZISION.items() if lowered.startswith(stem))
    if praezision == "tag":
        return _day(as_of) + timedelta(days=count), praezision
    if praezision == "woche":
        return _week(as_of) + timedelta(weeks=count), praezision
    if praezision == "monat":
        return _add_months(_month(as_of.year, as_of.month), count), praezision
    return datetime(as_of.year + count, 1, 1, tzinfo=UTC), praezision


def _sign(word: str) -> int:
    lowered = word.lower()
    if lowered.startswith(_PAST):
        return -1
    if lowered.startswith(_NEXT):
        return 1
    return 0


def _latest_month(month: int, as_of: datetime, *, this_month: bool) -> datetime:
    """The latest start of ``month`` before ``as_of``'s month (``this_month``: or in it)."""
    if month < as_of.month or (this_month and month == as_of.month):
        return _month(as_of.year, month)
    return _month(as_of.year - 1, month)


def _day_of_month(day: int, month: int, year: str | None, as_of: datetime, past: bool) -> tuple[datetime, str] | None:
    """A calendar day; without its year this year's, or, told in the past, the latest one not after
    the turn's day (a 29 February: the last leap year's)."""
    if year is None and past:
        today = _day(as_of)
        for back in range(9):
            date = _safe_date(as_of.year - back, month, day)
            if date is not None and date <= today:
                return date, "tag"
        return None
    date = _safe_date(_year(year, as_of), month, day)
    return (date, "tag") if date else None


def _resolve(kind: str, m: re.Match[str], as_of: datetime, text: str) -> tuple[datetime, str] | None:
    g = m.groups()
    if kind == "iso":
        date = _safe_date(int(g[0]), int(g[1]), int(g[2]))
        return (date, "tag") if date else None
    if kind in ("numeric", "day_month", "month_day"):
        past = told_in_the_past(text, m.start(), m.end())
        if kind == "month_day":
            return _day_of_month(int(g[1]), _MONTHS[g[0].lower()], g[2], as_of, past)
        month = int(g[1]) if kind == "numeric" else _MONTHS[g[1].lower()]
        return _day_of_month(int(g[0]), month, g[2], as_of, past)
    if kind == "relative_day":
        if g[0] == "Morgen" and not sentence_initial(text, m.start()):
            return None  # "guten Morgen", "am Morgen": the noun (morning), not "tomorrow"
        return _day(as_of) + timedelta(days=_RELATIVE_DAYS[" ".join(g[0].lower().split())]), "tag"
    if kind in ("ago", "ahead"):
        if kind == "ago":
            count, unit, sign = (g[0], g[1], -1) if g[0] is not None else (g[2], g[3], -1)
        else:
            count, unit, sign = g[0], g[1], 1
        return _shifted(as_of, sign * _count(count), unit)
    if kind == "weekend":
        saturday = _week(as_of) + timedelta(days=5)
        return saturday + timedelta(weeks=_sign(g[0])), "tag"
    if kind == "weekday":
        target = _WEEKDAYS[g[1].lower()]
        today = _day(as_of)
        past = g[0] is not None or (
            _NAMED_AHEAD.search(text, 0, m.start()) is None and told_in_the_past(text, m.start(), m.end())
        )
        if past:  # the last such weekday strictly before today
            back = (today.weekday() - target) % 7 or 7
            return today - timedelta(days=back), "tag"
        ahead = (target - today.weekday()) % 7 or 7
        return today + timedelta(days=ahead), "tag"
    if kind == "week":
        return _week(as_of) + timedelta(weeks=_sign(g[0])), "woche"
    if kind == "month_rel":
        return _add_months(_month(as_of.year, as_of.month), _sign(g[0])), "monat"
    if kind == "month_past":
        return _latest_month(_MONTHS[g[0].lower()], as_of, this_month=False), "monat"
    if kind == "month_name":
        month = _MONTHS[g[1].lower()]
        if g[2] is None and (g[0].lower() in _SINCE or told_in_the_past(text, m.start(), m.end())):
            return _latest_month(month, as_of, this_month=True), "monat"
        return _month(_year(g[2], as_of), month), "monat"
    if kind == "year_rel":
        return datetime(as_of.year + _sign(g[0]), 1, 1, tzinfo=UTC), "jahr"
    if kind == "year":
        return datetime(int(g[0]), 1, 1, tzinfo=UTC), "jahr"
    raise AssertionError(kind)  # pragma: no cover


def find_dated_mention(text: str, as_of: datetime) -> DatedMention | None:
    """The earliest dated mention in ``text`` resolved against ``as_of`` (module docstring), or None.

    ``as_of`` is the turn's instant in the pair's time zone; its wall clock there is the calendar the
    turn was said on."""
    if as_of.tzinfo is None:
        raise ValueError("as_of must be timezone-aware")
    as_of = as_of.replace(tzinfo=UTC)  # the local wall clock, on the UTC calendar the dates are kept in
    best: tuple[int, int, DatedMention] | None = None
    for priority, (kind, pattern) in enumerate(_PATTERNS):
        for match in pattern.finditer(text):
            try:
                resolved = _resolve(kind, match, as_of, text)
            except (ValueError, OverflowError):  # "next year" on 9999-12-30: a year no datetime holds
                continue
            if resolved is None or not ZEITPUNKT_MIN <= resolved[0] <= TIME_MAX:
                continue  # a date the stores do not hold is no date to search for or to register
            key = (match.start(), priority)
            if best is None or key < best[:2]:
                best = (match.start(), priority, DatedMention(resolved[0], resolved[1], match.group().strip()))
            break  # later matches of the same pattern start later
    return best[2] if best else None

