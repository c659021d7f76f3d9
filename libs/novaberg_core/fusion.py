"""Reciprocal-rank fusion of the recall sources, shared by the LZG's anchors and the pipeline's recall list (SPEC §11).

Each source ranks memories its own way (dense cosine, lexical BM25, entities and dates a question
names, the answers to the questions found, the context of the best memories, the associations of the
spreading read); fusion adds
``weight / (RRF_K + rank)`` over the lists a memory appears in. One definition for both layers,
so a memory ranks the same whichever service fuses. ``memory_prior`` then weighs the pipeline's final
recall list only (applied inside the LZG's candidate cut as well it lowered R@10: docs/decisions.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Generic, TypeVar

__all__ = [
    "INFORMATIVE_WORDS",
    "LEXICAL_GATE",
    "QUESTION_PRIOR",
    "RECALL_DEPTH",
    "RRF_K",
    "SOURCES",
    "SOURCE_WEIGHTS",
    "Fused",
    "fuse",
    "interleave",
    "is_question",
    "memory_prior",
]

K = TypeVar("K", bound=Hashable)

RRF_K = 10
"""The rank offset: 1 / (RRF_K + rank). Measured on the LoCoMo dev split with dense and BM25 lists over
the same turns: R@10 63.7 with 10, 59.1 with the customary 60 (a pair holds hundreds to thousands of
memories, not millions of documents, so the first ranks must count more)."""
SOURCES = ("dense", "lexical", "entity", "timeline", "antwort", "kontext", "assoziation")
SOURCE_WEIGHTS: Mapping[str, float] = {
    "dense": 1.0,
    "lexical": 1.0,
    "entity": 1.0,
    "timeline": 1.0,
    "antwort": 0.5,
    "kontext": 0.5,
    "assoziation": 0.5,
}
"""Weight of each source; the answer to a question found, the context of a memory and the associations
support, they do not lead."""
RECALL_DEPTH = 25
"""How many memories of each layer the recall list is fused from, whatever ``recall_k`` asks: the first
ten of a list are the same whether 10 or 25 are asked (SPEC §11). LoCoMo dev R@10 66.7 with depth 50,
66.0 and 65.9 with 25 (bench/locomo_bench.py); a replay of 200 dev questions on one day gave a dossier
p50 of 28.5 ms at depth 25 and 34.0 ms at 50 (docs/decisions.md)."""
LEXICAL_GATE = 0.5
"""Least lexical strength (share of the question's idf mass a memory matches, ``novaberg_core.lexical``)
a candidate found by lexical search alone needs (SPEC §11: off-topic questions get nothing)."""
QUESTION_PRIOR = 0.75
"""Factor on the fused score of a memory that ends in a question ("What inspired it?")."""
INFORMATIVE_WORDS = 20
"""Words from which a memory counts as fully informative; a shorter one ("Wow, that's awesome!") is
weighed by the square root of its share of them.

Both priors weigh what a memory can hold, not whom it matches: among the 50 memories the dossier listed
per LoCoMo dev question, 0.42 % of those ending in "?" were evidence against 2.7 % of the others, and
statements under 10 words 0.1–0.7 % against 2.6–5 % from 20 words on. Every category's R@10 rose with
them, adversarial included (docs/decisions.md, "What a memory can hold")."""

_WORD = re.compile(r"\w+")


@dataclass
class Fused(Generic[K]):
    """One memory after fusion: its score and the sources (with 1-based rank) that found it."""

    key: K
    score: float
    sources: dict[str, int] = field(default_factory=dict)


def interleave(*ranked: Sequence[K]) -> list[K]:
    """The lists' first items, then their second items, …; each item once, where it first stands (two
    rankings without a common scale made one)."""
    merged: dict[K, None] = {}
    for rank in range(max((len(r) for r in ranked), default=0)):
        for items in ranked:
            if rank < len(items):
                merged.setdefault(items[rank], None)
    return list(merged)


def fuse(
    lists: Mapping[str, Sequence[K]], weights: Mapping[str, float] = SOURCE_WEIGHTS, k: int = RRF_K
) -> list[Fused[K]]:
    """Σ weight / (k + rank) over the lists a key appears in; best first, ties in order of first appearance."""
    fused: dict[K, Fused[K]] = {}
    for source, keys in lists.items():
        weight = weights.get(source, 1.0)
        for rank, key in enumerate(dict.fromkeys(keys), start=1):
            item = fused.get(key)
            if item is None:
                item = fused[key] = Fused(key, 0.0)
            item.score += weight / (k + rank)
            item.sources[source] = rank
    return sorted(fused.values(), key=lambda item: -item.score)


def is_question(text: str) -> bool:
    """Whether a memory asks rather than tells: its text ends in "?"."""
    return text.rstrip().endswith("?")


@lru_cache(maxsize=4096)  # a pair's memories come back question after question
def memory_prior(text: str) -> float:
    """The fused score's factor for a memory of this text (``QUESTION_PRIOR``, ``INFORMATIVE_WORDS``)."""
    question = QUESTION_PRIOR if is_question(text) else 1.0
    words = len(_WORD.findall(text))
    return question * math.sqrt(min(1.0, words / INFORMATIVE_WORDS))
