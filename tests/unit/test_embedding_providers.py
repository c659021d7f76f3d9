"""Local embedding providers (SPEC §2): shape, norm, determinism, meaning, event loop kept free."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from novaberg_core.embedding import EmbeddingProvider, Vectors, make_provider
from novaberg_core.errors import InvalidArgument

SENTENCES = [
    "Last week I started taking violin lessons.",
    "My sister is getting married in Hamburg in June.",
    "Ich backe jeden Sonntag Brot mit Sauerteig.",
    "",
    "A much longer sentence that keeps going, so that its batch needs padding, " * 5,
]


@pytest.fixture(params=["minilm", "use"])
def provider(request: pytest.FixtureRequest) -> EmbeddingProvider:
    fixture = {"minilm": "minilm_provider", "use": "use_provider"}[request.param]
    result: EmbeddingProvider = request.getfixturevalue(fixture)
    return result


@pytest.mark.parametrize(
    ("name", "model_id", "dimension"),
    [
        ("minilm", "all-minilm-l6-v2-int8", 384),
        ("use", "use-multilingual-v3", 512),
    ],
)
async def test_provider_identity_and_shape(name: str, model_id: str, dimension: int) -> None:
    provider = make_provider(name)
    assert (provider.model_id, provider.dimension) == (model_id, dimension)
    vectors = await provider.embed(SENTENCES)
    assert vectors.shape == (len(SENTENCES), dimension)
    assert vectors.dtype == np.float32
    one = await provider.embed_one(SENTENCES[0])
    assert one.shape == (dimension,)


async def test_rows_have_norm_one(provider: EmbeddingProvider) -> None:
    vectors = await provider.embed(SENTENCES)
    np.testing.assert_allclose(np.linalg.norm(vectors.astype(np.float64), axis=1), 1.0, atol=1e-5)


async def test_same_texts_give_bit_identical_vectors(provider: EmbeddingProvider) -> None:
    first = await provider.embed(SENTENCES)
    second = await provider.embed(SENTENCES)
    assert first.tobytes() == second.tobytes()


@pytest.mark.parametrize(
    ("anchor", "paraphrase", "unrelated"),
    [
        ("A man is playing the guitar.", "Someone plays a guitar.", "The stock market fell sharply today."),
        (
            "My grandmother died in March.",
            "I lost my grandma this spring.",
            "The train to Berlin is late again.",
        ),
    ],
)
async def test_paraphrase_scores_higher_than_unrelated(
    provider: EmbeddingProvider, anchor: str, paraphrase: str, unrelated: str
) -> None:
    a, p, u = await provider.embed([anchor, paraphrase, unrelated])
    assert float(a @ p) > float(a @ u) + 0.2


async def test_use_understands_german(use_provider: EmbeddingProvider) -> None:
    """The offline default must work in the companion's language (see the bench's German probe)."""
    a, p, u = await use_provider.embed(
        [
            "Ich gehe morgen ins Kino.",
            "Morgen besuche ich das Kino.",
            "Die Börse ist heute stark gefallen.",
        ]
    )
    assert float(a @ p) > float(a @ u) + 0.3


async def test_empty_input_gives_an_empty_matrix(provider: EmbeddingProvider) -> None:
    vectors = await provider.embed([])
    assert vectors.shape == (0, provider.dimension)
    assert vectors.dtype == np.float32


async def test_a_bare_string_is_refused(provider: EmbeddingProvider) -> None:
    with pytest.raises(InvalidArgument, match="embed_one"):
        await provider.embed("not a list")


async def test_order_is_kept_when_batches_are_sorted_by_length(minilm_provider: EmbeddingProvider) -> None:
    texts = [f"{'very ' * (i % 7)}short sentence number {i}" for i in range(40)]
    together = await minilm_provider.embed(texts)
    alone = np.stack([await minilm_provider.embed_one(text) for text in texts[:5]])
    np.testing.assert_allclose(together[:5], alone, atol=1e-5)


async def test_embedding_does_not_block_the_event_loop(minilm_provider: EmbeddingProvider) -> None:
    await minilm_provider.embed_one("warm-up")
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.002)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        await minilm_provider.embed([f"sentence {i} about something else entirely" for i in range(300)])
    finally:
        task.cancel()
    assert ticks >= 5


def test_make_provider_returns_one_instance_per_process() -> None:
    assert make_provider("minilm") is make_provider("minilm")
    assert make_provider("use") is make_provider("use")


def test_minilm_runs_are_bounded_in_size_and_padding() -> None:
    from novaberg_core.embedding.minilm import BATCH_SIZE, RUN_LENGTH_SLACK, _runs

    lengths = np.array([12, 40, 11, 13, 100, 41, 12, 45, 90, 12] + [20] * 40)
    order = np.argsort(lengths, kind="stable")
    runs = _runs(lengths, order)
    assert np.concatenate(runs).tolist() == order.tolist()  # every text once, in length order
    assert all(len(run) <= BATCH_SIZE for run in runs)
    assert all(lengths[run].max() <= lengths[run[0]] * RUN_LENGTH_SLACK + 2 for run in runs)
    assert [len(run) for run in runs] == [5, 16, 16, 8, 3, 2]  # 12s+11+13, 20s, 40s, then 90 and 100


class _KeepsBatches(EmbeddingProvider):
    """A provider that keeps every batch the interface hands it."""

    model_id = "keeps-batches"
    dimension = 3

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    async def _embed(self, texts: list[str]) -> Vectors:
        self.batches.append(texts)
        return np.full((len(texts), self.dimension), 1.0 / np.sqrt(self.dimension), dtype=np.float32)


async def test_every_provider_is_handed_only_checked_non_empty_lists() -> None:
    provider = _KeepsBatches()
    assert (await provider.embed([])).shape == (0, 3)
    with pytest.raises(InvalidArgument, match="embed_one"):
        await provider.embed("abc")
    with pytest.raises(InvalidArgument, match="text 1 to embed is a int"):
        await provider.embed(["a", 1])  # type: ignore[list-item]
    assert (await provider.embed(("a", "b"))).shape == (2, 3)
    assert provider.batches == [["a", "b"]]
