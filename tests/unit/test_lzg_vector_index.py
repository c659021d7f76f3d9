"""The dense first pass of a large pair (services/lzg/vector_index.py, PairSnapshot.nearest): the exact top rows."""

from __future__ import annotations

import numpy as np
import pytest

from novaberg_core.lexical import LexicalIndex
from services.lzg.cache import PairSnapshot
from services.lzg.recall import TimeOrder, top_rows
from services.lzg.vector_index import EXACT_SCAN_ROWS, QuantizedRows

DIM = 384


def _snapshot(n: int, seed: int) -> tuple[PairSnapshot, np.ndarray]:
    rng = np.random.default_rng(seed)
    # Clustered unit vectors, as embeddings of a conversation are: many near-ties among the best.
    centres = rng.standard_normal((40, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, 40, n)] + 0.6 * rng.standard_normal((n, DIM)).astype(np.float32)
    vectors[7] = 0.0  # a node without a vector
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    codes = QuantizedRows(DIM)
    codes.add(vectors)
    codes.add(vectors[:100])  # rows appended after the snapshot: not this view's
    snapshot = PairSnapshot(
        ids=np.arange(1, n + 1, dtype=np.int64),
        embeddings=vectors,
        times=np.zeros(n),
        questions=np.zeros(n, dtype=bool),
        order=TimeOrder.of(np.zeros(n)),
        lexical=LexicalIndex(),
        codes=codes,
    )
    return snapshot, vectors


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_large_pair_gets_the_exact_top_rows(seed: int) -> None:
    n = EXACT_SCAN_ROWS * 3
    snapshot, vectors = _snapshot(n, seed)
    rng = np.random.default_rng(100 + seed)
    eligible = rng.random(n) < 0.8
    for probe in range(20):
        query = vectors[rng.integers(0, n)] + 0.3 * rng.standard_normal(DIM).astype(np.float32)
        query /= np.linalg.norm(query)
        exact = top_rows(snapshot.cosines(query), eligible, 50)
        found = snapshot.nearest(query, eligible, 50)
        assert found.tolist() == exact.tolist(), probe
        assert eligible[found].all()


def test_rows_beyond_the_view_and_ineligible_rows_are_never_returned() -> None:
    snapshot, vectors = _snapshot(EXACT_SCAN_ROWS + 50, 4)
    eligible = np.zeros(len(snapshot), dtype=bool)
    eligible[[3, 9, 11]] = True
    found = snapshot.nearest(vectors[0], eligible, 50)
    assert sorted(found.tolist()) == [3, 9, 11]
    assert snapshot.nearest(vectors[0], np.zeros(len(snapshot), dtype=bool), 50).size == 0


def test_a_small_pair_is_ranked_by_the_exact_product() -> None:
    snapshot, vectors = _snapshot(500, 5)
    eligible = np.ones(500, dtype=bool)
    assert (
        snapshot.nearest(vectors[42], eligible, 10).tolist()
        == top_rows(snapshot.cosines(vectors[42]), eligible, 10).tolist()
    )
    # float32 products: the summation order (BLAS, SIMD width, alignment) moves the last bits
    assert snapshot.cosines_at(vectors[42], [42, 3]).tolist() == pytest.approx(
        [1.0, float(vectors[3] @ vectors[42])], abs=1e-6
    )
