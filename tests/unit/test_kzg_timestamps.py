"""The KZG keeps its times in Redis as unix seconds (the search index ranges over them, SPEC §11) and
hands them on as aware datetimes: a stored time reads back as the instant written, and a hash written
with the seconds' full float digits reads as the Timestamp ``datetime.fromtimestamp`` would give."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from novaberg_core.timeutil import optional_timestamp, to_timestamp
from services.kzg.store.codec import moment_or_none, seconds


def _via_datetime(at: float) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(datetime.fromtimestamp(at, tz=UTC))
    return ts


def test_a_stored_time_reads_back_as_the_instant_written() -> None:
    rng = random.Random(11)
    start = datetime(2020, 1, 1, tzinfo=UTC)
    moments = [start + timedelta(microseconds=rng.randrange(10**15)) for _ in range(5_000)]
    assert [moment_or_none(seconds(m).encode()) for m in moments] == moments


@pytest.mark.parametrize(
    "at",
    [1_790_000_000.25, 1_790_000_000.0000005, 1_790_000_000.9999996, 1.5, -1.5, -0.0000004, 86_400.000_001],
)
def test_float_seconds_round_to_the_microsecond_like_datetime(at: float) -> None:
    moment = moment_or_none(repr(at).encode())
    assert moment is not None and to_timestamp(moment) == _via_datetime(at)


def test_an_absent_or_unreadable_time_is_none() -> None:
    assert moment_or_none(None) is None and moment_or_none(b"") is None and moment_or_none(b"gestern") is None
    assert moment_or_none(b"nan") is None and moment_or_none(b"1e20") is None and moment_or_none(b"inf") is None


def test_no_time_leaves_the_field_unset() -> None:
    moment = datetime(2026, 3, 4, 5, 6, 7, 891_011, tzinfo=UTC)
    assert optional_timestamp(None) is None and optional_timestamp(moment) == to_timestamp(moment)
