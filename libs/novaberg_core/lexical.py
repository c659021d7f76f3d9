"""Lexical search: one tokenizer and one BM25 for every layer (SPEC §11, hybrid anchors).

Tokens are words of two or more letters or digits, case-folded, stopwords of the pair's language
dropped, Snowball-stemmed (PyStemmer) — the same rules as the benchmark's BM25 baseline (bm25s:
``(?u)\\b\\w\\w+\\b``, its stopword lists, Snowball). Scores are BM25 in Lucene's form
(k1 = 1.5, b = 0.75, idf = ln(1 + (N − df + 0.5) / (df + 0.5))).

:class:`LexicalIndex` grows by appending documents (a pair's memories are only ever added; the
LZG's per-pair cache owns one) and scores a query over its first ``n`` documents, so a snapshot
taken earlier keeps its view while later documents arrive. :func:`bm25_scores` scores texts that
live elsewhere (KZG entries in the pipeline) with the idf of an index, so both layers rank on
one scale.

Lexical strength (:func:`strength`) is the share of the query's idf mass a document matches: a
question about a subject the pair never discussed matches none or only its common words, which
is what the lexical gate of the anchors and the recall list looks at (SPEC §11: off-topic and
anaphoric questions get nothing).
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt
import Stemmer

__all__ = [
    "K1",
    "LANGUAGES",
    "B",
    "LexicalIndex",
    "QueryTerms",
    "bm25_scores",
    "clear_term_counts",
    "language_of",
    "lexical_words",
    "strength",
    "tokenize",
]

K1 = 1.5
B = 0.75
LANGUAGES: Mapping[str, str] = {"de": "german", "en": "english"}
"""Language codes a pair may have → Snowball stemmer; anything else is treated as German."""
DEFAULT_LANGUAGE = "de"

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_DATA = Path(__file__).resolve().parent / "data"


@cache
def _stopwords(language: str) -> frozenset[str]:
    path = _DATA / f"stopwords_{language}.txt"
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


@cache
def _stemmer(language: str) -> Stemmer.Stemmer:
    return Stemmer.Stemmer(LANGUAGES[language])


def language_of(code: str) -> str:
    """A supported language code for ``code`` (``de`` for unknown or empty)."""
    return code if code in LANGUAGES else DEFAULT_LANGUAGE


def lexical_words(text: str, language: str) -> list[str]:
    """The words of ``text`` a full-text engine should look for: case-folded, stopwords out, unstemmed, each once."""
    stop = _stopwords(language_of(language))
    return list(dict.fromkeys(w for w in _TOKEN.findall(text.casefold()) if w not in stop))


def tokenize(text: str, language: str) -> list[str]:
    """The terms of ``text``: words of ≥ 2 characters, case-folded, stopwords out, stemmed."""
    language = language_of(language)
    stop = _stopwords(language)
    words = [w for w in _TOKEN.findall(text.casefold()) if w not in stop]
    return list(_stemmer(language).stemWords(words)) if words else []


@dataclass(frozen=True)
class QueryTerms:
    """A query's distinct terms with their idf in one corpus (what another layer needs to score alike)."""

    terms: tuple[str, ...]
    idf: tuple[float, ...]
    average_length: float
    """Mean document length (in terms) of the corpus the idf come from."""

    @property
    def total_idf(self) -> float:
        return float(sum(self.idf))


def _idf(documents: int, frequency: int) -> float:
    return math.log(1.0 + (documents - frequency + 0.5) / (frequency + 0.5))


