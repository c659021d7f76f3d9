"""A person's rights over their memories in the LZG (SPEC §5): erase, export, import, forget, correct.

- **Erase** deletes every row of a pair (or of all pairs of a user) with one DELETE per table, in one
  transaction under the pairs' write locks; records a tombstone and moves the cache generation
  (migration 010). Nothing left names the pair: the tombstone and generation rows hold one-way keys.
- **Export** reads entities, timelines, nodes (weights, no vectors) and edges (reasons) in one
  repeatable-read transaction; **import** writes them into an empty pair in one transaction, each
  record with a new id (references remapped), nodes re-embedded from their text, weights and edges
  as exported.
- **Forget** deletes nodes with their edges and provenance: SPEC §5.7 forbids decay to hard-delete,
  but an explicit forget is the person's right, and a deactivated node would keep the content.
- **Correct** rewrites a node's content and vector and forms its edges again with Trigger 1, the
  promotion's own code path (``app/correction.py``, offered here as :meth:`LzgRights.correct`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import numpy as np
from pgvector import Vector

from novaberg_core.embedding import lzg_embed_text
from novaberg_core.errors import FailedPrecondition, InvalidArgument
from services.lzg.app.correction import Correction, CorrectResult
from services.lzg.engine import LzgEngine
from services.lzg.layers import parse_praezision
from services.lzg.rights_store import (
    RIGHTS_LOG_NODE,
    RIGHTS_QUERIES,
    TOMBSTONE_WINDOW,
    move_generation,
    pair_key,
    user_key,
)
from services.lzg.rows import EDGE_COLUMNS
from services.lzg.store import SCHEMA, PairTx
from services.lzg.types import BEOBACHTER, check_pair

__all__ = [
    "CorrectResult",
    "EraseCounts",
    "ExportData",
    "ForgetResult",
    "ImportChunk",
    "ImportResult",
    "LzgRights",
]

_LOG = logging.getLogger(__name__)

_EMBED_BATCH = 64
_GEDAECHTNISTYP_MAX = 20

_EXPORT_NODE_COLUMNS = (
    "id",
    "kzg_quell_key",
    "user_id",
    "character_id",
    "beobachter",
    "inhalt",
    "dimension",
    "gewicht_roh",
    "gewicht_absolut",
    "gewicht_decay",
    "haeufigkeit",
    "aktiv",
    "erstellt_am",
    "verstaerkt_am",
    "decay_am",
    "kzg_erstellt_am",
    "themen",
    "gedaechtnistyp",
    "entitaet_ids",
    "timeline_id",
    "emotion",
    "arousal",
    "emotions_vektor",
    "intentionen",
    "modus",
    "sprach_stil",
    "beziehungs_dynamik",
    "tone",
    "sprecher",
    "sprache",
    "quell_turn_id",
)


@dataclass(frozen=True)
class EraseCounts:
    nodes: int = 0
    edges: int = 0
    entities: int = 0
    timelines: int = 0
    verbindungen: int = 0
    characters: int = 0


@dataclass(frozen=True)
class ExportData:
    """Everything of a pair as rows (column name → value), read in one consistent view."""

    model_id: str
    entities: list[Mapping[str, Any]]
    timelines: list[Mapping[str, Any]]
    nodes: list[Mapping[str, Any]]
    edges: list[Mapping[str, Any]]


@dataclass
class ImportChunk:
    """One chunk of an import as rows with the exported (old) ids."""

    entities: list[Mapping[str, Any]] = field(default_factory=list)
    timelines: list[Mapping[str, Any]] = field(default_factory=list)
    nodes: list[Mapping[str, Any]] = field(default_factory=list)
    edges: list[Mapping[str, Any]] = field(default_factory=list)


@dataclass
class ImportResult:
    entity_ids: dict[int, int] = field(default_factory=dict)
    timeline_ids: dict[int, int] = field(default_factory=dict)
    node_ids: dict[int, int] = field(default_factory=dict)
    edges: int = 0
    quell_keys: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class ForgottenNode:
    node_id: int
    kzg_quell_key: str
    kzg_keys: tuple[str, ...]
    turn_ids: tuple[str, ...]


@dataclass(frozen=True)
class ForgetResult:
    nodes: tuple[ForgottenNode, ...]
    edges: int


def _intentionen_json(value: Any) -> str:
    """The ``intentionen`` column (JSON text) from a list, or from the column's own text as exported."""
    return value if isinstance(value, str) else json.dumps(list(value), ensure_ascii=False)


def _count(value: Any) -> int:
    return int(value or 0)


