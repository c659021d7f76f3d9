"""Fingerprints of one pair's memory: every Redis key and every PostgreSQL row that belongs to it.

The store-wide helpers in :mod:`tests.e2e.attack` digest everything; these digest only what a
pair owns, so a test can show that work in another pair (the demo, a scoped maintenance run)
left it byte-identical while the stores around it changed.
"""

from __future__ import annotations

import asyncio

import asyncpg
import redis

from tests.e2e.attack import redis_fingerprint

_EDGE_TABLES = {
    # Tables without pair columns, reached through the pair's nodes.
    "lzg_kanten": ("knoten_a_id", "knoten_b_id"),
    "lzg_kanten_rang": ("knoten_x_id", "knoten_y_id"),
}


def pair_redis_fingerprint(client: redis.Redis, user_id: str, character_id: str) -> dict[bytes, str]:
    """Digests of the pair's keys (``kzg:``, ``session:``, ``hash_dirty:``, ``pipeline:cluster:`` …)."""
    marker = f":{user_id}:{character_id}".encode()
    return {
        key: digest for key, digest in redis_fingerprint(client).items()
        if key.endswith(marker) or marker + b":" in key
    }  # fmt: skip


async def _pg(url: str, user_id: str, character_id: str) -> dict[str, str]:
    conn = await asyncpg.connect(url)
    try:
        columns = await conn.fetch(
            "SELECT table_schema, table_name, array_agg(column_name::text) AS cols "
            "FROM information_schema.columns WHERE table_schema IN ('lzg', 'log', 'pixie') "
            "GROUP BY 1, 2 ORDER BY 1, 2"
        )
        digests: dict[str, str] = {}
        for row in columns:
            name = f'"{row["table_schema"]}"."{row["table_name"]}"'
            cols = set(row["cols"])
            if {"user_id", "character_id"} <= cols:
                where = "t.user_id = $1 AND t.character_id = $2"
            elif row["table_name"] in _EDGE_TABLES and row["table_schema"] == "lzg":
                a, b = _EDGE_TABLES[row["table_name"]]
                where = (f"EXISTS (SELECT 1 FROM lzg.lzg_knoten k WHERE k.id IN (t.{a}, t.{b}) "
                         "AND k.user_id = $1 AND k.character_id = $2)")  # fmt: skip
            else:
                continue  # global tables (model, run history, migrations): not the pair's
            digests[name] = await conn.fetchval(
                f"SELECT md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) || ':' || count(*) "
                f"FROM {name} t WHERE {where}",
                user_id, character_id,
            )  # fmt: skip
        return digests
    finally:
        await conn.close()


def pair_postgres_fingerprint(url: str, user_id: str, character_id: str) -> dict[str, str]:
    """A digest (and row count) of the pair's rows in every table of the lzg, log and pixie schemas."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(_pg(url, user_id, character_id))
    finally:
        loop.close()


async def pair_postgres_fingerprint_async(url: str, user_id: str, character_id: str) -> dict[str, str]:
    """:func:`pair_postgres_fingerprint` from async code."""
    return await _pg(url, user_id, character_id)
