"""The KZG service over gRPC: a real server on port 0, real channels, the embedded Redis."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from redis.asyncio import Redis

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg_core.embedding import EmbeddingProvider, kzg_embed_text, profile_for
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from services.kzg.domain import KZG_TTL_HIGH_SEKUNDEN, salienz_berechnen
from tests.redis_values import as_bytes

PAIR = common_pb2.Pair(user_id="anna@example.org", character_id="nova")
OTHER = common_pb2.Pair(user_id="ben", character_id="nova")
DIRTY_KEY = f"hash_dirty:{PAIR.user_id}:{PAIR.character_id}"
"""The pair's hash_dirty marker, spelt out here rather than taken from the store module."""


def _store(salienz: float, inhalt: str, themen: list[str], **kwargs: object) -> kzg_pb2.StoreEntryRequest:
    fields: dict[str, object] = {
        "pair": PAIR,
        "beobachter": common_pb2.BEOBACHTER_USER,
        "inhalt": inhalt,
        "salience": common_pb2.SalienceResult(salienz=salienz, themen=themen, gedaechtnistyp="episodisch"),
        "turn": common_pb2.TurnContext(turn_id="turn-1"),
        "writer": "test",
        **kwargs,
    }
    return kzg_pb2.StoreEntryRequest(**fields)  # type: ignore[arg-type]


async def test_store_retrieve_get_delete_over_grpc(
    kzg_stub: kzg_pb2_grpc.KzgServiceStub, provider: EmbeddingProvider
) -> None:
    stored = await kzg_stub.StoreEntry(_store(
        0.7, "Anna plays chess every Sunday with her grandfather in the park.", ["Schach"],
        ei=common_pb2.EiFields(emotion="freude", modus="Alltag", intentionen=["planung", "quatsch"]),
        magnets=common_pb2.Magnets(entitaet_ids=[2, 2, 9], timeline_id=4),
    ))
    assert stored.outcome == kzg_pb2.STORE_OUTCOME_STORED
    assert stored.tier == kzg_pb2.TIER_HIGH and stored.ttl_seconds == KZG_TTL_HIGH_SEKUNDEN
    assert stored.salienz == salienz_berechnen(0.7, 1)
    assert stored.queued_for_promotion
    assert list(stored.canon_rejections) == ["modus=Alltag", "intentionen=quatsch"]
    await kzg_stub.StoreEntry(_store(0.5, "Anna's dog Bruno is afraid of thunderstorms.", ["Hund"]))
    reinforcing = await kzg_stub.StoreEntry(_store(0.4, "Anna won a chess tournament.", ["schach"]))
    assert reinforcing.reinforced_count == 1

    response = await kzg_stub.Retrieve(kzg_pb2.RetrieveRequest(
        pair=PAIR, query_text="Who does Anna play chess with?", beobachter=common_pb2.BEOBACHTER_USER
    ))
    assert response.threshold == profile_for(provider.model_id).kzg_retrieval
    assert response.model_id == provider.model_id
    top = response.hits[0].entry
    assert top.kzg_key == stored.kzg_key and top.haeufigkeit == 2
    assert list(top.magnets.entitaet_ids) == [2, 9] and top.magnets.timeline_id == 4
    assert top.ei.modus == "" and list(top.ei.intentionen) == ["planung"]
    assert top.beobachter == common_pb2.BEOBACHTER_USER
    assert len(top.embedding) == 0
    empty = await kzg_stub.Retrieve(kzg_pb2.RetrieveRequest(pair=PAIR, query_text="How do jet engines work?"))
    assert list(empty.hits) == [] and empty.dropped_below_threshold == 3
    assert list((await kzg_stub.Retrieve(kzg_pb2.RetrieveRequest(pair=OTHER, query_text="chess"))).hits) == []

    got = await kzg_stub.GetEntry(kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=stored.kzg_key, include_embedding=True))
    assert got.entry.inhalt.startswith("Anna plays chess") and len(got.entry.embedding) == provider.dimension
    assert got.entry.erstellt_am.seconds > 0 and got.entry.salienz_eingang_herkunft == "gemessen"

    deleted = await kzg_stub.DeleteEntry(kzg_pb2.DeleteEntryRequest(pair=PAIR, kzg_key=stored.kzg_key))
    assert deleted.deleted and deleted.verified_gone
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await kzg_stub.GetEntry(kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=stored.kzg_key))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_an_entry_stored_without_a_speaker_names_its_roles_default_one(
    kzg_stub: kzg_pb2_grpc.KzgServiceStub, provider: EmbeddingProvider
) -> None:
    """SPEC §11: the embed and index text carries the speaker's name, "default the role"."""
    for beobachter, name in ((common_pb2.BEOBACHTER_USER, "Nutzer"), (common_pb2.BEOBACHTER_ASSISTANT, "Nova")):
        stored = await kzg_stub.StoreEntry(_store(0.5, f"Ich mag Schach, sagt {beobachter}.", ["Schach"],
                                                  beobachter=beobachter, entry_id=f"e{beobachter}"))  # fmt: skip
        got = await kzg_stub.GetEntry(kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=stored.kzg_key, include_embedding=True))
        assert got.entry.sprecher == name
        expected = await provider.embed_one(kzg_embed_text(["Schach"], got.entry.inhalt, name))
        assert np.allclose(np.asarray(got.entry.embedding, dtype=np.float32), expected, atol=1e-5)
    named = await kzg_stub.StoreEntry(_store(0.5, "Schach am Sonntag.", ["Schach"], sprecher="Anna", entry_id="named"))
    got = await kzg_stub.GetEntry(kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=named.kzg_key))
    assert got.entry.sprecher == "Anna"


