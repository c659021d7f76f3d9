"""The pure parts of ``bench/locomo_bench.py``, its turns and baselines (``bench/locomo_turns.py``) and its
scores (``bench/locomo_scores.py``): evidence ids, recall math, dossier → turn ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
import grpc.aio
import numpy as np
import pytest

from bench.locomo_bench import dossier_turn_ids
from bench.locomo_evidence import kzg_alive
from bench.locomo_scores import (
    CURVE_K,
    Question,
    all_at,
    by_conversation,
    conversation_table,
    recall_at,
    score,
)
from bench.locomo_turns import bm25_rankings, dense_rankings, evidence_turn_ids, load_conversations
from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2

KNOWN = frozenset(
    {"conv-9:D1:3", "conv-9:D8:6", "conv-9:D9:17", "conv-9:D30:5", "conv-9:D2:1", "conv-8:D1:1"}
)


# --------------------------------------------------------------------------- evidence parsing


def test_malformed_evidence_ids_are_read_leniently() -> None:
    raw = ["D1:3", "D8:6; D9:17", "D30:05", "D:2:1"]
    assert evidence_turn_ids(raw, "conv-9", KNOWN) == {
        "conv-9:D1:3", "conv-9:D8:6", "conv-9:D9:17", "conv-9:D30:5", "conv-9:D2:1",
    }  # fmt: skip


def test_evidence_naming_no_turn_is_dropped() -> None:
    assert evidence_turn_ids(["D99:1", "D1:3", "nonsense", ""], "conv-9", KNOWN) == {"conv-9:D1:3"}
    # A turn of another conversation does not count for this one.
    assert evidence_turn_ids(["D1:1"], "conv-9", KNOWN) == frozenset()
    assert evidence_turn_ids([], "conv-9", KNOWN) == frozenset()


def small_locomo() -> list[dict[str, object]]:
    return [
        {
            "sample_id": "conv-1",
            "conversation": {
                "speaker_a": "Caroline", "speaker_b": "Melanie",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel!"},
                    {"speaker": "Melanie", "dia_id": "D1:2", "text": "Look", "blip_caption": "a cat"},
                    {"speaker": "Caroline", "dia_id": "D1:3", "text": "   "},
                ],
                "session_2_date_time": "8:00 pm on 9 June, 2023",
                "session_2": [{"speaker": "Melanie", "dia_id": "D2:1", "text": "Back again!"}],
            },
            "qa": [
                {"question": "Who came back?", "answer": "Melanie", "evidence": ["D2:01"], "category": 4},
                {"question": "Empty turn?", "answer": "-", "evidence": ["D1:3"], "category": 1},
                {"question": "Nothing?", "answer": "-", "evidence": [], "category": 5},
                {"question": "Both?", "answer": "-", "evidence": ["D1:1; D1:2", "D7:7"], "category": 1},
            ],
        },
        {
            "sample_id": "conv-2",
            "conversation": {
                "speaker_a": "A", "speaker_b": "B",
                "session_1_date_time": "9:00 am on 1 January, 2024",
                "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "Hi"}],
            },
            "qa": [{"question": "Hi?", "answer": "Hi", "evidence": ["D1:1"], "category": 2}],
        },
    ]  # fmt: skip


def test_conversations_keep_questions_with_evidence_and_count_the_rest() -> None:
    conv = load_conversations(small_locomo(), samples=["conv-1"])[0]
    assert [t.turn_id for t in conv.turns] == ["conv-1:D1:1", "conv-1:D1:2", "conv-1:D2:1"]
    assert [(q.number, q.evidence) for q in conv.questions] == [
        (0, {"conv-1:D2:1"}),
        (3, {"conv-1:D1:1", "conv-1:D1:2"}),
    ]
    # D1:3 has no text, so it was not imported: its question is excluded like the one without evidence.
    assert conv.excluded == 2
    assert conv.as_of == datetime(2023, 6, 10, 20, 0, tzinfo=UTC)
    assert conv.speakers == ("Caroline", "Melanie")
    assert [conv.speaker(t) for t in conv.turns] == ["Caroline", "Melanie", "Melanie"]
    assert conv.turns[1].text == "Look [image: a cat]"


def test_each_conversation_is_its_own_pair_and_the_limit_applies_per_conversation() -> None:
    convs = load_conversations(small_locomo(), limit_questions=1)
    assert [c.sample_id for c in convs] == ["conv-1", "conv-2"]
    assert convs[0].pair != convs[1].pair
    assert [len(c.questions) for c in convs] == [1, 1]


# --------------------------------------------------------------------------- metrics


def test_fractional_recall_counts_the_share_of_evidence_in_the_top_k() -> None:
    ranked = ["a", "x", "b", "y", "c"]
    assert recall_at(ranked, {"a", "b", "c", "d"}, 1) == 0.25
    assert recall_at(ranked, {"a", "b", "c", "d"}, 3) == 0.5
    assert recall_at(ranked, {"a", "b", "c", "d"}, 10) == 0.75
    assert recall_at([], {"a"}, 10) == 0.0


def test_all_at_k_needs_every_evidence_turn() -> None:
    ranked = ["a", "x", "b", "y", "c"]
    assert all_at(ranked, {"a", "b"}, 3) == 1.0
    assert all_at(ranked, {"a", "b"}, 2) == 0.0
    assert all_at(ranked, {"a", "c", "d"}, 10) == 0.0


def test_a_question_without_evidence_has_no_recall() -> None:
    with pytest.raises(ValueError):
        recall_at(["a"], set(), 10)
    with pytest.raises(ValueError):
        all_at(["a"], set(), 10)


def test_score_averages_over_questions_in_percent() -> None:
    questions = [
        Question("c", 0, "q0", 1, frozenset({"a", "b"})),
        Question("c", 1, "q1", 1, frozenset({"z"})),
    ]
    ranked = [["a", "x"] + [f"f{i}" for i in range(20)] + ["b"], ["z"]]
    result = score(ranked, questions)
    assert result.n == 2
    assert result.recall[5] == pytest.approx(100 * (0.5 + 1.0) / 2)
    assert result.recall[25] == pytest.approx(100.0)
    assert result.all10 == pytest.approx(50.0)
    assert result.curve[0] == pytest.approx(100 * (0.5 + 1.0) / 2)
    assert len(result.curve) == CURVE_K == 25


def test_each_conversation_is_scored_on_its_own_questions() -> None:
    questions = [
        Question("conv-1", 0, "q0", 1, frozenset({"a"})),
        Question("conv-2", 0, "q1", 1, frozenset({"b"})),
        Question("conv-1", 1, "q2", 2, frozenset({"c", "d"})),
    ]
    rankings: dict[str, list[list[str]]] = {
        "dossier": [["a"], ["x"], ["c"]],
        "dense": [["x"], ["b"], ["d", "c"]],
        "bm25": [[], [], []],
    }
    scores = by_conversation(rankings, questions)
    assert list(scores) == ["conv-1", "conv-2"]
    assert scores["conv-1"]["dossier"]["1-4"].recall[10] == pytest.approx(100 * (1.0 + 0.5) / 2)
    assert scores["conv-1"]["dossier"]["multi-hop"].recall[10] == pytest.approx(100.0)
    assert scores["conv-1"]["dossier"]["temporal"].recall[10] == pytest.approx(50.0)
    assert scores["conv-2"]["dossier"]["1-4"].recall[10] == 0.0
    assert scores["conv-2"]["dense"]["1-4"].recall[10] == pytest.approx(100.0)
    header, first, second = conversation_table(scores)
    assert header.split()[:4] == ["R@10", "by", "conversation", "n"]
    assert first.split() == ["conv-1", "2", "75.0", "100.0", "50.0", "50.0", "0.0"]
    assert second.split() == ["conv-2", "1", "0.0", "0.0", "nan", "100.0", "0.0"]


# --------------------------------------------------------------------------- the mapping


NODE_KEYS = {7: "kzg:u:c:e7", 8: "kzg:u:c:e8", 9: "kzg:u:c:gone"}
KEY_TURNS = {"kzg:u:c:e7": "conv-1:D1:7", "kzg:u:c:e8": "conv-1:D1:8", "kzg:u:c:e2": "conv-1:D1:2"}


def kzg_hit(turn_id: str, key: str, score: float) -> pipeline_pb2.WeightedKzgHit:
    entry = common_pb2.KzgEntry(kzg_key=key, turn_id=turn_id)
    return pipeline_pb2.WeightedKzgHit(
        hit=kzg_pb2.RetrieveHit(entry=entry, similarity=score), weight=1.0, score=score
    )


def test_recall_list_wins_and_keeps_its_order() -> None:
    response = pipeline_pb2.BuildDossierResponse(
        recall=[
            pipeline_pb2.RecallItem(layer="kzg", turn_id="conv-1:D1:5", kzg_key="kzg:u:c:e5", score=0.9),
            pipeline_pb2.RecallItem(layer="lzg", knoten_id=8, score=0.8),  # no turn id: node → key → turn
            pipeline_pb2.RecallItem(layer="kzg", kzg_key="kzg:u:c:e2", score=0.7),  # via key
            # The same turn again (an entry and its node are one item by contract; counted once anyway).
            pipeline_pb2.RecallItem(layer="lzg", turn_id="conv-1:D1:5", knoten_id=3, score=0.6),
            pipeline_pb2.RecallItem(layer="lzg", knoten_id=9, score=0.5),  # key names no imported turn
            pipeline_pb2.RecallItem(layer="lzg", knoten_id=404, score=0.4),  # unknown node
        ],
        kzg_hits=[kzg_hit("conv-1:D1:1", "kzg:u:c:e1", 0.99)],
        lzg_resonanz=lzg_pb2.LzgResonanz(
            anker_anzahl=1, erinnerungen=[lzg_pb2.Erinnerung(rang=1, knoten_id=7)]
        ),
    )
    ranking = dossier_turn_ids(response, NODE_KEYS, KEY_TURNS)
    assert ranking.source == "recall"
    assert ranking.turn_ids == ("conv-1:D1:5", "conv-1:D1:8", "conv-1:D1:2")
    assert ranking.items == 6
    assert ranking.unmapped == 2


def test_fallback_puts_lzg_memories_by_rank_before_kzg_hits_by_score() -> None:
    response = pipeline_pb2.BuildDossierResponse(
        kzg_hits=[
            kzg_hit("conv-1:D1:1", "kzg:u:c:e1", 0.40),
            kzg_hit("", "kzg:u:c:e2", 0.80),  # no turn id on the entry: via its key
            kzg_hit("conv-1:D1:8", "kzg:u:c:e8", 0.60),  # also an LZG memory: counted once, at its best place
            kzg_hit("", "kzg:u:c:unknown", 0.50),
        ],
        lzg_resonanz=lzg_pb2.LzgResonanz(
            anker_anzahl=2,
            erinnerungen=[
                lzg_pb2.Erinnerung(rang=2, knoten_id=8),
                lzg_pb2.Erinnerung(rang=3, knoten_id=404),
                lzg_pb2.Erinnerung(rang=1, knoten_id=7),
            ],
        ),
    )
    ranking = dossier_turn_ids(response, NODE_KEYS, KEY_TURNS)
    assert ranking.source == "fallback"
    assert ranking.turn_ids == ("conv-1:D1:7", "conv-1:D1:8", "conv-1:D1:2", "conv-1:D1:1")
    assert ranking.items == 7
    assert ranking.unmapped == 2


def test_an_empty_dossier_is_an_empty_ranking() -> None:
    ranking = dossier_turn_ids(pipeline_pb2.BuildDossierResponse(), NODE_KEYS, KEY_TURNS)
    assert (ranking.turn_ids, ranking.source, ranking.items, ranking.unmapped) == ((), "fallback", 0, 0)


# --------------------------------------------------------------------------- baselines


def test_dense_ranks_by_cosine() -> None:
    docs = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    queries = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    assert dense_rankings(docs, queries, ["a", "b", "c"], 2) == [["c", "b"], ["a", "b"]]


def test_bm25_leaves_out_documents_without_a_shared_term() -> None:
    docs = ["Caroline: I went to the support group", "Melanie: painting sunrises", "Melanie: my kids run"]
    ranked = bm25_rankings(docs, ["When did Caroline go to the support groups?", "xyzzy"], ["a", "b", "c"], 3)
    assert ranked == [["a"], []]


async def test_a_kzg_entry_counts_as_alive_only_while_its_ttl_runs_at_the_questions_time() -> None:
    """A replay's entry outlives its TTL in Redis (wall clock); the evidence location must not count it (SPEC §11)."""
    as_of = datetime(2023, 7, 24, 18, 0, tzinfo=UTC)

    class Kzg:
        async def GetEntry(self, request: kzg_pb2.GetEntryRequest, **options: float) -> kzg_pb2.GetEntryResponse:
            if request.kzg_key == "gone":
                raise grpc.aio.AioRpcError(grpc.StatusCode.NOT_FOUND, grpc.aio.Metadata(), grpc.aio.Metadata())
            entry = common_pb2.KzgEntry(kzg_key=request.kzg_key)
            if request.kzg_key != "no-ttl":
                ends = as_of + (timedelta(hours=1) if request.kzg_key == "later" else timedelta(0))
                entry.ablauf_am.FromDatetime(ends)
            return kzg_pb2.GetEntryResponse(entry=entry)

    keys = ["gone", "at-as-of", "later", "no-ttl"]
    alive = await kzg_alive(Kzg(), common_pb2.Pair(user_id="u", character_id="c"), keys, as_of)  # type: ignore[arg-type]
    assert alive == {"later", "no-ttl"}
