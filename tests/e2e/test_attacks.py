"""Attacks from outside on all five services as processes (SPEC §10; hardening).

1. Every RPC of every service is called with generated bad values, one field at a time
   (hypothesis drives the choice of RPC, field and value), through real servers and stores. No
   answer may be INTERNAL or UNKNOWN, and after every refused call a fingerprint of every Redis key
   and every PostgreSQL row must be what it was before the call.
2. Pairs whose ids hold separators, query syntax and look-alikes write memories on shared themes;
   no pair may read or reinforce another's.

Budget: ``NOVABERG_FUZZ_EXAMPLES`` calls (default 250 in ``make test``; e.g. 5000 for a long run),
``NOVABERG_FUZZ_SEED`` to vary the draw (default: derandomised, so CI is repeatable),
``NOVABERG_FUZZ_FIELDS=2`` to set a second field of the same request to a bad value as well (a defect
that needs two — an instant at the end of the range and a date in the text — is out of reach of one;
default 1, the draw CI makes).
"""

from __future__ import annotations

import collections
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
import redis
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.authz import load_policy
from novaberg_core.tls import CertificateFiles, channel_credentials
from novaberg_dev.embedded import (
    StoreUrls,
    create_database,
    drop_database,
    ensure_vector_extension,
    reset_redis,
)
from novaberg_dev.stack import OPERATOR, SERVICES, Stack, start_stack
from tests.e2e.attack import (
    FieldPath,
    bad_values,
    changed,
    describe,
    field_paths,
    postgres_fingerprint,
    redis_fingerprint,
    with_values,
)

FUZZ_EXAMPLES = int(os.environ.get("NOVABERG_FUZZ_EXAMPLES", "250"))
FUZZ_SEED = os.environ.get("NOVABERG_FUZZ_SEED")
FUZZ_FIELDS = int(os.environ.get("NOVABERG_FUZZ_FIELDS", "1"))
SCHEMAS = ("lzg", "log", "pixie")
PAIR = common_pb2.Pair(user_id="fuzz-u", character_id="fuzz-c")
ERASE_PAIR = common_pb2.Pair(user_id="fuzz-erase-u", character_id="fuzz-erase-c")
"""A pair without memories: the erasures of the fuzz run on it (a valid one must not empty PAIR)."""
IMPORT_PAIRS = {service: common_pb2.Pair(user_id=f"fuzz-import-{service}", character_id="c") for service in ("kzg", "lzg", "pixie")}
"""An import target per service: the first valid import fills it, later ones are refused (not empty)."""
USER, ASSISTANT = common_pb2.BEOBACHTER_USER, common_pb2.BEOBACHTER_ASSISTANT
PACKAGES = {"kzg": kzg_pb2, "lzg": lzg_pb2, "pipeline": pipeline_pb2, "pixie": pixie_pb2, "log": log_pb2}
ATTACK_ENV = {
    "NOVABERG_PIPELINE_LOG_FLUSH_SEKUNDEN": "0.05",
    "NOVABERG_EMBEDDING": "minilm",
    "NOVABERG_LOG_LEVEL": "WARNING",
}
FORBIDDEN = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
LOOKUP_MISSES = {grpc.StatusCode.NOT_FOUND}
"""A valid lookup of something that is not there (deleted earlier in the run) is an answer, not a refusal:
it may leave its forensic read record in pipeline_log, and nothing else."""
FORENSIC_LOG = '"log"."pipeline_log"'


@dataclass
class Attack:
    """What the attack suite saw: calls per status, and every violation."""

    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    violations: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
