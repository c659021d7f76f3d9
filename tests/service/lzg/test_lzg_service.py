"""The LZG service over a real gRPC channel with the offline model (SPEC §5, §10)."""

from __future__ import annotations

from datetime import UTC, timedelta

import asyncpg
import grpc
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.embedding import EmbeddingProvider, profile_for
from novaberg_core.errors import ModelMismatch
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from novaberg_core.timeutil import to_timestamp
from services.lzg.server import create_server
from tests.service.lzg.memories import OTHER, PAIR, T0, Stub, kzg_entry, promote

from .conftest import lzg_config


async def _error(call: object) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    return caught.value


async def test_promotion_outcomes_over_grpc(lzg_stub: Stub) -> None:
    new = await promote(lzg_stub, kzg_entry("e1", "Meine Schwester Anna backt jeden Sonntag Kuchen."))
    assert new.outcome == common_pb2.PROMOTION_OUTCOME_NEW_NODE and new.kzg_delete_allowed
    again = await promote(lzg_stub, kzg_entry("e1", "Meine Schwester Anna backt jeden Sonntag Kuchen."))
    assert again.already_promoted and again.node_id == new.node_id and again.kzg_delete_allowed
    duplicate = await promote(lzg_stub, kzg_entry("e2", "Meine Schwester Anna backt jeden Sonntag Kuchen."))
    assert duplicate.outcome == common_pb2.PROMOTION_OUTCOME_DUPLICATE
    assert not duplicate.kzg_delete_allowed and duplicate.node_id == new.node_id
    assert duplicate.best_cosine == pytest.approx(1.0, abs=1e-5)

    node = (
        await lzg_stub.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=new.node_id, include_embedding=True))
    ).node
    assert node.kzg_quell_key == f"kzg:{PAIR.user_id}:nova:e1"
    assert node.beobachter == common_pb2.BEOBACHTER_USER and node.ei.intentionen == ["planung"]
    assert round(node.gewicht_absolut, 3) == 3.754 and node.aktiv
    assert len(node.embedding) == 384
    assert node.erstellt_am.ToDatetime(tzinfo=UTC) == T0


async def test_a_promotion_of_an_entry_without_its_creation_time_is_refused_naming_it(lzg_stub: Stub) -> None:
    """The shared KzgEntry conversion refuses it before the use case runs (SPEC §10: nothing written)."""
    pair = common_pb2.Pair(user_id="ohne-zeit@example.org", character_id="nova")
    entry = kzg_entry("e0", "Ohne Zeitpunkt.", pair=pair)
    entry.ClearField("erstellt_am")
    err = await _error(promote(lzg_stub, entry))
    assert (err.code(), err.details()) == (grpc.StatusCode.INVALID_ARGUMENT, "entry.erstellt_am must be set")
    nodes = await lzg_stub.ListNodes(lzg_pb2.ListNodesRequest(pair=pair))
    assert list(nodes.nodes) == []


async def test_bad_input_gets_precise_errors(lzg_stub: Stub, provider: EmbeddingProvider) -> None:
    theirs = await promote(lzg_stub, kzg_entry("x1", "Tom fährt gern Rad.", pair=OTHER))
    mine = await promote(lzg_stub, kzg_entry("m1", "Mara spielt Geige."))
    stats_before = await lzg_stub.GetPairStats(lzg_pb2.GetPairStatsRequest(pair=PAIR))

    err = await _error(lzg_stub.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=theirs.node_id)))
    assert (
        err.code() == grpc.StatusCode.NOT_FOUND
        and f"node {theirs.node_id} is not a node of this pair" in err.details()
    )
    err = await _error(lzg_stub.ListEdges(lzg_pb2.ListEdgesRequest(pair=PAIR, node_id=theirs.node_id)))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    err = await _error(
        lzg_stub.ReinforceUsed(
            lzg_pb2.ReinforceUsedRequest(
                pair=PAIR, answer_text="Rad", served_node_ids=[mine.node_id, theirs.node_id]
            )
        )
    )
    assert err.code() == grpc.StatusCode.NOT_FOUND and str(theirs.node_id) in err.details()

    read = lzg_pb2.SpreadingReadRequest(pair=PAIR, query_text="Geige", cluster="disco")
    err = await _error(lzg_stub.SpreadingRead(read))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("unknown cluster 'disco'; known: werkstatt, foyer, schlachtfeld")

    read = lzg_pb2.SpreadingReadRequest(
        pair=PAIR, query_vector=lzg_pb2.QueryVector(values=[0.1] * 768), cluster="glut"
    )
    err = await _error(lzg_stub.SpreadingRead(read))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details() == f"query_vector has 768 values; the embedding model {provider.model_id} needs 384"

    render = lzg_pb2.RenderMemoryBlockRequest(pair=PAIR, reader="poet")
    err = await _error(lzg_stub.RenderMemoryBlock(render))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "unknown reader 'poet'" in err.details()

    bad = kzg_entry("b1", "zu salient")
    bad.salienz = 1.5
    err = await _error(promote(lzg_stub, bad))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "entry.salienz must lie within 0..1" in err.details()

    assert await lzg_stub.GetPairStats(lzg_pb2.GetPairStatsRequest(pair=PAIR)) == stats_before


