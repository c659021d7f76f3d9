"""The re-embed tool of SPEC §2: rewrite every vector of a store with the configured model and text recipe.

A store filled by another model, or with another embed-text recipe (SPEC §11: the speaker in the
text), refuses to serve (:func:`novaberg_core.embedding.check_store_model`). This tool runs against
the stores directly, with the services stopped, and rewrites, in batches with progress:

- KZG (Redis): every entry's ``embedding`` from its ``kzg_embed_text`` (speaker included), and the
  full-text fields of SPEC §11 an older entry lacks; then the model stamp;
- LZG (PostgreSQL, schema ``lzg``): every node's ``embedding`` from its ``lzg_embed_text`` (set-based,
  one UPDATE per batch; the vector column is retyped first if the dimension changed), then every
  edge's frozen ``embedding_cosine_initial`` from the new vectors and the edge weights by Trigger 2
  over every node (SPEC §5.5); then the model stamp.

The texts are those of :mod:`novaberg_core.embedding.texts`, the same functions the live path uses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from novaberg_core import redis_client
from novaberg_core.embedding import (
    THEMEN_SEPARATOR,
    EmbeddingProvider,
    kzg_embed_text,
    lzg_embed_text,
    searched_text,
)
from novaberg_core.lexical import LANGUAGES, language_of

__all__ = ["KZG_MODEL_KEY", "Reembedded", "reembed_kzg", "reembed_lzg"]

KZG_MODEL_KEY = "kzg:meta:model"
"""The KZG's model stamp (``services.kzg.store.MODEL_KEY``)."""
_KZG_PREFIX = "kzg:"
BATCH = 128

Progress = Callable[[int, int], None]
"""Called with (done, total) after every batch."""


@dataclass(frozen=True)
class Reembedded:
    """What one run rewrote."""

    vectors: int
    edges: int = 0


def _vector_text(vector: np.ndarray) -> str:
    """A vector in pgvector's text form (exact: float32 values printed with full precision)."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


def _text(value: bytes | None) -> str:
    return "" if value is None else value.decode("utf-8", errors="replace")


async def reembed_kzg(redis_url: str, provider: EmbeddingProvider, progress: Progress | None = None) -> Reembedded:
    """Every KZG entry's vector (and the SPEC §11 text fields it lacks), then the stamp."""
    client = redis_client.connect(redis_url, decode_responses=False)
    try:
        keys = [k async for k in client.scan_iter(match=f"{_KZG_PREFIX}*", count=1_000, _type="HASH")]
        done = 0
        for start in range(0, len(keys), BATCH):
            batch = keys[start : start + BATCH]
            async with client.pipeline(transaction=False) as pipe:
                for key in batch:
                    pipe.hmget(key, ["themen", "inhalt", "sprecher", "sprache", "antwort_auf"])
                rows = await pipe.execute()
            live = [(key, row) for key, row in zip(batch, rows, strict=True) if row[1] is not None]
            texts = [
                kzg_embed_text([t for t in _text(row[0]).split(THEMEN_SEPARATOR) if t], _text(row[1]), _text(row[2]))
                for _, row in live
            ]
            vectors = await provider.embed(texts) if texts else np.zeros((0, provider.dimension), dtype=np.float32)
            async with client.pipeline(transaction=False) as pipe:
                for (key, row), vector in zip(live, vectors, strict=True):
                    sprache = language_of(_text(row[3]))
                    pipe.hset(key, mapping={
                        "embedding": np.asarray(vector, dtype=np.float32).tobytes(),
                        "suchtext": searched_text(_text(row[2]), _text(row[1]), _text(row[4])),
                        "sprache": sprache, "suchsprache": LANGUAGES[sprache],
                    })  # fmt: skip
                await pipe.execute()
            done += len(batch)
            if progress is not None:
                progress(done, len(keys))
        stamp = provider.stamp
        await client.set(
            KZG_MODEL_KEY,
            json.dumps({"model_id": stamp.model_id, "dimension": stamp.dimension, "recipe": stamp.recipe}),
        )
        return Reembedded(vectors=len(keys))
    finally:
        await client.aclose()


async def reembed_lzg(
    postgres_url: str, provider: EmbeddingProvider, threshold: float, progress: Progress | None = None
) -> Reembedded:
    """Every node's vector, the edges' frozen cosines and weights (Trigger 2), then the stamp.

    ``threshold`` is the model profile's ``embedding_layer`` threshold, which Trigger 2 needs.
    """
    conn = await asyncpg.connect(postgres_url, server_settings={"search_path": "lzg,public"})
    try:
        await register_vector(conn)
        column = await conn.fetchval(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'lzg_knoten'::regclass AND attname = 'embedding'"
        )
        async with conn.transaction():
            if int(column) != provider.dimension:  # another model: the column changes type, old vectors go
                await conn.execute(
                    f"ALTER TABLE lzg_knoten ALTER COLUMN embedding TYPE vector({int(provider.dimension)}) USING NULL"
                )
            ids = [r["id"] for r in await conn.fetch("SELECT id FROM lzg_knoten ORDER BY id")]
            done = 0
            for start in range(0, len(ids), BATCH):
                rows = await conn.fetch(
                    "SELECT id, inhalt, sprecher FROM lzg_knoten WHERE id = ANY($1::int[]) ORDER BY id",
                    ids[start : start + BATCH],
                )
                vectors = await provider.embed([lzg_embed_text(r["inhalt"], r["sprecher"]) for r in rows])
                await conn.execute(
                    "UPDATE lzg_knoten AS n SET embedding = v.embedding::vector "
                    "FROM unnest($1::int[], $2::text[]) AS v(id, embedding) WHERE n.id = v.id",
                    [r["id"] for r in rows], [_vector_text(v) for v in vectors],
                )
                done += len(rows)
                if progress is not None:
                    progress(done, len(ids))
            edges = await conn.execute(
                "UPDATE lzg_kanten AS e SET embedding_cosine_initial = 1 - (a.embedding <=> b.embedding) "
                "FROM lzg_knoten AS a, lzg_knoten AS b "
                "WHERE a.id = e.knoten_a_id AND b.id = e.knoten_b_id AND e.embedding_cosine_initial IS NOT NULL"
            )
            if ids:
                await conn.fetchrow("SELECT * FROM kanten_neu_berechnen($1::int[], $2)", ids, threshold)
            stamp = provider.stamp
            await conn.execute(
                "UPDATE modell SET model_id = $1, dimension = $2, rezept = $3 WHERE id",
                stamp.model_id, stamp.dimension, stamp.recipe,
            )  # fmt: skip
        return Reembedded(vectors=len(ids), edges=int(edges.split()[-1]))
    finally:
        await conn.close()
