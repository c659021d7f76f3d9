"""The pipeline service over gRPC with the real KZG and LZG servers (SPEC §6, §7).

What the e2e tests cannot see is checked here: the pipeline's own log records, its time split,
its stored-cluster state, and the Ollama chat analyzer wired into a running service.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import grpc
import grpc.aio
import numpy as np
import pytest
import redis.asyncio as aioredis

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg_core.config import CommonConfig
from novaberg_core.embedding import DEFAULT_USER_NAME, EmbeddingProvider, kzg_embed_text
from novaberg_core.pair_keys import PIPELINE_CLUSTER_KEY, pipeline_cluster_key
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from novaberg_core.timeutil import from_timestamp, to_timestamp
from services.pipeline.config import PipelineConfig
from services.pipeline.server import create_server as create_pipeline_server
from services.pipeline.servicer import MEMORY_MS_KEY, MODEL_MS_KEY
from tests.service.pipeline.conftest import Peers, PipelineUnderTest
from tests.service.pipeline.ollama_chat import running_chat_server

PAIR = common_pb2.Pair(user_id="meister", character_id="nova")
USER, ASSISTANT = common_pb2.BEOBACHTER_USER, common_pb2.BEOBACHTER_ASSISTANT
AS_OF = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)
HIGH_TEXT = "My sister Anna celebrates her birthday on March 12."


def given(salienz: float, themen: list[str], **ei: object) -> pipeline_pb2.TurnAnalysis:
    return pipeline_pb2.TurnAnalysis(
        salience=common_pb2.SalienceResult(
            salienz=salienz, themen=themen, gedaechtnistyp="episodisch", dimension="interessen"
        ),
        ei=common_pb2.EiFields(**ei),  # type: ignore[arg-type]
    )


async def test_observe_writes_session_and_kzg_and_logs_one_turn(
    service: PipelineUnderTest, provider: EmbeddingProvider
) -> None:
    grpc_call = service.pipeline.ObserveTurn(
        pipeline_pb2.ObserveTurnRequest(
            pair=PAIR, turn_id="turn-1", beobachter=USER, text=HIGH_TEXT, as_of=to_timestamp(AS_OF)
        )
    )
    response = await grpc_call
    assert response.analyzed_by_service and response.session_turn_count == 1
    assert response.kzg.tier == kzg_pb2.TIER_HIGH and response.kzg.queued_for_promotion
    analysis = response.analysis
    entry = (
        await service.kzg.GetEntry(kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=response.kzg.kzg_key, include_embedding=True))
    ).entry
    assert entry.beobachter == USER and entry.turn_id == "turn-1"
    assert entry.salienz_eingang == pytest.approx(analysis.salience.salienz)
    assert list(entry.themen) == list(analysis.salience.themen)
    assert list(entry.magnets.entitaet_ids) == list(analysis.magnets.entitaet_ids)
    assert entry.magnets.timeline_id == analysis.magnets.timeline_id
    assert from_timestamp(entry.erstellt_am) == AS_OF
    # The pipeline embedded the KZG embed text itself (SPEC §2) and handed the vector over.
    expected = await provider.embed_one(kzg_embed_text(list(analysis.salience.themen), HIGH_TEXT, DEFAULT_USER_NAME))
    assert np.asarray(entry.embedding, dtype=np.float32) == pytest.approx(expected, abs=1e-6)
    session = await service.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))
    assert [(t.role, t.text, t.turn_id) for t in session.turns] == [("user", HIGH_TEXT, "turn-1")]

    records = await service.records("turn-1")
    arts = [(r.node, r.art) for r in records]
    assert arts[0] == ("observe", "span_start") and arts[-1] == ("observe", "span_end")
    assert ("observe", "eingang") in arts and ("salience", "berechnung") in arts
    assert len({r.span_id for r in records}) == 1
    eingang = next(r for r in records if r.art == "eingang")
    assert eingang.quelle == "meister" and eingang.inhalt["text"] == HIGH_TEXT
    berechnung = next(r for r in records if r.art == "berechnung")
    assert berechnung.inhalt["analyzer"] == "offline"
    assert berechnung.inhalt["cues"] == {
        "personal": True, "emotional": False, "entity": True, "dated": True, "importance": False,
        "detailed": False, "answer": False,
    }  # fmt: skip
    # The session append and the KZG write are logged once, by the KZG, under the turn's id and span.
    assert not any(r.art == "db_write" for r in records)
    kzg_records = await service.peers.records("turn-1")
    written = {(r.node, r.art, r.inhalt["tabelle"]) for r in kzg_records if r.art == "db_write"}
    assert {("kzg_speicher", "db_write", "kzg"), ("session", "db_write", "session")} <= written
    db_write = next(r for r in kzg_records if r.node == "kzg_speicher" and r.art == "db_write")
    assert db_write.inhalt["kzg_key"] == response.kzg.kzg_key and db_write.span_id == records[0].span_id
    gate = next(r for r in kzg_records if r.art == "switch")
    assert (gate.inhalt["entscheidung"], gate.inhalt["ausgang"]) == ("kzg_speicher.salienz_tor", "HIGH")
    assert all(r.erstellt_am == AS_OF for r in records + kzg_records)
    trailing = dict(await grpc_call.trailing_metadata())
    assert float(trailing[MODEL_MS_KEY]) > 0 and float(trailing[MEMORY_MS_KEY]) > 0


async def test_observe_with_given_analysis_skips_the_analyzer(service: PipelineUnderTest) -> None:
    response = await service.pipeline.ObserveTurn(
        pipeline_pb2.ObserveTurnRequest(
            pair=PAIR, turn_id="turn-2", beobachter=ASSISTANT, text="I baked bread with Anna.",
            analysis=given(0.55, ["bread", "anna"], emotion="freude", arousal=0.4, modus="unbekannt"),
        )
    )  # fmt: skip
    assert not response.analyzed_by_service
    assert response.analysis.inhalt == "I baked bread with Anna."
    assert response.kzg.tier == kzg_pb2.TIER_MID
    assert list(response.kzg.canon_rejections) == ["modus=unbekannt"]
    session = await service.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))
    assert [(t.role, t.emotion) for t in session.turns] == [("assistant", "freude")]
    assert not any(r.art == "berechnung" for r in await service.records("turn-2"))


async def test_small_talk_enters_the_session_but_not_the_kzg(service: PipelineUnderTest) -> None:
    response = await service.pipeline.ObserveTurn(
        pipeline_pb2.ObserveTurnRequest(pair=PAIR, turn_id="turn-3", beobachter=USER, text="ok, thanks")
    )
    assert response.analysis.salience.salienz == pytest.approx(0.1)
    assert response.kzg.outcome == kzg_pb2.STORE_OUTCOME_REJECTED_BELOW_GATE
    assert response.session_turn_count == 1
    assert list((await service.lzg.ListEntities(lzg_pb2.ListEntitiesRequest(pair=PAIR))).entities) == []


async def test_dossier_weights_perspectives_and_logs_the_gravitation_decision(service: PipelineUnderTest) -> None:
    texts = {
        USER: "I love baking sourdough bread on Sundays.",
        ASSISTANT: "I told Meister my favourite sourdough bread recipe.",
    }
    for number, (beobachter, text) in enumerate(texts.items()):
        await service.pipeline.ObserveTurn(
            pipeline_pb2.ObserveTurnRequest(
                pair=PAIR, turn_id=f"seed-{number}", beobachter=beobachter, text=text,
                analysis=given(0.6, ["bread", "sourdough"]),
            )
        )  # fmt: skip
    call = service.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(pair=PAIR, turn_id="turn-4", query_text="How do you bake sourdough bread?")
    )
    dossier = await call
    assert dossier.cluster == "paradox" and dossier.gravitation_faktor == pytest.approx(0.10)
    assert {h.hit.entry.beobachter for h in dossier.kzg_hits} == {USER, ASSISTANT}
    # the seeds' hits come whole (the deeper candidates of the recall list come brief)
    assert all(not h.hit.brief and list(h.hit.entry.themen) == ["bread", "sourdough"] for h in dossier.kzg_hits)
    for hit in dossier.kzg_hits:
        weight = 1.0 if hit.hit.entry.beobachter == USER else 0.7
        assert hit.weight == weight and hit.score == pytest.approx(hit.hit.similarity * weight)
    scores = [h.score for h in dossier.kzg_hits]
    assert scores == sorted(scores, reverse=True)
    assert set(dossier.memory_blocks) == {"analysis", "composer"}
    assert dossier.model_ms > 0 and dossier.memory_ms > 0
    assert not dossier.query_vector  # only on request
    records = await service.records("turn-4")
    decision = next(r for r in records if r.art == "switch")
    assert decision.inhalt == {
        "entscheidung": "enricher.gravitation", "ausgang": 0.10,
        "eingang": {"cluster": "paradox", "cluster_gespeichert": False, "anweisung": False, "ziele": 0},
        "massstab": {"cluster_faktor": 0.10, "anweisung_faktor": 0.0},
    }  # fmt: skip
    ausgabe = next(r for r in records if r.art == "ausgabe")
    assert ausgabe.inhalt["lzg_resonanz_ids"] == list(dossier.served_node_ids)
    assert float(dict(await call.trailing_metadata())[MODEL_MS_KEY]) == pytest.approx(dossier.model_ms, abs=1e-3)


async def test_a_stored_cluster_outside_the_table_fails_loudly(service: PipelineUnderTest, peers: Peers) -> None:
    client = aioredis.from_url(peers.redis_url, decode_responses=True)
    try:
        key = pipeline_cluster_key(PAIR)
        await client.set(key, json.dumps({"cluster": "disco", "turn_id": "alt", "gesetzt_am": ""}))
    finally:
        await client.aclose()
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await service.pipeline.BuildDossier(
            pipeline_pb2.BuildDossierRequest(pair=PAIR, turn_id="turn-5", query_text="Hallo")
        )
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "'disco' is not in the cluster table" in (raised.value.details() or "")


async def test_dispatch_records_protocol_cluster_and_turn_roh(service: PipelineUnderTest, peers: Peers) -> None:
    response = await service.pipeline.Dispatch(
        pipeline_pb2.DispatchRequest(
            pair=PAIR, turn_id="turn-6", user_prompt="Wie geht's?", answer_text="I am fine, thank you!",
            cluster="Kissenschlacht", nova_emotion_json='{"emotion": "freude"}', as_of=to_timestamp(AS_OF),
        )
    )  # fmt: skip
    assert response.protokoll.ausgang == lzg_pb2.VERWENDUNG_AUSGANG_OHNE_KANDIDAT
    assert response.cluster_persisted == "kissenschlacht"
    client = aioredis.from_url(peers.redis_url, decode_responses=True)
    try:
        stored = json.loads(str(await client.get(PIPELINE_CLUSTER_KEY.format(user_id="meister", character_id="nova"))))
    finally:
        await client.aclose()
    assert stored == {"cluster": "kissenschlacht", "turn_id": "turn-6", "gesetzt_am": AS_OF.isoformat()}
    records = await service.records("turn-6")
    # The usage protocol is logged once, by the LZG, where it is computed (the pipeline does not repeat it).
    assert not any(r.node == "verwendung" for r in records)
    protokoll = next(r for r in await service.peers.records("turn-6") if r.node == "verwendung")
    assert protokoll.art == "switch" and protokoll.inhalt["entscheidung"] == "verwendung.verstaerken"
    assert protokoll.inhalt["ausgang"] == "ohne_kandidat" == protokoll.inhalt["eingang"]["ausgang"]
    decision = next(r for r in records if r.art == "switch")
    assert decision.inhalt["entscheidung"] == "dispatcher.cluster" and decision.inhalt["ausgang"] == "kissenschlacht"
    answer = next(r for r in records if r.art == "ausgabe")
    assert answer.quelle == "nova" and answer.inhalt == {"text": "I am fine, thank you!"}
    roh = next(r for r in records if r.art == "turn_roh")
    assert roh.inhalt == {
        "user_prompt": "Wie geht's?", "response": "I am fine, thank you!", "user_emotion": None,
        "nova_emotion": {"emotion": "freude"}, "herkunft": "pipeline.dispatch",
    }  # fmt: skip
    dossier = await service.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(pair=PAIR, turn_id="turn-7", query_text="Und jetzt?")
    )
    assert (dossier.cluster, dossier.gravitation_faktor) == ("kissenschlacht", pytest.approx(0.25))


async def test_magnets_of_another_pair_are_refused_before_any_write(service: PipelineUnderTest) -> None:
    stranger = common_pb2.Pair(user_id="fremd", character_id="nova")
    foreign = await service.lzg.UpsertEntity(
        lzg_pb2.UpsertEntityRequest(pair=stranger, entity=lzg_pb2.Entity(name="Anna", typ="person"))
    )
    analysis = given(0.9, ["anna"])
    analysis.magnets.entitaet_ids.append(foreign.entity.id)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await service.pipeline.ObserveTurn(
            pipeline_pb2.ObserveTurnRequest(pair=PAIR, turn_id="turn-8", beobachter=USER, text="Anna!", analysis=analysis)
        )
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"[{foreign.entity.id}] are not entities of this pair" in (raised.value.details() or "")
    assert list((await service.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))).turns) == []
    assert await service.records("turn-8") == []


OLLAMA_ANSWER = {
    "salienz": 0.85, "themen": ["geburtstag", "familie"], "gedaechtnistyp": "episodisch",
    "dimension": "beziehungen", "emotion": "freude", "arousal": 0.5, "modus": "", "intentionen": ["planung"],
    "entitaeten": ["Anna"], "datum": {"datum": "2027-03-12", "praezision": "tag"},
    "inhalt": "Anna hat am 12. März Geburtstag.",
}  # fmt: skip


async def test_ollama_analyzer_in_the_running_service(peers: Peers, provider: EmbeddingProvider) -> None:
    with running_chat_server(json.dumps(OLLAMA_ANSWER)) as chat:
        sink = InMemorySink()
        log = PipelineLog(sink)
        cfg = PipelineConfig(
            common=CommonConfig("pipeline"), kzg_addr=peers.kzg.target, lzg_addr=peers.lzg.target,
            redis_url=peers.redis_url, analyzer="ollama", ollama_url=chat.url, ollama_chat_model="gemma3:4b",
        )  # fmt: skip
        server = await create_pipeline_server(cfg, provider=provider, log=log)
        try:
            async with grpc.aio.insecure_channel(server.target) as channel, grpc.aio.insecure_channel(
                peers.lzg.target
            ) as lzg_channel:
                stub = pipeline_pb2_grpc.PipelineServiceStub(channel)
                response = await stub.ObserveTurn(
                    pipeline_pb2.ObserveTurnRequest(
                        pair=PAIR, turn_id="turn-9", beobachter=USER,
                        text="Meine Schwester Anna hat am 12. März Geburtstag.",
                    )
                )  # fmt: skip
                assert response.analyzed_by_service
                assert response.analysis.salience.salienz == pytest.approx(0.85)
                assert response.analysis.inhalt == "Anna hat am 12. März Geburtstag."
                assert response.kzg.tier == kzg_pb2.TIER_HIGH
                lzg = lzg_pb2_grpc.LzgServiceStub(lzg_channel)
                entities = await lzg.ListEntities(lzg_pb2.ListEntitiesRequest(pair=PAIR))
                assert [(e.id, e.name) for e in entities.entities] == [
                    (response.analysis.magnets.entitaet_ids[0], "Anna")
                ]
                timelines = await lzg.ListTimelines(lzg_pb2.ListTimelinesRequest(pair=PAIR))
                assert [(from_timestamp(t.zeitpunkt), t.praezision) for t in timelines.timelines] == [
                    (datetime(2027, 3, 12, tzinfo=UTC), "tag")
                ]
                assert chat.requests[-1]["format"] == "json"

                chat.content = "Gerne! Die Analyse lautet: ..."
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await stub.ObserveTurn(
                        pipeline_pb2.ObserveTurnRequest(
                            pair=PAIR, turn_id="turn-10", beobachter=USER, text="Und Tom kommt auch."
                        )
                    )
                assert raised.value.code() == grpc.StatusCode.UNAVAILABLE
                assert "invalid answer: the answer is not JSON" in (raised.value.details() or "")
        finally:
            await server.stop(None)
    records = [r for r in sink.records if r.turn_id in ("turn-9", "turn-10")]
    assert any(r.art == "token" and r.inhalt["input_tokens"] == 321 for r in records)
    assert next(r for r in records if r.art == "berechnung").inhalt["analyzer"] == "ollama"
    failed = [r for r in records if r.turn_id == "turn-10"]
    assert [r.art for r in failed if r.art == "fehler"] == ["fehler"]
    assert not any(r.art == "db_write" for r in failed)


class LzgWithoutReinforcement(lzg_pb2_grpc.LzgServiceServicer):
    """The real LZG's model, but every ``ReinforceUsed`` fails as an unreachable LZG does."""

    def __init__(self, lzg: lzg_pb2_grpc.LzgServiceStub) -> None:
        self.lzg = lzg

    async def GetModel(self, request: common_pb2.GetModelRequest, context: grpc.aio.ServicerContext) -> common_pb2.ModelInfo:  # type: ignore[override]
        return await self.lzg.GetModel(request)

    async def ReinforceUsed(  # type: ignore[override]
        self, request: lzg_pb2.ReinforceUsedRequest, context: grpc.aio.ServicerContext
    ) -> lzg_pb2.ReinforceUsedResponse:
        await context.abort(grpc.StatusCode.UNAVAILABLE, "the LZG is down")
        raise AssertionError("abort returns no answer")


