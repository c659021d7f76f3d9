"""Hybrid recall (SPEC §11): rank fusion, the LZG's candidate helpers, the pipeline's merged recall list."""

from __future__ import annotations

import numpy as np
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.fusion import INFORMATIVE_WORDS, QUESTION_PRIOR, RRF_K, fuse, is_question, memory_prior
from novaberg_core.lexical import LexicalIndex, tokenize
from services.lzg.recall import TimeOrder, answer_rows, context_rows, interleave, top_rows
from services.pipeline.recall import merge_recall, named_entity_ids

USER, ASSISTANT = common_pb2.BEOBACHTER_USER, common_pb2.BEOBACHTER_ASSISTANT


def test_reciprocal_rank_fusion_worked_numbers() -> None:
    fused = fuse({"dense": ["a", "b", "c"], "lexical": ["b", "d"], "kontext": ["a"]})
    scores = {item.key: item.score for item in fused}
    assert scores["b"] == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert scores["a"] == pytest.approx(1 / (RRF_K + 1) + 0.5 / (RRF_K + 1))
    assert scores["d"] == pytest.approx(1 / (RRF_K + 2))
    assert [item.key for item in fused] == ["b", "a", "d", "c"]  # lexical rank 2 beats dense rank 3
    assert fused[0].sources == {"dense": 2, "lexical": 1}


def test_top_rows_keeps_the_best_eligible_ties_to_the_older_node() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.1, 0.9])
    eligible = np.array([True, True, True, True, False])
    assert top_rows(scores, eligible, 3).tolist() == [1, 0, 2]
    assert top_rows(scores, eligible, 0).tolist() == []


def test_context_is_the_turn_before_and_after_within_the_window() -> None:
    times = np.array([0.0, 30.0, 60.0, 5_000.0, 90.0])  # row 3 lies in another session
    visible = np.array([True, True, True, True, True])
    assert context_rows(TimeOrder.of(times), [1], visible) == [0, 2]
    assert context_rows(TimeOrder.of(times), [2], visible) == [1, 4]
    assert context_rows(TimeOrder.of(times), [4], visible) == [2]  # the next turn is 83 minutes later: not its context
    assert context_rows(TimeOrder.of(times), [1], np.array([False, True, True, True, True])) == [2]


def test_the_answer_is_the_turn_right_after_a_found_question() -> None:
    # rows: 0 "What did you research?" 1 "Adoption agencies." 2 "Nice!" 3 "Do you paint?" (another
    # session) 4 "Anything else?" 5 "No." — found best first: 4, 0, 1, 3
    times = np.array([0.0, 30.0, 60.0, 5_000.0, 90.0, 120.0])
    questions = np.array([is_question(t) for t in (
        "What did you research?", "Adoption agencies.", "Nice!", "Do you paint? ", "Anything else?", "No.",
    )])  # fmt: skip
    visible = np.ones(6, dtype=bool)
    assert questions.tolist() == [True, False, False, True, True, False]
    assert answer_rows(TimeOrder.of(times), questions, [4, 0, 1, 3], visible) == [5, 1]  # nothing follows row 3
    times[4] = 3_000.0  # "Anything else?" at 50 min: the next turn (row 3) comes 33 min later, too late
    assert answer_rows(TimeOrder.of(times), questions, [4, 0], visible) == [1]
    hidden = visible.copy()
    hidden[1] = False  # the answer made after as_of: the next visible turn answers
    assert answer_rows(TimeOrder.of(times), questions, [0], hidden) == [2]
    assert answer_rows(TimeOrder.of(times), questions, [1, 2], visible) == []  # no question found, no answer


def test_interleave_takes_each_list_in_turn_each_item_once() -> None:
    assert interleave([1, 2, 3], [2, 9]) == [1, 2, 9, 3]
    assert interleave([], [4]) == [4]
    assert interleave() == []


def _query_terms(texts: list[str]):  # type: ignore[no-untyped-def]
    index = LexicalIndex()
    for text in texts:
        index.append(tokenize(text, "en"))
    return index.query_terms(tokenize("When did Caroline adopt a dog?", "en"))