async def test_writes_and_reads_leave_pipeline_log_records(
    kzg_stub: kzg_pb2_grpc.KzgServiceStub, plog: PipelineLog, sink: InMemorySink
) -> None:
    stored = await kzg_stub.StoreEntry(_store(0.6, "Anna likes green tea.", ["Tee"]))
    await kzg_stub.Retrieve(kzg_pb2.RetrieveRequest(
        pair=PAIR, query_text="What does Anna drink?", turn=common_pb2.TurnContext(turn_id="turn-2")
    ))
    await plog.flush()
    by_turn = {(r.turn_id, r.node, r.art) for r in sink.records}
    assert {("turn-1", "kzg_speicher", "switch"), ("turn-1", "kzg_speicher", "db_write"),
            ("turn-2", "kzg", "db_read")} <= by_turn
    write = next(r for r in sink.records if r.art == "db_write")
    assert write.inhalt["kzg_key"] == stored.kzg_key and write.inhalt["ttl"] == stored.ttl_seconds
    assert (write.user_id, write.character_id) == (PAIR.user_id, PAIR.character_id)


async def test_promotion_jobs_over_grpc(kzg_stub: kzg_pb2_grpc.KzgServiceStub, redis_url: str) -> None:
    stored = await kzg_stub.StoreEntry(_store(0.9, "Anna is getting married in May.", ["Hochzeit"]))
    jobs = (await kzg_stub.ReadPromotionJobs(kzg_pb2.ReadPromotionJobsRequest(consumer="pixie-1", count=5))).jobs
    assert [(j.kzg_key, j.ausloeser_turn_id, j.delivery_count) for j in jobs] == [(stored.kzg_key, "turn-1", 1)]
    assert jobs[0].pair == PAIR
    inspected = await kzg_stub.InspectPromotionQueue(kzg_pb2.InspectPromotionQueueRequest(limit=5))
    assert (inspected.length, inspected.pending, list(inspected.consumers)) == (1, 1, ["pixie-1"])
    acked = await kzg_stub.AckPromotionJobs(kzg_pb2.AckPromotionJobsRequest(job_ids=[jobs[0].job_id]))
    assert acked.acked == 1
    inspected = await kzg_stub.InspectPromotionQueue(kzg_pb2.InspectPromotionQueueRequest(limit=5))
    assert (inspected.length, inspected.pending) == (0, 0)

    redis = Redis.from_url(redis_url, decode_responses=True)
    try:
        # The HIGH write set the pair's marker; MarkHashDirty (Pixie after a promotion) overwrites it.
        assert (await redis.hgetall(DIRTY_KEY))["reason"] == "kzg_salienz_high"
        await kzg_stub.MarkHashDirty(kzg_pb2.MarkHashDirtyRequest(
            pair=PAIR, reason=f"promotion {stored.kzg_key} -> node 7", as_of=Timestamp(seconds=1_790_000_100)
        ))
        marker = await redis.hgetall(DIRTY_KEY)
        assert marker["reason"] == f"promotion {stored.kzg_key} -> node 7"
        assert float(marker["gesetzt_am"]) == 1_790_000_100.0
        assert not await redis.exists(f"hash_dirty:{OTHER.user_id}:{OTHER.character_id}")

        # A marker time without a reason is refused, and nothing is deleted.
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await kzg_stub.DeleteEntry(kzg_pb2.DeleteEntryRequest(
                pair=PAIR, kzg_key=stored.kzg_key, as_of=Timestamp(seconds=1_790_000_200)
            ))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "hash_dirty_reason" in refused.value.details()
        assert await redis.exists(stored.kzg_key)
        # Pixie after a new node: the marker and the DEL in one call.
        retired = await kzg_stub.DeleteEntry(kzg_pb2.DeleteEntryRequest(
            pair=PAIR, kzg_key=stored.kzg_key, hash_dirty_reason="promotion -> node 8",
            as_of=Timestamp(seconds=1_790_000_300),
        ))
        assert retired.deleted and retired.verified_gone and retired.hash_dirty_set
        assert not await redis.exists(stored.kzg_key)
        marker = await redis.hgetall(DIRTY_KEY)
        assert (marker["reason"], marker["gesetzt_am"]) == ("promotion -> node 8", "1790000300.0")
    finally:
        await redis.aclose()


