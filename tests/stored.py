"""What the stores hold, read past the services (for tests that check what a call left behind)."""

from __future__ import annotations

import redis.asyncio as aioredis

from novaberg.common.v1 import common_pb2
from services.kzg.store import pair_prefix
from services.kzg.types import Pair


async def kzg_entry_turns(redis_url: str, pair: common_pb2.Pair) -> list[tuple[str, str]]:
    """(turn_id, beobachter) of every KZG entry of ``pair``, sorted (a turn written twice stands twice)."""
    client = aioredis.from_url(redis_url, decode_responses=True)
    try:
        keys = await client.keys(pair_prefix(Pair(pair.user_id, pair.character_id)) + "*")
        return sorted([tuple(await client.hmget(key, ["turn_id", "beobachter"])) for key in keys])  # type: ignore[misc]
    finally:
        await client.aclose()
