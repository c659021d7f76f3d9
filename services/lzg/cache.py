"""In-process cache of each pair's immutable node data: ids, embeddings, turn times, terms (SPEC §5.3, §5.8, §11).

Promotion compares a new vector with *every* node of the pair, and the spreading read searches
anchors among them; exact cosine in SQL costs 18–110 ms for a pair of 20,000 nodes, numpy over an
in-memory matrix ~1 ms (notes/measured-here.md). Only what never changes after a node's
promotion is cached — id, embedding, the turn's time, the terms of its text (the lexical index
of SPEC §11, :class:`novaberg_core.lexical.LexicalIndex`) and whether it asks a question, with the
order of the turns in time derived from them — so the cache can never serve a stale weight,
activity, theme, entity or timeline; those are always read fresh from PostgreSQL.

Validity across replicas: decay never deletes a node (SPEC §5.7) and a pair's ids grow in commit
order (its writes are serialised by a transaction-scoped advisory lock, and the id is drawn inside
that transaction). So "every node of the pair with an id above the highest one held" is exactly
what another replica may have added; each use asks for it — one index descent when nothing is new.
A re-embed rewrites vectors, which needs a restart anyway (model guard).

Deletions: a person's erasure or forget deletes nodes, a correction rewrites a vector
(services/lzg/rights.py). Those move the pair's *generation* (migration 010), which the watermark
read returns in the same statement (``store.rights.new_nodes``); a generation other than the one
held drops the pair's arrays and reads them afresh. The read stays one statement.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from novaberg_core.embedding import searched_text
from novaberg_core.fusion import is_question
from novaberg_core.lexical import LexicalIndex, QueryTerms, tokenize
from services.lzg.recall import TimeOrder, top_rows
from services.lzg.store.rights import new_nodes
from services.lzg.vector_index import EXACT_SCAN_ROWS, PREFILTER, QuantizedRows

__all__ = ["PairCache", "PairSnapshot"]

Pair = tuple[str, str]


@dataclass(frozen=True)
class PairSnapshot:
    """The first ``len(ids)`` nodes of a pair as the cache held them at one moment (views, read-only)."""

    ids: npt.NDArray[np.int64]
    """Node ids, ascending."""
    embeddings: npt.NDArray[np.float32]
    """(n, dimension), one L2-normalised row per node (zero row when a node has no vector)."""
    times: npt.NDArray[np.float64]
    """The turn's time of each node (``kzg_erstellt_am``, unix seconds), in row order."""
    questions: npt.NDArray[np.bool_]
    """Whether each node's text asks a question (``novaberg_core.fusion.is_question``), in row order."""
    order: TimeOrder
    """The rows in the order their turns were made (kept by the cache until new nodes arrive)."""
    lexical: LexicalIndex
    """The terms of every node's ``"{sprecher}: {inhalt}"``; rows beyond ``len(self)`` are not this view's."""
    codes: QuantizedRows
    """The embeddings as 8-bit codes (``services/lzg/vector_index.py``); rows beyond ``len(self)`` are not this view's."""

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def lexical_scores(
        self, text: str, language: str
    ) -> tuple[QueryTerms, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """The query's terms (idf over these nodes), BM25 and lexical strength of every node in row order."""
        query = self.lexical.query_terms(tokenize(text, language), len(self))
        bm25, strength = self.lexical.scores(query, len(self))
        return query, bm25, strength

    def cosines(self, vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        """Cosine of ``vector`` (norm 1) to every node, in row order."""
        if len(self) == 0:
            return np.zeros(0, dtype=np.float64)
        return (self.embeddings @ vector.astype(np.float32, copy=False)).astype(np.float64)

    def cosines_at(self, vector: npt.NDArray[np.float32], rows: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Exact cosine of ``vector`` (norm 1) to the given rows."""
        picked = self.embeddings[np.asarray(rows, dtype=np.int64)]
        return (picked @ vector.astype(np.float32, copy=False)).astype(np.float64)

    def nearest(
        self, vector: npt.NDArray[np.float32], eligible: npt.NDArray[np.bool_], limit: int
    ) -> npt.NDArray[np.int64]:
        """The ``limit`` eligible rows of highest exact cosine, best first, ties to the lower row (SPEC §11 dense).

        A pair beyond ``EXACT_SCAN_ROWS`` nodes is scanned as 8-bit codes first and the exact
        cosine ranks the ``PREFILTER × limit`` rows found (``services/lzg/vector_index.py``).
        """
        if len(self) <= EXACT_SCAN_ROWS:
            return top_rows(self.cosines(vector), eligible, limit)
        return self.nearest_among(vector, self.codes.best_rows(vector, eligible, PREFILTER * limit), limit)

    def nearest_among(
        self, vector: npt.NDArray[np.float32], rows: npt.NDArray[np.int64], limit: int
    ) -> npt.NDArray[np.int64]:
        """The ``limit`` of ``rows`` (ascending) of highest exact cosine, best first, ties to the lower row."""
        return rows[top_rows(self.cosines_at(vector, rows), np.ones(rows.size, dtype=bool), limit)]

    def row_of(self, node_ids: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Row numbers of node ids known to the snapshot."""
        return np.searchsorted(self.ids, np.asarray(node_ids, dtype=np.int64)).astype(np.int64)


class _Entry:
    """The growing arrays of one pair; appended under ``lock``, read through snapshots."""

    def __init__(self, dimension: int) -> None:
        self.lock = asyncio.Lock()
        self.reset(dimension)
        self.generation: int | None = None
        """The generation of the pair's node set the arrays were read at (None: not known yet)."""

    def reset(self, dimension: int) -> None:
        """Forget every row (new arrays: earlier snapshots keep viewing the old ones)."""
        self.n: int = 0
        self.ids: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.embeddings: npt.NDArray[np.float32] = np.zeros((0, dimension), dtype=np.float32)
        self.times: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        self.questions: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self.order = TimeOrder.of(self.times)
        self.lexical = LexicalIndex()
        self.codes = QuantizedRows(dimension)

    @property
    def nbytes(self) -> int:
        return int(
            self.embeddings.nbytes
            + self.ids.nbytes
            + self.times.nbytes
            + self.questions.nbytes
            + self.order.by_time.nbytes
            + self.order.place.nbytes
            + self.lexical.nbytes
            + self.codes.nbytes
        )

    def append(self, rows: list[Any], dimension: int) -> None:
        need = self.n + len(rows)
        if need > self.ids.shape[0]:
            capacity = max(need, 2 * self.ids.shape[0], 64)
            ids = np.zeros(capacity, dtype=np.int64)
            embeddings = np.zeros((capacity, dimension), dtype=np.float32)
            times = np.zeros(capacity, dtype=np.float64)
            questions = np.zeros(capacity, dtype=bool)
            ids[: self.n] = self.ids[: self.n]
            embeddings[: self.n] = self.embeddings[: self.n]
            times[: self.n] = self.times[: self.n]
            questions[: self.n] = self.questions[: self.n]
            # Earlier snapshots keep viewing the old arrays, which are never written again.
            self.ids, self.embeddings, self.times, self.questions = ids, embeddings, times, questions
        for offset, row in enumerate(rows):
            index = self.n + offset
            self.ids[index] = row["id"]
            vector = row["embedding"]
            if vector is not None:
                self.embeddings[index] = vector.to_numpy()
            self.times[index] = row["zeit"]
            self.questions[index] = is_question(row["inhalt"])
            self.lexical.append(
                tokenize(searched_text(row["sprecher"], row["inhalt"], row["antwort_auf"]), row["sprache"])
            )
        self.codes.add(self.embeddings[self.n : need])
        self.n = need

    def snapshot(self) -> PairSnapshot:
        n = self.n
        if self.order.by_time.size != n:  # sorted once per arrival of new nodes, not per read
            self.order = TimeOrder.of(self.times[:n])
        return PairSnapshot(
            ids=self.ids[:n],
            embeddings=self.embeddings[:n],
            times=self.times[:n],
            questions=self.questions[:n],
            order=self.order,
            lexical=self.lexical,
            codes=self.codes,
        )


class PairCache:
    """Per-pair node matrices, least recently used pairs evicted beyond ``max_bytes``."""

    def __init__(self, dimension: int, max_bytes: int = 1 << 30) -> None:
        self.dimension = dimension
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Pair, _Entry] = OrderedDict()

    async def snapshot(self, conn: Any, user_id: str, character_id: str) -> PairSnapshot:
        """The pair's nodes as visible to ``conn`` now (reads only what is newer than the cache)."""
        pair = (user_id, character_id)
        entry = self._entries.get(pair)
        if entry is None:
            entry = self._entries[pair] = _Entry(self.dimension)
        self._entries.move_to_end(pair)
        async with entry.lock:
            watermark = int(entry.ids[entry.n - 1]) if entry.n else 0
            rows = await new_nodes(conn, user_id, character_id, watermark)
            generation = _generation(rows)
            if generation != entry.generation and entry.n and entry.generation is not None:
                # Nodes were deleted or re-embedded meanwhile (services/lzg/rights.py): start afresh.
                entry.reset(self.dimension)
                rows = await new_nodes(conn, user_id, character_id, 0)
                generation = _generation(rows)
            entry.generation = generation
            rows = [row for row in rows if row["id"] is not None]
            if rows:
                entry.append(rows, self.dimension)
            snapshot = entry.snapshot()
        self._evict(keep=pair)
        return snapshot

    def forget(self, user_id: str, character_id: str) -> None:
        """Drop a pair (after a change the cache cannot see, e.g. in tests)."""
        self._entries.pop((user_id, character_id), None)

    def _evict(self, keep: Pair) -> None:
        total = sum(entry.nbytes for entry in self._entries.values())
        while total > self.max_bytes and len(self._entries) > 1:
            pair, entry = next(iter(self._entries.items()))
            if pair == keep:
                break
            del self._entries[pair]
            total -= entry.nbytes


def _generation(rows: list[Any]) -> int | None:
    """The generation column of the watermark read (None for a query without it)."""
    if rows and "generation" in rows[0].keys():
        return int(rows[0]["generation"])
    return None