def _hit(
    turn_id: str, text: str, similarity: float, quellen: list[str], sprecher: str = "", beobachter: common_pb2.Beobachter = USER
) -> kzg_pb2.RetrieveHit:
    entry = common_pb2.KzgEntry(kzg_key=f"kzg:u:c:{turn_id}", turn_id=turn_id, inhalt=text, beobachter=beobachter,
                                sprecher=sprecher)  # fmt: skip
    return kzg_pb2.RetrieveHit(entry=entry, similarity=similarity, quellen=quellen)


def test_the_recall_list_merges_layers_and_keeps_one_item_per_turn() -> None:
    query = _query_terms(["Caroline: We adopted a dog named Max.", "Melanie: Lovely weather today."])
    lzg = [
        lzg_pb2.RecallKandidat(knoten_id=7, turn_id="t1", inhalt="We adopted a dog named Max.", sprecher="Caroline",
                               beobachter=USER, cosine=0.6, lexical_score=2.0, quellen=["dense", "lexical"]),
        lzg_pb2.RecallKandidat(knoten_id=8, turn_id="t2", inhalt="Max loves the park.", beobachter=USER,
                               cosine=0.4, quellen=["kontext"]),
    ]  # fmt: skip
    kzg = [
        _hit("t1", "We adopted a dog named Max.", 0.6, ["dense"]),  # the entry the node t1 was promoted from
        _hit("t3", "I adopted a dog last week, Max!", 0.55, ["dense"], sprecher="Caroline"),
        _hit("t4", "Dog days are over.", 0.1, ["lexical"], beobachter=ASSISTANT),  # words alone, too few of them
    ]  # the question is on topic (gated candidates in both layers): t4 is ranked too, last
    recall = merge_recall(kzg, lzg, query, "en", 10, ("Caroline", "Melanie"))
    assert [r.turn_id for r in recall].count("t1") == 1
    first = next(r for r in recall if r.turn_id == "t1")
    assert first.layer == "lzg" and first.knoten_id == 7 and first.speaker == "Caroline"
    assert {r.turn_id for r in recall} == {"t1", "t2", "t3", "t4"}
    kzg_item = next(r for r in recall if r.turn_id == "t3")
    assert kzg_item.layer == "kzg" and kzg_item.kzg_key == "kzg:u:c:t3" and kzg_item.speaker == "Caroline"
    assert next(r for r in recall if r.turn_id == "t2").speaker == "Caroline"  # the user's name by perspective
    assert [r.score for r in recall] == sorted((r.score for r in recall), reverse=True)
    assert merge_recall(kzg, lzg, query, "en", 2, ("Caroline", "Melanie"))[0].turn_id == recall[0].turn_id
    assert merge_recall(kzg, lzg, query, "en", 0, ("C", "M")) == []


def test_the_users_turn_and_the_characters_answer_of_one_turn_id_are_two_items() -> None:
    query = _query_terms(["Caroline: We adopted a dog named Max.", "Melanie: Lovely weather today."])
    told = "We adopted a dog named Max last spring, he is a beagle and loves long walks in the park."
    answered = "A beagle named Max sounds wonderful, I remember you wanted a dog for years and finally did it."
    user_entry = _hit("t1", told, 0.9, ["dense"])
    answer_entry = _hit("t1", answered, 0.85, ["dense"], beobachter=ASSISTANT)
    answer_entry.entry.kzg_key = "kzg:u:c:assistant-t1"
    names = ("Caroline", "Melanie")
    kzg_only = merge_recall([user_entry, answer_entry], [], query, "en", 10, names)
    assert [(r.layer, r.beobachter, r.kzg_key) for r in kzg_only] == [
        ("kzg", USER, "kzg:u:c:t1"), ("kzg", ASSISTANT, "kzg:u:c:assistant-t1"),
    ]
    lzg = [
        lzg_pb2.RecallKandidat(knoten_id=11, turn_id="t1", inhalt=told, beobachter=USER, cosine=0.8,
                               kzg_quell_key="kzg:u:c:t1", quellen=["dense"]),
        lzg_pb2.RecallKandidat(knoten_id=12, turn_id="t1", inhalt=answered, beobachter=ASSISTANT, cosine=0.7,
                               kzg_quell_key="kzg:u:c:assistant-t1", quellen=["dense"]),
    ]  # fmt: skip
    lzg_only = merge_recall([], lzg, query, "en", 10, names)
    assert [(r.layer, r.knoten_id) for r in lzg_only] == [("lzg", 11), ("lzg", 12)]
    # both layers: each entry and the node promoted from it are one item, the node's
    both = merge_recall([user_entry, answer_entry], lzg, query, "en", 10, names)
    assert sorted((r.layer, r.beobachter, r.knoten_id) for r in both) == [("lzg", USER, 11), ("lzg", ASSISTANT, 12)]
    assert all(list(r.quellen) == ["dense"] for r in both)
    # without a turn_id, an entry and its node are one item by the node's source key
    user_entry.entry.turn_id = ""
    lzg[0].turn_id = ""
    assert [(r.layer, r.knoten_id) for r in merge_recall([user_entry], lzg[:1], query, "en", 10, names)] == [("lzg", 11)]


