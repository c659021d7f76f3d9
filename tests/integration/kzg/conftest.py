"""Fixtures of the KZG integration tests: the real offline model and a KzgMemory on the test Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest

from novaberg_core.embedding import EmbeddingProvider, make_provider, profile_for
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from services.kzg.memory import KzgMemory
from services.kzg.store import KzgStore
from services.kzg.types import EntryInput, Pair, Vector

PAIR = Pair("anna-maria@example.org", "nova.v2")
OTHER_PAIR = Pair("anna-maria@example", "nova.v2")


@pytest.fixture(scope="session")
def provider() -> EmbeddingProvider:
    """The offline default model (all-MiniLM-L6-v2 int8), loaded once per session."""
    return make_provider("minilm")


@pytest.fixture(scope="session")
def retrieval_threshold(provider: EmbeddingProvider) -> float:
    """The model profile's ``kzg_retrieval`` (SPEC §2, §4.5)."""
    return profile_for(provider.model_id).kzg_retrieval


@pytest.fixture
def sink() -> InMemorySink:
    return InMemorySink()


@pytest.fixture
async def kzg(
    redis_url: str, provider: EmbeddingProvider, retrieval_threshold: float, sink: InMemorySink
) -> AsyncIterator[KzgMemory]:
    """A started KzgMemory on a flushed Redis (index, model stamp and consumer group in place)."""
    store = KzgStore.from_url(redis_url, dimension=provider.dimension)
    memory = KzgMemory(store, provider, PipelineLog(sink), retrieval_threshold=retrieval_threshold)
    await memory.start()
    try:
        yield memory
    finally:
        await store.close()


@pytest.fixture
def rng() -> Iterator[np.random.Generator]:
    yield np.random.default_rng(7)


def unit_vector(rng: np.random.Generator, dimension: int = 384) -> Vector:
    v = rng.standard_normal(dimension).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def entry(
    salienz: float = 0.5,
    themen: tuple[str, ...] = ("Garten",),
    *,
    pair: Pair = PAIR,
    beobachter: str = "user",
    inhalt: str = "Meister mag Schnittlauch im Garten.",
    embedding: Vector | None = None,
    **kwargs: object,
) -> EntryInput:
    """A valid write request with explicit fields; ``embedding`` None → the model embeds."""
    return EntryInput(
        pair=pair, beobachter=beobachter, inhalt=inhalt, salienz=salienz, themen=themen,
        embedding=embedding, **kwargs,  # type: ignore[arg-type]
    )
