"""The hybrid read of the long-term memory (SPEC §5.8 with §11): candidates, anchors, recall list.

:func:`rank_candidates` ranks the pair's memories by every source of :mod:`services.lzg.recall`
(in memory: cosine and BM25 over the cached pair; in PostgreSQL: the entities and dates a
question names, :class:`NamedLookups` run beside the read's transaction), fuses them and reads
the best ones as of the read's time — their anchors start the seeds' spreading read.
:func:`recall_list` then fuses again with the context around the best memories and the
associations the read reached. Reads only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache

import numpy as np
import numpy.typing as npt

from novaberg_core.fusion import LEXICAL_GATE, Fused, fuse
from novaberg_core.lexical import QueryTerms
from services.lzg.cache import PairSnapshot
from services.lzg.layers import Praezision, timeline_window
from services.lzg.recall import (
    ANTWORT_SEEDS,
    CANDIDATES_PER_SOURCE,
    KONTEXT_SEEDS,
    answer_rows,
    context_rows,
    interleave,
    top_rows,
)
from services.lzg.spreading import ANKER_ANZAHL, NodeDetails, PfadSchritt, PoolItem
from services.lzg.store.reader import PairReader
from services.lzg.weights import LZG_KNOTEN_DECAY_RATE, LZG_KNOTEN_MIN_GEWICHT

__all__ = [
    "PARALLEL_ROWS",
    "Candidates",
    "NamedLookups",
    "RecallCandidate",
    "RecallQuery",
    "rank_candidates",
    "recall_list",
]


PARALLEL_ROWS = 32_768
"""From this many nodes on, a read's BM25 runs on a second thread while the dense first pass runs (both
release the GIL); below it the hand-over costs more than it saves (100,000 / 50,000 / 30,000 / 10,000
nodes, one after the other then side by side: 14.7 → 9.3, 7.4 → 4.6, 4.2 → 3.0, 1.9 → 2.1 ms; ad hoc)."""


@cache
def _second_thread() -> ThreadPoolExecutor:
    """One worker thread, made on first use; it waits on a queue (no spinning) between reads."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="lzg-bm25")


def _first_pass(
    snapshot: PairSnapshot, query: RecallQuery, visible: npt.NDArray[np.bool_]
) -> tuple[tuple[QueryTerms, npt.NDArray[np.float64], npt.NDArray[np.float64]], npt.NDArray[np.int64] | None]:
    """The BM25 of every node and, for a large pair, the first dense pass over the visible rows at the
    same time, BM25 on the second thread. The event loop waits for both without yielding, as it waits
    for either alone: nothing appends to the pair's cache meanwhile, so both threads only read it."""
    if len(snapshot) < PARALLEL_ROWS:
        return snapshot.lexical_scores(query.lexical_text, query.sprache), None
    lexical = _second_thread().submit(snapshot.lexical_scores, query.lexical_text, query.sprache)
    dense_rows = snapshot.nearest(query.vector, visible, CANDIDATES_PER_SOURCE)
    return lexical.result(), dense_rows


@dataclass(frozen=True)
class RecallQuery:
    """What a hybrid read searches with (SPEC §11)."""

    vector: npt.NDArray[np.float32]
    """The (gravitation-shifted) query vector, norm 1."""
    as_of: datetime
    lexical_text: str = ""
    sprache: str = ""
    entity_ids: tuple[int, ...] = ()
    zeitfenster: tuple[tuple[datetime, Praezision], ...] = ()
    recall_k: int = 0


@dataclass(frozen=True)
class RecallCandidate:
    """A long-term memory of the recall list with the signals that found it."""

    knoten_id: int
    details: NodeDetails
    cosine: float
    lexical_score: float
    lexical_strength: float
    quellen: tuple[str, ...]
    score: float
    schale: int = 0
    pfad: tuple[PfadSchritt, ...] = ()


