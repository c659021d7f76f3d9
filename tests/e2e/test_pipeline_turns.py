"""Whole turns through the five services as processes over gRPC, on real stores (SPEC §6, §7, §10).

The story of one pair: two memories about Anna become LZG nodes after promotion (one analysed
by the pipeline's offline analyzer, one with the caller's salience result), a later question
finds the first directly and the second through the shared entity, the answer reinforces only
the memory it uses, and the conversation mode survives a restart of the pipeline. Other pairs
check isolation, the imperative override and that bad input changes nothing.

Texts are English because the CI embedding model (all-MiniLM-L6-v2) is; the similarities the
story relies on (measured with that model) are noted where they matter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import grpc
import grpc.aio
import numpy as np
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.timeutil import from_timestamp, to_timestamp
from novaberg_dev.stack import Stack
from tests.e2e.helpers import Clients
from tests.polling import eventually

USER = common_pb2.BEOBACHTER_USER
ASSISTANT = common_pb2.BEOBACHTER_ASSISTANT

STORY = common_pb2.Pair(user_id="e2e-meister", character_id="nova")
OTHER = common_pb2.Pair(user_id="e2e-gast", character_id="nova")

# MiniLM, nodes embedded as "Nutzer: …" (recipe sprecher/1): cos(QUESTION, A) = 0.70 (an anchor),
# cos(QUESTION, B) = 0.16 (below the anchor threshold 0.42): B can only be reached through its edge to A.
# cos(ANSWER, A) = 0.76 ≥ usage 0.71, cos(ANSWER, B) = 0.10.
A_TEXT = "My sister Anna celebrates her birthday on March 12."
B_TEXT = "Anna works as a nurse at the hospital in Hamburg."
QUESTION = "When is my sister's birthday?"
ANSWER = "Your sister celebrates her birthday on March 12."


@dataclass(frozen=True)
class Story:
    a_key: str
    b_key: str
    a_id: int
    b_id: int
    anna_id: int


async def _nodes(clients: Clients, pair: common_pb2.Pair) -> list[lzg_pb2.Node]:
    response = await clients.lzg.ListNodes(lzg_pb2.ListNodesRequest(pair=pair, include_inactive=True))
    return list(response.nodes)


async def _promoted(clients: Clients, pair: common_pb2.Pair, count: int) -> list[lzg_pb2.Node]:
    return await eventually(
        lambda: _nodes(clients, pair), lambda nodes: len(nodes) >= count, what=f"{count} promoted nodes"
    )


@pytest.fixture(scope="module")
async def story(stack: Stack) -> Story:
    clients = Clients.connect(stack.addresses, stack.client_tls)
    try:
        a = await clients.pipeline.ObserveTurn(
            pipeline_pb2.ObserveTurnRequest(pair=STORY, turn_id="story-a", beobachter=USER, text=A_TEXT)
        )
        # Offline rules: personal "my" + entity "Anna" + dated "March 12" → 0.3 + 0.25 + 0.15 + 0.15 = 0.85
        assert a.analyzed_by_service
        assert a.analysis.salience.salienz == pytest.approx(0.85)
        assert a.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED
        assert a.kzg.tier == kzg_pb2.TIER_HIGH and a.kzg.queued_for_promotion
        assert len(a.analysis.magnets.entitaet_ids) == 1 and a.analysis.magnets.HasField("timeline_id")
        anna_id = a.analysis.magnets.entitaet_ids[0]
        b = await clients.pipeline.ObserveTurn(
            pipeline_pb2.ObserveTurnRequest(
                pair=STORY, turn_id="story-b", beobachter=USER, text=B_TEXT,
                analysis=pipeline_pb2.TurnAnalysis(
                    salience=common_pb2.SalienceResult(
                        salienz=0.8, themen=["anna", "nurse", "hospital"], gedaechtnistyp="semantisch",
                        dimension="beziehungen",
                    ),
                    ei=common_pb2.EiFields(emotion="vertrauen", arousal=0.3, intentionen=["information_teilen"]),
                    magnets=common_pb2.Magnets(entitaet_ids=[anna_id]),
                ),
            )
        )  # fmt: skip
        assert not b.analyzed_by_service and b.kzg.queued_for_promotion
        try:
            nodes = {n.inhalt: n for n in await _promoted(clients, STORY, 2)}
        except AssertionError as error:
            raise AssertionError(f"{error}\n--- pixie log:\n{stack.log_tail('pixie')}") from None
        return Story(a.kzg.kzg_key, b.kzg.kzg_key, nodes[A_TEXT].id, nodes[B_TEXT].id, anna_id)
    finally:
        await clients.close()


async def test_high_user_turn_becomes_a_node_and_leaves_the_kzg(clients: Clients, story: Story) -> None:
    node = (await clients.lzg.GetNode(lzg_pb2.GetNodeRequest(pair=STORY, node_id=story.a_id))).node
    assert node.kzg_quell_key == story.a_key
    assert node.beobachter == USER
    assert list(node.magnets.entitaet_ids) == [story.anna_id]
    entities = await clients.lzg.ListEntities(lzg_pb2.ListEntitiesRequest(pair=STORY, ids=[story.anna_id]))
    assert [e.name for e in entities.entities] == ["Anna"]
    timelines = await clients.lzg.ListTimelines(lzg_pb2.ListTimelinesRequest(pair=STORY))
    march = [t for t in timelines.timelines if t.id == node.magnets.timeline_id]
    assert march and march[0].praezision == "tag"
    assert (from_timestamp(march[0].zeitpunkt).month, from_timestamp(march[0].zeitpunkt).day) == (3, 12)

    async def gone(key: str) -> grpc.StatusCode | None:
        try:
            await clients.kzg.GetEntry(kzg_pb2.GetEntryRequest(pair=STORY, kzg_key=key))
        except grpc.aio.AioRpcError as error:
            return error.code()
        return None

    for key in (story.a_key, story.b_key):

        async def probe(kzg_key: str = key) -> grpc.StatusCode | None:
            return await gone(kzg_key)

        assert await eventually(probe, lambda code: code == grpc.StatusCode.NOT_FOUND) == grpc.StatusCode.NOT_FOUND


async def test_observe_logs_under_one_turn_id(clients: Clients, story: Story) -> None:
    records = await eventually(
        lambda: clients.log.Query(log_pb2.QueryRequest(turn_id="story-a")),
        lambda r: {("observe", "span_end"), ("kzg_speicher", "db_write"), ("session", "db_write")}
        <= {(x.node, x.art) for x in r.records},
        what="the observe records of story-a",
    )
    by_art = {(r.node, r.art) for r in records.records}
    assert ("observe", "eingang") in by_art and ("salience", "berechnung") in by_art
    # The session append and the KZG write are logged once, by the KZG, where they happen.
    assert ("kzg_speicher", "db_write") in by_art and ("session", "db_write") in by_art
    assert ("observe", "db_write") not in by_art
    berechnung = next(r for r in records.records if r.art == "berechnung" and r.node == "salience")
    assert json.loads(berechnung.inhalt_json)["analyzer"] == "offline"
    assert all(r.user_id == STORY.user_id and r.character_id == STORY.character_id for r in records.records)


async def test_dossier_has_the_memory_with_its_speaker_and_the_entity_path(clients: Clients, story: Story) -> None:
    dossier = await clients.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(
            pair=STORY, turn_id="story-question", query_text=QUESTION, user_name="Meister", character_name="Nova"
        )
    )
    assert dossier.cluster == "paradox" and dossier.gravitation_faktor == pytest.approx(0.10)
    memories = {m.knoten_id: m for m in dossier.lzg_resonanz.erinnerungen}
    assert story.a_id in memories and story.b_id in memories
    direct, associated = memories[story.a_id], memories[story.b_id]
    assert direct.schale == 0 and not direct.pfad and direct.beobachter == USER
    assert associated.schale == 1 and len(associated.pfad) == 1
    step = associated.pfad[0]
    assert step.von_knoten_id == story.a_id
    assert "entitaet" in step.verbindungs_gruende and list(step.geteilte_entitaet_ids) == [story.anna_id]
    assert list(dossier.served_node_ids) == [m.knoten_id for m in dossier.lzg_resonanz.erinnerungen]
    analysis = dossier.memory_blocks["analysis"]
    assert f'"{A_TEXT}"\nSprecher: Meister' in analysis
    assert "gemeinsame Entitaet Anna" in analysis
    assert "Sprecher: Person B" in dossier.memory_blocks["composer"]
    assert dossier.model_ms > 0 and dossier.memory_ms > 0


async def test_dispatch_reinforces_the_used_memory_only(clients: Clients, story: Story) -> None:
    async def node(node_id: int) -> lzg_pb2.Node:
        return (await clients.lzg.GetNode(lzg_pb2.GetNodeRequest(pair=STORY, node_id=node_id))).node

    before_a, before_b = await node(story.a_id), await node(story.b_id)
    response = await clients.pipeline.Dispatch(
        pipeline_pb2.DispatchRequest(
            pair=STORY, turn_id="story-answer", user_prompt=QUESTION, answer_text=ANSWER, cluster="Glut",
            served_node_ids=[story.a_id, story.b_id], user_emotion_json='{"emotion": "erwartung"}',
        )
    )  # fmt: skip
    protokoll = response.protokoll
    assert protokoll.ausgang == lzg_pb2.VERWENDUNG_AUSGANG_GERECHNET
    assert list(protokoll.verwendet) == [story.a_id]
    assert {n.knoten_id for n in protokoll.naehen_alle} == {story.a_id, story.b_id}
    after_a, after_b = await node(story.a_id), await node(story.b_id)
    assert after_a.gewicht_roh == pytest.approx(before_a.gewicht_roh + 0.1)
    assert after_a.haeufigkeit == before_a.haeufigkeit + 1
    assert (after_b.gewicht_roh, after_b.haeufigkeit) == (before_b.gewicht_roh, before_b.haeufigkeit)
    assert response.cluster_persisted == "glut"
    assert response.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED
    own = await clients.kzg.GetEntry(kzg_pb2.GetEntryRequest(pair=STORY, kzg_key=response.kzg.kzg_key))
    assert own.entry.beobachter == ASSISTANT and own.entry.inhalt == ANSWER
    session = await clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=STORY))
    assert [t.role for t in session.turns][-1] == "assistant"
    roh = await eventually(
        lambda: clients.log.Query(log_pb2.QueryRequest(turn_id="story-answer", art="turn_roh")),
        lambda r: len(r.records) == 1, what="turn_roh of story-answer",
    )
    inhalt = json.loads(roh.records[0].inhalt_json)
    assert (inhalt["user_prompt"], inhalt["response"]) == (QUESTION, ANSWER)
    assert inhalt["user_emotion"] == {"emotion": "erwartung"}


async def test_restart_keeps_the_previous_cluster(stack: Stack, story: Story) -> None:
    await stack.stop_service("pipeline")
    stack.start_service("pipeline")
    await stack.wait_serving("pipeline")
    clients = Clients.connect(stack.addresses, stack.client_tls)
    try:
        dossier = await clients.pipeline.BuildDossier(
            pipeline_pb2.BuildDossierRequest(pair=STORY, turn_id="story-after-restart", query_text=QUESTION)
        )
    finally:
        await clients.close()
    assert dossier.cluster == "glut"
    assert dossier.gravitation_faktor == pytest.approx(0.30)


def _unit(seed: int) -> list[float]:
    vector = np.random.default_rng(seed).normal(size=384)
    return (vector / np.linalg.norm(vector)).astype(np.float32).tolist()


async def test_anweisung_searches_with_the_raw_query_vector(clients: Clients) -> None:
    pair = common_pb2.Pair(user_id="e2e-auftrag", character_id="nova")
    goals = [pipeline_pb2.ActivatedGoal(embedding=_unit(1), aktivierungs_staerke=0.9)]
    shifted = await clients.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(
            pair=pair, turn_id="auftrag-1", query_text="Put the dentist appointment on Friday.", goals=goals,
            intentionen=["planung"], include_vectors=True,
        )
    )  # fmt: skip
    override = await clients.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(
            pair=pair, turn_id="auftrag-2", query_text="Put the dentist appointment on Friday.", goals=goals,
            intentionen=["anweisung"], include_vectors=True,
        )
    )  # fmt: skip
    assert shifted.gravitation_faktor == pytest.approx(0.10) and override.gravitation_faktor == 0.0
    assert list(override.search_vector) == list(override.query_vector)
    assert len(override.query_vector) == 384
    assert list(shifted.query_vector) == list(override.query_vector)
    cosine = float(np.dot(shifted.search_vector, shifted.query_vector))
    assert cosine < 0.999


async def test_two_pairs_never_see_each_others_memories(clients: Clients, story: Story) -> None:
    other = await clients.pipeline.ObserveTurn(
        pipeline_pb2.ObserveTurnRequest(pair=OTHER, turn_id="other-a", beobachter=USER, text=A_TEXT)
    )
    assert other.kzg.queued_for_promotion
    assert list(other.analysis.magnets.entitaet_ids) != [story.anna_id]  # its own "Anna"
    other_ids = {n.id for n in await _promoted(clients, OTHER, 1)}
    story_ids = {n.id for n in await _nodes(clients, STORY)}
    assert not other_ids & story_ids
    for pair, own, foreign in ((OTHER, other_ids, story_ids), (STORY, story_ids, other_ids)):
        dossier = await clients.pipeline.BuildDossier(
            pipeline_pb2.BuildDossierRequest(pair=pair, turn_id=f"iso-{pair.user_id}", query_text=QUESTION)
        )
        assert set(dossier.served_node_ids) <= own and not set(dossier.served_node_ids) & foreign
        assert all(h.hit.entry.pair == pair for h in dossier.kzg_hits)
        assert dossier.served_node_ids
    before = (await clients.lzg.GetNode(lzg_pb2.GetNodeRequest(pair=STORY, node_id=story.a_id))).node
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await clients.pipeline.Dispatch(
            pipeline_pb2.DispatchRequest(
                pair=OTHER, turn_id="other-answer", answer_text=ANSWER, cluster="bier",
                served_node_ids=[story.a_id],
            )
        )  # fmt: skip
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    assert f"served_node_ids [{story.a_id}] are not nodes of this pair" in (raised.value.details() or "")
    after = (await clients.lzg.GetNode(lzg_pb2.GetNodeRequest(pair=STORY, node_id=story.a_id))).node
    assert (after.gewicht_roh, after.haeufigkeit) == (before.gewicht_roh, before.haeufigkeit)
    session = await clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=OTHER))
    assert [t.role for t in session.turns] == ["user"]  # the refused dispatch added no answer


async def test_replayed_turn_uses_its_as_of(clients: Clients) -> None:
    pair = common_pb2.Pair(user_id="e2e-rueckblick", character_id="nova")
    as_of = datetime(2026, 2, 27, 9, 30, tzinfo=UTC)
    observed = await clients.pipeline.ObserveTurn(
        pipeline_pb2.ObserveTurnRequest(
            pair=pair, turn_id="rueckblick-1", beobachter=USER, as_of=to_timestamp(as_of),
            text="Tomorrow Rosa travels to Vienna.",  # entity + dated → 0.6, MID: stays in the KZG
        )
    )  # fmt: skip
    assert observed.kzg.tier == kzg_pb2.TIER_MID
    entry = await clients.kzg.GetEntry(kzg_pb2.GetEntryRequest(pair=pair, kzg_key=observed.kzg.kzg_key))
    assert from_timestamp(entry.entry.erstellt_am) == as_of
    timelines = await clients.lzg.ListTimelines(lzg_pb2.ListTimelinesRequest(pair=pair))
    assert [from_timestamp(t.zeitpunkt) for t in timelines.timelines] == [datetime(2026, 2, 28, tzinfo=UTC)]


async def test_relative_dates_count_on_the_pairs_calendar(clients: Clients) -> None:
    """A pair in Berlin says "yesterday" at 00:30 on 1 March (23:30 UTC on 28 February): 28 February,
    not 27; the zone is the profile's, given once and kept for the pair's later turns and questions."""
    pair = common_pb2.Pair(user_id="e2e-berlin", character_id="nova")
    as_of = datetime(2026, 2, 28, 23, 30, tzinfo=UTC)
    observed = await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=pair, turn_id="berlin-1", beobachter=USER, as_of=to_timestamp(as_of),
        text="Yesterday Rosa travelled to Vienna.", profile=common_pb2.PairProfile(zeitzone="Europe/Berlin"),
    ))  # fmt: skip
    [timeline] = (await clients.lzg.ListTimelines(lzg_pb2.ListTimelinesRequest(
        pair=pair, ids=[observed.analysis.magnets.timeline_id]))).timelines  # fmt: skip
    assert (from_timestamp(timeline.zeitpunkt), timeline.praezision) == (datetime(2026, 2, 28, tzinfo=UTC), "tag")
    later = await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=pair, turn_id="berlin-2", beobachter=USER, as_of=to_timestamp(as_of + timedelta(minutes=1)),
        text="Today Rosa visits the Prater.",
    ))  # fmt: skip
    [today] = (await clients.lzg.ListTimelines(lzg_pb2.ListTimelinesRequest(
        pair=pair, ids=[later.analysis.magnets.timeline_id]))).timelines  # fmt: skip
    assert from_timestamp(today.zeitpunkt) == datetime(2026, 3, 1, tzinfo=UTC)  # the stored zone, not UTC
    # A question reads its dates on the same calendar (the dossier logs the date it searched for).
    await clients.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
        pair=pair, turn_id="berlin-q", query_text="What did Rosa do yesterday?",
        as_of=to_timestamp(as_of + timedelta(days=1)),
    ))  # fmt: skip
    records = await eventually(
        lambda: clients.log.Query(log_pb2.QueryRequest(turn_id="berlin-q")),
        lambda r: any(x.node == "enricher" and x.art == "eingang" for x in r.records), what="the dossier's input record",
    )
    [asked] = [r for r in records.records if r.node == "enricher" and r.art == "eingang"]
    datum = json.loads(asked.inhalt_json)["datum"]
    assert (datum["zeitpunkt"], datum["praezision"]) == ("2026-03-01T00:00:00+00:00", "tag")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
            pair=pair, turn_id="berlin-3", beobachter=USER, text="Hallo.",
            profile=common_pb2.PairProfile(zeitzone="Europe/Berlni"),
        ))  # fmt: skip
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "profile.zeitzone: 'Europe/Berlni' is no IANA time zone" in (refused.value.details() or "")


async def test_a_turn_that_answers_the_other_speakers_question_is_kept_as_asked_for(clients: Clients) -> None:
    """The offline analyzer's ``answer`` cue (+0.4, HIGH by itself) from the session's turn before, the batch's order and
    Dispatch's user prompt; a session expired in turn time (4 h idle) holds no question any more."""
    reply = "Up to the lake behind the village."  # no cue alone: 0.3, MINIMUM
    question = "Where did you and Anna go hiking?"
    pair = common_pb2.Pair(user_id="e2e-antwort", character_id="nova")
    t0 = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)

    async def observe(turn_id: str, beobachter: common_pb2.Beobachter, text: str, at: datetime) -> pipeline_pb2.ObserveTurnResponse:
        return await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
            pair=pair, turn_id=turn_id, beobachter=beobachter, text=text, as_of=to_timestamp(at)))  # fmt: skip

    alone = await observe("antwort-0", USER, reply, t0)
    assert (alone.analysis.salience.salienz, alone.kzg.tier) == (pytest.approx(0.3), kzg_pb2.TIER_MINIMUM)
    await observe("antwort-1", ASSISTANT, question, t0 + timedelta(minutes=1))
    answered = await observe("antwort-2", USER, reply, t0 + timedelta(minutes=2))
    assert (answered.analysis.salience.salienz, answered.kzg.tier) == (pytest.approx(0.7), kzg_pb2.TIER_HIGH)
    await observe("antwort-3", ASSISTANT, question, t0 + timedelta(minutes=3))
    late = await observe("antwort-4", USER, reply, t0 + timedelta(minutes=3, hours=5))
    assert late.analysis.salience.salienz == pytest.approx(0.3)  # the session had expired: a new one

    batch = await clients.pipeline.ObserveTurns(pipeline_pb2.ObserveTurnsRequest(
        pair=common_pb2.Pair(user_id="e2e-antwort-batch", character_id="nova"),
        turns=[pipeline_pb2.ObservedTurn(turn_id=f"antwort-b{i}", beobachter=who, text=text,
                                         as_of=to_timestamp(t0 + timedelta(minutes=i)))
               for i, (who, text) in enumerate([(USER, reply), (ASSISTANT, question), (USER, reply), (USER, reply)])],
    ))  # fmt: skip
    assert [r.analysis.salience.salienz for r in batch.results][::2] == [pytest.approx(0.3), pytest.approx(0.7)]
    assert batch.results[3].analysis.salience.salienz == pytest.approx(0.3)  # follows the user's own turn

    dispatched = await clients.pipeline.Dispatch(pipeline_pb2.DispatchRequest(
        pair=common_pb2.Pair(user_id="e2e-antwort-dispatch", character_id="nova"), turn_id="antwort-d",
        user_prompt="Where did we go hiking last time?", answer_text=reply, cluster="bier",
    ))  # fmt: skip
    assert dispatched.kzg.tier == kzg_pb2.TIER_HIGH

    # Each answer keeps the question it answers for lexical search (antwort_auf), into the LZG (SPEC §11).
    async def promoted(user_id: str, turn_id: str) -> str:
        pair = common_pb2.Pair(user_id=user_id, character_id="nova")

        async def listed() -> lzg_pb2.ListNodesResponse:
            return await clients.lzg.ListNodes(lzg_pb2.ListNodesRequest(pair=pair))

        found = await eventually(listed, lambda r: any(n.quell_turn_id == turn_id for n in r.nodes), what=turn_id)
        return next(n.antwort_auf for n in found.nodes if n.quell_turn_id == turn_id)

    assert await promoted("e2e-antwort", "antwort-2") == question
    assert await promoted("e2e-antwort-batch", "antwort-b2") == question
    assert await promoted("e2e-antwort-dispatch", "antwort-d") == "Where did we go hiking last time?"


