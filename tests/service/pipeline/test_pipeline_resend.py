"""A resent turn is written once (docs/decisions.md "A resent turn is written once").

A caller that got no answer — the connection broke, its deadline passed, the pipeline answered
UNAVAILABLE half way — sends the turn again. A turn_id names one turn: the second ObserveTurn of the
same pair, turn_id and beobachter finds the session turn and the KZG entry the first wrote, writes
neither again and says ``repeated``; what the first left unwritten is written now. The same holds for
a resent ObserveTurns batch, and for a resent Dispatch: the usage reinforcement is applied once per
turn, the character's own turn written once. Real KZG and LZG behind proxies that can lose an answer
or refuse a call (tests/service/pipeline/proxies.py).
"""

from __future__ import annotations

import asyncio

import grpc
import grpc.aio
import pytest
import redis.asyncio as aioredis

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from services.kzg.store import PROMOTION_STREAM
from services.pipeline.app.turn_writer import turn_entry_id
from tests.service.pipeline.proxies import PAUSE_S, Proxied, answer_lost, down
from tests.stored import kzg_entry_turns

PAIR = common_pb2.Pair(user_id="nochmal@example.org", character_id="nova")
USER, ASSISTANT = common_pb2.BEOBACHTER_USER, common_pb2.BEOBACHTER_ASSISTANT
TEXT = "My sister Anna celebrates her birthday on March 12."


def _observe(turn_id: str, text: str = TEXT, beobachter: common_pb2.Beobachter = USER) -> pipeline_pb2.ObserveTurnRequest:
    return pipeline_pb2.ObserveTurnRequest(pair=PAIR, turn_id=turn_id, beobachter=beobachter, text=text)


async def _session(proxied: Proxied) -> list[tuple[str, str]]:
    return [(t.turn_id, t.role) for t in (await proxied.kzg_stub.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))).turns]


async def _entries(redis_url: str) -> list[tuple[str, str]]:
    return await kzg_entry_turns(redis_url, PAIR)


async def _promotion_jobs(redis_url: str) -> int:
    client = aioredis.from_url(redis_url)
    try:
        return int(await client.xlen(PROMOTION_STREAM))
    finally:
        await client.aclose()


async def test_a_turn_sent_twice_is_written_once_and_the_second_answer_says_repeated(
    proxied: Proxied, redis_url: str
) -> None:
    first = await proxied.pipeline.ObserveTurn(_observe("t-1"), timeout=10)
    jobs = await _promotion_jobs(redis_url)
    again = await proxied.pipeline.ObserveTurn(_observe("t-1"), timeout=10)

    assert not first.repeated and first.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED
    assert again.repeated and again.kzg.outcome == kzg_pb2.STORE_OUTCOME_REPEATED
    assert again.kzg.kzg_key == first.kzg.kzg_key and again.kzg.kzg_key.endswith(turn_entry_id("t-1", USER))
    assert (again.kzg.tier, again.kzg.queued_for_promotion) == (first.kzg.tier, True)
    assert again.session_turn_count == first.session_turn_count == 1
    assert await _session(proxied) == [("t-1", "user")]
    assert await _entries(redis_url) == [("t-1", "user")]
    assert await _promotion_jobs(redis_url) == jobs


async def test_resends_racing_the_first_call_leave_one_copy(proxied: Proxied, redis_url: str) -> None:
    """A caller that gave up waiting resends while the first call still runs: both land once."""
    answers = await asyncio.gather(*(proxied.pipeline.ObserveTurn(_observe("t-1"), timeout=10) for _ in range(3)))
    assert [a.kzg.kzg_key for a in answers] == [answers[0].kzg.kzg_key] * 3
    assert sum(a.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED for a in answers) == 1
    assert await _session(proxied) == [("t-1", "user")]
    assert await _entries(redis_url) == [("t-1", "user")]


async def test_a_turn_whose_answer_was_lost_is_resent_without_a_second_copy(proxied: Proxied, redis_url: str) -> None:
    """The KZG wrote the entry but its answer never reached the pipeline: the caller saw UNAVAILABLE."""
    proxied.kzg.behaviours["StoreEntry"] = answer_lost()
    with pytest.raises(grpc.aio.AioRpcError) as lost:
        await proxied.pipeline.ObserveTurn(_observe("t-1"), timeout=10)
    assert lost.value.code() == grpc.StatusCode.UNAVAILABLE
    proxied.kzg.behaviours.clear()

    again = await proxied.pipeline.ObserveTurn(_observe("t-1"), timeout=10)

    assert again.repeated and again.kzg.outcome == kzg_pb2.STORE_OUTCOME_REPEATED
    assert await _session(proxied) == [("t-1", "user")]
    assert await _entries(redis_url) == [("t-1", "user")]


async def test_a_resend_writes_what_the_first_call_left_unwritten(proxied: Proxied, redis_url: str) -> None:
    """The session append went through, the KZG write was refused: the resend writes the entry only."""
    proxied.kzg.behaviours["StoreEntry"] = down(details="the KZG is at its limit")
    with pytest.raises(grpc.aio.AioRpcError):
        await proxied.pipeline.ObserveTurn(_observe("t-1"), timeout=10)
    assert await _session(proxied) == [("t-1", "user")] and await _entries(redis_url) == []
    proxied.kzg.behaviours.clear()

    again = await proxied.pipeline.ObserveTurn(_observe("t-1"), timeout=10)

    assert not again.repeated and again.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED
    assert again.session_turn_count == 1
    assert await _session(proxied) == [("t-1", "user")]
    assert await _entries(redis_url) == [("t-1", "user")]