async def test_dispatch_logs_the_usage_record_itself_when_the_lzg_gives_no_answer(
    peers: Peers, provider: EmbeddingProvider
) -> None:
    """The LZG logs the usage protocol; when it gave no answer it logged none, so the pipeline records it."""
    lzg_server = grpc.aio.server()
    async with grpc.aio.insecure_channel(peers.lzg.target) as real_lzg:
        lzg_pb2_grpc.add_LzgServiceServicer_to_server(
            LzgWithoutReinforcement(lzg_pb2_grpc.LzgServiceStub(real_lzg)), lzg_server
        )
        port = lzg_server.add_insecure_port("localhost:0")
        await lzg_server.start()
        sink = InMemorySink()
        log = PipelineLog(sink)
        cfg = PipelineConfig(
            common=CommonConfig("pipeline"), kzg_addr=peers.kzg.target, lzg_addr=f"localhost:{port}",
            redis_url=peers.redis_url,
        )  # fmt: skip
        server = await create_pipeline_server(cfg, provider=provider, log=log)
        try:
            async with grpc.aio.insecure_channel(server.target) as channel:
                response = await pipeline_pb2_grpc.PipelineServiceStub(channel).Dispatch(
                    pipeline_pb2.DispatchRequest(
                        pair=PAIR, turn_id="turn-10", user_prompt="Und?", answer_text="Nichts Neues.",
                        cluster="bier", as_of=to_timestamp(AS_OF), answer_analysis=given(0.6, ["neuigkeiten"]),
                    )
                )  # fmt: skip
            await log.flush()
        finally:
            await server.stop(None)
            await lzg_server.stop(None)
    assert response.protokoll.ausgang == lzg_pb2.VERWENDUNG_AUSGANG_DB_FEHLER
    assert [f for f in response.fehler if f.startswith("usage reinforcement:")], list(response.fehler)
    records = [r for r in sink.records if r.turn_id == "turn-10"]
    usage = [r for r in records if r.node == "verwendung"]
    assert [(r.art, r.inhalt["ausgang"]) for r in usage] == [("berechnung", "VERWENDUNG_AUSGANG_DB_FEHLER")]
    assert "the LZG is down" in usage[0].inhalt["error"]
    assert not any(r.node == "verwendung" for r in await peers.records("turn-10"))