def test_both_layers_dated_memories_share_the_timeline_list_in_turns() -> None:
    """SPEC §11: the KZG finds by a named date too; its dated hits and the LZG's take turns in one list."""
    query = _query_terms(["Caroline: What happened in May?", "Melanie: Lots of things."])
    said = "We went hiking on a long trail near the lake and camped there for two nights."
    lzg = [
        lzg_pb2.RecallKandidat(knoten_id=k, turn_id=t, inhalt=said, beobachter=USER, cosine=0.0, quellen=["timeline"])
        for k, t in ((1, "l1"), (2, "l2"))
    ]
    names = ("Caroline", "Melanie")

    def scores(kzg_quellen: list[str]) -> dict[str, float]:
        kzg = [_hit("k1", said, 0.2, kzg_quellen), _hit("k2", said, 0.1, kzg_quellen)]  # by cosine: k1, k2
        return {r.turn_id: r.score for r in merge_recall(kzg, lzg, query, "en", 10, names)}

    dated, undated = scores(["timeline"]), scores(["dense"])
    prior = memory_prior(said)
    # The timeline list is l1, k1, l2, k2 (in turns) instead of l1, l2; every other list is the same.
    assert dated["k1"] - undated["k1"] == pytest.approx(prior / (RRF_K + 2))
    assert dated["k2"] - undated["k2"] == pytest.approx(prior / (RRF_K + 4))
    assert dated["l1"] == pytest.approx(undated["l1"])
    assert undated["l2"] - dated["l2"] == pytest.approx(prior * (1 / (RRF_K + 2) - 1 / (RRF_K + 3)))


def test_the_lzgs_answers_keep_its_order_and_weigh_half_a_source() -> None:
    query = _query_terms(["Caroline: What did you research?", "Melanie: Adoption agencies."])
    lzg = [
        lzg_pb2.RecallKandidat(knoten_id=1, turn_id="q", inhalt="What did you research? Tell me everything now.",
                               beobachter=ASSISTANT, cosine=0.7, quellen=["dense"]),
        lzg_pb2.RecallKandidat(knoten_id=3, turn_id="b", inhalt="Agencies that help people adopt are great, believe me.",
                               beobachter=USER, cosine=0.0, quellen=["antwort"]),
        lzg_pb2.RecallKandidat(knoten_id=2, turn_id="a", inhalt="Adoption agencies, the ones that welcome everyone.",
                               beobachter=USER, cosine=0.0, quellen=["antwort"]),
    ]  # fmt: skip
    recall = merge_recall([], lzg, query, "en", 10, ("Caroline", "Melanie"))
    by_turn = {r.turn_id: r for r in recall}
    assert list(by_turn["b"].quellen) == ["antwort"]  # the sources that found it in its layer
    # dense ranks q, b, a (cosine, then order); the answers' own list keeps the LZG's order b, a
    assert by_turn["b"].score == pytest.approx((1 / (RRF_K + 2) + 0.5 / (RRF_K + 1)) * (9 / 20) ** 0.5)
    assert by_turn["a"].score == pytest.approx((1 / (RRF_K + 3) + 0.5 / (RRF_K + 2)) * (7 / 20) ** 0.5)


