"""A pair's node vectors as 8-bit codes, for the first pass of the read's dense search (SPEC §5.8 step 1, §11).

The dense source ranks every node of a pair by cosine to the query. numpy's float32 product streams
``4 × dimension`` bytes per node from memory: a pair of 100,000 nodes (384-d) is 154 MB a query,
~14 ms on this machine, most of the hybrid read at that size. A large pair therefore keeps its
vectors a second time as 8-bit codes (faiss ``ScalarQuantizer`` ``QT_8bit_direct_signed``: each
component of the unit vector × 127, rounded; a quarter of the bytes, scanned with SIMD): the
read scans the codes for the ``PREFILTER × limit`` best rows and ranks those by their exact float32
cosine (``services/lzg/cache.py``). The code scan's inner product differs from the exact cosine by
0.008 on average, 0.021 at the 99th percentile, 0.028 at most (1,000 code-scan hits of 50 queries
on 20,000 clustered 384-d vectors); a memory of the exact top ``limit`` falls outside the scan's
``PREFILTER × limit`` only if ``limit × (PREFILTER − 1)`` others come within that of it
(``bench/dense_bench.py``: 0 of 600 top-50 lists differed). Pairs up to ``EXACT_SCAN_ROWS`` are
scanned exactly. docs/decisions.md "The dense first pass of a large pair".
"""

from __future__ import annotations

import faiss
import numpy as np
import numpy.typing as npt

__all__ = ["EXACT_SCAN_ROWS", "PREFILTER", "QuantizedRows"]

faiss.omp_set_num_threads(1)  # one query at a time; no OpenMP pool spinning beside the event loop

EXACT_SCAN_ROWS = 8192
"""Pairs with at most this many nodes are ranked by the exact product alone (fast enough, nothing to gain)."""
PREFILTER = 8
"""The code scan keeps ``PREFILTER × limit`` rows for the exact ranking."""
_SCALE = 127.0
"""Components of a unit vector lie in [-1, 1]; × 127 fills the signed byte without clipping."""


class QuantizedRows:
    """Append-only 8-bit codes of a pair's node vectors, row for row with the cache's matrix."""

    __slots__ = ("_index",)

    def __init__(self, dimension: int) -> None:
        self._index = faiss.IndexScalarQuantizer(
            dimension, faiss.ScalarQuantizer.QT_8bit_direct_signed, faiss.METRIC_INNER_PRODUCT
        )

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def nbytes(self) -> int:
        return len(self) * int(self._index.code_size)

    def add(self, vectors: npt.NDArray[np.float32]) -> None:
        """Append rows (unit vectors, or zero rows for nodes without a vector)."""
        if vectors.shape[0]:
            self._index.add(np.ascontiguousarray(vectors * _SCALE, dtype=np.float32))

    def best_rows(
        self, vector: npt.NDArray[np.float32], eligible: npt.NDArray[np.bool_], limit: int
    ) -> npt.NDArray[np.int64]:
        """Up to ``limit`` eligible rows by approximate inner product, ascending row order.

        ``eligible`` covers the first ``len(eligible)`` rows (a snapshot's view); rows beyond it are
        not searched.
        """
        if limit <= 0 or not eligible.any():
            return np.zeros(0, dtype=np.int64)
        bitmap = np.packbits(eligible, bitorder="little")
        # The selector and the bitmap it points into must outlive the search: held by these locals.
        selector = faiss.IDSelectorBitmap(bitmap.size, faiss.swig_ptr(bitmap))
        params = faiss.SearchParameters()
        params.sel = selector
        query = np.ascontiguousarray(vector.reshape(1, -1) * _SCALE, dtype=np.float32)
        _, labels = self._index.search(query, limit, params=params)
        rows = labels[0]
        return np.sort(rows[rows >= 0]).astype(np.int64)