async def test_read_render_reinforce_and_decay_round_trip(
    lzg_stub: Stub, sink: InMemorySink, plog: PipelineLog
) -> None:
    anna = (
        await lzg_stub.UpsertEntity(
            lzg_pb2.UpsertEntityRequest(pair=PAIR, entity=lzg_pb2.Entity(name="Anna", typ="person"))
        )
    ).entity
    texts = [
        ("a1", "Anna hat mir früher immer Schokolade mitgebracht.", ("Anna", "Schokolade")),
        ("a2", "Anna ist meine ältere Schwester.", ("Anna", "Familie")),
        ("a3", "Im Urlaub waren wir in Norwegen wandern.", ("Urlaub",)),
    ]
    ids = []
    for entry_id, text, themen in texts:
        ents = (anna.id,) if "Anna" in themen else ()
        ids.append(
            (await promote(lzg_stub, kzg_entry(entry_id, text, themen=themen, entitaet_ids=ents))).node_id
        )

    read = await lzg_stub.SpreadingRead(
        lzg_pb2.SpreadingReadRequest(
            pair=PAIR,
            query_text="Erzähl mir von Annas Schokolade",
            cluster="bier",
            nova_emotion="freude",
            turn=common_pb2.TurnContext(turn_id="turn-read"),
        )
    )
    resonanz = read.lzg_resonanz
    assert resonanz.sprung_tiefe == 2 and resonanz.cluster == "bier" and resonanz.nova_sektor == "freude"
    assert resonanz.anker_anzahl >= 1 and resonanz.erinnerungen[0].knoten_id == ids[0]
    served = [e.knoten_id for e in resonanz.erinnerungen]
    assert ids[1] in served  # reached over the shared entity Anna if not as an anchor

    block = await lzg_stub.RenderMemoryBlock(
        lzg_pb2.RenderMemoryBlockRequest(pair=PAIR, lzg_resonanz=resonanz, reader="composer")
    )
    assert '"Anna hat mir früher immer Schokolade mitgebracht."' in block.text
    assert "Person A" in block.text and "Nova" not in block.text

    answer = "Anna hat dir früher immer Schokolade mitgebracht, das weiß ich noch."
    reinforced = await lzg_stub.ReinforceUsed(
        lzg_pb2.ReinforceUsedRequest(
            pair=PAIR,
            answer_text=answer,
            served_node_ids=served,
            turn=common_pb2.TurnContext(turn_id="turn-read"),
            as_of=to_timestamp(T0 + timedelta(hours=1)),
        )
    )
    protokoll = reinforced.protokoll
    assert protokoll.ausgang == lzg_pb2.VERWENDUNG_AUSGANG_GERECHNET
    assert protokoll.schwelle == profile_for("all-minilm-l6-v2-int8").usage and protokoll.deckel == 3
    assert protokoll.geprueft == len(served) and protokoll.verwendet[0] == ids[0]
    naehe = {n.knoten_id: n.naehe for n in protokoll.naehen_alle}
    assert set(protokoll.verwendet) == {k for k, v in naehe.items() if v >= protokoll.schwelle}
    assert protokoll.kanten_neu > 0
    node = (await lzg_stub.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=ids[0]))).node
    assert node.haeufigkeit == 2 and node.gewicht_roh == pytest.approx(1.0)

    later = to_timestamp(T0 + timedelta(days=365))  # after today: only a run scoped to pairs may go there
    decay = await lzg_stub.RunDecay(lzg_pb2.RunDecayRequest(as_of=later, pairs=[PAIR]))
    assert decay.nodes_decayed == 3 and decay.nodes_deactivated == 0
    again = await lzg_stub.RunDecay(lzg_pb2.RunDecayRequest(as_of=later, pairs=[PAIR]))
    assert again.nodes_decayed == 0

    await plog.flush()
    nodes = {r.node for r in sink.records}
    assert {"promotion", "enricher", "verwendung", "synapsen_decay"} <= nodes


