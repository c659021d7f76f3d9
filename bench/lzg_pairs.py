"""Synthetic LZG pairs for ``bench/lzg_bench.py``: themes, entities, timeline refs and clustered
vectors drawn like a real pair's, the edges Trigger 1 would form between them (SPEC §5.4), and the
bulk loaders that write nodes, edges and rank rows straight into PostgreSQL (COPY)."""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from pgvector import Vector

from novaberg_core.embedding import EmbeddingProvider
from services.lzg.edges import pair_weights
from services.lzg.layers import (
    Compared,
    EdgeLayers,
    Praezision,
    TimelineRef,
    layers_between,
    timeline_tiefe,
)
from services.lzg.store import SCHEMA, EdgeInsert, LzgStore
from services.lzg.weights import damp

DIM = 384
MODEL = "all-minilm-l6-v2-int8"
T_LOAD = datetime(2026, 11, 1, 3, 0, tzinfo=UTC)
PRECISIONS = (
    (Praezision.TAG, 0.60),
    (Praezision.MINUTE, 0.15),
    (Praezision.WOCHE, 0.10),
    (Praezision.MONAT, 0.10),
    (Praezision.JAHR, 0.05),
)
# (theme vocabulary, entity pool) per node of the pair: measured to give ~140 neighbours per node
SHAPE = {3_000: (0.10, 0.04), 20_000: (2.5, 0.8)}
WORDS = (
    "Anna Schokolade Garten Urlaub Norwegen Geige Kino Familie Arbeit Hund Katze Regen Sommer Zug "
    "Berlin Kuchen Sonntag Schule Freundin Musik Meer Berge Buch Film Kaffee Fahrrad Winter Brief"
).split()
NODE_COLUMNS = (
    "kzg_quell_key", "user_id", "character_id", "beobachter", "inhalt", "embedding", "dimension",
    "gewicht_roh", "gewicht_absolut", "gewicht_decay", "haeufigkeit", "aktiv", "erstellt_am",
    "verstaerkt_am", "decay_am", "kzg_erstellt_am", "themen", "gedaechtnistyp", "entitaet_ids",
    "timeline_id", "emotion", "arousal", "emotions_vektor", "intentionen", "modus", "sprach_stil",
    "beziehungs_dynamik", "tone",
)  # fmt: skip
# The rank rows of migration 003 in formation order, as Trigger 1 writes them (a node's pairs together).
RANK_ROWS = """
INSERT INTO lzg.lzg_kanten_rang (knoten_x_id, knoten_y_id, kante_xy_id, kante_yx_id, gewicht_xy, gewicht_yx)
SELECT xy.knoten_a_id, xy.knoten_b_id, xy.id, yx.id, xy.gewicht_absolut, yx.gewicht_absolut
FROM lzg.lzg_kanten AS xy
JOIN lzg.lzg_kanten AS yx ON yx.knoten_a_id = xy.knoten_b_id AND yx.knoten_b_id = xy.knoten_a_id
WHERE xy.knoten_a_id < xy.knoten_b_id
ORDER BY least(xy.id, yx.id)
"""
EMOTIONS = ("freude", "vertrauen", "angst", "ueberraschung", "traurigkeit", "ekel", "wut", "erwartung", "")


class VectorTable(EmbeddingProvider):
    """Precomputed vectors by text: the benchmark measures the LZG, not the model."""

    model_id = MODEL
    dimension = DIM

    def __init__(self) -> None:
        self.vectors: dict[str, npt.NDArray[np.float32]] = {}

    async def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        return np.stack([self.vectors[t] for t in texts])


