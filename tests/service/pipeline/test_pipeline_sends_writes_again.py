"""The pipeline sends a turn's write again when its peer answered UNAVAILABLE or ABORTED
(novaberg_core.peers.PeerClient.resent): every write of a turn is resend-safe, so a refusal or a lost
answer on the way costs the turn nothing, and a write that had taken effect is not doubled. Real KZG
and LZG behind proxies that refuse a method's first call or lose its answer
(tests/service/pipeline/proxies.py)."""

from __future__ import annotations

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from tests.service.pipeline.proxies import Proxied, answer_lost, down, first
from tests.stored import kzg_entry_turns

PAIR = common_pb2.Pair(user_id="nochmal-senden@example.org", character_id="nova")
USER = common_pb2.BEOBACHTER_USER
TEXT = "My sister Anna celebrates her birthday on March 12."


def _observe(turn_id: str, text: str = TEXT) -> pipeline_pb2.ObserveTurnRequest:
    return pipeline_pb2.ObserveTurnRequest(pair=PAIR, turn_id=turn_id, beobachter=USER, text=text)


async def _session(proxied: Proxied) -> list[tuple[str, str]]:
    return [(t.turn_id, t.role) for t in (await proxied.kzg_stub.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))).turns]


async def test_a_kzg_write_whose_answer_was_lost_is_sent_again_and_the_entry_stands_once(
    proxied: Proxied, redis_url: str
) -> None:
    proxied.kzg.behaviours["StoreEntry"] = first(answer_lost())

    observed = await proxied.pipeline.ObserveTurn(_observe("t-1"), timeout=10)

    assert proxied.kzg.calls["StoreEntry"] == 2
    # The second sending found the entry the first wrote: it stands as written, once.
    assert observed.kzg.outcome == kzg_pb2.STORE_OUTCOME_REPEATED and observed.kzg.queued_for_promotion
    assert not observed.repeated  # the turn itself was new: its session append wrote it
    assert await kzg_entry_turns(redis_url, PAIR) == [("t-1", "user")]
    assert await _session(proxied) == [("t-1", "user")]


async def test_a_session_append_refused_once_is_sent_again(proxied: Proxied, redis_url: str) -> None:
    proxied.kzg.behaviours["AppendSessionTurn"] = first(down(details="the KZG is at its limit"))

    observed = await proxied.pipeline.ObserveTurn(_observe("t-1"), timeout=10)

    assert proxied.kzg.calls["AppendSessionTurn"] == 2
    assert observed.session_turn_count == 1 and observed.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED
    assert await _session(proxied) == [("t-1", "user")]


async def test_a_batch_whose_entries_answer_was_lost_is_written_once(proxied: Proxied, redis_url: str) -> None:
    turns = [
        pipeline_pb2.ObservedTurn(turn_id="t-0", beobachter=USER, text=TEXT),
        pipeline_pb2.ObservedTurn(turn_id="t-1", beobachter=USER, text="I will bake her a lemon cake with berries."),
    ]
    proxied.kzg.behaviours["StoreEntries"] = first(answer_lost())

    observed = await proxied.pipeline.ObserveTurns(pipeline_pb2.ObserveTurnsRequest(pair=PAIR, turns=turns), timeout=30)

    assert proxied.kzg.calls["StoreEntries"] == 2
    assert [r.kzg.outcome for r in observed.results] == [kzg_pb2.STORE_OUTCOME_REPEATED] * 2
    assert await kzg_entry_turns(redis_url, PAIR) == [("t-0", "user"), ("t-1", "user")]
    assert await _session(proxied) == [("t-0", "user"), ("t-1", "user")]


async def test_a_usage_reinforcement_whose_answer_was_lost_is_applied_once_and_dispatch_is_whole(
    proxied: Proxied,
) -> None:
    observed = await proxied.pipeline.ObserveTurn(_observe("t-0"), timeout=10)
    entry = (await proxied.kzg_stub.GetEntry(kzg_pb2.GetEntryRequest(pair=PAIR, kzg_key=observed.kzg.kzg_key))).entry
    node_id = (await proxied.lzg_stub.Promote(lzg_pb2.PromoteRequest(entry=entry))).node_id
    dossier = await proxied.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(pair=PAIR, turn_id="t-1", query_text="When is Anna's birthday?"), timeout=10
    )
    assert node_id in dossier.served_node_ids
    proxied.lzg.behaviours["ReinforceUsed"] = first(answer_lost())

    dispatched = await proxied.pipeline.Dispatch(
        pipeline_pb2.DispatchRequest(
            pair=PAIR, turn_id="t-1", user_prompt="When is Anna's birthday?",
            answer_text="Anna celebrates her birthday on March 12!", cluster="bier",
            served_node_ids=dossier.served_node_ids,
        ),
        timeout=10,
    )  # fmt: skip

    assert proxied.lzg.calls["ReinforceUsed"] == 2
    assert list(dispatched.fehler) == []
    # The answer that came back is the second sending's: the first had applied the reinforcement.
    assert dispatched.protokoll.wiederholt and node_id in dispatched.protokoll.verwendet
    node = (await proxied.lzg_stub.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=node_id))).node
    assert node.haeufigkeit == entry.haeufigkeit + 1  # once


async def test_a_turn_whose_writes_were_both_sent_again_is_no_resend(proxied: Proxied, redis_url: str) -> None:
    """Both answers lost: the session turn and the entry stand from the first sendings, and the call
    cannot tell that from a caller's resend, so it does not call the turn one."""
    proxied.kzg.behaviours["AppendSessionTurn"] = first(answer_lost())
    proxied.kzg.behaviours["StoreEntry"] = first(answer_lost())

    observed = await proxied.pipeline.ObserveTurn(_observe("t-1"), timeout=10)

    assert not observed.repeated and observed.kzg.outcome == kzg_pb2.STORE_OUTCOME_REPEATED
    assert await _session(proxied) == [("t-1", "user")]
    assert await kzg_entry_turns(redis_url, PAIR) == [("t-1", "user")]


async def test_a_dispatch_whose_writes_were_both_sent_again_lists_its_answer(proxied: Proxied) -> None:
    """The answer of a Dispatch whose character turn was written by its own first sendings is no
    resend's: it is logged unmarked, so "last answers" lists it."""
    proxied.kzg.behaviours["AppendSessionTurn"] = first(answer_lost())
    proxied.kzg.behaviours["StoreEntry"] = first(answer_lost())

    dispatched = await proxied.pipeline.Dispatch(
        pipeline_pb2.DispatchRequest(
            pair=PAIR, turn_id="t-1", user_prompt=TEXT, answer_text="How lovely, a March birthday!", cluster="bier",
        ),
        timeout=10,
    )  # fmt: skip

    assert list(dispatched.fehler) == [] and dispatched.kzg.outcome == kzg_pb2.STORE_OUTCOME_REPEATED
    assert (proxied.kzg.calls["AppendSessionTurn"], proxied.kzg.calls["StoreEntry"]) == (2, 2)
    await proxied.log.flush()
    marks = [(r.art, r.inhalt.get("wiederholt")) for r in proxied.sink.records
             if r.turn_id == "t-1" and r.node == "dispatcher" and r.art in ("ausgabe", "turn_roh")]  # fmt: skip
    assert marks == [("ausgabe", None), ("turn_roh", None)]
