"""Recall through all five services (SPEC §11): speakers in what is embedded, memories in their own time,
one recall list over both layers, nothing for a question about something never discussed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.embedding import kzg_embed_text, make_provider
from novaberg_core.timeutil import from_timestamp, to_timestamp
from tests.e2e.helpers import Clients
from tests.polling import eventually

PAIR = common_pb2.Pair(user_id="recall-caroline", character_id="melanie")
PROFILE = common_pb2.PairProfile(user_name="Caroline", character_name="Melanie", sprache="en")
USER, ASSISTANT = common_pb2.BEOBACHTER_USER, common_pb2.BEOBACHTER_ASSISTANT
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a replayed conversation, long before the wall clock


def _analysis(salienz: float, themen: list[str], inhalt: str) -> pipeline_pb2.TurnAnalysis:
    return pipeline_pb2.TurnAnalysis(
        salience=common_pb2.SalienceResult(salienz=salienz, themen=themen, gedaechtnistyp="episodisch", dimension="alltag"),
        inhalt=inhalt,
    )  # fmt: skip


async def test_recall_speaks_of_speakers_in_their_own_time_and_knows_nothing_off_topic(clients: Clients) -> None:
    high_text = "I went to an LGBTQ support group yesterday and it was so powerful."
    observed = await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=PAIR, turn_id="rc:1", beobachter=USER, text=high_text, profile=PROFILE, as_of=to_timestamp(T0),
        analysis=_analysis(0.8, ["support group"], high_text)))  # fmt: skip
    assert observed.kzg.queued_for_promotion
    mid_text = "Painting helps me relax after work, I just finished a lake at sunrise."
    mid = await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=PAIR, turn_id="rc:2", beobachter=ASSISTANT, text=mid_text, as_of=to_timestamp(T0 + timedelta(minutes=1)),
        analysis=_analysis(0.5, ["painting"], mid_text)))  # fmt: skip

    # The KZG entry carries its speaker, and its vector is that of the speaker-prefixed text.
    entry = (await clients.kzg.GetEntry(kzg_pb2.GetEntryRequest(
        pair=PAIR, kzg_key=mid.kzg.kzg_key, include_embedding=True))).entry  # fmt: skip
    assert (entry.sprecher, entry.sprache) == ("Melanie", "en")
    expected = await make_provider("minilm").embed_one(kzg_embed_text(["painting"], mid_text, "Melanie"))
    assert np.asarray(entry.embedding, dtype=np.float32) == pytest.approx(expected, abs=1e-5)

    # Pixie promotes the high turn as of the turn's own time, not the wall clock.
    async def nodes() -> list[lzg_pb2.Node]:
        return list((await clients.lzg.ListNodes(lzg_pb2.ListNodesRequest(pair=PAIR, include_inactive=True))).nodes)

    [node] = await eventually(nodes, lambda found: len(found) == 1, what="the promoted node")
    assert from_timestamp(node.erstellt_am) == T0 and from_timestamp(node.kzg_erstellt_am) == T0
    assert (node.sprecher, node.sprache, node.quell_turn_id) == ("Caroline", "en", "rc:1")

    asked = T0 + timedelta(days=1)
    dossier = await clients.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
        pair=PAIR, turn_id="rc:q1", query_text="When did Caroline go to the LGBTQ support group?",
        as_of=to_timestamp(asked), recall_k=10))  # fmt: skip
    by_turn = {item.turn_id: item for item in dossier.recall}
    assert by_turn["rc:1"].layer == "lzg" and by_turn["rc:1"].knoten_id == node.id
    assert by_turn["rc:1"].speaker == "Caroline" and "lexical" in by_turn["rc:1"].quellen
    assert dossier.recall[0].turn_id == "rc:1" and dossier.lzg_resonanz.anker_anzahl >= 1
    painting = await clients.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
        pair=PAIR, turn_id="rc:q2", query_text="What did Melanie paint?", as_of=to_timestamp(asked), recall_k=10))  # fmt: skip
    assert painting.recall[0].turn_id == "rc:2" and painting.recall[0].layer == "kzg"
    assert painting.recall[0].speaker == "Melanie"

    # Off-topic: no anchor, no recall item (SPEC §11, the seeds' rule behind the anchor threshold).
    off_topic = await clients.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
        pair=PAIR, turn_id="rc:q3", query_text="What is the boiling point of ethanol?", as_of=to_timestamp(asked)))  # fmt: skip
    assert off_topic.lzg_resonanz.anker_anzahl == 0 and list(off_topic.recall) == []
    # A month later the mid entry (14 days) has expired in the conversation's own time; the node stays.
    later = await clients.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
        pair=PAIR, turn_id="rc:q4", query_text="What did Melanie paint?", as_of=to_timestamp(T0 + timedelta(days=30))))  # fmt: skip
    assert "rc:2" not in {item.turn_id for item in later.recall}


async def test_an_answer_is_found_by_the_words_of_the_question_it_answers(clients: Clients) -> None:
    """SPEC §11: a turn that follows the other speaker's question keeps it (``antwort_auf``) through the KZG
    and the promotion, and lexical search reads it — "Adoption agencies." is found by "research"."""
    pair = common_pb2.Pair(user_id="recall-answer", character_id="melanie")
    question = "What did you research last week?"
    await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=pair, turn_id="ra:1", beobachter=USER, text=question, profile=PROFILE, as_of=to_timestamp(T0),
        analysis=_analysis(0.35, ["research"], question)))  # fmt: skip
    answer = "Adoption agencies, I want to give a child a loving home."
    await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=pair, turn_id="ra:2", beobachter=ASSISTANT, text=answer, as_of=to_timestamp(T0 + timedelta(minutes=1)),
        analysis=_analysis(0.8, ["family"], answer)))  # fmt: skip

    async def nodes() -> list[lzg_pb2.Node]:
        return list((await clients.lzg.ListNodes(lzg_pb2.ListNodesRequest(pair=pair))).nodes)

    [node] = await eventually(nodes, lambda found: len(found) == 1, what="the promoted answer")
    assert (node.quell_turn_id, node.antwort_auf) == ("ra:2", question)

    dossier = await clients.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
        pair=pair, turn_id="ra:q", query_text="What did they research?", as_of=to_timestamp(T0 + timedelta(days=1)),
        recall_k=10))  # fmt: skip
    found = {item.turn_id: item for item in dossier.recall}
    assert found["ra:2"].layer == "lzg" and "lexical" in found["ra:2"].quellen
    assert found["ra:2"].antwort_auf == question  # the composer reads the answer with its question
