"""Get, delete, hash_dirty, the declared index and the model guard (SPEC §2, §4.5, §5.3 step 6)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from novaberg_core.embedding import EMBED_RECIPE, EmbeddingProvider
from novaberg_core.errors import InvalidArgument, ModelMismatch, NotFound
from novaberg_core.model import Ei, Magnets
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from services.kzg.memory import KzgMemory
from services.kzg.store import MODEL_KEY, KzgStore, entry_scope
from services.kzg.types import Vector
from tests.integration.kzg.conftest import OTHER_PAIR, PAIR, entry, unit_vector
from tests.polling import eventually
from tests.redis_values import as_bytes

# SPEC §4.5 with the pair as its tokens (paar, nutzer) instead of the raw ids (docs/decisions.md).
INDEX_FIELDS = {
    "paar": "TAG", "nutzer": "TAG", "beobachter": "TAG", "emotion": "TAG", "modus": "TAG",
    "entitaet_ids": "TAG", "themen": "TAG", "arousal": "NUMERIC", "timeline_id": "NUMERIC",
    "salienz": "NUMERIC", "emotions_vektor": "TEXT", "sprach_stil": "TEXT", "tone": "TEXT", "embedding": "VECTOR",
}


@pytest.fixture
def retrieval_threshold() -> float:
    """These tests never retrieve by similarity; no model profile needed."""
    return 0.5


async def test_get_returns_the_entry_of_the_pair(kzg: KzgMemory, rng: np.random.Generator, sink: InMemorySink) -> None:
    vector = unit_vector(rng)
    stored = await kzg.store_entry(
        entry(0.6, ("Garten", "Kräuter"), embedding=vector, beobachter="assistant",
              ei=Ei(emotion="freude", modus="alltag", intentionen=("planung",)),
              magnets=Magnets(entitaet_ids=(5, 2), timeline_id=9), turn_id="t-1",
              as_of=datetime.fromtimestamp(1_790_000_000.5, UTC))
    )
    got = await kzg.get_entry(PAIR, stored.kzg_key, include_embedding=True)
    assert got.kzg_key == stored.kzg_key and got.entry_id == stored.kzg_key.rsplit(":", 1)[1]
    assert got.pair == PAIR and got.beobachter == "assistant"
    assert got.themen == ("Garten", "Kräuter") and got.ei.intentionen == ("planung",)
    assert got.magnets == Magnets(entitaet_ids=(5, 2), timeline_id=9)
    assert got.salienz == stored.salienz and got.salienz_eingang == 0.6 and got.haeufigkeit == 1
    assert got.erstellt_am.timestamp() == 1_790_000_000.5 and got.turn_id == "t-1"
    assert 0 < got.ttl_seconds <= stored.ttl_seconds
    assert got.embedding is not None and np.array_equal(got.embedding, vector)
    assert (await kzg.get_entry(PAIR, stored.kzg_key)).embedding is None
    await kzg.log.flush()
    assert any(r.art == "db_read" and r.inhalt.get("kzg_key") == stored.kzg_key for r in sink.records)


async def test_get_refuses_keys_of_another_pair_and_reports_missing_ones(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    other = await kzg.store_entry(entry(0.6, pair=OTHER_PAIR, embedding=unit_vector(rng)))
    with pytest.raises(InvalidArgument, match="not a KZG key of the pair"):
        await kzg.get_entry(PAIR, other.kzg_key)
    with pytest.raises(NotFound):
        await kzg.get_entry(PAIR, f"kzg:{PAIR.user_id}:{PAIR.character_id}:gone")


async def test_delete_verifies_with_exists(kzg: KzgMemory, rng: np.random.Generator, sink: InMemorySink) -> None:
    stored = await kzg.store_entry(entry(0.6, embedding=unit_vector(rng)))
    assert await kzg.delete_entry(PAIR, stored.kzg_key, turn_id="t-del") == (True, True)
    assert not await kzg.store.redis.exists(stored.kzg_key)
    assert await kzg.delete_entry(PAIR, stored.kzg_key) == (False, True)
    other = await kzg.store_entry(entry(0.6, pair=OTHER_PAIR, embedding=unit_vector(rng)))
    with pytest.raises(InvalidArgument):
        await kzg.delete_entry(PAIR, other.kzg_key)
    assert await kzg.store.redis.exists(other.kzg_key)
    await kzg.log.flush()
    assert any(r.art == "db_write" and r.turn_id == "t-del" and r.inhalt["operation"] == "del" for r in sink.records)


async def test_mark_hash_dirty_sets_the_pair_marker(kzg: KzgMemory) -> None:
    await kzg.mark_hash_dirty(PAIR, "promotion kzg:x -> node 7", as_of=datetime.fromtimestamp(1_790_000_100, UTC))
    marker = await kzg.store.hash_dirty(PAIR)
    assert marker["reason"] == "promotion kzg:x -> node 7"
    assert float(marker["gesetzt_am"]) == 1_790_000_100.0
    assert await kzg.store.hash_dirty(OTHER_PAIR) == {}


async def test_index_has_every_field_of_the_spec_and_the_model_dimension(kzg: KzgMemory) -> None:
    info = await kzg.store.redis.ft(kzg.store.index_name).info()
    attributes = {_s(a[b"attribute"] if isinstance(a, dict) else a[a.index(b"attribute") + 1]): a
                  for a in info[b"attributes"]} if b"attributes" in info else {}
    assert attributes, info
    types = {name: _s(a[b"type"]) for name, a in attributes.items()}
    assert {k: types.get(k) for k in INDEX_FIELDS} == INDEX_FIELDS
    assert int(attributes["embedding"][b"dim"]) == kzg.provider.dimension
    assert _s(attributes["embedding"][b"distance_metric"]) == "COSINE"
    # Idempotent: a second start changes nothing.
    assert await kzg.store.ensure_index() is False


async def test_a_changed_declaration_rebuilds_the_index_and_keeps_the_entries(
    redis_url: str, kzg: KzgMemory, rng: np.random.Generator, provider: EmbeddingProvider
) -> None:
    vector = unit_vector(rng)
    stored = await kzg.store_entry(entry(0.6, embedding=vector))
    hnsw = KzgStore.from_url(redis_url, dimension=provider.dimension, vector_algorithm="HNSW")
    try:
        assert await hnsw.ensure_index() is True
        found = await _knn_once_indexed(hnsw, vector)
        assert [key for key, _ in found] == [stored.kzg_key]
        assert found[0][1] == pytest.approx(1.0, abs=1e-5)
    finally:
        await hnsw.close()


async def test_a_store_filled_by_another_model_refuses_to_start(
    redis_url: str, provider: EmbeddingProvider
) -> None:
    store = KzgStore.from_url(redis_url, dimension=provider.dimension)
    try:
        await store.redis.set(MODEL_KEY, json.dumps({"model_id": "ollama:nomic-embed-text-v2-moe", "dimension": 768}))
        memory = KzgMemory(store, provider, PipelineLog(), retrieval_threshold=0.5)
        with pytest.raises(ModelMismatch, match=r"nomic-embed-text-v2-moe.*all-minilm"):
            await memory.start()
    finally:
        await store.close()


async def test_the_model_stamp_is_recorded_once(kzg: KzgMemory) -> None:
    stamp = json.loads(as_bytes(await kzg.store.redis.get(MODEL_KEY)))
    assert stamp == {"model_id": kzg.provider.model_id, "dimension": kzg.provider.dimension, "recipe": EMBED_RECIPE}
    await kzg.start()  # a restart with the same model is fine
    assert json.loads(as_bytes(await kzg.store.redis.get(MODEL_KEY))) == stamp


async def _knn_once_indexed(store: KzgStore, vector: Vector, within: float = 5.0) -> list[tuple[str, float]]:
    """KNN after the background re-indexing of the kept hashes has finished (FT.INFO ``indexing``
    0, ``percent_indexed`` 1), polling with short sleeps up to ``within`` seconds."""

    async def knn_when_indexed() -> list[tuple[str, float]]:
        info = await store.redis.ft(store.index_name).info()
        indexed = not int(_field(info, "indexing")) and float(_field(info, "percent_indexed")) >= 1.0
        return (await store.search_all([store.knn_search(entry_scope(PAIR), vector, 3)]))[0] if indexed else []

    return await eventually(knn_when_indexed, bool, within=within, every=0.05, what="a KNN hit on the rebuilt index")


def _field(info: Mapping[Any, Any], name: str) -> Any:
    """A field of an FT.INFO answer (bytes keys under RESP3 / without decoding, str keys otherwise)."""
    return info[name.encode()] if name.encode() in info else info[name]


def _s(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def test_the_retrieval_read_is_the_entry_without_its_vector(kzg: KzgMemory, rng: np.random.Generator) -> None:
    """``read_entries`` (the retrieval's one-call read of the fields an entry is made of) gives what a
    full read gives, the vector aside; a key that is gone reads as None, in place."""
    written = [
        await kzg.store_entry(entry(0.5, ("Garten", f"Beet {i}"), embedding=unit_vector(rng), turn_id=f"t{i}"))
        for i in range(3)
    ]
    keys = [w.kzg_key for w in written]
    await kzg.store.redis.delete(keys[1])

    read = await kzg.store.read_entries(keys)

    full = [await kzg.store.get_entry(key, with_embedding=False) for key in keys]
    assert read[1] is None and full[1] is None
    for got, expected in ((read[0], full[0]), (read[2], full[2])):
        assert got is not None and expected is not None
        assert got == expected
        assert got.embedding is None and got.haeufigkeit >= 1 and got.ttl_seconds > 0