async def test_a_question_naming_a_date_finds_the_kzg_entries_of_that_time(service: PipelineUnderTest) -> None:
    """SPEC §11: KZG retrieval is hybrid like the LZG's — the question's date reaches the KZG too."""
    turns = {
        "march-3": (datetime(2026, 3, 3, 19, 0, tzinfo=UTC), "We repainted the whole kitchen in a bright yellow."),
        "feb-5": (datetime(2026, 2, 5, 19, 0, tzinfo=UTC), "Our neighbours got a very loud parrot."),
    }
    for turn_id, (made, text) in turns.items():
        await service.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
            pair=PAIR, turn_id=turn_id, beobachter=USER, text=text, as_of=to_timestamp(made),
            analysis=given(0.8, [turn_id]),
        ))  # fmt: skip
    dossier = await service.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
        pair=PAIR, turn_id="ask", query_text="What did I do on March 3, 2026?",
        as_of=to_timestamp(datetime(2026, 3, 6, 12, 0, tzinfo=UTC)),
    ))  # fmt: skip
    found = {item.turn_id: list(item.quellen) for item in dossier.recall if item.layer == "kzg"}
    assert "timeline" in found["march-3"]  # made on the named day
    assert "timeline" not in found.get("feb-5", [])  # 26 days before it: outside a day's ± 21 days
