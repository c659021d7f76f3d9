"""A turn goes on without a peer that does not answer (services/pipeline/deadline.py; docs/decisions.md
"A turn goes on without a peer that does not answer"): a dossier whose KZG or LZG is out, or silent past
its share of the caller's deadline, is built from the other layer; an observed turn (and the answer in
Dispatch) whose LZG registry gives no answer is written without entity and timeline magnets; each names
what it went without in ``fehler``. A batch (ObserveTurns) still fails.

The pipeline talks to the real KZG and LZG servers through a proxy per peer that passes every call
on, except the one a test makes fail or wait (tests/service/pipeline/proxies.py).
"""

from __future__ import annotations

import asyncio
import time

import grpc
import grpc.aio
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from services.pipeline.deadline import SHARE_OF_TIME_LEFT, SILENT_AFTER_S
from tests.service.pipeline.proxies import PAUSE_S, Proxied, down, late

PAIR = common_pb2.Pair(user_id="ohne-schicht@example.org", character_id="nova")
QUESTION = "When is Anna's birthday?"


async def observe(proxied: Proxied) -> None:
    """One HIGH turn of ``PAIR`` (with both peers passing every call on)."""
    await proxied.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=PAIR, turn_id="t-1", beobachter=common_pb2.BEOBACHTER_USER,
        text="My sister Anna celebrates her birthday on March 12."))  # fmt: skip


def _dossier(turn_id: str) -> pipeline_pb2.BuildDossierRequest:
    return pipeline_pb2.BuildDossierRequest(pair=PAIR, turn_id=turn_id, query_text=QUESTION)


async def test_a_whole_dossier_names_nothing_missing(proxied: Proxied) -> None:
    await observe(proxied)
    dossier = await proxied.pipeline.BuildDossier(_dossier("t-2"), timeout=10)
    assert list(dossier.fehler) == []
    assert dossier.kzg_hits and "Anna" in dossier.kzg_hits[0].hit.entry.inhalt
    assert set(dossier.memory_blocks) == {"composer", "analysis"}


async def test_without_the_lzg_the_dossier_holds_the_kzg_and_names_the_missing_read(proxied: Proxied) -> None:
    await observe(proxied)
    proxied.lzg.behaviours["SpreadingRead"] = down(details="the LZG is down")

    dossier = await proxied.pipeline.BuildDossier(_dossier("t-2"), timeout=10)

    assert list(dossier.fehler) == ["LZG SpreadingRead: the LZG is down"]
    assert dossier.kzg_hits and "Anna" in dossier.kzg_hits[0].hit.entry.inhalt
    assert [item.layer for item in dossier.recall][:1] == ["kzg"]
    assert dossier.memory_blocks == {"composer": "", "analysis": ""}
    assert list(dossier.served_node_ids) == [] and not dossier.lzg_resonanz.erinnerungen
    await proxied.log.flush()
    errors = [r for r in proxied.sink.records if r.turn_id == "t-2" and r.art == "fehler"]
    assert [(r.node, r.inhalt["message"]) for r in errors] == [("enricher", "LZG SpreadingRead: the LZG is down")]


async def test_without_the_kzg_the_dossier_holds_the_lzg(proxied: Proxied) -> None:
    await observe(proxied)
    proxied.kzg.behaviours["Retrieve"] = down(details="the KZG is down")

    dossier = await proxied.pipeline.BuildDossier(_dossier("t-2"), timeout=10)

    assert list(dossier.fehler) == ["KZG Retrieve: the KZG is down"]
    assert list(dossier.kzg_hits) == [] and all(item.layer == "lzg" for item in dossier.recall)
    assert proxied.lzg.calls["SpreadingRead"] == 1  # the LZG answered (it holds no node of the pair yet)
    assert set(dossier.memory_blocks) == {"composer", "analysis"}


async def test_a_layer_silent_past_its_share_of_the_deadline_is_left_out_in_time(proxied: Proxied) -> None:
    await observe(proxied)
    await proxied.pipeline.BuildDossier(_dossier("t-warm"), timeout=10)  # models checked, registry warm
    proxied.lzg.behaviours["SpreadingRead"] = late(5.0)
    deadline_s = 1.5

    started = time.monotonic()
    dossier = await proxied.pipeline.BuildDossier(_dossier("t-2"), timeout=deadline_s)
    took = time.monotonic() - started

    assert took < deadline_s
    assert len(dossier.fehler) == 1 and dossier.fehler[0].startswith("LZG SpreadingRead: no answer within")
    budget_s = float(dossier.fehler[0].split("within ")[1].split(" s")[0])
    assert budget_s <= deadline_s * SHARE_OF_TIME_LEFT + 0.01
    assert dossier.kzg_hits


