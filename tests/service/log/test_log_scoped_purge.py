"""Retention scoped to pairs (SPEC §8, issue 16): a replay's purge deletes only its own pairs' rows."""

from __future__ import annotations

from datetime import timedelta

import grpc
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg_core.timeutil import to_timestamp, utc_now

from .test_log_service import _record, _rows, _stream

MEISTER = common_pb2.Pair(user_id="meister", character_id="nova")
ANNA = common_pb2.Pair(user_id="anna", character_id="nova")


def _of(pair: common_pb2.Pair | None, turn_id: str, art: str, days_ago: int) -> log_pb2.LogRecord:
    ids = {} if pair is None else {"user_id": pair.user_id, "character_id": pair.character_id}
    inhalt = {"user_prompt": "a", "response": "b"} if art == "turn_roh" else "x"
    return _record(turn_id, art, inhalt, at=utc_now() - timedelta(days=days_ago), **ids)


async def test_a_scoped_purge_months_ahead_deletes_only_its_pairs_rows(
    log_stub: log_pb2_grpc.LogServiceStub,
) -> None:
    await log_stub.Write(_stream([
        _of(MEISTER, "m-old", "eingang", 300), _of(MEISTER, "m-roh", "turn_roh", 300),
        _of(MEISTER, "m-new", "eingang", 1),
        _of(ANNA, "a-old", "eingang", 300), _of(None, "maintenance-old", "db_write", 300),
    ]))  # fmt: skip
    ahead = to_timestamp(utc_now() + timedelta(days=90))
    purged = await log_stub.Purge(log_pb2.PurgeRequest(as_of=ahead, pairs=[MEISTER]))
    assert (purged.deleted, purged.kept_turn_roh) == (1, 1)
    assert sorted(r.turn_id for r in await _rows(log_stub)) == ["a-old", "m-new", "m-roh", "maintenance-old"]


async def test_an_all_pairs_purge_in_the_future_is_refused(log_stub: log_pb2_grpc.LogServiceStub) -> None:
    await log_stub.Write(_stream([_of(ANNA, "a-old", "eingang", 300)]))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await log_stub.Purge(log_pb2.PurgeRequest(as_of=to_timestamp(utc_now() + timedelta(days=90))))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "Purge over all pairs" in (caught.value.details() or "")
    assert [r.turn_id for r in await _rows(log_stub)] == ["a-old"]
    # Now (the daily run's clock) over all pairs is fine.
    assert (await log_stub.Purge(log_pb2.PurgeRequest(retention_days=200))).deleted == 1
