"""A resent write is not applied twice (``resend_safe``; docs/decisions.md "A resent turn is written once").

A caller whose answer was lost (a broken connection, a deadline) cannot tell whether its write took
effect. With ``resend_safe`` it sends the write again: a session turn whose turn_id and role the session
took already (in the list, or folded into the summary since: the taken set) is not appended again, and
an entry whose id stands already for the same turn answers as a repeat — nothing changes, neither the
entry nor its theme neighbours nor the promotion queue.
Without the flag, the old contract holds (appends append, a taken entry id is ALREADY_EXISTS).
"""

from __future__ import annotations

import numpy as np
import pytest

from novaberg_core.errors import AlreadyExists, InvalidArgument
from novaberg_core.pipeline_log import InMemorySink
from services.kzg.domain import KZG_TTL_HIGH_SEKUNDEN, Tier
from services.kzg.memory import KzgMemory
from services.kzg.store import PROMOTION_STREAM, session_taken_key, session_turns_key, sessions
from services.kzg.types import SessionTurnRecord
from tests.integration.kzg.conftest import PAIR, entry, unit_vector
from tests.redis_values import as_bytes, bytes_hash


@pytest.fixture
def retrieval_threshold() -> float:
    """These tests never retrieve; no model profile needed."""
    return 0.5


def _turn(turn_id: str, role: str = "user", text: str = "Ich war gestern im Garten.") -> SessionTurnRecord:
    return SessionTurnRecord(role=role, text=text, turn_id=turn_id)


async def _session(kzg: KzgMemory) -> list[tuple[str, str, str]]:
    return [(t.turn_id, t.role, t.text) for t in (await kzg.get_session(PAIR)).turns]


async def _hashes(kzg: KzgMemory) -> dict[bytes, dict[bytes, bytes]]:
    redis = kzg.store.redis
    keys = await redis.keys(f"kzg:{PAIR.user_id}:{PAIR.character_id}:*")
    return {as_bytes(key): bytes_hash(await redis.hgetall(key)) for key in keys}


async def test_a_resent_session_turn_is_not_appended_again(kzg: KzgMemory) -> None:
    first = await kzg.append_session_turn(PAIR, _turn("t1"), resend_safe=True)
    await kzg.append_session_turn(PAIR, _turn("t1", "assistant", "Schön!"), resend_safe=True)
    again = await kzg.append_session_turn(PAIR, _turn("t1", text="anders gesendet"), resend_safe=True)

    assert (first.turn_count, first.repeated) == (1, False)
    assert (again.turn_count, again.repeated) == (2, True)
    # The user's and the character's turn share the turn_id; each role is its own turn.
    assert await _session(kzg) == [("t1", "user", "Ich war gestern im Garten."), ("t1", "assistant", "Schön!")]


async def test_without_resend_safe_or_without_a_turn_id_an_append_appends(kzg: KzgMemory) -> None:
    await kzg.append_session_turn(PAIR, _turn("t1"))
    plain = await kzg.append_session_turn(PAIR, _turn("t1"))
    await kzg.append_session_turn(PAIR, _turn(""), resend_safe=True)
    nameless = await kzg.append_session_turn(PAIR, _turn(""), resend_safe=True)

    assert (plain.turn_count, plain.repeated) == (2, False)
    assert (nameless.turn_count, nameless.repeated) == (4, False)
    assert [turn_id for turn_id, _, _ in await _session(kzg)] == ["t1", "t1", "", ""]


async def test_a_turn_is_known_by_its_fields_not_by_what_another_turn_says(kzg: KzgMemory) -> None:
    """A text quoting a turn's fields, or an id that begins like another, is another turn: the taken set
    holds each turn's turn_id and role exactly."""
    await kzg.append_session_turn(PAIR, _turn("t10", text='Er schrieb: "turn_id": "t1", "role": "user"'), resend_safe=True)
    await kzg.append_session_turn(PAIR, _turn('t"1', "assistant", "Anführungszeichen im Namen."), resend_safe=True)
    first = await kzg.append_session_turn(PAIR, _turn("t1"), resend_safe=True)
    quoted = await kzg.append_session_turn(PAIR, _turn('t"1', "assistant", "noch einmal"), resend_safe=True)

    assert (first.turn_count, first.repeated) == (3, False)
    assert (quoted.turn_count, quoted.repeated) == (3, True)


async def test_a_turn_folded_into_the_summary_is_still_known(kzg: KzgMemory) -> None:
    """An import resent after 30 turns: the first ten live in the summary by now, and stay there once."""
    turns = [_turn(f"t{i}", "user" if i % 2 == 0 else "assistant", f"Satz {i}.") for i in range(30)]
    await kzg.append_session_turns([(PAIR, turn, None, True) for turn in turns])
    state = await kzg.get_session(PAIR)
    assert "t0" not in [t.turn_id for t in state.turns] and state.summary

    again = await kzg.append_session_turns([(PAIR, turn, None, True) for turn in turns])

    assert all(r.repeated for r in again)
    assert await kzg.get_session(PAIR) == state
    taken = session_taken_key(PAIR)
    assert await kzg.store.redis.zcard(taken) == 30 and await kzg.store.redis.ttl(taken) > 0