async def test_session_over_grpc(kzg_stub: kzg_pb2_grpc.KzgServiceStub) -> None:
    for i in range(26):
        response = await kzg_stub.AppendSessionTurn(kzg_pb2.AppendSessionTurnRequest(
            pair=PAIR, turn=kzg_pb2.SessionTurn(role="user", text=f"Satz {i}.", turn_id=f"t{i}")
        ))
    assert response.summarized and response.turn_count == 16
    session = await kzg_stub.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))
    assert [t.turn_id for t in session.turns] == [f"t{i}" for i in range(10, 26)]
    assert session.summary.splitlines()[0] == "user: Satz 0."
    assert 0 < session.ttl_seconds <= 14_400
    assert session.turns[0].created_at.seconds > 0


@pytest.mark.parametrize(
    "request_",
    [
        _store(0.5, "x", ["a"], embedding=[0.1] * 10),
        _store(1.5, "x", ["a"]),
        _store(-0.2, "x", ["a"]),
        _store(0.5, "x", ["a"], pair=common_pb2.Pair(user_id="", character_id="nova")),
        _store(0.5, "x", ["a"], pair=common_pb2.Pair(user_id="anna", character_id="")),
        _store(0.5, "x", ["a"], beobachter=common_pb2.BEOBACHTER_UNSPECIFIED),
        _store(0.5, "x", ["a"], beobachter=7),
    ],
)
async def test_bad_store_requests_are_invalid_argument_and_write_nothing(
    kzg_stub: kzg_pb2_grpc.KzgServiceStub, redis_url: str, request_: kzg_pb2.StoreEntryRequest
) -> None:
    redis = Redis.from_url(redis_url)
    try:
        before = sorted(await redis.keys("*"))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await kzg_stub.StoreEntry(request_)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert caught.value.details()
        assert sorted(await redis.keys("*")) == before
    finally:
        await redis.aclose()