async def test_neither_layer_answering_is_unavailable_naming_both(proxied: Proxied) -> None:
    await observe(proxied)
    proxied.kzg.behaviours["Retrieve"] = down(details="the KZG is down")
    proxied.lzg.behaviours["SpreadingRead"] = down(details="the LZG is down")

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await proxied.pipeline.BuildDossier(_dossier("t-2"), timeout=10)

    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    details = refused.value.details() or ""
    assert details.startswith("neither memory layer answered:")
    assert "the KZG is down" in details and "the LZG is down" in details


async def test_a_layer_refusing_the_request_still_fails_the_dossier(proxied: Proxied) -> None:
    await observe(proxied)
    proxied.lzg.behaviours["SpreadingRead"] = down(grpc.StatusCode.INVALID_ARGUMENT, "query_vector: wrong size")

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await proxied.pipeline.BuildDossier(_dossier("t-2"), timeout=10)

    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "query_vector: wrong size" in (refused.value.details() or "")


async def test_a_peer_out_at_the_model_check_is_asked_again_by_the_next_dossier(proxied: Proxied) -> None:
    proxied.lzg.behaviours["GetModel"] = down(details="the LZG is down")
    proxied.lzg.behaviours["SpreadingRead"] = down(details="the LZG is down")

    first = await proxied.pipeline.BuildDossier(_dossier("t-1"), timeout=10)  # the pipeline's first call
    # The LZG failed the model check: the dossier's LZG calls are not even sent.
    assert list(first.fehler) == [
        f"LZG {method}: left out for a few seconds after: LZG GetModel: the LZG is down"
        for method in ("ResolveEntities", "SpreadingRead")
    ]
    assert proxied.lzg.calls["SpreadingRead"] == 0
    asked = proxied.lzg.calls["GetModel"]  # (retried: GetModel is idempotent)
    assert asked >= 1 and proxied.kzg.calls["GetModel"] == 1

    proxied.lzg.behaviours.clear()
    await asyncio.sleep(PAUSE_S)
    second = await proxied.pipeline.BuildDossier(_dossier("t-2"), timeout=10)
    assert list(second.fehler) == []
    assert proxied.lzg.calls["GetModel"] == asked + 1  # asked again now that it answers, then remembered
    await proxied.pipeline.BuildDossier(_dossier("t-3"), timeout=10)
    assert proxied.lzg.calls["GetModel"] == asked + 1


async def test_a_peer_that_gave_no_answer_is_left_out_for_a_pause_and_then_asked_again(proxied: Proxied) -> None:
    await observe(proxied)
    proxied.lzg.behaviours["SpreadingRead"] = late(5.0)

    first = await proxied.pipeline.BuildDossier(_dossier("t-2"), timeout=2.0)  # waited 1.5 s ≥ SILENT_AFTER_S
    assert first.fehler[0].startswith("LZG SpreadingRead: no answer within")
    sent = proxied.lzg.calls["SpreadingRead"]

    started = time.monotonic()
    second = await proxied.pipeline.BuildDossier(_dossier("t-3"), timeout=1.0)
    assert time.monotonic() - started < 0.5  # no wait for the silent LZG
    # ("Anna" is resolved from the registry cache: no ResolveEntities to leave out)
    assert list(second.fehler) == [f"LZG SpreadingRead: left out for a few seconds after: {first.fehler[0]}"]
    assert proxied.lzg.calls["SpreadingRead"] == sent and second.kzg_hits

    proxied.lzg.behaviours.clear()
    await asyncio.sleep(PAUSE_S)
    third = await proxied.pipeline.BuildDossier(_dossier("t-4"), timeout=1.0)
    assert list(third.fehler) == [] and proxied.lzg.calls["SpreadingRead"] == sent + 1


def _observe(turn_id: str, text: str) -> pipeline_pb2.ObserveTurnRequest:
    return pipeline_pb2.ObserveTurnRequest(pair=PAIR, turn_id=turn_id, beobachter=common_pb2.BEOBACHTER_USER, text=text)


