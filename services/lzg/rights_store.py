"""The SQL of a person's rights in the LZG (migration 010, ``sql/rights.sql``): generations and tombstones.

Kept apart from :mod:`services.lzg.rights` so that the promotion and the cache can use the
tombstone and the generation without importing the rights operations, which use the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from pgvector import Vector

from novaberg_core.migrations import load_queries

__all__ = [
    "CACHE_QUERY",
    "RIGHTS_LOG_NODE",
    "RIGHTS_QUERIES",
    "TOMBSTONE_WINDOW",
    "correct_node",
    "move_generation",
    "node_for_correction",
    "pair_key",
    "promotion_erased",
    "user_key",
]

RIGHTS_LOG_NODE: Final = "loeschung"
"""Pipeline-log node of the rights operations."""

RIGHTS_QUERIES: Final = load_queries(Path(__file__).resolve().parent / "sql" / "rights.sql")
"""Named queries of the rights operations."""

CACHE_QUERY: Final = RIGHTS_QUERIES["cache_new_nodes_generation"]
"""The cache's watermark read with the pair's generation (services/lzg/cache.py)."""

TOMBSTONE_WINDOW: Final = timedelta(minutes=10)
"""How long an erasure's tombstone refuses promotions of entries written before it. Far longer than
a promotion can be in flight (Pixie's calls time out after 30 s); the exact guard is Pixie's (it
holds the pair and user locks during an erasure and drops older jobs, docs/decisions.md)."""


async def pair_key(conn: Any, user_id: str, character_id: str) -> str:
    """The pair's one-way key as the database computes it (equals ``contract.pair_token``)."""
    return str(await conn.fetchval("SELECT paar_schluessel($1, $2)", user_id, character_id))


async def user_key(conn: Any, user_id: str) -> str:
    """The user's one-way key (equals ``contract.user_token``)."""
    return str(await conn.fetchval("SELECT nutzer_schluessel($1)", user_id))


async def move_generation(conn: Any, keys: Sequence[str]) -> None:
    """Every cache holding these pairs (or users) drops them at its next read (services/lzg/cache.py)."""
    await conn.execute(RIGHTS_QUERIES["move_generation"], list(keys))


async def promotion_erased(conn: Any, user_id: str, character_id: str, erstellt_am: datetime) -> bool:
    """Whether the pair or its user was erased after an entry written at ``erstellt_am`` (in the window)."""
    return bool(
        await conn.fetchval(
            RIGHTS_QUERIES["promotion_erased"], user_id, character_id, erstellt_am, TOMBSTONE_WINDOW
        )
    )


async def node_for_correction(conn: Any, user_id: str, character_id: str, node_id: int, kzg_key: str) -> Any:
    """The pair's node by id (> 0) or by its KZG key, with what Trigger 1 needs, or None."""
    return await conn.fetchrow(RIGHTS_QUERIES["node_for_correction"], user_id, character_id, node_id, kzg_key)


async def correct_node(
    conn: Any, node_id: int, user_id: str, character_id: str, inhalt: str, vector: Any
) -> None:
    """The node's new content and vector (CorrectNode)."""
    await conn.execute(RIGHTS_QUERIES["correct_node"], node_id, user_id, character_id, inhalt, Vector(vector))