async def test_bad_input_gets_a_precise_status_and_writes_nothing(clients: Clients, story: Story) -> None:
    pair = common_pb2.Pair(user_id="e2e-boese", character_id="nova")
    bad_pair = common_pb2.Pair(user_id="e2e:boese", character_id="nova")
    good_salience = common_pb2.SalienceResult(salienz=0.9, themen=["x"], dimension="alltag")
    observe = pipeline_pb2.ObserveTurnRequest
    dossier = pipeline_pb2.BuildDossierRequest
    dispatch = pipeline_pb2.DispatchRequest
    cases = [
        (clients.pipeline.ObserveTurn, observe(turn_id="bad-1", beobachter=USER, text="Hallo"), "pair is required"),
        (clients.pipeline.ObserveTurn, observe(pair=bad_pair, turn_id="bad-2", beobachter=USER, text="Hallo"),
         "must not contain ':'"),
        (clients.pipeline.ObserveTurn, observe(pair=pair, turn_id="bad-3", text="Hallo"), "beobachter must be"),
        (clients.pipeline.ObserveTurn, observe(pair=pair, turn_id="bad-4", beobachter=USER, text=" "),
         "text must not be empty"),
        (clients.pipeline.ObserveTurn, observe(
            pair=pair, turn_id="bad-5", beobachter=USER, text="Anna",
            analysis=pipeline_pb2.TurnAnalysis(salience=common_pb2.SalienceResult(salienz=1.5))),
         "analysis.salience.salienz must lie within 0..1"),
        (clients.pipeline.ObserveTurn, observe(
            pair=pair, turn_id="bad-6", beobachter=USER, text="Anna",
            analysis=pipeline_pb2.TurnAnalysis(salience=good_salience, magnets=common_pb2.Magnets(entitaet_ids=[story.anna_id]))),
         f"entitaet_ids [{story.anna_id}] are not entities of this pair"),
        (clients.pipeline.BuildDossier, dossier(pair=pair, turn_id="bad-7", query_text="x", readers=["responder"]),
         "unknown reader 'responder'"),
        (clients.pipeline.BuildDossier, dossier(
            pair=pair, turn_id="bad-8", query_text="x",
            goals=[pipeline_pb2.ActivatedGoal(embedding=[0.5, 0.5], aktivierungs_staerke=1.0)]),
         "goals[0].embedding has 2 values; the embedding model needs 384"),
        (clients.pipeline.BuildDossier, dossier(pair=pair, turn_id="", query_text="x"), "turn_id must not be empty"),
        (clients.pipeline.Dispatch, dispatch(pair=pair, turn_id="bad-9", answer_text="Ja.", cluster="disco"),
         "unknown cluster 'disco'"),
        (clients.pipeline.Dispatch, dispatch(pair=pair, turn_id="bad-10", answer_text="", cluster="bier"),
         "answer_text must not be empty"),
        (clients.pipeline.Dispatch, dispatch(
            pair=pair, turn_id="bad-11", answer_text="Ja.", cluster="bier", nova_emotion_json="{kaputt"),
         "nova_emotion_json is not JSON"),
        (clients.pipeline.Dispatch, dispatch(
            pair=pair, turn_id="bad-12", answer_text="Ja.", cluster="bier", served_node_ids=[-3]),
         "served_node_ids[0] must not be negative"),
    ]  # fmt: skip
    cases.append((
        clients.pipeline.ObserveTurn,
        observe(
            pair=pair, turn_id="bad-14", beobachter=USER, text="Anna",
            analysis=pipeline_pb2.TurnAnalysis(salience=common_pb2.SalienceResult(salienz=0.9, themen=["anna"])),
        ),
        "analysis.salience.dimension must not be empty",
    ))  # fmt: skip
    cases.append((
        clients.pipeline.Dispatch,
        dispatch(pair=pair, turn_id="bad-13", answer_text="Ja.", cluster="bier", served_node_ids=[story.a_id]),
        f"served_node_ids [{story.a_id}] are not nodes of this pair",
    ))  # fmt: skip
    for call, request, fragment in cases:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await call(request)
        expected = grpc.StatusCode.NOT_FOUND if "are not nodes" in fragment else grpc.StatusCode.INVALID_ARGUMENT
        assert raised.value.code() == expected, (request, raised.value.details())
        assert fragment in (raised.value.details() or ""), (fragment, raised.value.details())

    session = await clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=pair))
    assert list(session.turns) == []
    hits = await clients.kzg.Retrieve(kzg_pb2.RetrieveRequest(pair=pair, query_text="Anna Hallo Ja"))
    assert list(hits.hits) == []
    assert list((await clients.lzg.ListEntities(lzg_pb2.ListEntitiesRequest(pair=pair))).entities) == []
    assert list((await clients.lzg.ListTimelines(lzg_pb2.ListTimelinesRequest(pair=pair))).timelines) == []
    assert await _nodes(clients, pair) == []
    fresh = await clients.pipeline.BuildDossier(dossier(pair=pair, turn_id="good-after-bad", query_text="Hallo"))
    assert fresh.cluster == "paradox"  # no cluster was persisted
    await eventually(  # the good call's records arrive; the refused calls left none
        lambda: clients.log.Query(log_pb2.QueryRequest(turn_id="good-after-bad")),
        lambda r: any(x.art == "span_end" for x in r.records), what="the log records of good-after-bad",
    )
    for number in range(1, 15):
        refused = await clients.log.Query(log_pb2.QueryRequest(turn_id=f"bad-{number}"))
        assert list(refused.records) == [], number
