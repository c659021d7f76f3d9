"""The request catalogue of the attack suite: one valid request per RPC of every service, built around the
records of the attacked pair (:class:`World`); the fuzz of ``tests/e2e/test_attacks.py`` sets one field of
it (or two) to a bad value."""

from __future__ import annotations

import json
from dataclasses import dataclass

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg.pixie.v1 import pixie_pb2

__all__ = [
    "ASSISTANT", "ERASE_PAIR", "IMPORT_PAIRS", "PACKAGES", "PAIR", "SCHEMAS", "USER", "World", "base_requests", "every_rpc",
    "to_timestamp_s",
]  # fmt: skip

SCHEMAS = ("lzg", "log", "pixie")
PAIR = common_pb2.Pair(user_id="fuzz-u", character_id="fuzz-c")
ERASE_PAIR = common_pb2.Pair(user_id="fuzz-erase-u", character_id="fuzz-erase-c")
"""A pair without memories: the erasures of the fuzz run on it (a valid one must not empty PAIR)."""
IMPORT_PAIRS = {service: common_pb2.Pair(user_id=f"fuzz-import-{service}", character_id="c") for service in ("kzg", "lzg", "pixie")}
"""An import target per service: the first valid import fills it, later ones are refused (not empty)."""
USER, ASSISTANT = common_pb2.BEOBACHTER_USER, common_pb2.BEOBACHTER_ASSISTANT
PACKAGES = {"kzg": kzg_pb2, "lzg": lzg_pb2, "pipeline": pipeline_pb2, "pixie": pixie_pb2, "log": log_pb2}


@dataclass(frozen=True)
class World:
    """Records of the attacked pair that valid requests refer to."""

    kzg_key: str
    node_id: int
    entity_id: int
    other_entity_id: int
    timeline_id: int
    entry: common_pb2.KzgEntry


def to_timestamp_s(seconds: int) -> Timestamp:
    return Timestamp(seconds=seconds)


