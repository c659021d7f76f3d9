"""What every part of the KZG's store shares: one Redis client (RESP3, raw bytes), the declared
index and the Lua scripts (SPEC §4.5)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from novaberg_core import redis_client

__all__ = ["INDEX_SCHEMA_PATH", "VECTOR_ALGORITHMS", "StoreBase"]

_KZG_DIR = Path(__file__).resolve().parents[1]
INDEX_SCHEMA_PATH = _KZG_DIR / "index_schema.json"
_LUA_DIR = _KZG_DIR / "lua"
VECTOR_ALGORITHMS = ("FLAT", "HNSW")


def _script(name: str) -> str:
    return (_LUA_DIR / f"{name}.lua").read_text(encoding="utf-8")


_SCRIPTS = {
    name: _script(name)
    for name in (
        "store_entry", "read_entries", "forget_session", "correct_entry", "enqueue", "append_session"
    )
}


class StoreBase:
    """The client, the index declaration and the registered scripts; the parts add the commands."""

    def __init__(
        self,
        redis: Redis,
        *,
        dimension: int,
        vector_algorithm: str = "FLAT",
        schema_path: Path = INDEX_SCHEMA_PATH,
    ) -> None:
        if vector_algorithm not in VECTOR_ALGORITHMS:
            raise ValueError(f"vector algorithm must be one of {VECTOR_ALGORITHMS}, got {vector_algorithm!r}")
        self.redis = redis
        self.dimension = dimension
        self.vector_algorithm = vector_algorithm
        self.schema: dict[str, Any] = json.loads(schema_path.read_text(encoding="utf-8"))
        self.index_name: str = self.schema["name"]
        self._store_entry = redis.register_script(_SCRIPTS["store_entry"])
        self._read_entries = redis.register_script(_SCRIPTS["read_entries"])
        self._forget_session = redis.register_script(_SCRIPTS["forget_session"])
        self._correct_entry = redis.register_script(_SCRIPTS["correct_entry"])
        self._enqueue = redis.register_script(_SCRIPTS["enqueue"])
        self._append_session = redis.register_script(_SCRIPTS["append_session"])

    @classmethod
    def from_url(cls, url: str, *, dimension: int, vector_algorithm: str = "FLAT") -> Self:
        """A store on a new client for ``url`` (RESP3, no response decoding)."""
        client = redis_client.connect(url, decode_responses=False)
        return cls(client, dimension=dimension, vector_algorithm=vector_algorithm)

    async def close(self) -> None:
        await self.redis.aclose()

    async def per_key(self, keys: Sequence[str], command: Callable[[Pipeline, str], object]) -> list[Any]:
        """One command per key, pipelined in one round trip; the replies in the keys' order."""
        if not keys:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in keys:
                command(pipe, key)
            return list(await pipe.execute())