@dataclass
class Candidates:
    """The ranked sources of one read, the memories read as of its time, its anchors."""

    snapshot: PairSnapshot
    query_terms: QueryTerms
    vector: npt.NDArray[np.float32]
    """The query vector; cosines are computed exactly for the rows asked (``PairSnapshot.cosines_at``)."""
    bm25: npt.NDArray[np.float64]
    strength: npt.NDArray[np.float64]
    eligible: npt.NDArray[np.bool_]
    """The rows the sources ranked: made by the read's time (and, ranked again, awake then)."""
    lists: dict[str, list[int]]
    """source → node ids, best first."""
    admitted: set[int]
    """Node ids that passed the gate of at least one source: the anchors' candidates."""
    details: dict[int, NodeDetails] = field(default_factory=dict)
    anchors: list[PoolItem] = field(default_factory=list)
    fused: list[Fused[int]] = field(default_factory=list)
    """Every source's candidates fused, gated or not (the recall list's order)."""
    gated: list[int] = field(default_factory=list)
    """The best admitted candidates in fused order, a few in reserve: the anchors are the first memories among them."""
    listed: list[int] = field(default_factory=list)
    """The best ``recall_k`` fused candidates and a few in reserve, read for the recall list."""

    @property
    def on_topic(self) -> bool:
        """Whether any candidate passed its gate: the question is about something the pair remembers."""
        return bool(self.admitted)

    @property
    def wanted(self) -> list[int]:
        """The ids the read needs as memories: anchors' and recall list's candidates and the context."""
        return list(dict.fromkeys(self.gated + self.listed + self.lists["kontext"]))

    def settle(self, read: Mapping[int, NodeDetails]) -> None:
        """Keep the wanted ids found in ``read`` (the memories as of the read's time); choose the anchors."""
        self.details = {key: read[key] for key in self.wanted if key in read}
        anchors = [key for key in self.gated if key in self.details][:ANKER_ANZAHL]
        self.anchors = [PoolItem(key, 0, self.details[key]) for key in anchors]

    def short_of_memories(self, recall_k: int) -> bool:
        """Whether candidates that are no memories at the read's time cost it an anchor (fewer than
        ``ANKER_ANZAHL`` among ``gated``) or a recall item (fewer than ``recall_k`` among ``listed``)."""
        if len(self.anchors) < ANKER_ANZAHL and any(key not in self.details for key in self.gated):
            return True
        found = sum(key in self.details for key in self.listed)
        return found < recall_k and found < len(self.listed)

    def signals(self, node_id: int) -> tuple[float, float, float]:
        """(cosine, BM25, lexical strength) of a node of the snapshot; zeros for a node it lacks."""
        row = int(np.searchsorted(self.snapshot.ids, node_id))
        if row < len(self.snapshot) and int(self.snapshot.ids[row]) == node_id:
            cosine = float(self.snapshot.cosines_at(self.vector, [row])[0])
            return cosine, float(self.bm25[row]), float(self.strength[row])
        return 0.0, 0.0, 0.0


@dataclass(frozen=True)
class NamedLookups:
    """The memories carrying an entity, or dated near a date, that a question names: looked up in
    PostgreSQL on their own pool connections while the read's transaction opens and the cached
    sources rank. Ids only, from whatever view those connections see: the read keeps those of its
    snapshot and reads their details in its own view, so a node made or erased meanwhile is no
    memory of the read (the same rule as for the cached sources)."""

    entity: asyncio.Task[list[int]] | None
    timeline: asyncio.Task[list[int]] | None

    @classmethod
    def start(cls, pool_reader: PairReader, query: RecallQuery) -> NamedLookups:
        """The lookups the question needs, started; :meth:`cancel` when the read ends."""
        entity = None
        if query.entity_ids:
            entity = asyncio.ensure_future(pool_reader.entity_candidates(query.entity_ids))
        timeline = None
        if query.zeitfenster:
            firsts, lasts = zip(*(timeline_window(z, p) for z, p in query.zeitfenster), strict=True)
            timeline = asyncio.ensure_future(
                pool_reader.timeline_candidates(firsts, lasts, CANDIDATES_PER_SOURCE)
            )
        return cls(entity, timeline)

    def cancel(self) -> None:
        """Stop what still runs (a read that failed before it needed them); their outcome is dropped
        (the read's own error is the one raised)."""
        for task in (self.entity, self.timeline):
            if task is None:
                continue
            if not task.done():
                task.cancel()
            elif not task.cancelled():
                task.exception()


