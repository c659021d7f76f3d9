"""Fixtures of the LZG store tests: an engine on a fresh database with explicit 8-d vectors.

The embedding model is replaced by a table of explicit vectors (texts not in the table get a
fixed pseudo-random unit vector), so the tests choose every cosine; the thresholds are the
nomic-v2 profile's, the seeds' measured values (SPEC §2). PostgreSQL is real.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from novaberg_core.clusters import default_clusters
from novaberg_core.embedding import EmbeddingProvider, ModelProfile, ThresholdSources
from novaberg_core.model import Ei, KzgEntry, Magnets, Pair
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from services.lzg.edges import pair_weights
from services.lzg.engine import LzgEngine
from services.lzg.layers import Compared, EdgeLayers, Praezision, TimelineRef, layers_between
from services.lzg.store import LzgStore
from services.lzg.types import Entity, PromotionInput, PromotionResult, Timeline

DIM = 8
NOMIC_PROFILE = ModelProfile(
    model_id="test-table-8",
    dimension=DIM,
    kzg_retrieval=0.72,
    anchor=0.40,
    match=0.82,
    embedding_layer=0.55,
    usage=0.55,
    sources=ThresholdSources(*(["nomic-v2 values of the seeds (SPEC §2)"] * 5)),
    measurement="test profile",
)
T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
PAIR = ("anna-user", "nova")
OTHER = ("ben-user", "nova")


def unit(*values: float) -> npt.NDArray[np.float32]:
    """An 8-d unit vector from up to 8 leading components."""
    v = np.zeros(DIM, dtype=np.float64)
    v[: len(values)] = values
    return (v / np.linalg.norm(v)).astype(np.float32)


def at_cosine(base: npt.NDArray[np.float32], cosine: float, axis: int = 7) -> npt.NDArray[np.float32]:
    """A unit vector whose cosine to ``base`` (norm 1, zero on ``axis``) is ``cosine``."""
    other = np.zeros(DIM, dtype=np.float64)
    other[axis] = 1.0
    v = cosine * base.astype(np.float64) + np.sqrt(1.0 - cosine**2) * other
    return (v / np.linalg.norm(v)).astype(np.float32)


class TableProvider(EmbeddingProvider):
    """Texts → chosen vectors; other texts → a fixed pseudo-random unit vector. ``fail`` raises."""

    model_id = "test-table-8"
    dimension = DIM

    def __init__(self) -> None:
        self.vectors: dict[str, npt.NDArray[np.float32]] = {}
        self.fail = False

    async def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        if self.fail:
            raise RuntimeError("model server down")
        return np.stack([self.vector(t) for t in texts])

    def vector(self, text: str) -> npt.NDArray[np.float32]:
        if text in self.vectors:
            return self.vectors[text]
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        v = np.random.default_rng(seed).normal(size=DIM)
        return (v / np.linalg.norm(v)).astype(np.float32)


@pytest.fixture
def provider() -> TableProvider:
    return TableProvider()


@pytest.fixture
def log_sink() -> InMemorySink:
    return InMemorySink()


@pytest.fixture(scope="session")
async def pg_url_template(migrated_template: Callable[[str, Any], Awaitable[str]]) -> str:
    """Each test's database is a copy of the LZG schema (8-d vectors) migrated once per session."""

    async def migrate(url: str) -> None:
        await (await LzgStore.open(url, dimension=DIM, max_size=1)).close()

    return await migrated_template(f"lzg_{DIM}", migrate)


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[LzgStore]:
    opened = await LzgStore.open(pg_url, dimension=DIM, max_size=6)
    try:
        await opened.check_model(TableProvider().stamp)
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def engine(store: LzgStore, provider: TableProvider, log_sink: InMemorySink) -> LzgEngine:
    return LzgEngine(store, provider, NOMIC_PROFILE, default_clusters(), PipelineLog(log_sink))


_counter = iter(range(1, 1_000_000))


