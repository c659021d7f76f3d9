"""The KZG's float seconds → Timestamp conversion rounds as ``datetime.fromtimestamp`` does."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from services.kzg.convert import timestamp


def _via_datetime(seconds: float) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(datetime.fromtimestamp(seconds, tz=UTC))
    return ts


@pytest.mark.parametrize(
    "seconds",
    [1_790_000_000.25, 1_790_000_000.0000005, 1_790_000_000.9999996, 1.5, -1.5, -0.0000004, 86_400.000_001],
)
def test_edges_round_like_datetime(seconds: float) -> None:
    assert timestamp(seconds) == _via_datetime(seconds)


def test_random_turn_times_round_like_datetime() -> None:
    rng = random.Random(11)
    values = [rng.uniform(1.5e9, 2.0e9) for _ in range(5_000)]
    assert [timestamp(v) for v in values] == [_via_datetime(v) for v in values]


def test_zero_is_the_empty_timestamp() -> None:
    assert timestamp(0.0) == Timestamp()