async def test_only_the_best_hits_by_meaning_come_whole_when_asked(kzg_stub: kzg_pb2_grpc.KzgServiceStub) -> None:
    """``full_entries``: the best hits found by meaning carry the whole entry, every other hit only
    what a recall item needs (RetrieveHit.brief); the hits and their order do not change."""
    pair = common_pb2.Pair(user_id="clara", character_id="nova")
    await kzg_stub.StoreEntry(_store(
        0.7, "Clara plays chess every Sunday with her grandfather in the park.", ["Schach"], pair=pair,
        ei=common_pb2.EiFields(emotion="freude", intentionen=["planung"]),
        magnets=common_pb2.Magnets(entitaet_ids=[2, 9], timeline_id=4), sprecher="Clara",
    ))  # fmt: skip
    for number, text in enumerate(("Clara's dog Bruno is afraid of thunderstorms.", "Clara won a chess tournament.")):
        await kzg_stub.StoreEntry(_store(
            0.5, text, ["Hund"], pair=pair, turn=common_pb2.TurnContext(turn_id=f"turn-{number + 2}"),
            ei=common_pb2.EiFields(emotion="angst"), magnets=common_pb2.Magnets(entitaet_ids=[7]), sprecher="Clara",
        ))  # fmt: skip

    def ask(full_entries: int) -> kzg_pb2.RetrieveRequest:
        return kzg_pb2.RetrieveRequest(
            pair=pair, query_text="Who does Clara play chess with?", lexical_text="Clara dog chess tournament",
            sprache="en", full_entries=full_entries,
        )  # fmt: skip

    whole = await kzg_stub.Retrieve(ask(0))
    brief = await kzg_stub.Retrieve(ask(1))
    assert len(whole.hits) == 3 and not any(hit.brief for hit in whole.hits)
    assert [(h.entry.kzg_key, h.similarity, list(h.quellen)) for h in brief.hits] == [
        (h.entry.kzg_key, h.similarity, list(h.quellen)) for h in whole.hits
    ]
    first, *rest = brief.hits

    def without_ttl(entry: common_pb2.KzgEntry) -> common_pb2.KzgEntry:
        copy = common_pb2.KzgEntry()
        copy.CopyFrom(entry)
        copy.ClearField("ttl_seconds")  # read a moment apart: a second may have passed
        return copy

    assert "dense" in first.quellen and not first.brief and without_ttl(first.entry) == without_ttl(whole.hits[0].entry)
    assert first.entry.HasField("ei") and first.entry.HasField("magnets") and first.entry.haeufigkeit >= 1
    for hit, full in zip(rest, whole.hits[1:], strict=True):
        assert hit.brief
        entry = hit.entry
        # what a recall item needs, as the whole entry has it
        for name in ("kzg_key", "entry_id", "pair", "beobachter", "inhalt", "sprecher", "sprache", "turn_id",
                     "erstellt_am", "ablauf_am"):  # fmt: skip
            assert getattr(entry, name) == getattr(full.entry, name), name
        assert entry.sprecher == "Clara" and entry.turn_id.startswith("turn-") and entry.erstellt_am.seconds > 0
        assert 0 < entry.ttl_seconds <= full.entry.ttl_seconds + 1
        # and nothing else
        assert full.entry.ei.emotion in ("freude", "angst") and list(full.entry.magnets.entitaet_ids)
        assert not entry.HasField("ei") and not entry.HasField("magnets") and list(entry.themen) == []
        assert entry.salienz == 0.0 and entry.haeufigkeit == 0