def _rows_in_view(
    snapshot: PairSnapshot, node_ids: Sequence[int], eligible: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """The rows of ``node_ids`` that the read's snapshot holds and that it may rank, in the given order."""
    rows = snapshot.row_of(node_ids) if node_ids else np.zeros(0, dtype=np.int64)
    held = [r for r, i in zip(rows, node_ids, strict=True) if r < len(snapshot) and int(snapshot.ids[r]) == i]
    return np.array([r for r in held if eligible[r]], dtype=np.int64)


def _rows_to_ids(snapshot: PairSnapshot, rows: npt.NDArray[np.int64] | Sequence[int]) -> list[int]:
    return [int(snapshot.ids[row]) for row in rows]


async def rank_candidates(
    reader: PairReader, snapshot: PairSnapshot, query: RecallQuery, anchor_gate: float, named: NamedLookups
) -> Candidates:
    """Every source ranked, gates applied, fused, the best read as of ``query.as_of`` in ``reader``'s
    view; anchors chosen. ``named`` are the question's entity and date lookups, already running.

    SPEC §5.8 step 1 searches the anchors among the pair's *active* memories; the cache holds every
    node and cannot know which sleep at ``as_of`` (inactive, or their weight then under the minimum).
    Reading the best tells: when sleeping nodes took places the read needed
    (:meth:`Candidates.short_of_memories`), they are left out, everything ranks again, and the wanted
    ones are read together with the next best of the cached sources, twice as deep each round. A
    read that meets no sleeping node in its way asks once.
    """
    visible = snapshot.times <= query.as_of.timestamp()
    scores, dense_rows = _first_pass(snapshot, query, visible)
    asleep = np.zeros(len(snapshot), dtype=bool)
    read: dict[int, NodeDetails] = {}
    depth = 0
    while True:
        eligible = visible & ~asleep
        candidates = await _ranked(snapshot, query, anchor_gate, named, scores, eligible, dense_rows)
        dense_rows = None  # a later round leaves out the memories found asleep: its own dense pass
        ahead = _ranked_ahead(snapshot, query.vector, scores[1], eligible, depth) if depth else []
        unread = [key for key in dict.fromkeys(candidates.wanted + ahead) if key not in read]
        read.update(await reader.details(unread, query.as_of, LZG_KNOTEN_DECAY_RATE, LZG_KNOTEN_MIN_GEWICHT))
        asleep[snapshot.row_of([key for key in unread if key not in read])] = True
        candidates.settle(read)
        if not candidates.short_of_memories(query.recall_k):
            return candidates
        depth = 2 * (depth or CANDIDATES_PER_SOURCE)


def _ranked_ahead(
    snapshot: PairSnapshot,
    vector: npt.NDArray[np.float32],
    bm25: npt.NDArray[np.float64],
    eligible: npt.NDArray[np.bool_],
    depth: int,
) -> list[int]:
    """The ``depth`` best eligible nodes by cosine and by BM25: read ahead by a read short of memories."""
    dense = snapshot.nearest(vector, eligible, depth)
    lexical = top_rows(bm25, eligible & (bm25 > 0.0), depth)
    return _rows_to_ids(snapshot, interleave(dense.tolist(), lexical.tolist()))


async def _ranked(
    snapshot: PairSnapshot,
    query: RecallQuery,
    anchor_gate: float,
    named: NamedLookups,
    scores: tuple[QueryTerms, npt.NDArray[np.float64], npt.NDArray[np.float64]],
    eligible: npt.NDArray[np.bool_],
    dense_rows: npt.NDArray[np.int64] | None = None,
) -> Candidates:
    """Every source ranked over the ``eligible`` rows, gates applied, fused; the ids to read chosen.
    ``dense_rows``: the dense pass over exactly these rows when :func:`_first_pass` made it."""
    query_terms, bm25, strength = scores
    if dense_rows is None:
        dense_rows = snapshot.nearest(query.vector, eligible, CANDIDATES_PER_SOURCE)
    lexical_rows = top_rows(bm25, eligible & (bm25 > 0.0), CANDIDATES_PER_SOURCE)
    lists: dict[str, list[int]] = {
        "dense": _rows_to_ids(snapshot, dense_rows),
        "lexical": _rows_to_ids(snapshot, lexical_rows),
    }
    searched = np.unique(np.concatenate([dense_rows, lexical_rows]))
    passed = (snapshot.cosines_at(query.vector, searched) >= anchor_gate) | (
        strength[searched] >= LEXICAL_GATE
    )
    admitted: set[int] = set(_rows_to_ids(snapshot, searched[passed]))
    if named.entity is not None:
        rows = np.unique(_rows_in_view(snapshot, await named.entity, eligible))
        lists["entity"] = _rows_to_ids(
            snapshot, snapshot.nearest_among(query.vector, rows, CANDIDATES_PER_SOURCE)
        )
        admitted |= set(lists["entity"])
    if named.timeline is not None:  # nearest to the named date first, as looked up
        lists["timeline"] = _rows_to_ids(snapshot, _rows_in_view(snapshot, await named.timeline, eligible))
        admitted |= set(lists["timeline"])
    candidates = Candidates(snapshot, query_terms, query.vector, bm25, strength, eligible, lists, admitted)
    candidates.fused = fuse(lists) if admitted else []
    # The anchors are ranked by the sources that found them; the answers below rank the recall list only.
    candidates.gated = [item.key for item in candidates.fused if item.key in admitted][: 4 * ANKER_ANZAHL]
    if query.recall_k:
        found = interleave(dense_rows[:ANTWORT_SEEDS].tolist(), lexical_rows[:ANTWORT_SEEDS].tolist())
        answers = _rows_to_ids(snapshot, answer_rows(snapshot.order, snapshot.questions, found, eligible))
        lists["antwort"] = answers
        if answers and admitted:
            candidates.fused = fuse(lists)
    # The recall list's best recall_k, and a few in reserve for memories inactive at as_of.
    candidates.listed = (
        [item.key for item in candidates.fused[: query.recall_k + 4 * ANKER_ANZAHL]] if query.recall_k else []
    )
    seeds = [int(np.searchsorted(snapshot.ids, key)) for key in candidates.listed[:KONTEXT_SEEDS]]
    kontext = _rows_to_ids(snapshot, context_rows(snapshot.order, seeds, eligible)) if query.recall_k else []
    lists["kontext"] = kontext
    return candidates


def recall_list(candidates: Candidates, pool: Sequence[PoolItem], recall_k: int) -> list[RecallCandidate]:
    """The recall list: the sources, the context and the read's associations fused, best ``recall_k``.

    The gates decide whether a question gets memories at all (``Candidates.on_topic``, the seeds' rule
    behind the anchor threshold); the list of an on-topic question then ranks every candidate by
    fusion, a memory below the gates included (docs/decisions.md "The gates judge the question").
    """
    if recall_k <= 0 or not candidates.on_topic:
        return []
    associations = sorted(
        (p for p in pool if p.schale > 0), key=lambda p: (p.schale, -p.details.gewicht_decay)
    )
    reached: dict[int, PoolItem] = {}
    for reached_item in associations:
        reached.setdefault(reached_item.knoten_id, reached_item)
    details = dict(candidates.details)
    for node_id, pool_item in reached.items():
        details.setdefault(node_id, pool_item.details)
    lists = {source: [i for i in ids if i in details] for source, ids in candidates.lists.items()}
    lists["assoziation"] = list(reached)
    fused = [item for item in fuse(lists) if item.key in details]
    result = []
    for item in fused[:recall_k]:
        cosine, bm25, strength = candidates.signals(item.key)
        via = reached.get(item.key)
        result.append(
            RecallCandidate(
                knoten_id=item.key,
                details=details[item.key],
                cosine=cosine,
                lexical_score=bm25,
                lexical_strength=strength,
                quellen=tuple(item.sources),
                score=item.score,
                schale=via.schale if via is not None else 0,
                pfad=via.pfad if via is not None else (),
            )
        )
    return result
