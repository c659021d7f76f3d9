"""The dense source of a read: exact product over every node vs the 8-bit first pass (services/lzg/vector_index.py).

For pairs of ``--sizes`` nodes (clustered unit vectors of ``--dimension``, as embeddings of one person's
memories are: topics with many near-ties), ``--queries`` queries near a random node each, timed in
turn (exact, then first pass, alternating which goes first):

- exact: ``top_rows(PairSnapshot.cosines(q), eligible, 50)`` — numpy's float32 product over every row;
- first pass: ``PairSnapshot.nearest(q, eligible, 50)`` — faiss SQ8 codes scanned for 8 × 50 rows,
  those ranked by their exact cosine (pairs up to ``EXACT_SCAN_ROWS`` take the exact path).

Reports p50/p99 of both and how many of the 50 rows the first pass returned differ from the exact
ones (must be 0). One BLAS and one OpenMP thread, as the LZG runs.

    .venv/bin/python bench/dense_bench.py [--sizes 10000,20000,100000] [--queries 200]

The last line printed is one JSON object with ``exact_p50_ms_<n>``, ``first_pass_p50_ms_<n>`` and
``rows_differing``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "libs"))

from novaberg_core.lexical import LexicalIndex
from services.lzg.cache import PairSnapshot
from services.lzg.recall import CANDIDATES_PER_SOURCE, TimeOrder, top_rows
from services.lzg.vector_index import EXACT_SCAN_ROWS, QuantizedRows


def pair_of(n: int, dimension: int, rng: np.random.Generator) -> PairSnapshot:
    """Unit vectors around ~n/250 topics (at least 40), like a person's memories."""
    topics = rng.standard_normal((max(40, n // 250), dimension)).astype(np.float32)
    vectors = topics[rng.integers(0, topics.shape[0], n)] + 0.7 * rng.standard_normal((n, dimension)).astype(
        np.float32
    )
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    codes = QuantizedRows(dimension)
    codes.add(vectors)
    ids = np.arange(1, n + 1, dtype=np.int64)
    return PairSnapshot(
        ids=ids, embeddings=vectors, times=np.zeros(n), questions=np.zeros(n, dtype=bool), order=TimeOrder.of(np.zeros(n)),
        lexical=LexicalIndex(), codes=codes,
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,20000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dimension", type=int, default=384)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    result: dict[str, float | int] = {}
    differing = 0
    print(
        f"dense source, top {CANDIDATES_PER_SOURCE} of 90 % eligible rows; exact path up to {EXACT_SCAN_ROWS} rows"
    )
    print(f"{'nodes':>8}{'exact p50':>12}{'p99':>8}{'first pass p50':>16}{'p99':>8}{'rows differing':>16}")
    for n in (int(s) for s in args.sizes.split(",")):
        snapshot = pair_of(n, args.dimension, rng)
        eligible = rng.random(n) < 0.9
        exact_ms: list[float] = []
        first_ms: list[float] = []
        wrong = 0
        for i in range(args.queries):
            query = snapshot.embeddings[rng.integers(0, n)] + 0.5 * rng.standard_normal(
                args.dimension
            ).astype(np.float32)
            query /= np.linalg.norm(query)
            runs = [("exact", exact_ms), ("first", first_ms)]
            found: dict[str, np.ndarray] = {}
            for name, times in runs if i % 2 else runs[::-1]:
                start = time.perf_counter()
                if name == "exact":
                    found[name] = top_rows(snapshot.cosines(query), eligible, CANDIDATES_PER_SOURCE)
                else:
                    found[name] = snapshot.nearest(query, eligible, CANDIDATES_PER_SOURCE)
                times.append((time.perf_counter() - start) * 1000)
            wrong += len(set(found["exact"].tolist()) ^ set(found["first"].tolist())) // 2
        differing += wrong
        print(
            f"{n:>8}{float(np.percentile(exact_ms, 50)):>12.2f}{float(np.percentile(exact_ms, 99)):>8.2f}"
            f"{float(np.percentile(first_ms, 50)):>16.2f}{float(np.percentile(first_ms, 99)):>8.2f}{wrong:>16}"
        )
        result[f"exact_p50_ms_{n}"] = round(float(np.percentile(exact_ms, 50)), 3)
        result[f"first_pass_p50_ms_{n}"] = round(float(np.percentile(first_ms, 50)), 3)
    result["rows_differing"] = differing
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