async def test_bad_retrieve_requests_are_invalid_argument(kzg_stub: kzg_pb2_grpc.KzgServiceStub) -> None:
    for request in (
        kzg_pb2.RetrieveRequest(pair=PAIR, query_text="x", full_entries=-1),
        kzg_pb2.RetrieveRequest(pair=PAIR, query_vector=kzg_pb2.QueryVector(values=[0.5] * 3)),
        kzg_pb2.RetrieveRequest(pair=PAIR),
        kzg_pb2.RetrieveRequest(pair=PAIR, query_text="x", beobachter=9),  # type: ignore[arg-type]
        kzg_pb2.RetrieveRequest(pair=common_pb2.Pair(user_id="", character_id="nova"), query_text="x"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await kzg_stub.Retrieve(request)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, request


async def test_an_import_writes_the_profile_it_carries_and_refuses_an_unknown_language(
    kzg_stub: kzg_pb2_grpc.KzgServiceStub, redis_url: str
) -> None:
    """ImportPair over gRPC: a bad ``profile.sprache`` is INVALID_ARGUMENT and writes nothing; a good
    profile is kept as the pipeline keeps it and comes back with the pair's export."""
    turn = kzg_pb2.SessionTurn(role="user", text="Hallo Nova", turn_id="t-1")

    async def imported(profile: common_pb2.PairProfile) -> kzg_pb2.ImportPairResponse:
        async def messages():  # type: ignore[no-untyped-def]
            yield kzg_pb2.ImportPairRequest(pair=OTHER, session_turns=[turn])
            yield kzg_pb2.ImportPairRequest(pair=OTHER, profile=profile)

        answer: kzg_pb2.ImportPairResponse = await kzg_stub.ImportPair(messages())
        return answer

    redis = Redis.from_url(redis_url)
    try:
        before = sorted(await redis.keys("*"))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await imported(common_pb2.PairProfile(user_name="Ben", sprache="fr"))
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "profile.sprache must be one of de, en or empty, got 'fr'" in (caught.value.details() or "")
        assert sorted(await redis.keys("*")) == before
        answer = await imported(common_pb2.PairProfile(user_name="Ben", character_name="Luna", sprache="en"))
        assert (answer.session_turns, answer.profile) == (1, 1)
        stored = await redis.get(f"pipeline:profile:{OTHER.user_id}:{OTHER.character_id}")
        assert as_bytes(stored).decode() == '{"user_name": "Ben", "character_name": "Luna", "sprache": "en", "zeitzone": "UTC"}'
        (chunk,) = [c async for c in kzg_stub.ExportPair(kzg_pb2.ExportPairRequest(pair=OTHER))]
        assert chunk.profile == common_pb2.PairProfile(user_name="Ben", character_name="Luna", sprache="en", zeitzone="UTC")  # a profile without a zone is UTC
    finally:
        await redis.aclose()


async def test_an_import_refuses_an_entry_without_its_creation_time_naming_it_across_messages(
    kzg_stub: kzg_pb2_grpc.KzgServiceStub, redis_url: str
) -> None:
    """The shared KzgEntry conversion refuses a message without ``erstellt_am`` (it was read as 1970
    before): the third entry of the stream, sent in its second message, is named; nothing is written."""

    def exported(entry_id: str, created: Timestamp | None) -> kzg_pb2.ExportedEntry:
        return kzg_pb2.ExportedEntry(entry=common_pb2.KzgEntry(
            kzg_key=f"kzg:{OTHER.user_id}:{OTHER.character_id}:{entry_id}", entry_id=entry_id, pair=OTHER,
            beobachter=common_pb2.BEOBACHTER_USER, inhalt=f"Eintrag {entry_id}", salienz=0.6, haeufigkeit=1,
            ttl_seconds=600, erstellt_am=created,
        ))  # fmt: skip

    async def messages():  # type: ignore[no-untyped-def]
        made = Timestamp(seconds=1_776_000_000)
        yield kzg_pb2.ImportPairRequest(pair=OTHER, entries=[exported("e1", made), exported("e2", made)])
        yield kzg_pb2.ImportPairRequest(pair=OTHER, entries=[exported("e3", None)])

    redis = Redis.from_url(redis_url)
    try:
        before = sorted(await redis.keys("*"))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await kzg_stub.ImportPair(messages())
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert caught.value.details() == "entries[2].erstellt_am must be set"
        assert sorted(await redis.keys("*")) == before
    finally:
        await redis.aclose()