async def test_the_user_and_the_character_turn_of_one_turn_id_are_two_turns(proxied: Proxied, redis_url: str) -> None:
    await proxied.pipeline.ObserveTurn(_observe("t-1"), timeout=10)
    answer = await proxied.pipeline.ObserveTurn(
        _observe("t-1", "I will bake a cake for Anna's birthday on March 12.", ASSISTANT), timeout=10
    )
    assert not answer.repeated and answer.session_turn_count == 2
    assert await _session(proxied) == [("t-1", "user"), ("t-1", "assistant")]
    assert await _entries(redis_url) == [("t-1", "assistant"), ("t-1", "user")]


async def test_a_resent_batch_writes_only_the_turns_that_had_not_arrived(proxied: Proxied, redis_url: str) -> None:
    texts = [
        "My sister Anna celebrates her birthday on March 12.",
        "I will bake her a lemon cake with fresh berries.",
        "Our brother Tom flies in from Hamburg for the party.",
        "Tom always brings his old guitar and plays folk songs.",
    ]
    turns = [
        pipeline_pb2.ObservedTurn(turn_id=f"t-{i}", beobachter=USER if i % 2 == 0 else ASSISTANT, text=text)
        for i, text in enumerate(texts)
    ]
    await proxied.pipeline.ObserveTurns(pipeline_pb2.ObserveTurnsRequest(pair=PAIR, turns=turns[:2]), timeout=30)

    resent = await proxied.pipeline.ObserveTurns(pipeline_pb2.ObserveTurnsRequest(pair=PAIR, turns=turns), timeout=30)

    assert [r.repeated for r in resent.results] == [True, True, False, False]
    assert [r.session_turn_count for r in resent.results] == [2, 2, 3, 4]
    assert await _session(proxied) == [("t-0", "user"), ("t-1", "assistant"), ("t-2", "user"), ("t-3", "assistant")]
    stored = sorted((t.turn_id, "user" if t.beobachter == USER else "assistant") for t in turns)
    assert await _entries(redis_url) == stored


async def test_a_batch_holding_one_turn_twice_is_refused_before_anything_is_written(
    proxied: Proxied, redis_url: str
) -> None:
    turns = [
        pipeline_pb2.ObservedTurn(turn_id="t-1", beobachter=USER, text=TEXT),
        pipeline_pb2.ObservedTurn(turn_id="t-1", beobachter=ASSISTANT, text="How lovely!"),
        pipeline_pb2.ObservedTurn(turn_id="t-1", beobachter=USER, text="She turns forty."),
    ]
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await proxied.pipeline.ObserveTurns(pipeline_pb2.ObserveTurnsRequest(pair=PAIR, turns=turns), timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details() == (
        "turns[2].turn_id 't-1' with this beobachter is turns[0]'s already; a turn_id names one turn"
    )
    assert await _session(proxied) == [] and await _entries(redis_url) == []


async def test_a_resent_dispatch_reinforces_once_and_writes_the_characters_turn_once(
    proxied: Proxied, redis_url: str
) -> None:
    """The first Dispatch's answer was lost after the LZG reinforced; the resend changes nothing more."""
    observed = await proxied.pipeline.ObserveTurn(_observe("t-0"), timeout=10)
    entry = (await proxied.kzg_stub.GetEntry(kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=observed.kzg.kzg_key))).entry
    node_id = (await proxied.lzg_stub.Promote(lzg_pb2.PromoteRequest(entry=entry))).node_id
    await proxied.pipeline.ObserveTurn(_observe("t-1", "When is Anna's birthday?"), timeout=10)
    dossier = await proxied.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(pair=PAIR, turn_id="t-1", query_text="When is Anna's birthday?"), timeout=10
    )
    assert node_id in dossier.served_node_ids
    dispatch = pipeline_pb2.DispatchRequest(
        pair=PAIR, turn_id="t-1", user_prompt=TEXT, answer_text="Anna celebrates her birthday on March 12!",
        cluster="bier", served_node_ids=dossier.served_node_ids,
    )  # fmt: skip
    proxied.lzg.behaviours["ReinforceUsed"] = answer_lost()
    lost = await proxied.pipeline.Dispatch(dispatch, timeout=10)
    assert [f.split(":")[0] for f in lost.fehler] == ["usage reinforcement"]
    node = (await proxied.lzg_stub.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=node_id))).node
    proxied.lzg.behaviours.clear()
    await asyncio.sleep(PAUSE_S)  # the pipeline leaves a peer that failed out for a pause

    again = await proxied.pipeline.Dispatch(dispatch, timeout=10)

    assert again.protokoll.wiederholt and node_id in again.protokoll.verwendet
    assert (await proxied.lzg_stub.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=node_id))).node == node
    assert node.haeufigkeit == entry.haeufigkeit + 1  # reinforced once, by the call whose answer was lost
    assert lost.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED
    assert again.kzg.outcome == kzg_pb2.STORE_OUTCOME_REPEATED and again.kzg.kzg_key == lost.kzg.kzg_key
    assert list(again.fehler) == []
    assert await _session(proxied) == [("t-0", "user"), ("t-1", "user"), ("t-1", "assistant")]
    # The log records both calls; the resend's answer and turn_roh say so ("last answers" lists it once).
    await proxied.log.flush()
    marks = [(r.art, r.inhalt.get("wiederholt")) for r in proxied.sink.records
             if r.turn_id == "t-1" and r.node == "dispatcher" and r.art in ("ausgabe", "turn_roh")]  # fmt: skip
    assert marks == [("ausgabe", None), ("turn_roh", None), ("ausgabe", True), ("turn_roh", True)]