def entry(
    inhalt: str,
    *,
    pair: tuple[str, str] = PAIR,
    key: str | None = None,
    salienz: float = 0.9,
    themen: Sequence[str] = (),
    entitaet_ids: Sequence[int] = (),
    timeline_id: int | None = None,
    beobachter: str = "user",
    emotion: str = "freude",
    as_of: datetime = T0,
    **overrides: Any,
) -> PromotionInput:
    """A promotion job of an entry with sensible KZG fields; ``overrides`` name the entry's fields
    (:class:`KzgEntry`) or the job's."""
    entry_id = f"e{next(_counter)}"
    base = KzgEntry(
        kzg_key=key or f"kzg:{pair[0]}:{pair[1]}:{entry_id}",
        entry_id=entry_id,
        pair=Pair(*pair),
        beobachter=beobachter,
        inhalt=inhalt,
        themen=tuple(themen),
        salienz=salienz,
        salienz_eingang=salienz,
        salienz_eingang_herkunft="gemessen",
        haeufigkeit=2,
        gedaechtnistyp="episodisch",
        dimension="beziehungen",
        ei=Ei(
            emotion=emotion,
            modus="alltag",
            arousal=0.6,
            emotions_vektor="ruhe->freude",
            sprach_stil="locker",
            beziehungs_dynamik="nah",
            tone="warm",
            intentionen=("information_teilen",),
        ),
        magnets=Magnets.of(entitaet_ids, timeline_id),
        erstellt_am=datetime(2026, 4, 20, 9, 0, tzinfo=UTC),
        turn_id="turn-kzg-1",
        ttl_seconds=3600,
    )
    job = {name: overrides.pop(name) for name in _JOB_FIELDS if name in overrides}
    return PromotionInput(
        replace(base, **overrides),
        **{"ausloeser_turn_id": "turn-job-1", "log_turn_id": "turn-job-1", "span_id": None, **job},
        as_of=as_of,
    )


_JOB_FIELDS = ("ausloeser_turn_id", "log_turn_id", "span_id")
"""What an ``entry(...)`` override names of the job rather than its entry."""


def with_entry(job: PromotionInput, **changes: Any) -> PromotionInput:
    """``job`` with its entry's ``changes``."""
    return replace(job, entry=replace(job.entry, **changes))


async def promote(
    engine: LzgEngine, provider: TableProvider, inhalt: str, vector: npt.NDArray[np.float32], **kwargs: Any
) -> PromotionResult:
    provider.vectors[inhalt] = vector
    return await engine.promote(entry(inhalt, **kwargs))


def new_entity(name: str) -> Entity:
    """A person to register (``upsert_entity``): no id yet, its pair the call's."""
    return Entity(0, Pair("", ""), name, "person", ())


def new_timeline(when: datetime, praezision: str = "tag") -> Timeline:
    """A timeline to register (``upsert_timeline``): no id yet, its pair the call's."""
    return Timeline(0, Pair("", ""), when, praezision, "", ())


