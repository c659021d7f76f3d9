"""The timeline's geometry (SPEC §5.4), shared by the LZG's timeline layer and the dates a question
names in either layer's retrieval (SPEC §11): the seven tolerances, the distance of two moments in a
precision's unit, and the window of moments within a tolerance — pure.

Distances are taken in UTC: minute/stunde in fractional days, tag in calendar days, woche in
ISO weeks (Monday starts), monat/quartal/jahr in calendar units.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from novaberg_core.errors import InvalidArgument
from novaberg_core.model import Praezision
from novaberg_core.timeutil import SECONDS_PER_DAY, shifted

__all__ = [
    "LZG_TIMELINE_TOLERANZ",
    "as_utc",
    "parse_praezision",
    "timeline_distance",
    "timeline_window",
]

LZG_TIMELINE_TOLERANZ: dict[Praezision, int] = {
    Praezision.MINUTE: 7,  # days: sub-day precisions are measured in days
    Praezision.STUNDE: 7,  # days
    Praezision.TAG: 21,  # days
    Praezision.WOCHE: 8,  # weeks
    Praezision.MONAT: 6,  # months
    Praezision.QUARTAL: 4,  # quarters
    Praezision.JAHR: 2,  # years
}
"""All seven tolerances, each ± in its own unit (SPEC §5.4; the seed code read only two)."""


def parse_praezision(value: str, field: str = "praezision") -> Praezision:
    """A precision name (any case); InvalidArgument naming the field and the choices otherwise."""
    try:
        return Praezision(value.strip().lower())
    except ValueError:
        raise InvalidArgument(
            f"{field} {value!r} is not a timeline precision; choose one of {', '.join(p.value for p in Praezision)}"
        ) from None


def as_utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive one is refused (a timeline moment names its zone)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("timeline moments must be timezone-aware")
    return moment.astimezone(UTC)


def timeline_distance(a: datetime, b: datetime, praezision: Praezision) -> float:
    """Distance of two moments in the unit of ``praezision`` (SPEC §5.4), always ≥ 0."""
    ua, ub = as_utc(a), as_utc(b)
    if praezision in (Praezision.MINUTE, Praezision.STUNDE):
        return abs((ub - ua).total_seconds()) / SECONDS_PER_DAY
    if praezision is Praezision.TAG:
        return float(abs((ub.date() - ua.date()).days))
    if praezision is Praezision.WOCHE:
        monday_a = ua.date() - timedelta(days=ua.weekday())
        monday_b = ub.date() - timedelta(days=ub.weekday())
        return float(abs((monday_b - monday_a).days) // 7)
    if praezision is Praezision.MONAT:
        return float(abs((ub.year * 12 + ub.month) - (ua.year * 12 + ua.month)))
    if praezision is Praezision.QUARTAL:
        return float(abs((ub.year * 4 + (ub.month - 1) // 3) - (ua.year * 4 + (ua.month - 1) // 3)))
    return float(abs(ub.year - ua.year))


_MONTHS_PER_UNIT = {Praezision.MONAT: 1, Praezision.QUARTAL: 3, Praezision.JAHR: 12}
_LAST_INSTANT = datetime.max.replace(tzinfo=UTC)
_FIRST_INSTANT = datetime.min.replace(tzinfo=UTC)


def timeline_window(zeitpunkt: datetime, praezision: Praezision) -> tuple[datetime, datetime]:
    """The first and the last instant (UTC, to the microsecond) whose :func:`timeline_distance` to
    ``zeitpunkt`` is within the tolerance of ``praezision`` (SPEC §5.4, the dates a question names in
    §11): whole calendar units, the named one ± the tolerance; the sub-day precisions ± 7 days exactly.
    Held at the first or last instant a datetime holds."""
    at = as_utc(zeitpunkt)
    toleranz = LZG_TIMELINE_TOLERANZ[praezision]
    if praezision in (Praezision.MINUTE, Praezision.STUNDE):
        return shifted(at, -toleranz), shifted(at, toleranz)
    day = at.replace(hour=0, minute=0, second=0, microsecond=0)
    if praezision is Praezision.TAG:
        return shifted(day, -toleranz), _before(shifted(day, toleranz + 1))
    if praezision is Praezision.WOCHE:
        monday = day - timedelta(days=at.weekday())  # 0001-01-01 is a Monday: never before the first day
        return shifted(monday, -7 * toleranz), _before(shifted(monday, 7 * (toleranz + 1)))
    unit = _MONTHS_PER_UNIT[praezision]
    start = (at.year * 12 + at.month - 1) // unit * unit  # the named unit's first month, counted from year 0
    return _month_start(start - toleranz * unit), _before(_month_start(start + (toleranz + 1) * unit))


def _month_start(month: int) -> datetime:
    """The first instant of a month counted from January of year 0, held at the ends of what a datetime holds."""
    year = month // 12
    if year < 1:
        return _FIRST_INSTANT
    if year > 9999:
        return _LAST_INSTANT
    return datetime(year, month % 12 + 1, 1, tzinfo=UTC)


def _before(next_start: datetime) -> datetime:
    """The last instant before the unit that starts at ``next_start`` (the last one a datetime holds at its end)."""
    return next_start if next_start == _LAST_INSTANT else next_start - timedelta(microseconds=1)
