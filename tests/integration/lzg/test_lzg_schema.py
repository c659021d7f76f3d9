"""The migrated schema is the seed's (SPEC §5.1, syn §4.1, §4.2): columns, constraints, indexes."""

from __future__ import annotations

from pathlib import Path

import pytest

from novaberg_core.migrations import migration_files
from services.lzg import store as lzg_store
from services.lzg.store import LzgStore

from .conftest import DIM

pytestmark = pytest.mark.integration

# (column, type, nullable) in the seed's order
KNOTEN = [
    ("id", "integer", False),
    ("kzg_quell_key", "text", False),
    ("user_id", "text", False),
    ("character_id", "character varying(50)", False),
    ("beobachter", "character varying(20)", False),
    ("inhalt", "text", False),
    ("embedding", f"vector({DIM})", True),
    ("dimension", "text", False),
    ("gewicht_roh", "double precision", False),
    ("gewicht_absolut", "double precision", False),
    ("gewicht_decay", "double precision", False),
    ("haeufigkeit", "integer", False),
    ("aktiv", "boolean", False),
    ("erstellt_am", "timestamp with time zone", False),
    ("verstaerkt_am", "timestamp with time zone", False),
    ("decay_am", "timestamp with time zone", False),
    ("kzg_erstellt_am", "timestamp with time zone", False),
    ("themen", "text[]", False),
    ("gedaechtnistyp", "character varying(20)", True),
    ("entitaet_ids", "integer[]", False),
    ("timeline_id", "integer", True),
    ("emotion", "text", False),
    ("arousal", "double precision", False),
    ("emotions_vektor", "text", False),
    ("intentionen", "text", False),
    ("modus", "text", False),
    ("sprach_stil", "text", False),
    ("beziehungs_dynamik", "text", False),
    ("tone", "text", False),
    # SPEC §11 (migration 005): speaker, language, source turn.
    ("sprecher", "text", False),
    ("sprache", "text", False),
    ("quell_turn_id", "text", False),
    # SPEC §11 (migration 015): the question the memory answers, read by lexical search.
    ("antwort_auf", "text", False),
]
KANTEN = [
    ("id", "integer", False),
    ("knoten_a_id", "integer", False),
    ("knoten_b_id", "integer", False),
    ("gewicht_roh", "double precision", False),
    ("gewicht_absolut", "double precision", False),
    ("erstellt_am", "timestamp with time zone", False),
    ("verbindungs_gruende", "text[]", False),
    ("geteilte_entitaet_ids", "integer[]", False),
    ("geteilte_themen", "text[]", False),
    ("timeline_naehe_tage", "integer", True),
    ("embedding_cosine_initial", "double precision", True),
    ("anzahl_schichten", "integer", False),
]


async def _columns(store: LzgStore, table: str) -> list[tuple[str, str, bool]]:
    rows = await store.pool.fetch(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, NOT a.attnotnull AS nullable "
        "FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped "
        "ORDER BY a.attnum",
        f"lzg.{table}",
    )
    return [(r["attname"], r["type"], r["nullable"]) for r in rows]


async def _indexes(store: LzgStore, table: str) -> dict[str, str]:
    rows = await store.pool.fetch(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'lzg' AND tablename = $1", table
    )
    return {r["indexname"]: r["indexdef"] for r in rows}


async def test_node_and_edge_columns_are_the_seeds(store: LzgStore) -> None:
    assert await _columns(store, "lzg_knoten") == KNOTEN
    assert await _columns(store, "lzg_kanten") == KANTEN