def _target_key(key: str, user_id: str, character_id: str) -> str:
    """An exported ``kzg_quell_key`` under the target pair (the entry id kept; keys are unique)."""
    entry_id = key.rsplit(":", 1)[-1] if key else ""
    if not entry_id:
        raise InvalidArgument(f"node kzg_quell_key {key!r} names no entry")
    return f"kzg:{user_id}:{character_id}:{entry_id}"


class LzgRights:
    """The rights operations over one :class:`LzgEngine` (its store, provider, cache and log)."""

    def __init__(self, engine: LzgEngine) -> None:
        self.engine = engine
        self.store = engine.store
        self.q = RIGHTS_QUERIES
        self.correct = Correction(engine.context).correct  # SPEC §5.4, Trigger 1 as at promotion

    # ================================================================ erase

    async def erase(self, pair: tuple[str, str] | None, user_id: str | None) -> EraseCounts:
        """Every row of ``pair`` or of every pair of ``user_id``, one DELETE per table; idempotent."""
        if (pair is None) == (user_id is None):
            raise InvalidArgument("target must name either a pair or a user_id")
        if pair is not None:
            user, character = check_pair(*pair, "target.pair")
        else:
            assert user_id is not None
            check_pair(user_id, "-", "target")
            user, character = user_id, None
        async with self.store.pool.acquire() as conn, conn.transaction():
            if character is not None:
                characters = [character]
            else:
                characters = [r["character_id"] for r in await conn.fetch(self.q["characters_of_user"], user)]
            for each in sorted(characters):  # the pairs' write locks, in one order (no deadlock)
                await conn.execute(self.store.q["lock_pair"], user, each)
            verbindungen = _count(await conn.fetchval(self.q["erase_verbindung"], user, character))
            await conn.fetchval(self.q["erase_kanten_rang"], user, character)
            edges = _count(await conn.fetchval(self.q["erase_kanten"], user, character))
            nodes = _count(await conn.fetchval(self.q["erase_knoten"], user, character))
            entities = _count(await conn.fetchval(self.q["erase_entitaet"], user, character))
            timelines = _count(await conn.fetchval(self.q["erase_timeline"], user, character))
            key = await (pair_key(conn, user, character) if character is not None else user_key(conn, user))
            await conn.execute(self.q["expire_tombstones"], TOMBSTONE_WINDOW)
            await conn.execute(self.q["record_tombstone"], key)
            await move_generation(conn, [key])
        for each in characters:
            self.engine.cache.forget(user, each)  # this replica at once; the others by the generation
        counts = EraseCounts(nodes, edges, entities, timelines, verbindungen, len(characters))
        self.engine.log.db_write(
            turn_id="loeschung",
            node=RIGHTS_LOG_NODE,
            tabelle="lzg",
            operation="erase",
            umfang="paar" if character is not None else "nutzer",
            knoten=nodes,
            kanten=edges,
            entitaeten=entities,
            timelines=timelines,
            verbindungen=verbindungen,
        )
        return counts

    # ================================================================ export / import

    async def export(self, user_id: str, character_id: str) -> ExportData:
        """Entities, timelines, nodes (no vectors) and edges of the pair in one consistent view."""
        check_pair(user_id, character_id)
        columns = ", ".join(_EXPORT_NODE_COLUMNS)
        async with self.store.reader() as conn:
            entities = await conn.fetch(self.q["export_entities"], user_id, character_id)
            timelines = await conn.fetch(self.q["export_timelines"], user_id, character_id)
            nodes = await conn.fetch(
                f"SELECT {columns} FROM lzg_knoten WHERE user_id = $1 AND character_id = $2 ORDER BY id",
                user_id,
                character_id,
            )
            edges = await conn.fetch(self.q["export_edges"], user_id, character_id)
        return ExportData(
            await self.store.model_id(), list(entities), list(timelines), list(nodes), list(edges)
        )

    async def import_pair(
        self, user_id: str, character_id: str, chunks: AsyncIterator[ImportChunk]
    ) -> ImportResult:
        """Writes exported records into the empty pair in one transaction (ids new, references remapped)."""
        check_pair(user_id, character_id)
        result = ImportResult()
        async with self.store.pair_writer(user_id, character_id) as tx:
            if not await tx.conn.fetchval(self.q["pair_is_empty"], user_id, character_id):
                raise FailedPrecondition(
                    f"pair {user_id} · {character_id} holds nodes, entities or timelines; "
                    "import into an empty pair"
                )
            # The pair is re-created by the person's own data: its entries may be promoted again.
            await tx.conn.execute(self.q["lift_tombstone"], user_id, character_id)
            async for chunk in chunks:
                await self._import_entities(tx, chunk.entities, result)
                await self._import_timelines(tx, chunk.timelines, result)
                await self._import_nodes(tx, chunk.nodes, result)
                await self._import_edges(tx, chunk.edges, result)
            await move_generation(tx.conn, [await pair_key(tx.conn, user_id, character_id)])
        self.engine.cache.forget(user_id, character_id)
        self.engine.log.db_write(
            turn_id="import",
            node=RIGHTS_LOG_NODE,
            tabelle="lzg",
            operation="import",
            entitaeten=len(result.entity_ids),
            timelines=len(result.timeline_ids),
            knoten=len(result.node_ids),
            kanten=result.edges,
            user_id=user_id,
            character_id=character_id,
        )
        return result

    async def _import_entities(
        self, tx: PairTx, rows: Sequence[Mapping[str, Any]], result: ImportResult
    ) -> None:
        # One INSERT per record: each new id is mapped to its exported one (a rare, offline operation).
        for row in rows:
            if not str(row["name"]).strip():
                raise InvalidArgument(f"entity {row['id']}: name must not be empty")
            if row["id"] in result.entity_ids:
                raise InvalidArgument(f"entity {row['id']} appears twice")
            try:
                new_id = await tx.conn.fetchval(
                    self.q["import_entity"], *tx.pair, row["name"], row["typ"], list(row["aliases"])
                )
            except asyncpg.UniqueViolationError:
                raise InvalidArgument(f"entity {row['id']}: the name {row['name']!r} appears twice") from None
            result.entity_ids[int(row["id"])] = int(new_id)

    async def _import_timelines(
        self, tx: PairTx, rows: Sequence[Mapping[str, Any]], result: ImportResult
    ) -> None:
        for row in rows:
            if row["zeitpunkt"] is None:
                raise InvalidArgument(f"timeline {row['id']}: zeitpunkt must be set")
            praezision = parse_praezision(row["praezision"], f"timeline {row['id']}.praezision")
            new_id = await tx.conn.fetchval(
                self.q["import_timeline"],
                *tx.pair,
                row["zeitpunkt"],
                praezision.value,
                row["titel"],
                list(row["themen"]),
            )
            result.timeline_ids[int(row["id"])] = int(new_id)

    async def _import_nodes(
        self, tx: PairTx, rows: Sequence[Mapping[str, Any]], result: ImportResult
    ) -> None:
        for start in range(0, len(rows), _EMBED_BATCH):
            batch = rows[start : start + _EMBED_BATCH]
            for row in batch:
                self._check_node(row, result)
            vectors = await self.engine.provider.embed(
                [lzg_embed_text(row["inhalt"], row.get("sprecher", "")) for row in batch]
            )
            statement = await tx.conn.prepare(self.q["import_node"])
            for row, vector in zip(batch, vectors, strict=True):
                timeline_id = row["timeline_id"]
                if _target_key(row["kzg_quell_key"], *tx.pair) in result.quell_keys:
                    raise InvalidArgument(f"node {row['id']}: its kzg_quell_key appears twice in the import")
                result.quell_keys.add(_target_key(row["kzg_quell_key"], *tx.pair))
                new_id = await statement.fetchval(
                    _target_key(row["kzg_quell_key"], *tx.pair),
                    *tx.pair,
                    row["beobachter"],
                    row["inhalt"],
                    Vector(np.asarray(vector, dtype=np.float32)),
                    row["dimension"],
                    row["gewicht_roh"],
                    row["gewicht_absolut"],
                    row["gewicht_decay"],
                    max(int(row["haeufigkeit"]), 1),
                    bool(row["aktiv"]),
                    row["erstellt_am"],
                    row["verstaerkt_am"],
                    row["decay_am"],
                    row["kzg_erstellt_am"],
                    list(row["themen"]),
                    row["gedaechtnistyp"] or None,
                    [result.entity_ids[i] for i in row["entitaet_ids"]],
                    result.timeline_ids[timeline_id] if timeline_id is not None else None,
                    row["emotion"],
                    row["arousal"],
                    row["emotions_vektor"],
                    _intentionen_json(row["intentionen"]),
                    row["modus"],
                    row["sprach_stil"],
                    row["beziehungs_dynamik"],
                    row["tone"],
                    row.get("sprecher", ""),
                    row.get("sprache", ""),
                    row.get("quell_turn_id", ""),
                )
                result.node_ids[int(row["id"])] = int(new_id)

    def _check_node(self, row: Mapping[str, Any], result: ImportResult) -> None:
        name = f"node {row['id']}"
        if row["id"] in result.node_ids:
            raise InvalidArgument(f"{name} appears twice")
        if row["beobachter"] not in BEOBACHTER:
            raise InvalidArgument(f"{name}: beobachter must be one of {', '.join(BEOBACHTER)}")
        if not str(row["inhalt"]).strip():
            raise InvalidArgument(f"{name}: inhalt must not be empty")
        if len(row["gedaechtnistyp"] or "") > _GEDAECHTNISTYP_MAX:
            raise InvalidArgument(f"{name}: gedaechtnistyp is longer than {_GEDAECHTNISTYP_MAX} characters")
        for column in ("erstellt_am", "verstaerkt_am", "decay_am", "kzg_erstellt_am"):
            if row[column] is None:
                raise InvalidArgument(f"{name}: {column} must be set")
        for column in ("gewicht_roh", "gewicht_absolut", "gewicht_decay"):
            if not (math.isfinite(row[column]) and row[column] >= 0.0):
                raise InvalidArgument(f"{name}: {column} must be a finite number >= 0")
        missing = [i for i in row["entitaet_ids"] if i not in result.entity_ids]
        if missing:
            raise InvalidArgument(f"{name} names entities {missing} that the import did not bring before it")
        if row["timeline_id"] is not None and row["timeline_id"] not in result.timeline_ids:
            raise InvalidArgument(
                f"{name} names timeline {row['timeline_id']} that the import did not bring before it"
            )

    async def _import_edges(
        self, tx: PairTx, rows: Sequence[Mapping[str, Any]], result: ImportResult
    ) -> None:
        if not rows:
            return
        records = []
        for row in rows:
            a, b = row["knoten_a_id"], row["knoten_b_id"]
            if a not in result.node_ids or b not in result.node_ids or a == b:
                raise InvalidArgument(f"edge {row['id']} joins nodes {a} → {b} the import did not bring")
            records.append(
                (
                    result.node_ids[a],
                    result.node_ids[b],
                    row["gewicht_roh"],
                    row["gewicht_absolut"],
                    row["erstellt_am"],
                    list(row["verbindungs_gruende"]),
                    [result.entity_ids.get(i, i) for i in row["geteilte_entitaet_ids"]],
                    list(row["geteilte_themen"]),
                    row["timeline_naehe_tage"],
                    row["embedding_cosine_initial"],
                    int(row["anzahl_schichten"]),
                )
            )
        try:
            await tx.conn.copy_records_to_table(
                "lzg_kanten", schema_name=SCHEMA, columns=EDGE_COLUMNS, records=records
            )
        except asyncpg.UniqueViolationError:
            raise InvalidArgument("an edge appears twice in the import") from None
        pairs = {(min(r[0], r[1]), max(r[0], r[1])) for r in records}
        await tx.rank_rows("rank_rows_insert", pairs)  # the rank rows of pairs whose both edges exist now
        result.edges += len(records)

    # ================================================================ forget

    async def forget(
        self,
        user_id: str,
        character_id: str,
        node_ids: Sequence[int],
        source_turn_id: str,
        *,
        turn_id: str = "",
        span_id: str | None = None,
    ) -> ForgetResult:
        """Deletes the named nodes (or a source turn's nodes) with edges and provenance; idempotent."""
        check_pair(user_id, character_id)
        if not node_ids and not source_turn_id:
            raise InvalidArgument("name node_ids or a source_turn_id to forget")
        if any(i <= 0 for i in node_ids):
            raise InvalidArgument("node_ids must be positive node ids")
        async with self.store.pair_writer(user_id, character_id) as tx:
            rows = await tx.conn.fetch(
                self.q["forget_targets"], user_id, character_id, list(node_ids), source_turn_id
            )
            ids = [r["id"] for r in rows]
            edges = 0
            if ids:
                await tx.conn.execute(self.q["forget_verbindung"], user_id, character_id, ids)
                await tx.conn.execute(self.q["forget_kanten_rang"], ids)
                edges = _count(await tx.conn.fetchval(self.q["forget_kanten"], ids))
                await tx.conn.execute(self.q["forget_knoten"], user_id, character_id, ids)
                await move_generation(tx.conn, [await pair_key(tx.conn, user_id, character_id)])
        nodes = tuple(
            ForgottenNode(r["id"], r["kzg_quell_key"], tuple(r["kzg_keys"]), tuple(r["turn_ids"]))
            for r in rows
        )
        if ids:
            self.engine.log.db_write(
                turn_id=turn_id or "vergessen",
                node=RIGHTS_LOG_NODE,
                tabelle="lzg_knoten",
                operation="forget",
                knoten_ids=ids,
                kanten=edges,
                quell_turn_id=source_turn_id or None,
                span_id=span_id,
                user_id=user_id,
                character_id=character_id,
            )
        return ForgetResult(nodes, edges)
