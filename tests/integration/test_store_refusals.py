"""A store that cannot take writes for now is an outage to retry, not a bug (novaberg_core.store_errors).

Each case makes the real store refuse as it does in production — a Redis replica during a failover,
a PostgreSQL standby — and checks the status the server bootstrap would answer with.
(``tests/service/kzg/test_kzg_store_full.py`` does the same for a Redis at its memory limit, end to end.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest
import redis.exceptions
from redis.asyncio import Redis

from novaberg_core.errors import Unavailable
from novaberg_core.store_errors import store_error


@pytest.fixture
async def replica(redis_url: str) -> AsyncIterator[Redis]:
    """The test Redis as a replica of a master that cannot be reached: it keeps its data and serves
    reads (``replica-serve-stale-data``), and refuses writes, as a replica does until it is promoted."""
    client = Redis.from_url(redis_url)
    await client.set("before", "kept")
    await client.execute_command("REPLICAOF", "127.0.0.1", "1")
    try:
        yield client
    finally:
        await client.execute_command("REPLICAOF", "NO", "ONE")
        await client.aclose()


async def test_a_redis_replica_refusing_a_write_is_unavailable(replica: Redis) -> None:
    with pytest.raises(redis.exceptions.RedisError) as refused:
        await replica.hset("kzg:u:c:e", "inhalt", "x")
    mapped = store_error(refused.value)
    assert isinstance(mapped, Unavailable), refused.value
    assert str(mapped).startswith("Redis is a read-only replica (a failover?), retry later (ReadOnlyError: ")
    assert await replica.get("before") == b"kept"  # reads go on


async def test_a_postgresql_standby_refusing_a_write_is_unavailable(pg_url: str) -> None:
    connection = await asyncpg.connect(pg_url)
    try:
        await connection.execute("SET default_transaction_read_only = on")  # what every transaction on a standby is
        with pytest.raises(asyncpg.PostgresError) as refused:
            await connection.execute("CREATE TABLE written_on_a_standby (x int)")
    finally:
        await connection.close()
    mapped = store_error(refused.value)
    assert isinstance(mapped, Unavailable), refused.value
    assert str(mapped).startswith(
        "PostgreSQL takes no writes (a standby: a failover?), retry later (ReadOnlySQLTransactionError: "
    )


def test_a_bug_stays_a_bug() -> None:
    """What is not a store's refusal is left to surface as INTERNAL."""
    assert store_error(redis.exceptions.ResponseError("ERR wrong number of arguments for 'hset' command")) is None
    assert store_error(asyncpg.exceptions.UndefinedColumnError('column "x" does not exist')) is None