async def dump(store: LzgStore, *tables: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables as text, in id order (byte-level comparison of table contents)."""
    names = tables or ("lzg_knoten", "lzg_kanten", "entitaet", "timeline", "verbindung", "modell")
    out: dict[str, list[tuple[Any, ...]]] = {}
    async with store.pool.acquire() as conn:
        for table in names:
            rows = await conn.fetch(f"SELECT t::text AS row FROM lzg.{table} AS t ORDER BY 1")
            out[table] = [r["row"] for r in rows]
    return out


async def from_scratch(
    store: LzgStore, pair: tuple[str, str]
) -> dict[tuple[int, int], tuple[EdgeLayers, float, float]]:
    """Every directed edge a full rebuild from current node data would form (SPEC §5.4), by (a, b)."""
    async with store.pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT k.id, k.gewicht_absolut, k.themen, k.entitaet_ids, k.embedding, t.zeitpunkt, t.praezision "
            "FROM lzg.lzg_knoten k LEFT JOIN lzg.timeline t ON t.id = k.timeline_id "
            "WHERE k.user_id = $1 AND k.character_id = $2 ORDER BY k.id",
            *pair,
        )
    expected: dict[tuple[int, int], tuple[EdgeLayers, float, float]] = {}
    for i, x in enumerate(rows):
        for y in rows[i + 1 :]:
            ref_x = TimelineRef(x["zeitpunkt"], Praezision(x["praezision"])) if x["zeitpunkt"] else None
            ref_y = TimelineRef(y["zeitpunkt"], Praezision(y["praezision"])) if y["zeitpunkt"] else None
            cosine = float(np.dot(x["embedding"].to_numpy(), y["embedding"].to_numpy()))
            layers = layers_between(
                Compared(x["themen"], x["entitaet_ids"], ref_x),
                Compared(y["themen"], y["entitaet_ids"], ref_y),
                cosine,
                NOMIC_PROFILE.embedding_layer,
            )
            if layers is None:
                continue
            w = pair_weights(
                [x["gewicht_absolut"]],
                [y["gewicht_absolut"]],
                [layers.faktor],
                [layers.tiefe],
                [layers.anzahl],
            )
            expected[(x["id"], y["id"])] = (layers, float(w.roh_ab[0]), float(w.abs_ab[0]))
            expected[(y["id"], x["id"])] = (layers, float(w.roh_ba[0]), float(w.abs_ba[0]))
    return expected


async def assert_edges_equal_from_scratch(store: LzgStore, pair: tuple[str, str]) -> int:
    """The pair's stored edges are exactly the from-scratch edges (layers exact, weights to 1e-6)."""
    expected = await from_scratch(store, pair)
    async with store.pool.acquire() as conn:
        stored = await conn.fetch(
            "SELECT e.* FROM lzg.lzg_kanten e JOIN lzg.lzg_knoten a ON a.id = e.knoten_a_id "
            "WHERE a.user_id = $1 AND a.character_id = $2",
            *pair,
        )
    got = {(r["knoten_a_id"], r["knoten_b_id"]): r for r in stored}
    assert set(got) == set(expected), (sorted(set(got) - set(expected)), sorted(set(expected) - set(got)))
    await assert_rank_rows_match_edges(store)
    for key, (layers, roh, absolut) in expected.items():
        row = got[key]
        assert tuple(row["verbindungs_gruende"]) == tuple(g.value for g in layers.gruende), key
        assert tuple(row["geteilte_entitaet_ids"]) == layers.geteilte_entitaet_ids, key
        assert tuple(row["geteilte_themen"]) == layers.geteilte_themen, key
        assert row["anzahl_schichten"] == layers.anzahl, key
        assert row["timeline_naehe_tage"] == layers.timeline_naehe_tage, key
        assert row["gewicht_roh"] == pytest.approx(roh, abs=1e-6), key
        assert row["gewicht_absolut"] == pytest.approx(absolut, abs=1e-6), key
    return len(expected)


async def assert_rank_rows_match_edges(store: LzgStore) -> int:
    """lzg_kanten_rang (migration 003) is exactly derived from lzg_kanten: one row per connected pair.

    Each row carries both directed edges' ids and their current gewicht_absolut, bit for bit.
    """
    async with store.pool.acquire() as conn:
        edges = await conn.fetch("SELECT id, knoten_a_id, knoten_b_id, gewicht_absolut FROM lzg.lzg_kanten")
        ranks = await conn.fetch("SELECT * FROM lzg.lzg_kanten_rang")
    by_key = {(r["knoten_a_id"], r["knoten_b_id"]): r for r in edges}
    expected = sorted(
        (
            x,
            y,
            by_key[(x, y)]["id"],
            by_key[(y, x)]["id"],
            by_key[(x, y)]["gewicht_absolut"],
            by_key[(y, x)]["gewicht_absolut"],
        )
        for x, y in by_key
        if x < y
    )
    got = sorted(
        (
            r["knoten_x_id"],
            r["knoten_y_id"],
            r["kante_xy_id"],
            r["kante_yx_id"],
            r["gewicht_xy"],
            r["gewicht_yx"],
        )
        for r in ranks
    )
    assert got == expected
    return len(got)
