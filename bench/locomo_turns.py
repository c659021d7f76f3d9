"""LoCoMo's conversations as ``bench/locomo_bench.py`` imports them, and the two plain searches over the same
turns it measures the dossier against (dense top-k, BM25).

A conversation is one pair: its turns exactly as the CLI's ``parse_locomo`` imports them (turn id
``{sample_id}:{dia_id}``, image captions appended, each session's date), its questions with their evidence
read leniently (``bench.embedding_quality.parse_ids``), and the instant every question is asked at (one day
after the last session).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import numpy.typing as npt
import Stemmer

from bench.embedding_quality import parse_ids
from bench.locomo_scores import Question
from novaberg.common.v1 import common_pb2
from novaberg_dev.cli import ImportedTurn, parse_locomo

__all__ = [
    "DATA_RELATIVE",
    "REPO_ROOT",
    "Conversation",
    "bm25_rankings",
    "default_data",
    "dense_rankings",
    "evidence_turn_ids",
    "load_conversations",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_RELATIVE = Path("shared/data/locomo/locomo_dev.json")
Matrix = npt.NDArray[np.float32]


def default_data() -> Path:
    """``../shared/…`` beside the repository; from a nested worktree, the nearest ancestor's ``shared/``."""
    for parent in REPO_ROOT.parents:
        candidate = parent / DATA_RELATIVE
        if candidate.exists():
            return candidate
    return REPO_ROOT.parent / DATA_RELATIVE


# --------------------------------------------------------------------------- data


@dataclass
class Conversation:
    """One LoCoMo sample: its pair, the turns as imported, the questions with usable evidence."""

    sample_id: str
    pair: common_pb2.Pair
    speakers: tuple[str, str]
    turns: list[ImportedTurn]
    questions: list[Question]
    excluded: int
    """Questions whose evidence names no imported turn (after lenient parsing)."""
    as_of: datetime
    """One day after the pair's last session: when every question is asked."""

    def speaker(self, turn: ImportedTurn) -> str:
        return self.speakers[0] if turn.beobachter == common_pb2.BEOBACHTER_USER else self.speakers[1]


def evidence_turn_ids(raw: Any, sample_id: str, known_turn_ids: AbstractSet[str]) -> frozenset[str]:
    """Lenient evidence ids (data README) as turn ids; ids naming no imported turn are dropped."""
    prefix = f"{sample_id}:"
    known_dia = {turn_id.removeprefix(prefix) for turn_id in known_turn_ids if turn_id.startswith(prefix)}
    return frozenset(prefix + dia_id for dia_id in parse_ids(raw, known_dia))


def load_conversations(
    data: Any, samples: Sequence[str] = (), limit_questions: int = 0
) -> list[Conversation]:
    """The samples of a LoCoMo file (all, or those named), turns via the CLI's ``parse_locomo``."""
    turns = parse_locomo(data, samples=samples)
    by_sample: dict[str, list[ImportedTurn]] = defaultdict(list)
    for turn in turns:
        by_sample[turn.turn_id.split(":", 1)[0]].append(turn)
    conversations = []
    for sample in data:
        sample_id = str(sample.get("sample_id", ""))
        if sample_id not in by_sample:
            continue
        own = by_sample[sample_id]
        known = {t.turn_id for t in own}
        questions: list[Question] = []
        excluded = 0
        for number, qa in enumerate(sample.get("qa", [])):
            evidence = evidence_turn_ids(qa.get("evidence", []), sample_id, known)
            if not evidence:
                excluded += 1
                continue
            questions.append(Question(sample_id, number, str(qa["question"]), int(qa["category"]), evidence))
        if limit_questions:
            questions = questions[:limit_questions]
        dated = [t.as_of for t in own if t.as_of is not None]
        if not dated:
            raise ValueError(f"sample {sample_id} has no session date; the questions need an as_of")
        conv = sample["conversation"]
        conversations.append(
            Conversation(
                sample_id=sample_id,
                pair=own[0].pair,
                speakers=(str(conv["speaker_a"]), str(conv["speaker_b"])),
                turns=own,
                questions=questions,
                excluded=excluded,
                as_of=max(dated) + timedelta(days=1),
            )
        )
    return conversations


# --------------------------------------------------------------------------- baselines


def dense_rankings(
    doc_vectors: Matrix, query_vectors: Matrix, turn_ids: Sequence[str], k: int
) -> list[list[str]]:
    """Top ``k`` turn ids by cosine (rows are norm 1), ties in turn order."""
    if len(turn_ids) == 0 or len(query_vectors) == 0:
        return [[] for _ in range(len(query_vectors))]
    order = np.argsort(-(query_vectors @ doc_vectors.T), axis=1, kind="stable")[:, :k]
    return [[turn_ids[i] for i in row] for row in order]


def bm25_rankings(
    documents: Sequence[str], queries: Sequence[str], turn_ids: Sequence[str], k: int
) -> list[list[str]]:
    """Top ``k`` turn ids by BM25 (English stopwords, Snowball stemming); documents scoring 0 are left out."""
    if not documents or not queries:
        return [[] for _ in queries]
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(list(documents), stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    tokens = bm25s.tokenize(
        list(queries), stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
    )
    indexes, scores = retriever.retrieve(tokens, k=min(k, len(documents)), show_progress=False)
    return [
        [turn_ids[int(i)] for i, s in zip(row, row_scores, strict=True) if s > 0.0]
        for row, row_scores in zip(indexes, scores, strict=True)
    ]