def base_requests(world: World) -> dict[tuple[str, str], Message]:
    """One valid request per RPC of every service (the fuzz sets one field of it, or two, to a bad value)."""
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
        ("kzg", "AppendSessionTurn"): kzg_pb2.AppendSessionTurnRequest(pair=PAIR, as_of=as_of, turn=kzg_pb2.SessionTurn(
            role="user", text="Hallo", turn_id="fuzz-s", created_at=as_of, emotion="freude", arousal=0.2)),
        ("kzg", "GetSession"): kzg_pb2.GetSessionRequest(pair=PAIR),
        ("kzg", "StoreEntry"): kzg_pb2.StoreEntryRequest(
            pair=PAIR, beobachter=USER, inhalt="Rosen duften", salience=analysis.salience, ei=analysis.ei,
            magnets=analysis.magnets, turn=turn, embedding=vector, as_of=as_of, writer="fuzz",
            antwort_auf="Was blüht im Garten?"),
        ("kzg", "Retrieve"): kzg_pb2.RetrieveRequest(pair=PAIR, query_text="Rosen", top_k=5, turn=turn, as_of=as_of,
            filters=kzg_pb2.RetrieveFilters(emotion=["freude"], themen=["garten"], min_salienz=0.1)),
        ("kzg", "GetEntry"): kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=world.kzg_key, include_embedding=True),
        ("kzg", "DeleteEntry"): kzg_pb2.DeleteEntryRequest(pair=PAIR, kzg_key=world.kzg_key, turn=turn,
                                                           hash_dirty_reason="fuzz", as_of=as_of),
        ("kzg", "MarkHashDirty"): kzg_pb2.MarkHashDirtyRequest(pair=PAIR, reason="fuzz", as_of=as_of),
        ("kzg", "ReadPromotionJobs"): kzg_pb2.ReadPromotionJobsRequest(consumer="fuzz", count=2, block_ms=0, reclaim_idle_ms=1),
        ("kzg", "AckPromotionJobs"): kzg_pb2.AckPromotionJobsRequest(job_ids=["1764428000000-0"]),
        ("kzg", "InspectPromotionQueue"): kzg_pb2.InspectPromotionQueueRequest(limit=5),
        ("kzg", "GetModel"): common_pb2.GetModelRequest(),
        ("lzg", "GetModel"): common_pb2.GetModelRequest(),
        ("lzg", "Promote"): lzg_pb2.PromoteRequest(entry=world.entry, turn=turn, ausloeser_turn_id="fuzz-1", as_of=as_of),
        ("lzg", "SpreadingRead"): lzg_pb2.SpreadingReadRequest(
            pair=PAIR, query_vector=lzg_pb2.QueryVector(values=vector), cluster="bier", nova_emotion="freude",
            turn=turn, readers=["analysis"], user_name="Meister", character_name="Nova", as_of=as_of),
        ("lzg", "RenderMemoryBlock"): lzg_pb2.RenderMemoryBlockRequest(pair=PAIR, lzg_resonanz=resonanz, reader="composer",
                                                                       user_name="Meister", character_name="Nova"),
        ("lzg", "ReinforceUsed"): lzg_pb2.ReinforceUsedRequest(pair=PAIR, answer_text="Die Rosen im Garten.",
            served_node_ids=[world.node_id], turn=turn, as_of=as_of, answer_vector=lzg_pb2.QueryVector(values=vector)),
        ("lzg", "RunDecay"): lzg_pb2.RunDecayRequest(as_of=as_of, turn=turn),
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
            zeitpunkt=as_of, praezision="monat", titel="Herbst", themen=["garten"])),
        ("lzg", "UpdateTimeline"): lzg_pb2.UpdateTimelineRequest(pair=PAIR, turn=turn, timeline=lzg_pb2.Timeline(
            id=world.timeline_id, zeitpunkt=as_of, praezision="woche")),
        ("lzg", "DeleteTimeline"): lzg_pb2.DeleteTimelineRequest(pair=PAIR, timeline_id=world.timeline_id, turn=turn),
        ("lzg", "ListTimelines"): lzg_pb2.ListTimelinesRequest(pair=PAIR, ids=[world.timeline_id]),
        ("lzg", "CheckNodes"): lzg_pb2.CheckNodesRequest(pair=PAIR, node_ids=[world.node_id, 999_999]),
        ("pipeline", "ObserveTurn"): pipeline_pb2.ObserveTurnRequest(pair=PAIR, turn_id="fuzz-o", beobachter=USER,
                                                                     text="Die Rosen blühen.", analysis=analysis, as_of=as_of),
        ("pipeline", "BuildDossier"): pipeline_pb2.BuildDossierRequest(
            pair=PAIR, turn_id="fuzz-d", query_text="Was blüht im Garten?", intentionen=["frage"], nova_emotion="freude",
            goals=[pipeline_pb2.ActivatedGoal(embedding=vector, aktivierungs_staerke=0.5)], readers=["analysis"],
            user_name="Meister", character_name="Nova", include_vectors=True, as_of=as_of, recall_k=5),
        ("pipeline", "Dispatch"): pipeline_pb2.DispatchRequest(
            pair=PAIR, turn_id="fuzz-x", user_prompt="Was blüht?", answer_text="Die Rosen blühen im Garten.", cluster="bier",
            served_node_ids=[world.node_id], answer_analysis=analysis, user_emotion_json='{"emotion": "freude"}',
            nova_emotion_json="{}", as_of=as_of),
        ("pixie", "ListTasks"): pixie_pb2.ListTasksRequest(),
        ("pixie", "TriggerTask"): pixie_pb2.TriggerTaskRequest(task="synapsen_decay", as_of=as_of, force=True),
        ("pixie", "PauseTask"): pixie_pb2.PauseTaskRequest(task="synapsen_promotion"),
        ("pixie", "ResumeTask"): pixie_pb2.ResumeTaskRequest(task="synapsen_decay"),
        ("pixie", "ListRuns"): pixie_pb2.ListRunsRequest(task="synapsen_decay", limit=5),
        ("pixie", "ListParkedJobs"): pixie_pb2.ListParkedJobsRequest(limit=5),
        ("log", "Write"): log_pb2.WriteBatch(records=[log_pb2.LogRecord(
            erstellt_am=as_of, turn_id="fuzz-l", quelle="fuzz", node="fuzz", art="bemerkung", inhalt_json='{"a": 1}',
            user_id=PAIR.user_id, character_id=PAIR.character_id)]),
        ("log", "Query"): log_pb2.QueryRequest(turn_id="fuzz-1", pair=PAIR, since=to_timestamp_s(1_600_000_000), limit=5),
        ("log", "Purge"): log_pb2.PurgeRequest(as_of=as_of, retention_days=3650),
        ("log", "LastAnswers"): log_pb2.LastAnswersRequest(quelle=PAIR.character_id, limit=3, node="dispatcher"),
        ("log", "ClusterCounts"): log_pb2.ClusterCountsRequest(pair=PAIR, since=to_timestamp_s(1_600_000_000)),
        ("log", "TokenUsage"): log_pb2.TokenUsageRequest(since=to_timestamp_s(1_600_000_000)),
        **rights_requests(world, turn, as_of),
    }  # fmt: skip
    # The bulk writes (issue 16): two items each, the second a copy of the single call's request.
    observe = bases[("pipeline", "ObserveTurn")]
    bases[("pipeline", "ObserveTurns")] = pipeline_pb2.ObserveTurnsRequest(
        pair=PAIR, profile=common_pb2.PairProfile(user_name="Meister", character_name="Nova", sprache="de"),
        turns=[pipeline_pb2.ObservedTurn(turn_id="fuzz-b1", beobachter=ASSISTANT, text="Der Garten duftet.",
                                         analysis=analysis, as_of=as_of),
               pipeline_pb2.ObservedTurn(turn_id=observe.turn_id, beobachter=observe.beobachter, text=observe.text,  # type: ignore[attr-defined]
                                         analysis=observe.analysis, as_of=observe.as_of)],  # type: ignore[attr-defined]
    )  # fmt: skip
    store = bases[("kzg", "StoreEntry")]
    assert isinstance(store, kzg_pb2.StoreEntryRequest)
    first = kzg_pb2.StoreEntryRequest()
    first.CopyFrom(store)
    first.inhalt = "Die Rosen sind verblüht."
    bases[("kzg", "StoreEntries")] = kzg_pb2.StoreEntriesRequest(entries=[first, store])
    append = bases[("kzg", "AppendSessionTurn")]
    bases[("kzg", "AppendSessionTurns")] = kzg_pb2.AppendSessionTurnsRequest(appends=[append, append])  # type: ignore[list-item]
    return bases


