"""Hybrid anchors and recall candidates of the long-term memory (SPEC §11) — pure.

Each source ranks the pair's memories its own way; a candidate must pass its source's gate;
the gated lists are fused by reciprocal rank (``novaberg_core.fusion``). The seeds' spreading read
(SPEC §5.8 steps 2–5) then starts from the top fused anchors, and the recall list adds what the
read reached (associations) and what was said right around the best memories (context: the
turns before and after, the contiguity of episodic memory).

Sources and gates:

- ``dense``: cosine to the (gravitation-shifted) query, gated by the model's ``anchor`` threshold;
- ``lexical``: BM25 of the question's terms (``novaberg_core.lexical``), gated by the lexical
  strength ``novaberg_core.fusion.LEXICAL_GATE`` (share of the question's idf mass a memory matches);
- ``entity``: memories carrying an entity the question names (registry ids), by cosine;
- ``timeline``: memories whose timeline ref or turn time lies within the SPEC §5.4 tolerance of a
  date the question names, nearest first;
- ``antwort``: the turn right after a question that the dense or lexical search found among its
  first ``ANTWORT_SEEDS`` (the question matches the words of the question asked; the turn that
  answers it often does not: "What did you research?" — "Adoption agencies.");
- ``antwort``, ``kontext`` and ``assoziation`` only join the recall list, never the anchors.

Both gates are calibrated so that no off-topic or anaphoric probe of ``bench/embedding_quality.py``
gets an anchor or a recall item (the seeds' rule behind the anchor threshold); see
docs/decisions.md for the measurement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from novaberg_core.fusion import interleave  # re-exported for the LZG's modules

__all__ = [
    "ANTWORT_SEEDS",
    "CANDIDATES_PER_SOURCE",
    "KONTEXT_FENSTER_S",
    "KONTEXT_SEEDS",
    "TimeOrder",
    "answer_rows",
    "context_rows",
    "interleave",
    "top_rows",
]

CANDIDATES_PER_SOURCE = 50
"""How many memories each source ranks."""
KONTEXT_FENSTER_S = 30 * 60.0
"""A context memory was made at most this long before or after the memory it accompanies."""
KONTEXT_SEEDS = 5
"""The best fused memories whose neighbours in time join the recall list."""
ANTWORT_SEEDS = 10
"""How deep into the dense and the lexical list a question is looked for whose answer joins the recall list."""

Rows = npt.NDArray[np.int64]


def top_rows(scores: npt.NDArray[np.float64], eligible: npt.NDArray[np.bool_], limit: int) -> Rows:
    """Rows of the ``limit`` best eligible scores, best first; ties to the lower row (older node)."""
    rows = np.flatnonzero(eligible)
    if rows.size == 0 or limit <= 0:
        return np.zeros(0, dtype=np.int64)
    if rows.size > limit:
        # The limit best, then a stable sort of those alone.
        keep = np.argpartition(-scores[rows], limit - 1)[:limit]
        rows = np.sort(rows[keep])
    return rows[np.argsort(-scores[rows], kind="stable")].astype(np.int64)


@dataclass(frozen=True)
class TimeOrder:
    """A pair's memories in the order they were made: what the context and the answers walk along."""

    times: npt.NDArray[np.float64]
    """The turn's time of each row (unix seconds)."""
    by_time: Rows
    """Row numbers, earliest first (ties in row order)."""
    place: Rows
    """Each row's index in ``by_time``."""

    @classmethod
    def of(cls, times: npt.NDArray[np.float64]) -> TimeOrder:
        by_time = np.argsort(times, kind="stable").astype(np.int64)
        place = np.empty_like(by_time)
        place[by_time] = np.arange(by_time.size)
        return cls(times, by_time, place)


def context_rows(
    order: TimeOrder,
    seeds: Sequence[int],
    visible: npt.NDArray[np.bool_],
    window_s: float = KONTEXT_FENSTER_S,
    steps: tuple[int, ...] = (-1, 1),
) -> list[int]:
    """For each seed row, the visible rows made last before it and first after it within ``window_s``.

    Order: seed by seed, the earlier neighbour first; each row once, seeds themselves left out.
    ``steps=(1,)`` asks for the row after each seed alone.
    """
    times, by_time = order.times, order.by_time
    taken = set(seeds)
    found: list[int] = []
    for seed in seeds:
        at = int(order.place[seed])
        for step in steps:
            index = at + step
            while 0 <= index < by_time.size:
                row = int(by_time[index])
                if abs(times[row] - times[seed]) > window_s:
                    break
                if visible[row] and row not in taken:
                    taken.add(row)
                    found.append(row)
                    break
                index += step
    return found


def answer_rows(
    order: TimeOrder,
    questions: npt.NDArray[np.bool_],
    found: Sequence[int],
    visible: npt.NDArray[np.bool_],
    window_s: float = KONTEXT_FENSTER_S,
) -> list[int]:
    """The row made next after each question among ``found`` (best first), within ``window_s``: its answer.

    An answer found by a source itself stays in this list too (two sources found it); a question
    answered by another found question is not (it is no seed's answer, ``context_rows``).
    """
    asked = [row for row in found if questions[row]]
    return context_rows(order, asked, visible, window_s, steps=(1,))