def test_a_question_without_a_gated_candidate_in_either_layer_gets_an_empty_list() -> None:
    query = _query_terms(["Caroline: We adopted a dog named Max.", "Melanie: Lovely weather today."])
    weak = [_hit("t4", "Dog days are over.", 0.1, ["lexical"], beobachter=ASSISTANT)]  # one word of the question
    assert merge_recall(weak, [], query, "en", 10, ("Caroline", "Melanie")) == []
    strong = [_hit("t5", "Caroline adopted a dog.", 0.3, ["lexical"])]  # most of the question's idf mass
    assert [r.turn_id for r in merge_recall(weak + strong, [], query, "en", 10, ("Caroline", "Melanie"))] == [
        "t5", "t4",
    ]


def test_the_memory_prior_weighs_questions_and_short_memories_down() -> None:
    long_statement = "We adopted a dog named Max last spring and he has been sleeping on my feet every night since then."
    assert len(long_statement.split()) >= INFORMATIVE_WORDS
    assert memory_prior(long_statement) == 1.0
    assert memory_prior(long_statement[:-1] + "?") == QUESTION_PRIOR
    assert memory_prior("We adopted a dog.") == pytest.approx((4 / 20) ** 0.5)  # 4 words of 20
    assert memory_prior("What inspired it?  ") == pytest.approx(0.75 * (3 / 20) ** 0.5)
    assert memory_prior("Was hat dich dazu inspiriert?") == pytest.approx(0.75 * (5 / 20) ** 0.5)
    assert memory_prior("") == 0.0


def test_a_question_falls_behind_the_statement_the_same_sources_found_next() -> None:
    query = _query_terms(["Caroline: We adopted a dog named Max.", "Melanie: Lovely weather today."])
    asked = "Did you and your family adopt a dog from the shelter we talked about, or did you get one somewhere else?"
    told = "We adopted a dog from the shelter last spring, his name is Max and he sleeps on my feet every night."
    lzg = [
        lzg_pb2.RecallKandidat(knoten_id=1, turn_id="asked", inhalt=asked, beobachter=ASSISTANT, cosine=0.8,
                               lexical_score=3.0, quellen=["dense", "lexical"]),
        lzg_pb2.RecallKandidat(knoten_id=2, turn_id="told", inhalt=told, beobachter=USER, cosine=0.7,
                               lexical_score=2.0, quellen=["dense", "lexical"]),
    ]  # fmt: skip
    recall = merge_recall([], lzg, query, "en", 10, ("Caroline", "Melanie"))
    assert [r.turn_id for r in recall] == ["told", "asked"]  # by fusion alone the question would lead
    assert recall[0].score == pytest.approx(2 / (RRF_K + 2))
    assert recall[1].score == pytest.approx(QUESTION_PRIOR * 2 / (RRF_K + 1))


def test_the_speakers_own_names_are_no_question_entities() -> None:
    resolved = {"Caroline": 3, "LGBTQ": 9, "Unknown": 0}
    assert named_entity_ids(resolved, ("caroline", "Melanie")) == [9]


def test_a_kzg_answer_is_scored_with_its_question_and_each_item_shows_the_question() -> None:
    """SPEC §11: the pipeline scores a KZG hit by its searched text — with the question it answers — so an
    answer found by the question's words alone passes the lexical gate; an item of either layer carries
    the question."""
    index = LexicalIndex()
    for text in ["Melanie: Lovely weather today.", "Melanie: I love painting.", "Caroline: I research birds."]:
        index.append(tokenize(text, "en"))
    query = index.query_terms(tokenize("What did Melanie research?", "en"))
    answer = _hit("t1", "Adoption agencies.", 0.1, ["lexical"], sprecher="Melanie")
    assert merge_recall([answer], [], query, "en", 10, ("Caroline", "Melanie")) == []  # "Melanie" alone: too few words

    answer.entry.antwort_auf = "What did you research?"
    [item] = merge_recall([answer], [], query, "en", 10, ("Caroline", "Melanie"))
    assert (item.turn_id, item.layer, item.antwort_auf) == ("t1", "kzg", "What did you research?")
    node = lzg_pb2.RecallKandidat(knoten_id=3, turn_id="t2", inhalt="Pottery.", beobachter=USER, cosine=0.7,
                                  quellen=["dense"], antwort_auf="What did you sign up for?")  # fmt: skip
    by_turn = {r.turn_id: r for r in merge_recall([answer], [node], query, "en", 10, ("Caroline", "Melanie"))}
    assert (by_turn["t2"].layer, by_turn["t2"].antwort_auf) == ("lzg", "What did you sign up for?")
