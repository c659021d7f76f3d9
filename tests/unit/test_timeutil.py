"""Time helpers: aware UTC, the optional ``as_of`` of time-dependent RPCs, day distances."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from novaberg_core.timeutil import as_of_or_now, days_between, from_timestamp, shifted, to_timestamp, utc_now


def test_utc_now_is_aware_utc() -> None:
    now = utc_now()
    assert now.utcoffset() == timedelta(0)


def test_as_of_unset_or_zero_means_now() -> None:
    before = utc_now()
    for ts in (None, Timestamp()):
        got = as_of_or_now(ts)
        assert got.tzinfo is not None
        assert before <= got <= utc_now()


def test_as_of_set_is_used() -> None:
    ts = Timestamp(seconds=1_795_000_000, nanos=500_000_000)
    assert as_of_or_now(ts) == datetime(2026, 11, 18, 11, 6, 40, 500_000, tzinfo=UTC)


def test_timestamp_round_trip_normalises_to_utc() -> None:
    berlin = timezone(timedelta(hours=1))
    dt = datetime(2026, 11, 29, 13, 0, 0, 123_456, tzinfo=berlin)
    ts = to_timestamp(dt)
    assert ts.seconds == int(datetime(2026, 11, 29, 12, 0, tzinfo=UTC).timestamp())
    assert ts.nanos == 123_456_000
    back = from_timestamp(ts)
    assert back == dt and back.utcoffset() == timedelta(0)


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        to_timestamp(datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        days_between(datetime(2026, 1, 1), utc_now())


def test_days_between() -> None:
    a = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    assert days_between(a, a + timedelta(days=4)) == 4.0
    assert days_between(a, a + timedelta(hours=36)) == 1.5
    assert days_between(a + timedelta(days=2), a) == -2.0


def test_to_timestamp_equals_the_protobuf_conversion() -> None:
    """Before and after the epoch, in any offset, to the microsecond."""
    rng = random.Random(3)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    moments = [epoch + timedelta(microseconds=rng.randrange(-10**15, 4 * 10**15)) for _ in range(5_000)]
    moments += [m.astimezone(timezone(timedelta(hours=-7, minutes=-30))) for m in moments[:200]]

    def via_protobuf(moment: datetime) -> Timestamp:
        ts = Timestamp()
        ts.FromDatetime(moment.astimezone(UTC))
        return ts

    assert [to_timestamp(m) for m in moments] == [via_protobuf(m) for m in moments]


def test_shifted_holds_at_the_ends_of_what_a_datetime_holds() -> None:
    a = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    assert shifted(a, 1.5) == a + timedelta(hours=36) and shifted(a, -2) == a - timedelta(days=2)
    assert shifted(datetime(9999, 12, 30, tzinfo=UTC), 400) == datetime.max.replace(tzinfo=UTC)
    assert shifted(datetime(1, 1, 2, tzinfo=UTC), -30) == datetime.min.replace(tzinfo=UTC)
    assert shifted(a, -(2**31 - 1)) == datetime.min.replace(tzinfo=UTC)  # more days than a timedelta holds
    with pytest.raises(ValueError, match="timezone-aware"):
        shifted(datetime(2026, 1, 1), 1)
