"""A large pair's BM25 beside its dense first pass (services/lzg/reading.py ``_first_pass``): the same
scores and rows as one after the other, the BM25 on the second thread."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import numpy as np
import pytest

from novaberg_core.lexical import LexicalIndex, tokenize
from services.lzg import reading
from services.lzg.cache import PairSnapshot
from services.lzg.reading import PARALLEL_ROWS, RecallQuery
from services.lzg.recall import CANDIDATES_PER_SOURCE, TimeOrder
from services.lzg.vector_index import QuantizedRows

DIM = 32
WORDS = [f"wort{i}" for i in range(400)]


def _snapshot(n: int, seed: int) -> tuple[PairSnapshot, np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    codes = QuantizedRows(DIM)
    codes.add(vectors)
    lexical = LexicalIndex()
    for _ in range(n):
        lexical.append(tokenize(" ".join(WORDS[i] for i in rng.zipf(1.4, 8) % len(WORDS)), "de"))
    snapshot = PairSnapshot(
        ids=np.arange(1, n + 1, dtype=np.int64),
        embeddings=vectors,
        times=np.arange(n, dtype=np.float64),
        questions=np.zeros(n, dtype=bool),
        order=TimeOrder.of(np.arange(n, dtype=np.float64)),
        lexical=lexical,
        codes=codes,
    )
    return snapshot, vectors


def _query(vectors: np.ndarray, row: int) -> RecallQuery:
    return RecallQuery(
        vector=vectors[row], as_of=datetime(2026, 1, 1, tzinfo=UTC),
        lexical_text=f"{WORDS[0]} {WORDS[3]} {WORDS[row % len(WORDS)]}", sprache="de",
    )  # fmt: skip


@pytest.fixture
def threads_of_bm25(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    scores = PairSnapshot.lexical_scores

    def recorded(self: PairSnapshot, text: str, language: str):  # type: ignore[no-untyped-def]
        names.append(threading.current_thread().name)
        return scores(self, text, language)

    monkeypatch.setattr(PairSnapshot, "lexical_scores", recorded)
    return names


def test_a_large_pair_gets_the_same_scores_and_rows_side_by_side(threads_of_bm25: list[str]) -> None:
    snapshot, vectors = _snapshot(PARALLEL_ROWS + 100, 1)
    visible = snapshot.times <= 20_000.0
    for row in (5, 700, 20_000):
        query = _query(vectors, row)
        (terms, bm25, strength), dense_rows = reading._first_pass(snapshot, query, visible)
        alone_terms, alone_bm25, alone_strength = PairSnapshot.lexical_scores(
            snapshot, query.lexical_text, "de"
        )
        assert terms == alone_terms and bm25.tolist() == alone_bm25.tolist()
        assert strength.tolist() == alone_strength.tolist() and bm25.max() > 0
        assert dense_rows is not None
        assert dense_rows.tolist() == snapshot.nearest(query.vector, visible, CANDIDATES_PER_SOURCE).tolist()
        assert visible[dense_rows].all()
    # the side-by-side BM25 ran on the read's second thread, each check's own on this one
    assert [name.startswith("lzg-bm25") for name in threads_of_bm25] == [True, False] * 3


def test_a_small_pair_scores_on_the_loop_alone(threads_of_bm25: list[str]) -> None:
    snapshot, vectors = _snapshot(500, 2)
    scores, dense_rows = reading._first_pass(snapshot, _query(vectors, 7), np.ones(500, dtype=bool))
    assert dense_rows is None and scores[1].max() > 0
    assert threads_of_bm25 == [threading.current_thread().name]