async def attack_stack(store_urls: StoreUrls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The five services as processes on a database of their own; the log flushes every 50 ms."""
    name = f"attack_{os.getpid()}"
    drop_database(store_urls.postgres_url, name)
    url = create_database(store_urls.postgres_url, name)
    ensure_vector_extension(url)
    reset_redis(store_urls.redis_url)
    data_dir: Path = tmp_path_factory.mktemp("attack-stack")
    running = await start_stack(
        data_dir, urls=StoreUrls(postgres_url=url, redis_url=store_urls.redis_url), services=SERVICES, extra_env=ATTACK_ENV
    )  # fmt: skip
    try:
        yield running
    finally:
        await running.stop()
        drop_database(store_urls.postgres_url, name)


class Caller:
    """Raw-bytes calls to any method of the stack (so a request can carry invalid UTF-8).

    Under mTLS each call goes out with the certificate of an identity the authorisation policy
    allows for the method (the pipeline's for its KZG calls, Pixie's for Promote …), so the attack
    reaches the request contract behind the policy.
    """

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.policy = load_policy()
        self.channels: dict[tuple[str, str], grpc.Channel] = {}

    def channel(self, service: str, full: str) -> grpc.Channel:
        tls = self.stack.client_tls
        if tls.enabled:
            allowed = [i for i in self.policy.identities_for(full.lstrip("/")) if i in self.stack.tls]
            tls = self.stack.tls[allowed[0] if allowed else OPERATOR]
        key = (service, tls.cert_file)
        if key not in self.channels:
            address = self.stack.addresses[service]
            self.channels[key] = (
                grpc.secure_channel(address, channel_credentials(CertificateFiles(tls).read()))
                if tls.enabled else grpc.insecure_channel(address)
            )  # fmt: skip
        return self.channels[key]

    def call(self, service: str, method: str, payload: bytes, *, timeout: float = 20.0) -> grpc.StatusCode:
        full = f"/novaberg.{service}.v1.{service.capitalize()}Service/{method}"
        channel = self.channel(service, full)
        shape = PACKAGES[service].DESCRIPTOR.services_by_name[f"{service.capitalize()}Service"].methods_by_name[method]
        try:
            if shape.client_streaming:
                channel.stream_unary(full)(iter([payload]), timeout=timeout)
            elif shape.server_streaming:
                list(channel.unary_stream(full)(payload, timeout=timeout))
            else:
                channel.unary_unary(full)(payload, timeout=timeout)
        except grpc.RpcError as error:
            return error.code()  # type: ignore[no-any-return]
        return grpc.StatusCode.OK

    def stub_call(self, service: str, method: str, request: Message) -> Message:
        package = PACKAGES[service]
        full = f"/novaberg.{service}.v1.{service.capitalize()}Service/{method}"
        output = package.DESCRIPTOR.services_by_name[f"{service.capitalize()}Service"].methods_by_name[method].output_type
        response_type = _message_class(package, output.name)
        raw = self.channel(service, full).unary_unary(full)(request.SerializeToString(), timeout=30)
        return response_type.FromString(raw)  # type: ignore[no-any-return]

    def close(self) -> None:
        for channel in self.channels.values():
            channel.close()


def _message_class(package: object, name: str) -> type[Message]:
    for module in (package, lzg_pb2, kzg_pb2, common_pb2):
        found = getattr(module, name, None)
        if found is not None:
            return found  # type: ignore[no-any-return]
    raise LookupError(name)


@dataclass(frozen=True)
class World:
    """Records of the attacked pair that valid requests refer to."""

    kzg_key: str
    node_id: int
    entity_id: int
    other_entity_id: int
    timeline_id: int
    entry: common_pb2.KzgEntry


def _build_world(caller: Caller) -> World:
    salience = common_pb2.SalienceResult(salienz=0.9, themen=["garten", "rosen"], gedaechtnistyp="episodisch", dimension="interessen")
    anna, ben = caller.stub_call("lzg", "ResolveEntities", lzg_pb2.ResolveEntitiesRequest(
        pair=PAIR, names=["Anna", "Ben"], create_missing=True, typ_for_new="person")).entitaet_ids  # type: ignore[attr-defined]
    timeline = caller.stub_call("lzg", "UpsertTimeline", lzg_pb2.UpsertTimelineRequest(pair=PAIR, timeline=lzg_pb2.Timeline(
        zeitpunkt=to_timestamp_s(1_700_000_000), praezision="tag", titel="Gartentag"))).timeline  # type: ignore[attr-defined]
    observed = caller.stub_call("pipeline", "ObserveTurn", pipeline_pb2.ObserveTurnRequest(
        pair=PAIR, turn_id="fuzz-1", beobachter=USER, text="Anna und ich haben im Garten Rosen gepflanzt.",
        analysis=pipeline_pb2.TurnAnalysis(salience=salience, ei=common_pb2.EiFields(emotion="freude", arousal=0.4),
                                           magnets=common_pb2.Magnets(entitaet_ids=[anna], timeline_id=timeline.id))))
    key = observed.kzg.kzg_key  # type: ignore[attr-defined]
    entry = caller.stub_call("kzg", "GetEntry", kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=key, include_embedding=True)).entry  # type: ignore[attr-defined]
    promoted = caller.stub_call("lzg", "Promote", lzg_pb2.PromoteRequest(entry=entry, ausloeser_turn_id="fuzz-1"))
    # A second entry stays in the KZG for GetEntry/DeleteEntry/Retrieve (its twin became a node).
    second = caller.stub_call("pipeline", "ObserveTurn", pipeline_pb2.ObserveTurnRequest(
        pair=PAIR, turn_id="fuzz-2", beobachter=USER, text="Ben mag die roten Rosen am liebsten.",
        analysis=pipeline_pb2.TurnAnalysis(salience=salience, magnets=common_pb2.Magnets(entitaet_ids=[ben]))))
    return World(kzg_key=second.kzg.kzg_key, node_id=promoted.node_id, entity_id=anna, other_entity_id=ben,  # type: ignore[attr-defined]
                 timeline_id=timeline.id, entry=entry)  # fmt: skip


def to_timestamp_s(seconds: int) -> object:
    from google.protobuf.timestamp_pb2 import Timestamp

    return Timestamp(seconds=seconds)


def base_requests(world: World) -> dict[tuple[str, str], Message]:
    """One valid request per RPC of every service (the fuzz mutates one field of it)."""
    turn = common_pb2.TurnContext(turn_id="fuzz-turn")
    vector = list(world.entry.embedding)
    analysis = pipeline_pb2.TurnAnalysis(
        salience=common_pb2.SalienceResult(salienz=0.55, themen=["garten"], gedaechtnistyp="episodisch", dimension="interessen"),
        ei=common_pb2.EiFields(emotion="freude", modus="alltag", arousal=0.5, intentionen=["information_teilen"]),
        magnets=common_pb2.Magnets(entitaet_ids=[world.entity_id], timeline_id=world.timeline_id),
        inhalt="Rosen im Garten",
    )  # fmt: skip
    as_of = to_timestamp_s(1_760_000_000)
    resonanz = lzg_pb2.LzgResonanz(anker_anzahl=1, cluster="bier", erinnerungen=[lzg_pb2.Erinnerung(
        rang=1, knoten_id=world.node_id, inhalt="Rosen", emotion="freude", beobachter=USER,
        pfad=[lzg_pb2.PfadSchritt(von_knoten_id=world.node_id, geteilte_entitaet_ids=[world.entity_id], geteilte_themen=["rosen"])])])  # fmt: skip
    bases: dict[tuple[str, str], Message] = {
        ("kzg", "AppendSessionTurn"): kzg_pb2.AppendSessionTurnRequest(pair=PAIR, as_of=as_of, turn=kzg_pb2.SessionTurn(  # type: ignore[arg-type]
            role="user", text="Hallo", turn_id="fuzz-s", created_at=as_of, emotion="freude", arousal=0.2)),  # type: ignore[arg-type]
        ("kzg", "GetSession"): kzg_pb2.GetSessionRequest(pair=PAIR),
        ("kzg", "StoreEntry"): kzg_pb2.StoreEntryRequest(
            pair=PAIR, beobachter=USER, inhalt="Rosen duften", salience=analysis.salience, ei=analysis.ei,
            magnets=analysis.magnets, turn=turn, embedding=vector, as_of=as_of, writer="fuzz"),  # type: ignore[arg-type]
        ("kzg", "Retrieve"): kzg_pb2.RetrieveRequest(pair=PAIR, query_text="Rosen", top_k=5, turn=turn, as_of=as_of,  # type: ignore[arg-type]
            filters=kzg_pb2.RetrieveFilters(emotion=["freude"], themen=["garten"], min_salienz=0.1)),
        ("kzg", "GetEntry"): kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=world.kzg_key, include_embedding=True),
        ("kzg", "DeleteEntry"): kzg_pb2.DeleteEntryRequest(pair=PAIR, kzg_key=world.kzg_key, turn=turn,
                                                           hash_dirty_reason="fuzz", as_of=as_of),  # type: ignore[arg-type]
        ("kzg", "MarkHashDirty"): kzg_pb2.MarkHashDirtyRequest(pair=PAIR, reason="fuzz", as_of=as_of),  # type: ignore[arg-type]
        ("kzg", "ReadPromotionJobs"): kzg_pb2.ReadPromotionJobsRequest(consumer="fuzz", count=2, block_ms=0, reclaim_idle_ms=1),
        ("kzg", "AckPromotionJobs"): kzg_pb2.AckPromotionJobsRequest(job_ids=["1764428000000-0"]),
        ("kzg", "InspectPromotionQueue"): kzg_pb2.InspectPromotionQueueRequest(limit=5),
        ("kzg", "GetModel"): common_pb2.GetModelRequest(),
        ("lzg", "GetModel"): common_pb2.GetModelRequest(),
        ("lzg", "Promote"): lzg_pb2.PromoteRequest(entry=world.entry, turn=turn, ausloeser_turn_id="fuzz-1", as_of=as_of),  # type: ignore[arg-type]
        ("lzg", "SpreadingRead"): lzg_pb2.SpreadingReadRequest(
            pair=PAIR, query_vector=lzg_pb2.QueryVector(values=vector), cluster="bier", nova_emotion="freude",
            turn=turn, readers=["analysis"], user_name="Meister", character_name="Nova", as_of=as_of),  # type: ignore[arg-type]
        ("lzg", "RenderMemoryBlock"): lzg_pb2.RenderMemoryBlockRequest(pair=PAIR, lzg_resonanz=resonanz, reader="composer",
                                                                       user_name="Meister", character_name="Nova"),
        ("lzg", "ReinforceUsed"): lzg_pb2.ReinforceUsedRequest(pair=PAIR, answer_text="Die Rosen im Garten.",
            served_node_ids=[world.node_id], turn=turn, as_of=as_of, answer_vector=lzg_pb2.QueryVector(values=vector)),  # type: ignore[arg-type]
        ("lzg", "RunDecay"): lzg_pb2.RunDecayRequest(as_of=as_of, turn=turn),  # type: ignore[arg-type]
        ("lzg", "GetNode"): lzg_pb2.GetNodeRequest(pair=PAIR, node_id=world.node_id, include_embedding=True),
        ("lzg", "ListNodes"): lzg_pb2.ListNodesRequest(pair=PAIR, limit=10, include_inactive=True),
        ("lzg", "ListEdges"): lzg_pb2.ListEdgesRequest(pair=PAIR, node_id=world.node_id, limit=10),
        ("lzg", "GetPairStats"): lzg_pb2.GetPairStatsRequest(pair=PAIR),
        ("lzg", "UpsertEntity"): lzg_pb2.UpsertEntityRequest(pair=PAIR, entity=lzg_pb2.Entity(name="Clara", typ="person", aliases=["Clärchen"])),
        ("lzg", "ResolveEntities"): lzg_pb2.ResolveEntitiesRequest(pair=PAIR, names=["Anna", "Dora"], create_missing=True, typ_for_new="person"),
        ("lzg", "ListEntities"): lzg_pb2.ListEntitiesRequest(pair=PAIR, ids=[world.entity_id]),
        ("lzg", "MergeEntities"): lzg_pb2.MergeEntitiesRequest(pair=PAIR, source_id=world.other_entity_id, target_id=world.entity_id, turn=turn),
        ("lzg", "DeleteEntity"): lzg_pb2.DeleteEntityRequest(pair=PAIR, entity_id=world.other_entity_id, turn=turn),
        ("lzg", "UpsertTimeline"): lzg_pb2.UpsertTimelineRequest(pair=PAIR, timeline=lzg_pb2.Timeline(
            zeitpunkt=as_of, praezision="monat", titel="Herbst", themen=["garten"])),  # type: ignore[arg-type]
        ("lzg", "UpdateTimeline"): lzg_pb2.UpdateTimelineRequest(pair=PAIR, turn=turn, timeline=lzg_pb2.Timeline(
            id=world.timeline_id, zeitpunkt=as_of, praezision="woche")),  # type: ignore[arg-type]
        ("lzg", "DeleteTimeline"): lzg_pb2.DeleteTimelineRequest(pair=PAIR, timeline_id=world.timeline_id, turn=turn),
        ("lzg", "ListTimelines"): lzg_pb2.ListTimelinesRequest(pair=PAIR, ids=[world.timeline_id]),
        ("lzg", "CheckNodes"): lzg_pb2.CheckNodesRequest(pair=PAIR, node_ids=[world.node_id, 999_999]),
        ("pipeline", "ObserveTurn"): pipeline_pb2.ObserveTurnRequest(pair=PAIR, turn_id="fuzz-o", beobachter=USER,
                                                                     text="Die Rosen blühen.", analysis=analysis, as_of=as_of),  # type: ignore[arg-type]
        ("pipeline", "BuildDossier"): pipeline_pb2.BuildDossierRequest(
            pair=PAIR, turn_id="fuzz-d", query_text="Was blüht im Garten?", intentionen=["frage"], nova_emotion="freude",
            goals=[pipeline_pb2.ActivatedGoal(embedding=vector, aktivierungs_staerke=0.5)], readers=["analysis"],
            user_name="Meister", character_name="Nova", include_vectors=True, as_of=as_of, recall_k=5),  # type: ignore[arg-type]
        ("pipeline", "Dispatch"): pipeline_pb2.DispatchRequest(
            pair=PAIR, turn_id="fuzz-x", user_prompt="Was blüht?", answer_text="Die Rosen blühen im Garten.", cluster="bier",
            served_node_ids=[world.node_id], answer_analysis=analysis, user_emotion_json='{"emotion": "freude"}',
            nova_emotion_json="{}", as_of=as_of),  # type: ignore[arg-type]
        ("pixie", "ListTasks"): pixie_pb2.ListTasksRequest(),
        ("pixie", "TriggerTask"): pixie_pb2.TriggerTaskRequest(task="synapsen_decay", as_of=as_of, force=True),  # type: ignore[arg-type]
        ("pixie", "PauseTask"): pixie_pb2.PauseTaskRequest(task="synapsen_promotion"),
        ("pixie", "ResumeTask"): pixie_pb2.ResumeTaskRequest(task="synapsen_decay"),
        ("pixie", "ListRuns"): pixie_pb2.ListRunsRequest(task="synapsen_decay", limit=5),
        ("pixie", "ListParkedJobs"): pixie_pb2.ListParkedJobsRequest(limit=5),
        ("log", "Write"): log_pb2.WriteBatch(records=[log_pb2.LogRecord(
            erstellt_am=as_of, turn_id="fuzz-l", quelle="fuzz", node="fuzz", art="bemerkung", inhalt_json='{"a": 1}',
            user_id=PAIR.user_id, character_id=PAIR.character_id)]),  # type: ignore[arg-type]
        ("log", "Query"): log_pb2.QueryRequest(turn_id="fuzz-1", pair=PAIR, since=to_timestamp_s(1_600_000_000), limit=5),  # type: ignore[arg-type]
        ("log", "Purge"): log_pb2.PurgeRequest(as_of=as_of, retention_days=3650),  # type: ignore[arg-type]
        ("log", "LastAnswers"): log_pb2.LastAnswersRequest(quelle=PAIR.character_id, limit=3, node="dispatcher"),
        ("log", "ClusterCounts"): log_pb2.ClusterCountsRequest(pair=PAIR, since=to_timestamp_s(1_600_000_000)),  # type: ignore[arg-type]
        ("log", "TokenUsage"): log_pb2.TokenUsageRequest(since=to_timestamp_s(1_600_000_000)),  # type: ignore[arg-type]
        **rights_requests(world, turn, as_of),
    }  # fmt: skip
    # The bulk writes (issue 16): two items each, the second a copy of the single call's request.
    observe = bases[("pipeline", "ObserveTurn")]
    bases[("pipeline", "ObserveTurns")] = pipeline_pb2.ObserveTurnsRequest(
        pair=PAIR, profile=common_pb2.PairProfile(user_name="Meister", character_name="Nova", sprache="de"),
        turns=[pipeline_pb2.ObservedTurn(turn_id="fuzz-b1", beobachter=ASSISTANT, text="Der Garten duftet.",
                                         analysis=analysis, as_of=as_of),  # type: ignore[arg-type]
               pipeline_pb2.ObservedTurn(turn_id=observe.turn_id, beobachter=observe.beobachter, text=observe.text,  # type: ignore[attr-defined]
                                         analysis=observe.analysis, as_of=observe.as_of)],  # type: ignore[attr-defined]
    )  # fmt: skip
    store = bases[("kzg", "StoreEntry")]
    first = kzg_pb2.StoreEntryRequest()
    first.CopyFrom(store)
    first.inhalt = "Die Rosen sind verblüht."
    bases[("kzg", "StoreEntries")] = kzg_pb2.StoreEntriesRequest(entries=[first, store])  # type: ignore[list-item]
    append = bases[("kzg", "AppendSessionTurn")]
    bases[("kzg", "AppendSessionTurns")] = kzg_pb2.AppendSessionTurnsRequest(appends=[append, append])  # type: ignore[list-item]
    return bases


def rights_requests(world: World, turn: common_pb2.TurnContext, as_of: object) -> dict[tuple[str, str], Message]:
    """A person's rights (issue 13): erasures on a pair without memories, imports into empty pairs."""
    erase = common_pb2.ErasureTarget(pair=ERASE_PAIR)
    entry = common_pb2.KzgEntry()
    entry.CopyFrom(world.entry)
    entry.ClearField("embedding")
    session = kzg_pb2.SessionTurn(role="user", text="Hallo", turn_id="fuzz-s", created_at=as_of)  # type: ignore[arg-type]
    node = lzg_pb2.Node(
        id=7, kzg_quell_key="kzg:x:y:fuzz-import", beobachter=USER, inhalt="Rosen im Garten", dimension="interessen",
        gewicht_roh=0.9, gewicht_absolut=3.7, gewicht_decay=3.7, haeufigkeit=1, aktiv=True, erstellt_am=as_of,
        verstaerkt_am=as_of, decay_am=as_of, kzg_erstellt_am=as_of, themen=["garten"],
        magnets=common_pb2.Magnets(entitaet_ids=[3], timeline_id=4), ei=common_pb2.EiFields(emotion="freude"),
    )  # type: ignore[arg-type]
    header = json.dumps({"schema": "novaberg.export/1", "pair": {"user_id": "fuzz-u", "character_id": "fuzz-c"}})
    lines = [header, json.dumps({"type": "entity", "id": 3, "name": "Clara", "typ": "person", "aliases": []}),
             json.dumps({"type": "node", "id": 7, "kzg_quell_key": "kzg:fuzz-u:fuzz-c:n7", "beobachter": "BEOBACHTER_USER",
                         "inhalt": "Rosen", "gewicht_roh": 0.9, "gewicht_absolut": 3.7, "gewicht_decay": 3.7,
                         "haeufigkeit": 1, "aktiv": True, "erstellt_am": "2026-05-01T12:00:00Z",
                         "verstaerkt_am": "2026-05-01T12:00:00Z", "decay_am": "2026-05-01T12:00:00Z",
                         "kzg_erstellt_am": "2026-05-01T12:00:00Z", "magnets": {"entitaet_ids": [3]}}),
             json.dumps({"type": "session", "turns": [{"role": "user", "text": "Hallo"}], "summary": ""})]
    return {
        ("kzg", "Erase"): kzg_pb2.EraseRequest(target=erase),
        ("kzg", "ExportPair"): kzg_pb2.ExportPairRequest(pair=PAIR),
        ("kzg", "ImportPair"): kzg_pb2.ImportPairRequest(
            pair=IMPORT_PAIRS["kzg"], entries=[kzg_pb2.ExportedEntry(entry=entry, promotion_queued=True)],
            session_turns=[session], session_summary="Zusammenfassung"),
        ("kzg", "ForgetEntries"): kzg_pb2.ForgetEntriesRequest(
            pair=PAIR, kzg_keys=[f"kzg:{PAIR.user_id}:{PAIR.character_id}:gibt-es-nicht"], turn=turn),
        ("kzg", "CorrectEntry"): kzg_pb2.CorrectEntryRequest(pair=PAIR, kzg_key=world.kzg_key, inhalt="Ben mag Tulpen.",
                                                             turn=turn),
        ("kzg", "EnqueuePromotionJobs"): kzg_pb2.EnqueuePromotionJobsRequest(jobs=[kzg_pb2.PromotionJob(
            kzg_key=world.kzg_key, pair=PAIR, ausloeser_turn_id="fuzz")]),
        ("lzg", "Erase"): lzg_pb2.EraseRequest(target=erase),
        ("lzg", "ExportPair"): lzg_pb2.ExportPairRequest(pair=PAIR),
        ("lzg", "ImportPair"): lzg_pb2.ImportPairChunk(
            pair=IMPORT_PAIRS["lzg"], entities=[lzg_pb2.Entity(id=3, name="Clara", typ="person")],
            timelines=[lzg_pb2.Timeline(id=4, zeitpunkt=as_of, praezision="tag", titel="Fest")],  # type: ignore[arg-type]
            nodes=[node]),
        ("lzg", "ForgetNodes"): lzg_pb2.ForgetNodesRequest(pair=PAIR, node_ids=[999_999], turn=turn),
        ("lzg", "CorrectNode"): lzg_pb2.CorrectNodeRequest(pair=PAIR, node_id=world.node_id, inhalt="Rosen im Garten.",
                                                           turn=turn, as_of=as_of),  # type: ignore[arg-type]
        ("log", "Erase"): log_pb2.EraseRequest(target=erase),
        ("pixie", "ErasePair"): pixie_pb2.ErasePairRequest(pair=ERASE_PAIR, reason="fuzz"),
        ("pixie", "EraseUser"): pixie_pb2.EraseUserRequest(user_id="fuzz-erase-user", reason="fuzz"),
        ("pixie", "ListErasures"): pixie_pb2.ListErasuresRequest(limit=5),
        ("pixie", "ExportPair"): pixie_pb2.ExportPairRequest(pair=PAIR),
        ("pixie", "ImportPair"): pixie_pb2.ImportPairRequest(pair=IMPORT_PAIRS["pixie"], lines=lines),
        ("pixie", "ForgetMemory"): pixie_pb2.ForgetMemoryRequest(pair=PAIR, node_id=999_999, reason="fuzz"),
        ("pixie", "CorrectMemory"): pixie_pb2.CorrectMemoryRequest(pair=PAIR, node_id=world.node_id,
                                                                   inhalt="Rosen im Garten.", reason="fuzz"),
        ("pixie", "RequeueParkedJobs"): pixie_pb2.RequeueParkedJobsRequest(job_ids=["1764428000000-0"]),
    }  # fmt: skip


def every_rpc() -> set[tuple[str, str]]:
    found = set()
    for service, package in PACKAGES.items():
        for proto_service in package.DESCRIPTOR.services_by_name.values():
            found |= {(service, method.name) for method in proto_service.methods}
    return found


class Fingerprints:
    """Redis and PostgreSQL as they are now; re-read after a call that was allowed to write."""

    def __init__(self, redis_url: str, postgres_url: str) -> None:
        self.redis = redis.Redis.from_url(redis_url)
        self.postgres_url = postgres_url

    def take(self) -> tuple[dict[bytes, str], dict[str, str]]:
        return redis_fingerprint(self.redis), postgres_fingerprint(self.postgres_url, SCHEMAS)

    def settled(self) -> tuple[dict[bytes, str], dict[str, str]]:
        """A fingerprint once buffered log records of earlier calls have landed (two equal reads)."""
        previous = self.take()
        for _ in range(40):
            time.sleep(0.12)
            current = self.take()
            if current == previous:
                return current
            previous = current
        return previous


@pytest.fixture(scope="module")
def caller(attack_stack: Stack) -> Iterator[Caller]:
    connected = Caller(attack_stack)
    try:
        for task in ("synapsen_promotion", "synapsen_decay"):  # no background work moves the stores
            connected.stub_call("pixie", "PauseTask", pixie_pb2.PauseTaskRequest(task=task))
        yield connected
    finally:
        connected.close()


def test_every_rpc_has_a_base_request() -> None:
    world = World(kzg_key="k", node_id=1, entity_id=1, other_entity_id=2, timeline_id=1, entry=common_pb2.KzgEntry())
    assert set(base_requests(world)) == every_rpc()


@pytest.mark.timeout(120 + FUZZ_EXAMPLES)  # ~0.3 s a call on two busy cores
def test_every_rpc_refuses_bad_fields_without_writing(attack_stack: Stack, caller: Caller) -> None:
    """Bad values per field through real servers: never INTERNAL/UNKNOWN, never a write when refused."""
    world = _build_world(caller)
    bases = base_requests(world)
    targets = [(rpc, path) for rpc, request in sorted(bases.items()) for path in field_paths(request.DESCRIPTOR)]
    fingerprints = Fingerprints(attack_stack.urls.redis_url, attack_stack.urls.postgres_url)
    state = {"now": fingerprints.settled()}
    attack = Attack()

    paths_of = collections.defaultdict(list)
    for rpc, path in targets:
        paths_of[rpc].append(path)

    def second_field(rpc: tuple[str, str]) -> st.SearchStrategy[tuple[tuple[FieldPath, object], ...]]:
        if FUZZ_FIELDS < 2:
            return st.just(())
        return st.sampled_from(paths_of[rpc]).flatmap(lambda path: st.tuples(st.tuples(st.just(path), bad_values(path))))

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None, derandomize=FUZZ_SEED is None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.sampled_from(targets).flatmap(
        lambda target: st.tuples(st.just(target), bad_values(target[1]), second_field(target[0]))
    ))  # fmt: skip
    def attack_one(case: tuple[tuple[tuple[str, str], FieldPath], object, tuple[tuple[FieldPath, object], ...]]) -> None:
        ((service, method), path), value, more = case
        payload = with_values(bases[(service, method)], [(path, value), *more])
        code = caller.call(service, method, payload)
        attack.statuses[code.name] += 1
        where = f"{service}.{method} " + ", ".join(f"{p.name}={describe(v)}" for p, v in [(path, value), *more])
        if code in FORBIDDEN:
            attack.violations.append(f"{code.name}: {where}")
        if code == grpc.StatusCode.OK:
            state["now"] = fingerprints.settled()
            return
        after = fingerprints.settled()
        redis_before, pg_before = state["now"]
        wrote = changed(redis_before, after[0]) + changed(pg_before, after[1])  # type: ignore[arg-type]
        if code in LOOKUP_MISSES:
            wrote = [name for name in wrote if name != FORENSIC_LOG]
        if wrote:
            attack.violations.append(f"refused ({code.name}) but wrote {wrote[:4]}: {where}")
        if wrote or code in LOOKUP_MISSES:
            state["now"] = after

    if FUZZ_SEED is not None:
        attack_one = seed(int(FUZZ_SEED))(attack_one)
    attack_one()
    total = sum(attack.statuses.values())
    print(f"\nattack: {total} calls over {len(bases)} RPCs, statuses {dict(attack.statuses)}, "
          f"violations {len(attack.violations)}")  # fmt: skip
    assert attack.violations == [], "\n".join(attack.violations[:40])
    assert attack.statuses["INVALID_ARGUMENT"] > total // 4, "the attack hardly hit the contract"