def unit_rows(matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def zipf(size: int, exponent: float = 1.0, offset: float = 20.0) -> npt.NDArray[np.float64]:
    p = 1.0 / (np.arange(size) + offset) ** exponent
    return p / p.sum()


@dataclass
class PairData:
    """One synthetic pair before and after loading."""

    user_id: str
    character_id: str
    texts: list[str]
    themen: list[list[str]]
    entities: list[list[int]]  # entity numbers, mapped to db ids after loading the registry
    timelines: list[int | None]  # timeline numbers
    embeddings: npt.NDArray[np.float32]
    salienz: npt.NDArray[np.float64]
    emotion: list[str]
    timeline_refs: list[TimelineRef] = field(default_factory=list)
    entity_ids: list[int] = field(default_factory=list)  # db id per entity number
    timeline_ids: list[int] = field(default_factory=list)  # db id per timeline number
    node_ids: list[int] = field(default_factory=list)


class PairGenerator:
    """Nodes of one pair: themes, entities, timeline refs, clustered vectors; new ones on demand."""

    def __init__(self, rng: np.random.Generator, n: int, user_id: str) -> None:
        theme_scale, entity_scale = SHAPE.get(n, SHAPE[20_000] if n > 8_000 else SHAPE[3_000])
        self.rng = rng
        self.n = n
        self.user_id = user_id
        self.vocabulary = max(50, int(n * theme_scale))
        self.theme_p = zipf(self.vocabulary)
        self.n_entities = max(10, int(n * entity_scale))
        self.entity_p = zipf(self.n_entities, 1.0, 3.0)
        self.n_timelines = max(10, n // 15)
        self.topics = unit_rows(rng.normal(size=(max(8, self.vocabulary // 4), DIM)))
        self.timeline_refs = [
            TimelineRef(
                T_LOAD - timedelta(days=float(rng.uniform(0, 3 * 365))),
                PRECISIONS[rng.choice(len(PRECISIONS), p=[p for _, p in PRECISIONS])][0],
            )
            for _ in range(self.n_timelines)
        ]
        self.serial = 0

    def theme_name(self, number: int) -> str:
        return f"{WORDS[number % len(WORDS)]}-{number}"

    def nodes(self, count: int) -> PairData:
        rng = self.rng
        themes = [
            sorted(set(rng.choice(self.vocabulary, size=k, p=self.theme_p).tolist()))
            for k in rng.choice([1, 2, 3, 4], size=count, p=[0.2, 0.35, 0.3, 0.15])
        ]
        entities = [
            sorted(set(rng.choice(self.n_entities, size=m, p=self.entity_p).tolist()))
            for m in rng.choice([0, 1, 2], size=count, p=[0.45, 0.4, 0.15])
        ]
        timelines = [
            int(rng.integers(self.n_timelines)) if rng.random() < 0.15 else None for _ in range(count)
        ]
        topic = np.array([t[0] // 4 % len(self.topics) for t in themes])
        noise = rng.normal(size=(count, DIM)) / np.sqrt(DIM)
        embeddings = unit_rows(self.topics[topic] + 0.8 * noise)
        texts = []
        for themen in themes:
            self.serial += 1
            words = " ".join(self.theme_name(t).split("-")[0] for t in themen)
            texts.append(
                f"Erinnerung {self.user_id}/{self.serial}: wir sprachen über {words} und was daraus wurde."
            )
        return PairData(
            user_id=self.user_id,
            character_id="nova",
            texts=texts,
            themen=[[self.theme_name(t) for t in ts] for ts in themes],
            entities=entities,
            timelines=timelines,
            embeddings=embeddings,
            salienz=rng.uniform(0.42, 1.0, size=count),
            emotion=[EMOTIONS[i] for i in rng.integers(len(EMOTIONS), size=count)],
            timeline_refs=self.timeline_refs,
        )


def node_record(pair: PairData, i: int, key: str) -> tuple[Any, ...]:
    absolut = damp(float(pair.salienz[i]))
    timeline = pair.timelines[i]
    return (
        key, pair.user_id, pair.character_id, "user" if i % 3 else "assistant", pair.texts[i],
        Vector(pair.embeddings[i]), "beziehungen", float(pair.salienz[i]), absolut, absolut, 1 + i % 5, True,
        T_LOAD, T_LOAD, T_LOAD, T_LOAD - timedelta(days=20), pair.themen[i], "episodisch",
        [pair.entity_ids[e] for e in pair.entities[i]],
        None if timeline is None else pair.timeline_ids[timeline],
        pair.emotion[i], 0.5, "ruhe->freude", '["information_teilen"]', "alltag", "locker", "nah", "warm",
    )  # fmt: skip


def formation_edges(pair: PairData, embedding_layer: float) -> list[EdgeInsert]:
    """Every edge a promotion sequence in id order would have formed (Trigger 1 for each node)."""
    n = len(pair.texts)
    refs = [None if t is None else pair.timeline_refs[t] for t in pair.timelines]
    compared = [Compared(pair.themen[k], pair.entities[k], refs[k]) for k in range(n)]
    by_theme: dict[str, list[int]] = defaultdict(list)
    by_entity: dict[int, list[int]] = defaultdict(list)
    by_timeline: dict[int, list[int]] = defaultdict(list)
    for i in range(n):
        for k in set(pair.themen[i]):
            by_theme[k].append(i)
        for e in pair.entities[i]:
            by_entity[e].append(i)
        own = pair.timelines[i]
        if own is not None:
            by_timeline[own].append(i)
    # timelines within tolerance of each other (same precision)
    near_tl: dict[int, list[int]] = defaultdict(list)
    tl = pair.timeline_refs
    for a in range(len(tl)):
        for b in range(len(tl)):
            if tl[a].praezision is tl[b].praezision and timeline_tiefe(tl[a], tl[b]) is not None:
                near_tl[a].append(b)
    emb = pair.embeddings
    close: dict[int, set[int]] = defaultdict(set)
    for start in range(0, n, 2000):
        block = emb[start : start + 2000] @ emb.T
        rows, cols = np.nonzero(block > embedding_layer)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            if c < start + r:
                close[start + r].add(c)
    abs_ = np.array([damp(float(s)) for s in pair.salienz])
    connected: list[tuple[int, int, EdgeLayers]] = []
    for i in range(n):
        partners: set[int] = set(close[i])
        for k in set(pair.themen[i]):
            partners.update(j for j in by_theme[k] if j < i)
        for e in pair.entities[i]:
            partners.update(j for j in by_entity[e] if j < i)
        own = pair.timelines[i]
        if own is not None:
            for t in near_tl[own]:
                partners.update(j for j in by_timeline[t] if j < i)
        for j in partners:
            layers = layers_between(compared[j], compared[i], float(emb[i] @ emb[j]), embedding_layer)
            if layers is not None:
                connected.append((i, j, layers))
    weights = pair_weights(
        abs_[[c[0] for c in connected]],
        abs_[[c[1] for c in connected]],
        [c[2].faktor for c in connected],
        [c[2].tiefe for c in connected],
        [c[2].anzahl for c in connected],
    )
    ids = pair.node_ids
    edges: list[EdgeInsert] = []
    for x, (i, j, layers) in enumerate(connected):
        db_layers = EdgeLayers(
            gruende=layers.gruende,
            tiefe=layers.tiefe,
            geteilte_entitaet_ids=tuple(sorted(pair.entity_ids[e] for e in layers.geteilte_entitaet_ids)),
            geteilte_themen=layers.geteilte_themen,
            timeline_naehe_tage=layers.timeline_naehe_tage,
            embedding_cosine=layers.embedding_cosine,
        )
        edges.append(
            EdgeInsert(ids[i], ids[j], float(weights.roh_ab[x]), float(weights.abs_ab[x]), T_LOAD, db_layers)
        )
        edges.append(
            EdgeInsert(ids[j], ids[i], float(weights.roh_ba[x]), float(weights.abs_ba[x]), T_LOAD, db_layers)
        )
    return edges


async def drop_secondary_indexes(store: LzgStore) -> list[str]:
    """Drop the non-constraint indexes of the big tables for the bulk load; returns their DDL."""
    rows = await store.pool.fetch(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 "
        "AND tablename IN ('lzg_knoten', 'lzg_kanten', 'lzg_kanten_rang') "
        "AND indexname NOT IN (SELECT conname FROM pg_constraint)",
        SCHEMA,
    )
    for row in rows:
        await store.pool.execute(f"DROP INDEX {SCHEMA}.{row['indexname']}")
    return [row["indexdef"] for row in rows]


async def copy_nodes(store: LzgStore, records: list[tuple[Any, ...]]) -> None:
    async with store.pool.acquire() as conn:
        await conn.copy_records_to_table(
            "lzg_knoten", schema_name=SCHEMA, columns=NODE_COLUMNS, records=records
        )


async def load_filler(store: LzgStore, rng: np.random.Generator, count: int, per_pair: int = 1000) -> None:
    """Other pairs' nodes (no edges: decay never reads edges), in chunks."""
    chunk = 20_000
    done = 0
    while done < count:
        size = min(chunk, count - done)
        vectors = unit_rows(rng.normal(size=(size, DIM)))
        salienz = rng.uniform(0.42, 1.0, size=size)
        records: list[tuple[Any, ...]] = []
        for i in range(size):
            n = done + i
            absolut = damp(float(salienz[i]))
            user = f"filler-{n // per_pair}"
            records.append((
                f"kzg:{user}:nova:f{n}", user, "nova", "user", f"Eine Erinnerung von vielen, Nummer {n}, über {WORDS[n % len(WORDS)]}.",
                Vector(vectors[i]), "interessen", float(salienz[i]), absolut, absolut, 1, True, T_LOAD, T_LOAD, T_LOAD,
                T_LOAD - timedelta(days=20), [WORDS[n % len(WORDS)], WORDS[(n * 7) % len(WORDS)]], "episodisch", [], None,
                EMOTIONS[n % len(EMOTIONS)], 0.5, "", "[]", "alltag", "", "", "",
            ))  # fmt: skip
        await copy_nodes(store, records)
        done += size
        print(f"  filler nodes: {done:,}/{count:,}", file=sys.stderr, flush=True)


async def load_pair(store: LzgStore, pair: PairData, profile_layer: float, gen: PairGenerator) -> int:
    """Registry rows, nodes and the formation edges of one bench pair; returns the edge rows."""
    async with store.pool.acquire() as conn:
        pair.entity_ids = [
            await conn.fetchval(
                "INSERT INTO lzg.entitaet (user_id, character_id, name, typ) VALUES ($1, $2, $3, 'person') RETURNING id",
                pair.user_id, pair.character_id, f"Person {e}",
            )
            for e in range(gen.n_entities)
        ]  # fmt: skip
        pair.timeline_ids = [
            await conn.fetchval(
                "INSERT INTO lzg.timeline (user_id, character_id, zeitpunkt, praezision) VALUES ($1, $2, $3, $4) RETURNING id",
                pair.user_id, pair.character_id, ref.zeitpunkt, ref.praezision.value,
            )
            for ref in pair.timeline_refs
        ]  # fmt: skip
    records = [node_record(pair, i, f"kzg:{pair.user_id}:nova:b{i}") for i in range(len(pair.texts))]
    await copy_nodes(store, records)
    pair.node_ids = [
        r["id"]
        for r in await store.pool.fetch(
            "SELECT id FROM lzg.lzg_knoten WHERE user_id = $1 AND character_id = $2 ORDER BY id",
            pair.user_id,
            "nova",
        )
    ]
    started = time.perf_counter()
    edges = formation_edges(pair, profile_layer)
    print(
        f"  {pair.user_id}: {len(edges):,} edge rows computed in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    async with store.pool.acquire() as conn:
        for start in range(0, len(edges), 200_000):
            await conn.copy_records_to_table(
                "lzg_kanten",
                schema_name=SCHEMA,
                columns=(
                    "knoten_a_id",
                    "knoten_b_id",
                    "gewicht_roh",
                    "gewicht_absolut",
                    "erstellt_am",
                    "verbindungs_gruende",
                    "geteilte_entitaet_ids",
                    "geteilte_themen",
                    "timeline_naehe_tage",
                    "embedding_cosine_initial",
                    "anzahl_schichten",
                ),
                records=[e.record() for e in edges[start : start + 200_000]],
            )
    return len(edges)
