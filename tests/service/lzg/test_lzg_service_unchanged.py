"""Bad input over gRPC changes nothing: full GetNode / ListEdges payloads compared (SPEC §10)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import grpc
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from tests.service.lzg.memories import OTHER, PAIR, Stub, kzg_entry, promote

Snapshot = dict[str, bytes]


async def _snapshot(stub: Stub, nodes: dict[str, list[int]]) -> Snapshot:
    """Every node (with embedding) and every edge list of both pairs, as serialised protobuf bytes."""
    out: Snapshot = {}
    for name, pair in (("mine", PAIR), ("theirs", OTHER)):
        for node_id in nodes[name]:
            node = await stub.GetNode(
                lzg_pb2.GetNodeRequest(pair=pair, node_id=node_id, include_embedding=True)
            )
            out[f"{name}:node:{node_id}"] = node.SerializeToString(deterministic=True)
            edges = await stub.ListEdges(lzg_pb2.ListEdgesRequest(pair=pair, node_id=node_id))
            out[f"{name}:edges:{node_id}"] = edges.SerializeToString(deterministic=True)
        all_edges = await stub.ListEdges(lzg_pb2.ListEdgesRequest(pair=pair))
        out[f"{name}:edges"] = all_edges.SerializeToString(deterministic=True)
        listed = await stub.ListNodes(lzg_pb2.ListNodesRequest(pair=pair, include_inactive=True, limit=1000))
        out[f"{name}:nodes"] = listed.SerializeToString(deterministic=True)
        stats = await stub.GetPairStats(lzg_pb2.GetPairStatsRequest(pair=pair))
        out[f"{name}:stats"] = stats.SerializeToString(deterministic=True)
        entities = await stub.ListEntities(lzg_pb2.ListEntitiesRequest(pair=pair))
        out[f"{name}:entities"] = entities.SerializeToString(deterministic=True)
    return out


async def test_every_bad_input_rpc_leaves_nodes_and_edges_byte_identical(lzg_stub: Stub) -> None:
    anna = (
        await lzg_stub.UpsertEntity(
            lzg_pb2.UpsertEntityRequest(pair=PAIR, entity=lzg_pb2.Entity(name="Anna", typ="person"))
        )
    ).entity.id
    mine = [
        (await promote(lzg_stub, kzg_entry(i, text, themen=themen, entitaet_ids=ents))).node_id
        for i, text, themen, ents in (
            ("m1", "Anna hat mir früher immer Schokolade mitgebracht.", ("Anna", "Schokolade"), (anna,)),
            ("m2", "Anna ist meine ältere Schwester.", ("Anna", "Familie"), (anna,)),
            ("m3", "Im Urlaub waren wir in Norwegen wandern.", ("Urlaub",), ()),
        )
    ]
    theirs = [(await promote(lzg_stub, kzg_entry("t1", "Tom fährt gern Rad.", pair=OTHER))).node_id]
    nodes = {"mine": mine, "theirs": theirs}
    before = await _snapshot(lzg_stub, nodes)
    assert len((lzg_pb2.ListEdgesResponse.FromString(before["mine:edges"])).edges) == 2  # m1 ↔ m2
    read = await lzg_stub.SpreadingRead(
        lzg_pb2.SpreadingReadRequest(pair=PAIR, query_text="Annas Schokolade", cluster="bier")
    )
    resonanz = read.lzg_resonanz
    assert len(resonanz.erinnerungen) >= 2

    dim = len(lzg_pb2.GetNodeResponse.FromString(before[f"mine:node:{mine[0]}"]).node.embedding)
    wrong_vector = lzg_pb2.QueryVector(values=[0.1] * (dim + 1))
    ctx = common_pb2.TurnContext(turn_id="turn-bad")
    bad: list[tuple[str, Callable[[], Awaitable[object]], grpc.StatusCode, str]] = [
        (
            "unknown cluster",
            lambda: lzg_stub.SpreadingRead(
                lzg_pb2.SpreadingReadRequest(pair=PAIR, query_text="Anna", cluster="disco", turn=ctx)
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "unknown cluster 'disco'",
        ),
        (
            "unknown reader (render)",
            lambda: lzg_stub.RenderMemoryBlock(
                lzg_pb2.RenderMemoryBlockRequest(pair=PAIR, lzg_resonanz=resonanz, reader="poet")
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "unknown reader 'poet'",
        ),
        (
            "wrong dimension (read)",
            lambda: lzg_stub.SpreadingRead(
                lzg_pb2.SpreadingReadRequest(pair=PAIR, query_vector=wrong_vector, cluster="glut", turn=ctx)
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            f"query_vector has {dim + 1} values",
        ),
        (
            "foreign node id (reinforce)",
            lambda: lzg_stub.ReinforceUsed(
                lzg_pb2.ReinforceUsedRequest(
                    pair=PAIR,
                    answer_text="Anna hat mir früher immer Schokolade mitgebracht.",
                    served_node_ids=[*mine, theirs[0]],
                    turn=ctx,
                )
            ),
            grpc.StatusCode.NOT_FOUND,
            str(theirs[0]),
        ),
        (
            "foreign node id (get node)",
            lambda: lzg_stub.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=theirs[0])),
            grpc.StatusCode.NOT_FOUND,
            f"node {theirs[0]} is not a node of this pair",
        ),
        (
            "foreign node id (list edges)",
            lambda: lzg_stub.ListEdges(lzg_pb2.ListEdgesRequest(pair=PAIR, node_id=theirs[0])),
            grpc.StatusCode.NOT_FOUND,
            f"node {theirs[0]} is not a node of this pair",
        ),
        (
            "foreign node id (reinforce in the other pair)",
            lambda: lzg_stub.ReinforceUsed(
                lzg_pb2.ReinforceUsedRequest(
                    pair=OTHER, answer_text="Tom fährt gern Rad.", served_node_ids=[theirs[0], mine[0]]
                )
            ),
            grpc.StatusCode.NOT_FOUND,
            str(mine[0]),
        ),
        (
            "salience outside 0..1 (promote)",
            lambda: promote(lzg_stub, kzg_entry("b1", "Anna hat mir Schokolade mitgebracht.", salienz=1.5)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "entry.salienz must lie within 0..1",
        ),
        (
            "empty pair field (promote)",
            lambda: promote(
                lzg_stub,
                kzg_entry(
                    "b2", "Anna ist meine Schwester.", pair=common_pb2.Pair(user_id="", character_id="nova")
                ),
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "user_id must not be empty",
        ),
    ]
    for name, call, code, message in bad:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call()
        assert caught.value.code() == code, (name, caught.value.details())
        assert message in (caught.value.details() or ""), (name, caught.value.details())
        after = await _snapshot(lzg_stub, nodes)
        changed = sorted(k for k in before if after[k] != before[k])
        assert changed == [], f"{name}: changed {changed}"