# ------------------------------------------------------------------------------- isolation

ADVERSARIAL_PAIRS = [
    ("u1", "c"), ("u1,u2", "c"), ("u2", "c"), ("u1|u2", "c"), ("u1*", "c"), ("u1 u2", "c"), ("{u1}", "c"),
    ('"u1"', "c"), ("u1'", "c"), ("u1\\", "c"), ("u\uff11", "c"), ("u\u0131", "c"), ("U1", "c"), ("u1", "c,d"),
    ("u1", "c|d"), ("@u1", "c"), ("-u1", "c"), ("u1)", "c"), ("%u1%", "c"), ("u1,u2", "c,d"), ("\u04381", "c"),
    ("u1", "c d"), ("u1", "*"),
]  # fmt: skip
"""Separators of TAG lists and queries, quotes, wildcards, case, Unicode look-alikes (fullwidth, dotless, Cyrillic)."""


def test_pairs_with_adversarial_ids_never_cross(attack_stack: Stack, caller: Caller) -> None:
    """Each pair writes two entries on a shared theme; every read and reinforcement stays in its pair."""
    pairs = [common_pb2.Pair(user_id=u, character_id=c) for u, c in ADVERSARIAL_PAIRS]
    own_turns: dict[tuple[str, str], set[str]] = {}
    first_keys: dict[tuple[str, str], str] = {}
    for index, pair in enumerate(pairs):
        key = (pair.user_id, pair.character_id)
        own_turns[key] = set()
        for n in range(2):
            turn_id = f"iso-{index}-{n}"
            analysis = pipeline_pb2.TurnAnalysis(
                salience=common_pb2.SalienceResult(salienz=0.55, themen=["garten", f"thema{index}"], dimension="interessen"),
                ei=common_pb2.EiFields(emotion="freude", arousal=0.3),
            )  # fmt: skip
            observed = caller.stub_call("pipeline", "ObserveTurn", pipeline_pb2.ObserveTurnRequest(
                pair=pair, turn_id=turn_id, beobachter=USER, analysis=analysis,
                text=f"Im Garten blühen die Rosen von Paar {index}, Eintrag {n}."))  # fmt: skip
            assert observed.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED, (pair, observed)  # type: ignore[attr-defined]
            own_turns[key].add(turn_id)
            first_keys.setdefault(key, observed.kzg.kzg_key)  # type: ignore[attr-defined]
    reads = crossings = 0
    for pair in pairs:
        key = (pair.user_id, pair.character_id)
        retrieved = caller.stub_call("kzg", "Retrieve", kzg_pb2.RetrieveRequest(pair=pair, query_text="Rosen im Garten", top_k=50))
        session = caller.stub_call("kzg", "GetSession", kzg_pb2.GetSessionRequest(pair=pair))
        dossier = caller.stub_call("pipeline", "BuildDossier", pipeline_pb2.BuildDossierRequest(
            pair=pair, turn_id=f"iso-q-{len(key[0])}", query_text="Was blüht im Garten?", recall_k=25))  # fmt: skip
        first = caller.stub_call("kzg", "GetEntry", kzg_pb2.GetEntryRequest(pair=pair, kzg_key=first_keys[key])).entry  # type: ignore[attr-defined]
        seen = (
            {h.entry.turn_id for h in retrieved.hits}  # type: ignore[attr-defined]
            | {t.turn_id for t in session.turns}  # type: ignore[attr-defined]
            | {h.hit.entry.turn_id for h in dossier.kzg_hits}  # type: ignore[attr-defined]
            | {r.turn_id for r in dossier.recall}  # type: ignore[attr-defined]
        )
        reads += 4
        foreign = seen - own_turns[key]
        crossings += len(foreign)
        assert not foreign, f"pair {key} read {sorted(foreign)}"
        assert len(retrieved.hits) == 2, f"pair {key} lost its own entries: {[h.entry.turn_id for h in retrieved.hits]}"  # type: ignore[attr-defined]
        # Reinforced once, by its own second entry only (SPEC §4.4): a crossing write would raise it.
        assert first.haeufigkeit == 2, f"pair {key}: haeufigkeit {first.haeufigkeit}"
        entities = caller.stub_call("lzg", "ResolveEntities", lzg_pb2.ResolveEntitiesRequest(
            pair=pair, names=["Rose"], create_missing=True, typ_for_new="ding"))  # fmt: skip
        listed = caller.stub_call("lzg", "ListEntities", lzg_pb2.ListEntitiesRequest(pair=pair))
        assert [e.name for e in listed.entities] == ["Rose"] and listed.entities[0].id == entities.entitaet_ids[0]  # type: ignore[attr-defined]
    print(f"\nisolation: {len(pairs)} pairs, {reads} reads, {crossings} cross-pair reads, 0 cross-pair writes")
