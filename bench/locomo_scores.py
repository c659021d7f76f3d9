"""LoCoMo's retrieval scores as its authors compute them (fractional evidence recall@k, all@k), per
category, per conversation, and as the tables ``bench/locomo_bench.py`` prints — pure; with the records
they are computed from (a question, what its dossier returned)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

__all__ = [
    "CATEGORIES", "CURVE_K", "HEADLINE", "KS", "Asked", "DossierRanking", "Question", "Score", "all_at",
    "by_conversation", "conversation_table", "recall_at", "score", "scores_by_group", "table",
]  # fmt: skip

CATEGORIES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
HEADLINE = (1, 2, 3, 4)
"""The categories of the headline numbers (adversarial questions have no right answer to find)."""
KS = (5, 10, 25)
CURVE_K = 25
"""The longest list scored, and the recall_k asked of BuildDossier by default: the largest k of ``KS``
(the dossier's candidate depth, ``novaberg_core.fusion.RECALL_DEPTH``)."""


@dataclass(frozen=True)
class Question:
    sample_id: str
    number: int
    """Position in the sample's ``qa`` list."""
    text: str
    category: int
    evidence: frozenset[str]
    """Turn ids ``{sample_id}:{dia_id}``."""


@dataclass(frozen=True)
class DossierRanking:
    """What a dossier returned, as a ranked list of distinct turn ids."""

    turn_ids: tuple[str, ...]
    source: str
    """``recall`` (the SPEC §11 list) or ``fallback`` (LZG memories by rank, then KZG hits by score)."""
    items: int
    """Memories in the response (recall items, or LZG memories + KZG hits)."""
    unmapped: int
    """Items that named no known turn."""


@dataclass
class Asked:
    """One dossier: the question's ranking and what the response held."""

    ranking: DossierRanking
    wall_ms: float
    anchors: int
    lzg_ids: list[int]
    kzg_turns: list[str]
    missing_parts: int = 0
    """Parts the dossier went without (``BuildDossierResponse.fehler``): a layer out or too late."""


def recall_at(ranked: Sequence[str], evidence: AbstractSet[str], k: int) -> float:
    """Fractional evidence recall@k: the share of the evidence turns among the top ``k``."""
    if not evidence:
        raise ValueError("a question without evidence has no recall")
    return len(evidence & set(ranked[:k])) / len(evidence)


def all_at(ranked: Sequence[str], evidence: AbstractSet[str], k: int) -> float:
    """1.0 when every evidence turn is among the top ``k``, else 0.0."""
    if not evidence:
        raise ValueError("a question without evidence has no recall")
    return 1.0 if evidence <= set(ranked[:k]) else 0.0


@dataclass(frozen=True)
class Score:
    n: int
    recall: dict[int, float]
    """k → mean fractional recall@k in percent."""
    all10: float
    """Mean all@10 in percent."""
    curve: list[float]
    """Mean recall@k for k = 1..CURVE_K, percent."""


def score(ranked: Sequence[Sequence[str]], questions: Sequence[Question], ks: Iterable[int] = KS) -> Score:
    """Mean recall@k (percent) over ``questions``, ``ranked[i]`` being question i's ranking."""
    if not questions:
        return Score(0, {k: float("nan") for k in ks}, float("nan"), [float("nan")] * CURVE_K)
    pairs = list(zip(ranked, questions, strict=True))
    return Score(
        n=len(pairs),
        recall={k: 100.0 * statistics.fmean(recall_at(r, q.evidence, k) for r, q in pairs) for k in ks},
        all10=100.0 * statistics.fmean(all_at(r, q.evidence, 10) for r, q in pairs),
        curve=[
            100.0 * statistics.fmean(recall_at(r, q.evidence, k) for r, q in pairs)
            for k in range(1, CURVE_K + 1)
        ],
    )


def scores_by_group(ranked: Sequence[Sequence[str]], questions: Sequence[Question]) -> dict[str, Score]:
    """The headline (categories 1-4) and each category by name."""
    groups: dict[str, list[int]] = {"1-4": [i for i, q in enumerate(questions) if q.category in HEADLINE]}
    for category, name in CATEGORIES.items():
        groups[name] = [i for i, q in enumerate(questions) if q.category == category]
    return {
        name: score([ranked[i] for i in indexes], [questions[i] for i in indexes])
        for name, indexes in groups.items()
    }


def by_conversation(
    rankings: Mapping[str, Sequence[Sequence[str]]], questions: Sequence[Question]
) -> dict[str, dict[str, dict[str, Score]]]:
    """:func:`scores_by_group` of every variant within each conversation: how far the headline
    moves from one conversation to the next (the project is also measured on conversations it
    does not ship)."""
    samples = list(dict.fromkeys(q.sample_id for q in questions))
    result: dict[str, dict[str, dict[str, Score]]] = {}
    for sample in samples:
        indexes = [i for i, q in enumerate(questions) if q.sample_id == sample]
        picked = [questions[i] for i in indexes]
        result[sample] = {
            variant: scores_by_group([ranked[i] for i in indexes], picked) for variant, ranked in rankings.items()
        }
    return result


def conversation_table(scores: Mapping[str, Mapping[str, Mapping[str, Score]]]) -> list[str]:
    """R@10 per conversation: the dossier overall, multi-hop and temporal, and both baselines overall."""
    lines = [f"{'R@10 by conversation':<22}{'n':>5}{'dossier':>9}{'multi-hop':>11}{'temporal':>10}{'dense':>8}{'bm25':>7}"]
    for sample, variants in scores.items():
        dossier = variants["dossier"]
        lines.append(
            f"{sample:<22}{dossier['1-4'].n:>5}{dossier['1-4'].recall[10]:>9.1f}"
            f"{dossier['multi-hop'].recall[10]:>11.1f}{dossier['temporal'].recall[10]:>10.1f}"
            f"{variants['dense']['1-4'].recall[10]:>8.1f}{variants['bm25']['1-4'].recall[10]:>7.1f}"
        )
    return lines


def table(scores: Mapping[str, Mapping[str, Score]]) -> list[str]:
    lines = [
        f"{'variant':<12}{'questions':<16}{'n':>5}" + "".join(f"{f'R@{k}':>8}" for k in KS) + f"{'all@10':>8}"
    ]
    for variant, groups in scores.items():
        for i, (group, s) in enumerate(groups.items()):
            label = "1-4 (headline)" if group == "1-4" else group
            values = "".join(f"{s.recall[k]:>8.1f}" for k in KS) + f"{s.all10:>8.1f}"
            lines.append(f"{variant if i == 0 else '':<12}{label:<16}{s.n:>5}{values}")
    return lines
