"""Decay scoped to pairs (SPEC §5.7, issue 16): a replay's simulated clock ages only its own pairs."""

from __future__ import annotations

from datetime import timedelta

import grpc
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from novaberg_core.timeutil import to_timestamp, utc_now
from tests.service.lzg.memories import OTHER, PAIR, Stub, kzg_entry, promote

from .test_lzg_service import _error

THIRD = common_pb2.Pair(user_id="ida@example.org", character_id="nova")


async def _node(stub: Stub, pair: common_pb2.Pair, node_id: int) -> lzg_pb2.Node:
    return (await stub.GetNode(lzg_pb2.GetNodeRequest(pair=pair, node_id=node_id))).node


async def test_a_scoped_decay_ages_its_pairs_only_and_logs_them(
    lzg_stub: Stub, plog: PipelineLog, sink: InMemorySink
) -> None:
    now = utc_now().replace(microsecond=0)
    ids = {}
    for pair in (PAIR, OTHER, THIRD):
        entry = kzg_entry(f"d-{pair.user_id}", f"Ein Ausflug an den See mit {pair.user_id}.", pair=pair)
        ids[pair.user_id] = (await promote(lzg_stub, entry, as_of=now - timedelta(days=1))).node_id
    untouched = await _node(lzg_stub, OTHER, ids[OTHER.user_id])

    months_ahead = to_timestamp(now + timedelta(days=90))
    decayed = await lzg_stub.RunDecay(lzg_pb2.RunDecayRequest(
        as_of=months_ahead, pairs=[PAIR, THIRD, PAIR], turn=common_pb2.TurnContext(turn_id="replay-decay"),
    ))  # fmt: skip
    assert (decayed.nodes_decayed, decayed.nodes_deactivated) == (2, 0)
    for pair in (PAIR, THIRD):
        node = await _node(lzg_stub, pair, ids[pair.user_id])
        assert node.decay_am == months_ahead and node.gewicht_decay < node.gewicht_absolut
    assert await _node(lzg_stub, OTHER, ids[OTHER.user_id]) == untouched

    await plog.flush()
    rows = [r for r in sink.records if r.node == "synapsen_decay"]
    # SPEC §8: a scoped run's rows carry its pairs (one row each), never NULL.
    assert sorted((r.user_id, r.character_id) for r in rows) == sorted(
        (p.user_id, p.character_id) for p in (PAIR, THIRD)
    )
    assert {r.turn_id for r in rows} == {"replay-decay"}


async def test_an_all_pairs_decay_in_the_future_is_refused_and_changes_nothing(lzg_stub: Stub) -> None:
    entry = kzg_entry("f1", "Wir haben Drachen steigen lassen.")
    node_id = (await promote(lzg_stub, entry, as_of=utc_now())).node_id
    before = await _node(lzg_stub, PAIR, node_id)
    ahead = to_timestamp(utc_now() + timedelta(days=90))
    error = await _error(lzg_stub.RunDecay(lzg_pb2.RunDecayRequest(as_of=ahead)))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "over all pairs" in (error.details() or "") and "in the future" in (error.details() or "")
    assert await _node(lzg_stub, PAIR, node_id) == before
    # The daily run on the real clock still covers every pair.
    daily = await lzg_stub.RunDecay(lzg_pb2.RunDecayRequest())
    assert daily.nodes_decayed == 1


@pytest.mark.parametrize("bad", [common_pb2.Pair(user_id="", character_id="nova"),
                                 common_pb2.Pair(user_id="mara", character_id="")])
async def test_a_scope_with_a_half_pair_is_refused(lzg_stub: Stub, bad: common_pb2.Pair) -> None:
    error = await _error(lzg_stub.RunDecay(lzg_pb2.RunDecayRequest(pairs=[PAIR, bad])))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "pairs[1]" in (error.details() or "")
