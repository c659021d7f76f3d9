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
- ``kontext`` and ``assoziation`` only join the recall list, never the anchors.

Both gates are calibrated so that no off-topic or anaphoric probe of ``bench/embedding_quality.py``
gets an anchor or a recall item (the seeds' rule behind the anchor threshold); see
docs/decisions.md for the measurement.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["CANDIDATES_PER_SOURCE", "KONTEXT_FENSTER_S", "KONTEXT_SEEDS", "context_rows", "top_rows"]

CANDIDATES_PER_SOURCE = 50
"""How many memories each source ranks."""
KONTEXT_FENSTER_S = 30 * 60.0
"""A context memory was made at most this long before or after the memory it accompanies."""
KONTEXT_SEEDS = 5
"""The best fused memories whose neighbours in time join the recall list."""

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


def context_rows(
    times: npt.NDArray[np.float64],
    seeds: Sequence[int],
    visible: npt.NDArray[np.bool_],
    window_s: float = KONTEXT_FENSTER_S,
) -> list[int]:
    """For each seed row, the visible rows made last before it and first after it within ``window_s``.

    Order: seed by seed, the earlier neighbour first; each row once, seeds themselves left out.
    """
    if not seeds or times.size == 0:
        return []
    order = np.argsort(times, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    taken = set(seeds)
    found: list[int] = []
    for seed in seeds:
        at = int(position[seed])
        for step in (-1, 1):
            index = at + step
            while 0 <= index < order.size:
                row = int(order[index])
                if abs(times[row] - times[seed]) > window_s:
                    break
                if visible[row] and row not in taken:
                    taken.add(row)
                    found.append(row)
                    break
                index += step
    return found