class LexicalIndex:
    """An append-only inverted index: term → (document row, term frequency) postings."""

    def __init__(self) -> None:
        self._rows: dict[str, array[int]] = {}
        self._tfs: dict[str, array[int]] = {}
        self._lengths = array("i")
        self._total_length = 0
        self._posting_count = 0
        self._norms: tuple[int, float, npt.NDArray[np.float64]] | None = None
        """The average length and the BM25 length norm of every document, for the last ``n`` scored."""

    def __len__(self) -> int:
        return len(self._lengths)

    def append(self, terms: Sequence[str]) -> None:
        """Add the next document (its row is the current length)."""
        row = len(self._lengths)
        for term, count in Counter(terms).items():
            rows = self._rows.get(term)
            if rows is None:
                rows = self._rows[term] = array("i")
                self._tfs[term] = array("i")
            rows.append(row)
            self._tfs[term].append(count)
            self._posting_count += 1
        self._lengths.append(len(terms))
        self._total_length += len(terms)

    @property
    def nbytes(self) -> int:
        """Bytes of the postings (row and term frequency each) and lengths, counted as they are added: the
        LZG's cache asks on every read (``services/lzg/cache.py``)."""
        norms = 0 if self._norms is None else self._norms[2].nbytes
        return (2 * self._posting_count + len(self._lengths)) * self._lengths.itemsize + norms

    def query_terms(self, terms: Iterable[str], n: int | None = None) -> QueryTerms:
        """The distinct terms of a query with their idf over the first ``n`` documents."""
        n = len(self) if n is None else n
        distinct = tuple(dict.fromkeys(terms))
        idf = tuple(_idf(n, self._frequency(term, n)) for term in distinct)
        average = self._length_norms(n)[0] if n else 0.0
        return QueryTerms(distinct, idf, average)

    def _length_norms(self, n: int) -> tuple[float, npt.NDArray[np.float64]]:
        """The average length of the first ``n`` documents and each one's length norm
        ``K1 · (1 − B + B · length / average)``; kept until another ``n`` is asked (a snapshot's reads
        share it, and it changes only when a document is added)."""
        norms = self._norms
        if norms is None or norms[0] != n:
            lengths = np.frombuffer(self._lengths, dtype=np.int32)[:n].astype(np.float64)
            average = float(lengths.mean())
            norms = self._norms = (n, average, K1 * (1.0 - B + B * lengths / max(average, 1e-9)))
        return norms[1], norms[2]

    def _postings(self, term: str, n: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        rows = self._rows.get(term)
        if rows is None:
            empty = np.zeros(0, dtype=np.int32)
            return empty, empty
        row_view = np.frombuffer(rows, dtype=np.int32)
        cut = int(np.searchsorted(row_view, n))  # rows are appended in order
        tf = np.frombuffer(self._tfs[term], dtype=np.int32)[:cut].copy()
        return row_view[:cut].copy(), tf

    def _frequency(self, term: str, n: int) -> int:
        rows = self._rows.get(term)
        if rows is None:
            return 0
        return int(np.searchsorted(np.frombuffer(rows, dtype=np.int32), n))

    def scores(self, query: QueryTerms, n: int | None = None) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """BM25 of every one of the first ``n`` documents, and its lexical strength (0 for no match).

        Each term's postings give their share; the shares of all terms are summed per document in one
        pass (``np.bincount``, in the order of the query's terms, as adding them term by term would):
        a term most documents hold costs one pass over its postings, not one per operation.
        """
        n = len(self) if n is None else n
        if n == 0 or not query.terms:
            return np.zeros(n, dtype=np.float64), np.zeros(n, dtype=np.float64)
        average, norm = self._length_norms(n)
        if query.average_length != average:  # a query made over another number of documents
            lengths = np.frombuffer(self._lengths, dtype=np.int32)[:n].astype(np.float64)
            norm = K1 * (1.0 - B + B * lengths / max(query.average_length, 1e-9))
        rows_of_terms: list[npt.NDArray[np.int32]] = []
        shares: list[npt.NDArray[np.float64]] = []
        idfs: list[float] = []
        for term, idf in zip(query.terms, query.idf, strict=True):
            rows, tf = self._postings(term, n)
            if rows.size == 0:
                continue
            tf64 = tf.astype(np.float64)
            rows_of_terms.append(rows)
            shares.append(idf * tf64 * (K1 + 1.0) / (tf64 + norm[rows]))
            idfs.append(idf)
        if not rows_of_terms:
            return np.zeros(n, dtype=np.float64), np.zeros(n, dtype=np.float64)
        rows = np.concatenate(rows_of_terms)
        matched = np.repeat(idfs, [term_rows.size for term_rows in rows_of_terms])  # each posting's idf
        # float64 already (weights given): the casts copy nothing
        bm25 = np.bincount(rows, weights=np.concatenate(shares), minlength=n).astype(np.float64, copy=False)
        matched_idf = np.bincount(rows, weights=matched, minlength=n).astype(np.float64, copy=False)
        total = query.total_idf
        return bm25, (matched_idf / total if total > 0 else matched_idf)


TERM_COUNTS_CACHED = 4096
"""Texts whose term counts :func:`bm25_scores` keeps: a pair's short-term memories come back question after
question, and tokenising them was most of the pipeline's recall merge (bench/recall_merge_bench.py)."""


@lru_cache(maxsize=TERM_COUNTS_CACHED)
def _term_counts(text: str, language: str) -> tuple[Mapping[str, int], int]:
    """The terms of ``text`` with their counts, and its length in terms (read-only: shared by callers)."""
    terms = Counter(tokenize(text, language))
    return terms, sum(terms.values())


def clear_term_counts() -> None:
    """Forget every remembered text (for benchmarks of the cold path; a text's terms never change)."""
    _term_counts.cache_clear()


def bm25_scores(texts: Sequence[str], language: str, query: QueryTerms) -> list[tuple[float, float]]:
    """(BM25, lexical strength) of texts outside an index, with the idf of ``query``'s corpus."""
    results: list[tuple[float, float]] = []
    weights = dict(zip(query.terms, query.idf, strict=True))
    total = query.total_idf
    for text in texts:
        terms, length = _term_counts(text, language)
        norm = K1 * (1.0 - B + B * length / max(query.average_length, 1e-9))
        score = matched = 0.0
        for term, idf in weights.items():
            tf = terms.get(term, 0)
            if tf:
                score += idf * tf * (K1 + 1.0) / (tf + norm)
                matched += idf
        results.append((score, matched / total if total > 0 else 0.0))
    return results


def strength(matched_idf: float, query: QueryTerms) -> float:
    """Share of the query's idf mass matched (0..1)."""
    total = query.total_idf
    return matched_idf / total if total > 0 else 0.0
