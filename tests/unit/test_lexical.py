"""Lexical search (SPEC §11): one tokenizer and BM25 for both layers; the benchmark's BM25 as the reference."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest
import Stemmer

from novaberg_core.lexical import K1, LexicalIndex, bm25_scores, clear_term_counts, lexical_words, tokenize

DOCS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Thanks, Caroline! I painted a lake sunrise last year.",
    "Caroline: The support group helped me accept myself.",
    "Melanie: We went camping with the kids in the mountains.",
    "Caroline: I am researching adoption agencies.",
]


def test_tokens_are_stemmed_stopword_free_and_per_language() -> None:
    assert tokenize("The support groups were helping!", "en") == ["support", "group", "help"]
    assert tokenize("Die Kinder spielten im Garten", "de") == ["kind", "spielt", "gart"]
    assert tokenize("", "en") == [] and tokenize("the and of", "en") == []
    assert lexical_words("The support group, the GROUP!", "en") == ["support", "group"]


def test_bm25_equals_the_benchmarks_bm25s() -> None:
    """The same corpus, query and parameters give bm25s' scores (its Lucene variant leaves out the constant
    factor k1 + 1 of the textbook numerator, which changes no ranking)."""
    index = LexicalIndex()
    for doc in DOCS:
        index.append(tokenize(doc, "en"))
    query = index.query_terms(tokenize("When did Caroline go to the support group?", "en"))
    ours, _ = index.scores(query)
    stemmer = Stemmer.Stemmer("english")
    reference = bm25s.BM25()
    stop = list(bm25s.stopwords.STOPWORDS_EN_PLUS)  # the list novaberg_core.lexical uses for English
    reference.index(bm25s.tokenize(DOCS, stopwords=stop, stemmer=stemmer, show_progress=False), show_progress=False)
    tokens = bm25s.tokenize(["When did Caroline go to the support group?"], stopwords=stop, stemmer=stemmer,
                            return_ids=False, show_progress=False)  # fmt: skip
    theirs = reference.get_scores(tokens[0])
    assert ours == pytest.approx(theirs * (K1 + 1.0), rel=1e-5)
    assert int(np.argmax(ours)) in (0, 2)


def test_a_snapshot_scores_only_its_own_documents() -> None:
    index = LexicalIndex()
    for doc in DOCS[:3]:
        index.append(tokenize(doc, "en"))
    query = index.query_terms(tokenize("support group", "en"), 3)
    before, _ = index.scores(query, 3)
    index.append(tokenize("Melanie: The support group met again.", "en"))  # a node promoted meanwhile
    after, _ = index.scores(query, 3)
    assert after == pytest.approx(before)
    assert len(index) == 4 and index.scores(index.query_terms(["support"]))[0].shape == (4,)


def test_the_kept_length_norms_follow_the_documents() -> None:
    """The index keeps the length norms of the last snapshot scored; documents added later (a node promoted
    between two reads) must not leave a later read with the old average."""
    words = tokenize("Caroline went camping with the support group kids", "en")
    fresh = LexicalIndex()
    for doc in DOCS:
        fresh.append(tokenize(doc, "en"))
    index = LexicalIndex()
    for doc in DOCS[:2]:
        index.append(tokenize(doc, "en"))
    early = index.scores(index.query_terms(words))
    for doc in DOCS[2:]:
        index.append(tokenize(doc, "en"))
    for ours, theirs in zip(index.scores(index.query_terms(words)), fresh.scores(fresh.query_terms(words)), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    for ours, theirs in zip(index.scores(index.query_terms(words, 2), 2), early, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_lexical_strength_is_the_share_of_the_query_idf_matched() -> None:
    index = LexicalIndex()
    for doc in DOCS:
        index.append(tokenize(doc, "en"))
    on_topic = index.query_terms(tokenize("Caroline support group", "en"))
    _, strength = index.scores(on_topic)
    assert strength[2] == pytest.approx(1.0) and 0.0 < strength[1] < 0.5 and strength[3] == 0.0
    # An off-topic question's words are unknown to the pair: nothing reaches a meaningful share.
    off_topic = index.query_terms(tokenize("What is the capital of Mongolia?", "en"))
    assert float(index.scores(off_topic)[1].max()) == 0.0


def test_texts_outside_the_index_score_alike() -> None:
    index = LexicalIndex()
    for doc in DOCS:
        index.append(tokenize(doc, "en"))
    query = index.query_terms(tokenize("adoption agencies", "en"))
    inside, strength = index.scores(query)
    outside = bm25_scores([DOCS[4]], "en", query)
    assert outside[0] == pytest.approx((inside[4], strength[4]))


def test_remembered_texts_score_as_when_first_seen_in_their_own_language() -> None:
    clear_term_counts()
    german = LexicalIndex()
    german.append(tokenize("Wir spielten im Garten", "de"))
    query = german.query_terms(tokenize("spielten", "de"))
    text = "Die Kinder spielten im Garten"
    first = bm25_scores([text], "de", query)
    assert first[0][0] > 0.0 and bm25_scores([text], "de", query) == first
    # the same text under English rules keeps "die" and stems "spielten" otherwise: no match
    assert bm25_scores([text], "en", query) == [(0.0, 0.0)]
    assert bm25_scores([text], "de", query) == first


def test_the_index_counts_its_bytes_as_documents_arrive() -> None:
    index = LexicalIndex()
    assert index.nbytes == 0
    index.append(["sister", "birthday", "sister"])
    index.append(["birthday", "march"])
    # Two postings per document (distinct terms), a row and a term frequency each, and two lengths.
    postings = 2 + 2
    assert index.nbytes == (2 * postings + 2) * 4