async def test_a_turn_whose_registry_is_out_is_written_without_magnets_and_names_it(proxied: Proxied) -> None:
    proxied.lzg.behaviours["ResolveEntities"] = down(details="the LZG is down")

    observed = await proxied.pipeline.ObserveTurn(_observe("t-1", "My brother Tom moves to Hamburg next week."), timeout=10)

    assert list(observed.fehler) == ["LZG ResolveEntities: the LZG is down"]
    assert observed.session_turn_count == 1 and observed.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED
    assert list(observed.analysis.magnets.entitaet_ids) == []  # the names stay unresolved
    await proxied.log.flush()
    errors = [r for r in proxied.sink.records if r.turn_id == "t-1" and r.art == "fehler"]
    assert [(r.node, r.inhalt["message"]) for r in errors] == [("salience", "LZG ResolveEntities: the LZG is down")]

    proxied.lzg.behaviours.clear()
    await asyncio.sleep(PAUSE_S)
    again = await proxied.pipeline.ObserveTurn(_observe("t-2", "Tom loves Hamburg."), timeout=10)
    assert list(again.fehler) == [] and list(again.analysis.magnets.entitaet_ids)


async def test_a_batch_whose_registry_is_out_fails_as_a_whole(proxied: Proxied) -> None:
    proxied.lzg.behaviours["ResolveEntities"] = down(details="the LZG is down")

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await proxied.pipeline.ObserveTurns(pipeline_pb2.ObserveTurnsRequest(pair=PAIR, turns=[
            pipeline_pb2.ObservedTurn(turn_id="t-1", beobachter=common_pb2.BEOBACHTER_USER,
                                      text="My brother Tom moves to Hamburg next week."),
        ]), timeout=10)  # fmt: skip

    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "the LZG is down" in (refused.value.details() or "")


async def test_an_answer_whose_registry_is_out_is_dispatched_and_names_it(proxied: Proxied) -> None:
    await observe(proxied)
    proxied.lzg.behaviours["ResolveEntities"] = down(details="the LZG is down")

    dispatched = await proxied.pipeline.Dispatch(pipeline_pb2.DispatchRequest(
        pair=PAIR, turn_id="t-1", user_prompt="And Tom?", answer_text="Tom visits Lisbon in May, you said.",
        cluster="bier",
    ), timeout=10)  # fmt: skip

    # The LZG gave no answer, so the usage reinforcement does not wait for it either (left out for the pause).
    assert list(dispatched.fehler) == [
        "usage reinforcement: LZG ReinforceUsed: left out for a few seconds after: LZG ResolveEntities: the LZG is down",
        "LZG ResolveEntities: the LZG is down",
    ]
    assert dispatched.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED and dispatched.cluster_persisted == "bier"


async def test_a_peer_that_misses_a_tight_deadline_is_asked_again_at_once(proxied: Proxied) -> None:
    await observe(proxied)
    proxied.lzg.behaviours["SpreadingRead"] = late(5.0)
    tight_s = SILENT_AFTER_S / SHARE_OF_TIME_LEFT / 2  # the LZG may take half of SILENT_AFTER_S

    first = await proxied.pipeline.BuildDossier(_dossier("t-2"), timeout=tight_s)
    assert first.fehler[0].startswith("LZG SpreadingRead: no answer within")

    proxied.lzg.behaviours.clear()
    second = await proxied.pipeline.BuildDossier(_dossier("t-3"), timeout=tight_s)
    assert list(second.fehler) == []  # a tight deadline says nothing of the peer: no pause


async def test_a_dispatch_whose_peers_fail_records_the_turn_in_time_and_names_each_part(proxied: Proxied) -> None:
    await observe(proxied)
    proxied.kzg.behaviours["AppendSessionTurn"] = late(5.0)
    proxied.kzg.behaviours["StoreEntry"] = late(5.0)
    proxied.lzg.behaviours["ReinforceUsed"] = down(details="the LZG is down")
    deadline_s = 2.0

    started = time.monotonic()
    dispatched = await proxied.pipeline.Dispatch(pipeline_pb2.DispatchRequest(
        pair=PAIR, turn_id="t-1", user_prompt="And Tom?", answer_text="Tom visits Lisbon in May, you said.",
        cluster="bier",
    ), timeout=deadline_s)  # fmt: skip

    assert time.monotonic() - started < deadline_s
    assert [f.split(" within ")[0] for f in dispatched.fehler] == [
        "usage reinforcement: LZG ReinforceUsed: the LZG is down",
        "own KZG entry: KZG: no answer",
    ]
    assert not dispatched.HasField("kzg") and dispatched.cluster_persisted == "bier"
    # The usage record names the reinforcement's failure, not the last failure of the dispatch.
    assert dispatched.protokoll.error == "usage reinforcement: LZG ReinforceUsed: the LZG is down"
