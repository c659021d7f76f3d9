"""A person's erasure in log.pipeline_log on real PostgreSQL (services/log/rights.py): every row of the
pair incl. turn_roh and the maintenance rows naming its keys; late records from writers' buffers are
dropped by the tombstone, new ones are kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from novaberg_core.contract import pair_token, user_token
from novaberg_core.errors import InvalidArgument
from services.log.domain import NewRow
from services.log.rights import LogRights
from services.log.store import LogStore
from tests.integration.log.conftest import batches, row

pytestmark = pytest.mark.integration

PAIR = ("erase-u", "erase-c")
SECOND = ("erase-u", "other-c")
KEEP = ("keep-u", "keep-c")


def _rows(now: datetime, pair: tuple[str, str]) -> list[NewRow]:
    user, character = pair
    return [
        row(now, f"t-{character}", "eingang", '{"text": "Hallo"}', pair=pair),
        row(now, f"t-{character}", "turn_roh", '{"user": "Hallo", "antwort": "Hi"}', node="dispatcher", pair=pair),
        # a maintenance row (no pair) that names one of the pair's KZG keys
        row(now, "queue-read", "db_read", f'{{"jobs": [{{"kzg_key": "kzg:{user}:{character}:e1"}}]}}'),
    ]


async def _texts(log_store: LogStore) -> list[str]:
    async with log_store.pool.acquire() as conn:
        return [r["t"] for r in await conn.fetch("SELECT p::text AS t FROM log.pipeline_log p ORDER BY id")]


async def test_erase_pair_removes_its_rows_turn_roh_included_and_nothing_else(log_store: LogStore) -> None:
    now = datetime.now(UTC)
    await log_store.write(batches(_rows(now, PAIR), _rows(now, SECOND), _rows(now, KEEP)))
    kept_before = [t for t in await _texts(log_store) if PAIR[1] not in t]
    counts = await LogRights(log_store).erase(PAIR, None)
    assert (counts.rows, counts.turn_roh, counts.unpaired_rows) == (2, 1, 1)
    after = await _texts(log_store)
    assert after == kept_before
    assert not any(PAIR[1] in t for t in after)
    async with log_store.pool.acquire() as conn:
        assert [r[0] for r in await conn.fetch("SELECT schluessel FROM log.loeschung")] == [pair_token(*PAIR)]


async def test_records_of_an_erased_pair_arriving_later_are_dropped_newer_ones_kept(log_store: LogStore) -> None:
    before = datetime.now(UTC) - timedelta(seconds=5)
    await LogRights(log_store).erase(PAIR, None)
    later = datetime.now(UTC) + timedelta(seconds=5)
    # a writer's buffer flushes rows dated before the erasure (the pair's and a maintenance row naming it)
    written = await log_store.write(batches(_rows(before, PAIR), _rows(before, KEEP), _rows(later, PAIR)))
    assert written == 6  # KEEP's three and the pair's three dated after the erasure; none dated before
    texts = await _texts(log_store)
    assert sum(PAIR[1] in t and "t-erase-c" in t for t in texts) == 2
    assert sum("keep-c" in t for t in texts) == 3


async def test_erase_user_takes_every_character(log_store: LogStore) -> None:
    now = datetime.now(UTC)
    await log_store.write(batches(_rows(now, PAIR), _rows(now, SECOND), _rows(now, KEEP)))
    counts = await LogRights(log_store).erase(None, PAIR[0])
    assert (counts.rows, counts.turn_roh, counts.unpaired_rows) == (4, 2, 2)
    assert not any(PAIR[0] in t for t in await _texts(log_store))
    # the user's tombstone drops late rows of any of the user's characters
    await log_store.write(batches(_rows(now, ("erase-u", "third-c"))))
    assert not any(PAIR[0] in t for t in await _texts(log_store))
    async with log_store.pool.acquire() as conn:
        assert [r[0] for r in await conn.fetch("SELECT schluessel FROM log.loeschung")] == [user_token(PAIR[0])]
    with pytest.raises(InvalidArgument):
        await LogRights(log_store).erase(None, None)