async def test_entity_and_timeline_crud_fire_trigger3(lzg_stub: Stub) -> None:
    resolved = await lzg_stub.ResolveEntities(
        lzg_pb2.ResolveEntitiesRequest(
            pair=PAIR, names=["Anna", "Annie", "anna"], create_missing=True, typ_for_new="person"
        )
    )
    anna, annie, again = resolved.entitaet_ids
    assert anna == again and anna != annie
    await promote(lzg_stub, kzg_entry("p1", "Annie kommt morgen zu Besuch.", entitaet_ids=(annie,)))
    await promote(lzg_stub, kzg_entry("p2", "Mit Anna gehe ich ins Kino.", entitaet_ids=(anna,)))
    merged = await lzg_stub.MergeEntities(
        lzg_pb2.MergeEntitiesRequest(pair=PAIR, source_id=annie, target_id=anna)
    )
    assert merged.nodes_rewritten == 1 and merged.edges_recomputed == 2
    entities = (await lzg_stub.ListEntities(lzg_pb2.ListEntitiesRequest(pair=PAIR))).entities
    assert [(e.name, list(e.aliases)) for e in entities] == [("Anna", ["Annie"])]
    edges = (await lzg_stub.ListEdges(lzg_pb2.ListEdgesRequest(pair=PAIR))).edges
    assert all(list(e.geteilte_entitaet_ids) == [anna] for e in edges) and len(edges) == 2

    created = await lzg_stub.UpsertTimeline(
        lzg_pb2.UpsertTimelineRequest(
            pair=PAIR, timeline=lzg_pb2.Timeline(zeitpunkt=to_timestamp(T0), praezision="tag", titel="Kino")
        )
    )
    assert created.created and created.timeline.praezision == "tag"
    moved = await lzg_stub.UpdateTimeline(
        lzg_pb2.UpdateTimelineRequest(
            pair=PAIR,
            timeline=lzg_pb2.Timeline(
                id=created.timeline.id, zeitpunkt=to_timestamp(T0 + timedelta(days=2)), praezision="tag"
            ),
        )
    )
    assert moved.edges_deleted == 0
    err = await _error(
        lzg_stub.UpsertTimeline(
            lzg_pb2.UpsertTimelineRequest(
                pair=PAIR, timeline=lzg_pb2.Timeline(zeitpunkt=to_timestamp(T0), praezision="ewig")
            )
        )
    )
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "timeline.praezision 'ewig'" in err.details()
    deleted = await lzg_stub.DeleteEntity(lzg_pb2.DeleteEntityRequest(pair=PAIR, entity_id=anna))
    assert deleted.edges_deleted == 2
    stats = await lzg_stub.GetPairStats(lzg_pb2.GetPairStatsRequest(pair=PAIR))
    assert (stats.nodes_active, stats.edges, stats.entities, stats.timelines) == (2, 0, 0, 1)
    assert stats.model_id == "all-minilm-l6-v2-int8"


async def test_a_store_of_another_model_refuses_to_start(pg_url: str, provider: EmbeddingProvider) -> None:
    running = await create_server(lzg_config(pg_url), provider=provider, log=PipelineLog(InMemorySink()))
    await running.stop(None)
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute("UPDATE lzg.modell SET model_id = 'ollama:nomic-embed-text-v2-moe'")
    finally:
        await conn.close()
    with pytest.raises(ModelMismatch, match="filled by embedding model ollama:nomic-embed-text-v2-moe"):
        await create_server(lzg_config(pg_url), provider=provider, log=PipelineLog(InMemorySink()))


async def test_check_nodes_and_find_timelines_in_one_call(lzg_stub: Stub) -> None:
    """The fan-out savers: a set of node ids checked at once, a timeline ref found by id or by instant."""
    mine = (await promote(lzg_stub, kzg_entry("c1", "Anna backt Brot."))).node_id
    foreign = (await promote(lzg_stub, kzg_entry("c2", "Tom fährt Rad.", pair=OTHER))).node_id
    checked = await lzg_stub.CheckNodes(lzg_pb2.CheckNodesRequest(pair=PAIR, node_ids=[foreign, mine, 424242]))
    assert list(checked.missing) == [foreign, 424242]
    made = [
        (await lzg_stub.UpsertTimeline(lzg_pb2.UpsertTimelineRequest(pair=PAIR, timeline=lzg_pb2.Timeline(
            zeitpunkt=to_timestamp(T0), praezision=praezision)))).timeline.id
        for praezision in ("tag", "woche")
    ]
    at = await lzg_stub.ListTimelines(lzg_pb2.ListTimelinesRequest(pair=PAIR, zeitpunkt=to_timestamp(T0), praezision="woche"))
    assert [t.id for t in at.timelines] == [made[1]]
    by_id = await lzg_stub.ListTimelines(lzg_pb2.ListTimelinesRequest(pair=PAIR, ids=[made[0]]))
    assert [t.id for t in by_id.timelines] == [made[0]]
    other_pair = await lzg_stub.ListTimelines(lzg_pb2.ListTimelinesRequest(pair=OTHER, ids=made))
    assert list(other_pair.timelines) == []
    half = await _error(lzg_stub.ListTimelines(lzg_pb2.ListTimelinesRequest(pair=PAIR, praezision="tag")))
    assert half.code() == grpc.StatusCode.INVALID_ARGUMENT
