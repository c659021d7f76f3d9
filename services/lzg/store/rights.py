"""The SQL of a person's rights in the LZG (migration 010, ``sql/rights.sql``): generations and
tombstones, and the reads and writes of erase, export, import, forget and correct.

Kept apart from :mod:`services.lzg.rights` so that the promotion and the cache can use the
tombstone and the generation without importing the rights operations, which use the engine. The
only code naming a rights query: :mod:`services.lzg.rights` decides, these functions read and write.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from pgvector import Vector

from novaberg_core.migrations import load_queries
from services.lzg.rows import (
    Entity,
    StoredEdge,
    StoredNode,
    Timeline,
    entity_from_row,
    timeline_from_row,
)

__all__ = [
    "RIGHTS_QUERIES",
    "TOMBSTONE_WINDOW",
    "EraseCounts",
    "ExportRows",
    "ForgottenNode",
    "StoredNode",
    "characters_of_user",
    "correct_node",
    "erase_rows",
    "export_rows",
    "forget_rows",
    "forget_targets",
    "import_entity",
    "import_timeline",
    "lift_tombstone",
    "move_generation",
    "new_nodes",
    "node_for_correction",
    "pair_is_empty",
    "pair_key",
    "promotion_erased",
    "record_tombstone",
    "user_key",
]

RIGHTS_QUERIES: Final = load_queries(Path(__file__).resolve().parents[1] / "sql" / "rights.sql")
"""Named queries of the rights operations."""


TOMBSTONE_WINDOW: Final = timedelta(minutes=10)
"""How long an erasure's tombstone refuses promotions of entries written before it. Far longer than
a promotion can be in flight (Pixie's calls time out after 30 s); the exact guard is Pixie's (it
holds the pair and user locks during an erasure and drops older jobs, docs/decisions.md)."""


async def pair_key(conn: Any, user_id: str, character_id: str) -> str:
    """The pair's one-way key as the database computes it (equals ``contract.pair_token``)."""
    return str(await conn.fetchval(RIGHTS_QUERIES["pair_key"], user_id, character_id))


async def user_key(conn: Any, user_id: str) -> str:
    """The user's one-way key (equals ``contract.user_token``)."""
    return str(await conn.fetchval(RIGHTS_QUERIES["user_key"], user_id))


def new_nodes(conn: Any, user_id: str, character_id: str, after_id: int) -> Awaitable[list[Any]]:
    """The cache's watermark read (services/lzg/cache.py): the generation of the pair's node set,
    then the pair's nodes with an id above ``after_id``, in one statement (a plain call: no frame
    of its own on the read's path)."""
    return conn.fetch(RIGHTS_QUERIES["cache_new_nodes_generation"], user_id, character_id, after_id)


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


async def node_for_correction(
    conn: Any, user_id: str, character_id: str, node_id: int, kzg_key: str
) -> StoredNode | None:
    """The pair's node by id (> 0) or by its KZG key, with its timeline (what Trigger 1 needs), or None."""
    row = await conn.fetchrow(RIGHTS_QUERIES["node_for_correction"], user_id, character_id, node_id, kzg_key)
    return None if row is None else StoredNode.from_row(row)


async def correct_node(
    conn: Any, node_id: int, user_id: str, character_id: str, inhalt: str, vector: Any
) -> None:
    """The node's new content and vector (CorrectNode)."""
    await conn.execute(RIGHTS_QUERIES["correct_node"], node_id, user_id, character_id, inhalt, Vector(vector))


def _count(value: Any) -> int:
    return int(value or 0)


@dataclass(frozen=True)
class EraseCounts:
    nodes: int = 0
    edges: int = 0
    entities: int = 0
    timelines: int = 0
    verbindungen: int = 0
    characters: int = 0


@dataclass(frozen=True)
class ExportRows:
    """A pair's records: entities, timelines, nodes (no vectors), edges."""

    entities: list[Entity]
    timelines: list[Timeline]
    nodes: list[StoredNode]
    edges: list[StoredEdge]


@dataclass(frozen=True)
class ForgottenNode:
    node_id: int
    kzg_quell_key: str
    kzg_keys: tuple[str, ...]
    turn_ids: tuple[str, ...]


# --- erase -------------------------------------------------------------------------------------


async def characters_of_user(conn: Any, user_id: str) -> list[str]:
    """Every character the user has anything with (the pairs a user's erasure locks)."""
    return [r["character_id"] for r in await conn.fetch(RIGHTS_QUERIES["characters_of_user"], user_id)]


async def erase_rows(conn: Any, user_id: str, character_id: str | None, characters: int) -> EraseCounts:
    """Every row of the pair (or, ``character_id`` None, of all the user's pairs): one DELETE per table."""
    q = RIGHTS_QUERIES
    ids = [r["id"] for r in await conn.fetch(q["erase_node_ids"], user_id, character_id)]
    verbindungen = _count(await conn.fetchval(q["erase_verbindung"], user_id, character_id))
    await conn.execute(q["erase_verwendung_turn"], user_id, character_id)
    edges = await _delete_edges_of(conn, ids)
    nodes = _count(await conn.fetchval(q["erase_knoten"], user_id, character_id))
    entities = _count(await conn.fetchval(q["erase_entitaet"], user_id, character_id))
    timelines = _count(await conn.fetchval(q["erase_timeline"], user_id, character_id))
    return EraseCounts(nodes, edges, entities, timelines, verbindungen, characters)


async def record_tombstone(conn: Any, key: str) -> None:
    """The erasure's tombstone under ``key`` (pair or user key); expired tombstones dropped."""
    await conn.execute(RIGHTS_QUERIES["expire_tombstones"], TOMBSTONE_WINDOW)
    await conn.execute(RIGHTS_QUERIES["record_tombstone"], key)


# --- export / import ---------------------------------------------------------------------------


async def export_rows(conn: Any, user_id: str, character_id: str) -> ExportRows:
    """The pair's rows, read in ``conn`` (a reader: one consistent view)."""
    q = RIGHTS_QUERIES
    return ExportRows(
        [entity_from_row(r) for r in await conn.fetch(q["export_entities"], user_id, character_id)],
        [timeline_from_row(r) for r in await conn.fetch(q["export_timelines"], user_id, character_id)],
        [StoredNode.from_row(r) for r in await conn.fetch(q["export_nodes"], user_id, character_id)],
        [StoredEdge.from_row(r) for r in await conn.fetch(q["export_edges"], user_id, character_id)],
    )


async def pair_is_empty(conn: Any, user_id: str, character_id: str) -> bool:
    """Whether the pair holds no node, entity or timeline."""
    return bool(await conn.fetchval(RIGHTS_QUERIES["pair_is_empty"], user_id, character_id))


async def lift_tombstone(conn: Any, user_id: str, character_id: str) -> None:
    """Promotions of the pair's entries count again (an import re-creates the pair)."""
    await conn.execute(RIGHTS_QUERIES["lift_tombstone"], user_id, character_id)


async def import_entity(conn: Any, pair: tuple[str, str], name: str, typ: str, aliases: Sequence[str]) -> int:
    """A new entity of the pair; its id."""
    return int(await conn.fetchval(RIGHTS_QUERIES["import_entity"], *pair, name, typ, list(aliases)))


async def import_timeline(
    conn: Any, pair: tuple[str, str], zeitpunkt: datetime, praezision: str, titel: str, themen: Sequence[str]
) -> int:
    """A new timeline of the pair; its id."""
    return int(
        await conn.fetchval(
            RIGHTS_QUERIES["import_timeline"], *pair, zeitpunkt, praezision, titel, list(themen)
        )
    )


# --- forget ------------------------------------------------------------------------------------


async def forget_targets(
    conn: Any, user_id: str, character_id: str, node_ids: Sequence[int], source_turn_id: str
) -> list[ForgottenNode]:
    """The pair's nodes named by id or made from ``source_turn_id``'s entries, with their bridges."""
    rows = await conn.fetch(
        RIGHTS_QUERIES["forget_targets"], user_id, character_id, list(node_ids), source_turn_id
    )
    return [
        ForgottenNode(r["id"], r["kzg_quell_key"], tuple(r["kzg_keys"]), tuple(r["turn_ids"])) for r in rows
    ]


async def forget_rows(conn: Any, user_id: str, character_id: str, ids: Sequence[int]) -> int:
    """The nodes ``ids`` deleted with their provenance, rank rows and edges; the edges deleted."""
    q = RIGHTS_QUERIES
    await conn.execute(q["forget_verbindung"], user_id, character_id, ids)
    edges = await _delete_edges_of(conn, ids)
    await conn.execute(q["forget_knoten"], user_id, character_id, ids)
    return edges


async def _delete_edges_of(conn: Any, ids: Sequence[int]) -> int:
    """Every edge from or to the nodes ``ids`` with its rank row; the edges deleted."""
    await conn.execute(RIGHTS_QUERIES["forget_kanten_rang"], list(ids))
    return _count(await conn.fetchval(RIGHTS_QUERIES["forget_kanten"], list(ids)))
