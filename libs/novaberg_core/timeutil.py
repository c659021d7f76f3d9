"""Time helpers: aware UTC everywhere, and the optional ``as_of`` every time-dependent RPC carries.

A request's ``as_of`` lets tests and replays pin "now" (decay, TTLs, timeline distances); unset
means the server clock. Naive datetimes are refused rather than guessed at.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp

__all__ = [
    "EPOCH", "SECONDS_PER_DAY", "TIMESTAMP_TYPE", "as_of_or_now", "days_between", "from_timestamp", "optional_timestamp", "shifted", "to_timestamp",
    "utc_now",
]  # fmt: skip

SECONDS_PER_DAY = 86_400.0
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""The Unix epoch, aware UTC: the zero of every stored instant (protobuf Timestamps, Redis floats)."""
TIMESTAMP_TYPE = Timestamp.DESCRIPTOR.full_name
"""``google.protobuf.Timestamp``: the message type the contract checks and :func:`from_timestamp` converts."""


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


def from_timestamp(ts: Timestamp) -> datetime:
    """A protobuf Timestamp as an aware UTC datetime (microsecond precision)."""
    return ts.ToDatetime(tzinfo=UTC)


def as_of_or_now(ts: Timestamp | None) -> datetime:
    """The request's ``as_of`` as aware UTC, or :func:`utc_now` when it is absent or all-zero (unset)."""
    if ts is None or (ts.seconds == 0 and ts.nanos == 0):
        return utc_now()
    return from_timestamp(ts)


def to_timestamp(dt: datetime) -> Timestamp:
    """An aware datetime as a protobuf Timestamp; a naive one raises ValueError.

    The same value ``Timestamp.FromDatetime`` gives, by integer arithmetic on the distance from the
    epoch (a third of its time; a read converts a few per memory it returns).
    """
    _require_aware(dt, "to_timestamp")
    since = dt - EPOCH
    return Timestamp(seconds=since.days * 86_400 + since.seconds, nanos=since.microseconds * 1_000)


def optional_timestamp(dt: datetime | None) -> Timestamp | None:
    """:func:`to_timestamp`, or None (the field left unset) for no time."""
    return None if dt is None else to_timestamp(dt)


def days_between(a: datetime, b: datetime) -> float:
    """Days from ``a`` to ``b`` as a float (negative when ``b`` is earlier); both must be aware."""
    _require_aware(a, "days_between")
    _require_aware(b, "days_between")
    return (b - a).total_seconds() / SECONDS_PER_DAY


def shifted(dt: datetime, days: float) -> datetime:
    """``dt`` moved by ``days`` (negative: back), held at the first or last instant a datetime holds where
    it would leave that range (the tolerance window around a timeline ref in year 1 or 9999)."""
    _require_aware(dt, "shifted")
    try:
        return dt + timedelta(days=days)
    except OverflowError:
        return (datetime.min if days < 0 else datetime.max).replace(tzinfo=dt.tzinfo)


def _require_aware(dt: datetime, where: str) -> None:
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"{where} needs a timezone-aware datetime, got naive {dt.isoformat()}")