async def test_the_taken_set_keeps_the_newest_turns_and_forgets_a_forgotten_turn(
    kzg: KzgMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sessions, "SESSION_TAKEN_KEPT", 3)
    for i in range(5):
        await kzg.append_session_turn(PAIR, _turn(f"t{i}"), resend_safe=True)
    redis = kzg.store.redis
    assert await redis.zrange(session_taken_key(PAIR), 0, -1) == [b"t2\nuser", b"t3\nuser", b"t4\nuser"]
    await kzg.store.forget_session_turn(PAIR, "t3")
    assert await redis.zrange(session_taken_key(PAIR), 0, -1) == [b"t2\nuser", b"t4\nuser"]


async def test_a_resent_batch_appends_only_the_turns_that_had_not_arrived(kzg: KzgMemory) -> None:
    """The first two turns arrived before the batch's answer was lost; the resent batch adds the rest."""
    turns = [_turn(f"t{i}", "user" if i % 2 == 0 else "assistant", f"Satz {i}.") for i in range(5)]
    await kzg.append_session_turns([(PAIR, turn, None, True) for turn in turns[:2]])

    results = await kzg.append_session_turns([(PAIR, turn, None, True) for turn in turns])

    assert [(r.turn_count, r.repeated) for r in results] == [(2, True), (2, True), (3, False), (4, False), (5, False)]
    assert await _session(kzg) == [(t.turn_id, t.role, t.text) for t in turns]
    assert await kzg.store.redis.ttl(session_turns_key(PAIR)) > 0


async def test_a_batch_holding_a_turn_twice_appends_it_once_when_resend_safe(kzg: KzgMemory) -> None:
    results = await kzg.append_session_turns([(PAIR, _turn("t1"), None, True), (PAIR, _turn("t1"), None, True)])
    assert [(r.turn_count, r.repeated) for r in results] == [(1, False), (1, True)]


async def test_a_resent_entry_answers_the_standing_entry_and_changes_nothing(
    kzg: KzgMemory, rng: np.random.Generator, sink: InMemorySink
) -> None:
    neighbour = await kzg.store_entry(entry(0.5, ("Garten",), embedding=unit_vector(rng)))
    first = await kzg.store_entry(
        entry(0.9, ("Garten",), embedding=unit_vector(rng), entry_id="user-42", turn_id="turn-42", resend_safe=True)
    )
    assert first.stored and not first.repeated and first.reinforced_count == 1
    before = await _hashes(kzg)
    jobs = await kzg.store.redis.xlen(PROMOTION_STREAM)

    again = await kzg.store_entry(
        entry(0.9, ("Garten",), embedding=unit_vector(rng), entry_id="user-42", turn_id="turn-42", resend_safe=True)
    )

    assert again.repeated and again.stored and again.kzg_key == first.kzg_key
    assert (again.tier, again.salienz, again.queued_for_promotion) == (Tier.HIGH, first.salienz, True)
    assert 0 < again.ttl_seconds <= KZG_TTL_HIGH_SEKUNDEN
    assert (again.reinforced_count, again.reinforced_queued_count) == (0, 0)
    # Neither the entry nor its theme neighbour was touched again, no second promotion job.
    assert await _hashes(kzg) == before and neighbour.kzg_key.encode() in before
    assert await kzg.store.redis.xlen(PROMOTION_STREAM) == jobs
    await kzg.log.flush()
    writes = [r.inhalt for r in sink.records if r.turn_id == "turn-42" and r.art == "db_write" and r.inhalt["tabelle"] == "kzg"]
    assert [(w["operation"], w.get("wiederholt")) for w in writes] == [("hset", None), ("none", True)]


async def test_an_entry_id_of_another_turn_stays_taken(kzg: KzgMemory, rng: np.random.Generator) -> None:
    await kzg.store_entry(entry(0.9, embedding=unit_vector(rng), entry_id="user-7", turn_id="turn-7"))
    with pytest.raises(AlreadyExists, match="exists already"):
        await kzg.store_entry(
            entry(0.9, embedding=unit_vector(rng), entry_id="user-7", turn_id="turn-8", resend_safe=True)
        )
    with pytest.raises(InvalidArgument, match="resend_safe needs an entry_id"):
        await kzg.store_entry(entry(0.9, embedding=unit_vector(rng), turn_id="turn-9", resend_safe=True))


async def test_a_resent_batch_writes_only_the_entries_that_had_not_arrived(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    batch = [
        entry(0.6, (f"thema{i}",), embedding=unit_vector(rng), entry_id=f"user-{i}", turn_id=f"turn-{i}", resend_safe=True)
        for i in range(4)
    ]
    written = await kzg.store_entries(batch[:2])
    before = await _hashes(kzg)

    results = await kzg.store_entries(batch)

    assert [r.repeated for r in results] == [True, True, False, False]
    assert [r.kzg_key for r in results[:2]] == [r.kzg_key for r in written]
    after = await _hashes(kzg)
    assert len(after) == 4 and {key: after[key] for key in before} == before


async def test_a_batch_naming_another_turns_entry_writes_nothing(kzg: KzgMemory, rng: np.random.Generator) -> None:
    await kzg.store_entry(entry(0.6, embedding=unit_vector(rng), entry_id="user-1", turn_id="turn-1"))
    before = await _hashes(kzg)
    batch = [
        entry(0.6, embedding=unit_vector(rng), entry_id="user-0", turn_id="turn-0", resend_safe=True),
        entry(0.6, embedding=unit_vector(rng), entry_id="user-1", turn_id="turn-x", resend_safe=True),
    ]
    with pytest.raises(AlreadyExists, match="user-1"):
        await kzg.store_entries(batch)
    assert await _hashes(kzg) == before