async def test_constraints_and_indexes_are_the_seeds(store: LzgStore) -> None:
    constraints = {
        r["conname"]: r["def"]
        for r in await store.pool.fetch(
            "SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint "
            "WHERE conrelid IN ('lzg.lzg_knoten'::regclass, 'lzg.lzg_kanten'::regclass)"
        )
    }
    defs = set(constraints.values())
    assert "CHECK ((knoten_a_id <> knoten_b_id))" in defs
    assert "UNIQUE (knoten_a_id, knoten_b_id)" in defs
    assert "UNIQUE (kzg_quell_key)" in defs
    assert "FOREIGN KEY (timeline_id) REFERENCES timeline(id) ON DELETE SET NULL" in defs
    assert "FOREIGN KEY (knoten_a_id) REFERENCES lzg_knoten(id) ON DELETE CASCADE" in defs

    knoten = await _indexes(store, "lzg_knoten")
    for name, fragment in {
        "idx_lzg_knoten_aktiv": "(user_id, character_id) WHERE (aktiv = true)",
        "idx_lzg_knoten_themen": "USING gin (themen)",
        "idx_lzg_knoten_entitaet_ids": "USING gin (entitaet_ids)",
        "idx_lzg_knoten_timeline_id": "(timeline_id)",
        "idx_lzg_knoten_kzg_erstellt_am": "(kzg_erstellt_am)",
        "idx_lzg_knoten_user_id": "(user_id)",
    }.items():
        assert fragment in knoten[name], name
    kanten = await _indexes(store, "lzg_kanten")
    for name, fragment in {
        "idx_lzg_kanten_a": "(knoten_a_id)",
        "idx_lzg_kanten_b": "(knoten_b_id)",
        "idx_lzg_kanten_geteilte_entitaet_ids": "USING gin (geteilte_entitaet_ids)",
        "idx_lzg_kanten_geteilte_themen": "USING gin (geteilte_themen)",
        "idx_lzg_kanten_verbindungs_gruende": "USING gin (verbindungs_gruende)",
    }.items():
        assert fragment in kanten[name], name
    every = " ".join([*knoten.values(), *kanten.values()])
    assert "ivfflat" not in every and "hnsw" not in every  # exact search only (SPEC §5.1)


async def test_no_edge_index_holds_a_weight_and_the_rank_table_orders_both_directions(
    store: LzgStore,
) -> None:
    # Trigger 2 rewrites only weights: with none indexed and room on the page it is a HOT update
    # (migration 003); the spreading read's order lives in lzg_kanten_rang.
    kanten = await _indexes(store, "lzg_kanten")
    assert kanten["idx_lzg_kanten_a"].endswith("USING btree (knoten_a_id)")
    assert not [d for d in kanten.values() if "gewicht" in d]
    options = await store.pool.fetchval(
        "SELECT reloptions FROM pg_class WHERE oid = 'lzg.lzg_kanten'::regclass"
    )
    assert options == ["fillfactor=50"]
    rang = await _indexes(store, "lzg_kanten_rang")
    assert (
        "(knoten_x_id, gewicht_xy DESC, kante_xy_id) INCLUDE (knoten_y_id)" in rang["idx_lzg_kanten_rang_x"]
    )
    assert (
        "(knoten_y_id, gewicht_yx DESC, kante_yx_id) INCLUDE (knoten_x_id)" in rang["idx_lzg_kanten_rang_y"]
    )
    assert len(rang) == 2  # every index is paid by each Trigger 2 row update
    # the formula's node inputs, for an index-only read of a node's neighbours
    knoten = await _indexes(store, "lzg_knoten")
    assert knoten["idx_lzg_knoten_kantenformel"].endswith(
        "(id) INCLUDE (gewicht_absolut, timeline_id, themen)"
    )


async def test_registry_tables_exist_with_their_columns(store: LzgStore) -> None:
    names = {
        table: [c for c, _, _ in await _columns(store, table)]
        for table in ("entitaet", "timeline", "verbindung")
    }
    assert names["entitaet"][:6] == ["id", "user_id", "character_id", "name", "typ", "aliases"]
    assert names["timeline"][:7] == [
        "id",
        "user_id",
        "character_id",
        "zeitpunkt",
        "praezision",
        "titel",
        "themen",
    ]
    assert names["verbindung"][:4] == ["id", "turn_id", "kzg_key", "lzg_id"]


async def test_migrations_are_recorded_and_idempotent(store: LzgStore, pg_url: str) -> None:
    again = await LzgStore.open(pg_url, dimension=DIM, max_size=2)
    await again.close()
    versions = [
        r["version"] for r in await store.pool.fetch("SELECT version FROM lzg.schema_migrations ORDER BY 1")
    ]
    # Every migration file once, in order (010 on: a person's rights; 005–009: the retrieval work).
    assert versions == [v for v, _ in migration_files(Path(lzg_store.__file__).parents[1] / "sql" / "migrations")]
    assert versions[:4] == [1, 2, 3, 4] and 5 in versions and 10 in versions
