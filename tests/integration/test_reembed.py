"""The re-embed tool (SPEC §2, §11): a store filled with the old text recipe refuses to serve until every
vector is rewritten; afterwards every vector is the live path's embedding of its text."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import numpy as np
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.embedding import (
    LEGACY_RECIPE,
    EmbeddingProvider,
    kzg_embed_text,
    lzg_embed_text,
    make_provider,
    profile_for,
)
from novaberg_core.errors import ModelMismatch
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from novaberg_dev.reembed import reembed_kzg, reembed_lzg
from services.kzg.memory import KzgMemory
from services.kzg.store import MODEL_KEY, KzgStore
from services.kzg.types import EntryInput, Pair
from services.lzg.store import LzgStore
from services.pipeline.app.turn_writer import kzg_entry_text
from tests.recording_provider import RecordingProvider
from tests.redis_values import as_bytes

PAIR = Pair("reembed-u", "nova")
TEXTS = [("Anna backt Brot.", "Meister"), ("Ich liebe den Garten.", "Meister"), ("Das freut mich sehr.", "Nova")]


@pytest.fixture(scope="module")
def minilm() -> EmbeddingProvider:
    return make_provider("minilm")


@pytest.fixture
async def kzg(redis_url: str, minilm: EmbeddingProvider) -> AsyncIterator[KzgMemory]:
    store = KzgStore.from_url(redis_url, dimension=minilm.dimension)
    memory = KzgMemory(store, minilm, PipelineLog(InMemorySink()), retrieval_threshold=0.3)
    await memory.start()
    try:
        yield memory
    finally:
        await store.close()


async def test_kzg_vectors_are_rewritten_with_the_speaker_and_the_stamp_follows(
    kzg: KzgMemory, redis_url: str, minilm: EmbeddingProvider
) -> None:
    keys = []
    for inhalt, sprecher in TEXTS:
        stored = await kzg.store_entry(EntryInput(
            pair=PAIR, beobachter="user", inhalt=inhalt, salienz=0.5, themen=("alltag",), sprecher=sprecher))  # fmt: skip
        keys.append(stored.kzg_key)
    # The store as an older version left it: bare vectors (here: zeros) and the legacy recipe in the stamp.
    for key in keys:
        await kzg.store.redis.hset(key, "embedding", np.zeros(minilm.dimension, dtype=np.float32).tobytes())
    await kzg.store.redis.set(MODEL_KEY, json.dumps(
        {"model_id": minilm.model_id, "dimension": minilm.dimension, "recipe": LEGACY_RECIPE}))  # fmt: skip
    with pytest.raises(ModelMismatch, match="novaberg reembed"):
        await kzg.store.check_model(minilm.stamp)

    seen: list[tuple[int, int]] = []
    done = await reembed_kzg(redis_url, minilm, lambda n, total: seen.append((n, total)))

    assert done.vectors == len(TEXTS) and seen[-1] == (len(TEXTS), len(TEXTS))
    await kzg.store.check_model(minilm.stamp)  # serves again
    for key, (inhalt, sprecher) in zip(keys, TEXTS, strict=True):
        stored_vector = np.frombuffer(as_bytes(await kzg.store.redis.hget(key, "embedding")), dtype=np.float32)
        expected = await minilm.embed_one(kzg_embed_text(["alltag"], inhalt, sprecher))
        assert stored_vector == pytest.approx(expected, abs=1e-6)


async def test_the_pipelines_entry_text_is_the_one_re_embedding_builds_from_the_stored_themes(
    kzg: KzgMemory, redis_url: str, minilm: EmbeddingProvider
) -> None:
    """SPEC §2: one text per target for the live path and re-embedding, whatever themes the caller sent."""
    inhalt = "Morgen habe ich einen Termin beim Zahnarzt."
    analysis = pipeline_pb2.TurnAnalysis(inhalt=inhalt, salience=common_pb2.SalienceResult(
        salienz=0.6, themen=[" Zahnarzt ", "", "Arbeit"], dimension="alltag"))  # fmt: skip
    live = kzg_entry_text(analysis, "Nutzer")
    assert live == "Nutzer: Thema: Zahnarzt, Arbeit. Aussage: Morgen habe ich einen Termin beim Zahnarzt."
    stored = await kzg.store_entry(EntryInput(
        pair=PAIR, beobachter="user", inhalt=inhalt, salienz=0.6, themen=tuple(analysis.salience.themen),
        dimension="alltag", sprecher="Nutzer", embedding=await minilm.embed_one(live)))  # fmt: skip
    live_vector = np.frombuffer(as_bytes(await kzg.store.redis.hget(stored.kzg_key, "embedding")), dtype=np.float32)

    await kzg.store.redis.hset(stored.kzg_key, "antwort_auf", "Was steht morgen an?")
    await kzg.store.redis.hset(stored.kzg_key, "suchtext", "")  # as an older version left it

    recording = RecordingProvider(minilm)
    await reembed_kzg(redis_url, recording)

    assert recording.texts == [live]  # the question the entry answers is searched, never embedded (SPEC §11)
    searched = as_bytes(await kzg.store.redis.hget(stored.kzg_key, "suchtext")).decode()
    assert searched == f"Nutzer: {inhalt}\nWas steht morgen an?"
    rewritten = np.frombuffer(as_bytes(await kzg.store.redis.hget(stored.kzg_key, "embedding")), dtype=np.float32)
    assert rewritten == pytest.approx(live_vector, abs=1e-6)


async def test_lzg_vectors_edge_cosines_and_stamp_are_rewritten(pg_url: str, minilm: EmbeddingProvider) -> None:
    store = await LzgStore.open(pg_url, dimension=minilm.dimension, max_size=2)
    try:
        await store.check_model(minilm.stamp)
        async with store.pool.acquire() as conn:
            ids: list[int] = []
            for inhalt, sprecher in TEXTS:
                ids.append(await conn.fetchval(
                    "INSERT INTO lzg_knoten (kzg_quell_key, user_id, character_id, inhalt, embedding, dimension, "
                    "gewicht_roh, gewicht_absolut, gewicht_decay, kzg_erstellt_am, sprecher) "
                    "VALUES ($1, $2, $3, $4, $5, 'alltag', 0.9, 3.754, 3.754, now(), $6) RETURNING id",
                    f"kzg:{PAIR.user_id}:{PAIR.character_id}:{len(ids)}", PAIR.user_id, PAIR.character_id, inhalt,
                    np.ones(minilm.dimension, dtype=np.float32) / np.sqrt(minilm.dimension), sprecher,
                ))  # fmt: skip
            await conn.execute(
                "INSERT INTO lzg_kanten (knoten_a_id, knoten_b_id, gewicht_roh, gewicht_absolut, verbindungs_gruende, "
                "embedding_cosine_initial) VALUES ($1, $2, 2.0, 4.47, '{embedding}', 1.0)", ids[0], ids[1],
            )  # fmt: skip
            await conn.execute("UPDATE modell SET rezept = $1", LEGACY_RECIPE)
        with pytest.raises(ModelMismatch, match="texts inhalt/0"):
            await store.check_model(minilm.stamp)

        done = await reembed_lzg(pg_url, minilm, profile_for(minilm.model_id).embedding_layer)

        assert (done.vectors, done.edges) == (len(TEXTS), 1)
        await store.check_model(minilm.stamp)
        expected = await minilm.embed([lzg_embed_text(inhalt, sprecher) for inhalt, sprecher in TEXTS])
        async with store.pool.acquire() as conn:
            rows = await conn.fetch("SELECT id, embedding FROM lzg_knoten ORDER BY id")
            cosine = await conn.fetchval("SELECT embedding_cosine_initial FROM lzg_kanten")
        for row, vector in zip(rows, expected, strict=True):
            assert row["embedding"].to_numpy() == pytest.approx(vector, abs=1e-6)
        assert cosine == pytest.approx(float(np.dot(expected[0], expected[1])), abs=1e-5)
    finally:
        await store.close()