def rights_requests(world: World, turn: common_pb2.TurnContext, as_of: Timestamp) -> dict[tuple[str, str], Message]:
    """A person's rights (issue 13): erasures on a pair without memories, imports into empty pairs."""
    erase = common_pb2.ErasureTarget(pair=ERASE_PAIR)
    entry = common_pb2.KzgEntry()
    entry.CopyFrom(world.entry)
    entry.ClearField("embedding")
    session = kzg_pb2.SessionTurn(role="user", text="Hallo", turn_id="fuzz-s", created_at=as_of)
    node = lzg_pb2.Node(
        id=7, kzg_quell_key="kzg:x:y:fuzz-import", beobachter=USER, inhalt="Rosen im Garten", dimension="interessen",
        gewicht_roh=0.9, gewicht_absolut=3.7, gewicht_decay=3.7, haeufigkeit=1, aktiv=True, erstellt_am=as_of,
        verstaerkt_am=as_of, decay_am=as_of, kzg_erstellt_am=as_of, themen=["garten"],
        magnets=common_pb2.Magnets(entitaet_ids=[3], timeline_id=4), ei=common_pb2.EiFields(emotion="freude"),
    )
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
            timelines=[lzg_pb2.Timeline(id=4, zeitpunkt=as_of, praezision="tag", titel="Fest")],
            nodes=[node]),
        ("lzg", "ForgetNodes"): lzg_pb2.ForgetNodesRequest(pair=PAIR, node_ids=[999_999], turn=turn),
        ("lzg", "CorrectNode"): lzg_pb2.CorrectNodeRequest(pair=PAIR, node_id=world.node_id, inhalt="Rosen im Garten.",
                                                           turn=turn, as_of=as_of),
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
