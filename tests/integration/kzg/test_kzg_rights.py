"""A person's rights in the KZG's Redis (services/kzg/rights.py): erase by index token and by name,
a user's erasure by one SCAN, queued jobs acked and deleted, export → import, forget, correct,
requeue. Real Redis with the search module."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import numpy as np
import pytest
from redis.asyncio import Redis

from novaberg_core.contract import pair_token, user_token
from novaberg_core.errors import FailedPrecondition, InvalidArgument, NotFound
from novaberg_core.model import Ei, Magnets, Profile
from novaberg_core.pair_keys import pipeline_profile_key
from services.kzg.memory import KzgMemory
from services.kzg.rights import KzgRights, glob_escape
from services.kzg.store import PROMOTION_GROUP, PROMOTION_STREAM
from services.kzg.types import KzgEntry, Pair, RetrieveQuery, SessionTurnRecord
from services.pipeline.store import ClusterStore
from tests.integration.kzg.conftest import OTHER_PAIR, PAIR, entry, unit_vector
from tests.redis_values import as_bytes

pytestmark = pytest.mark.integration

SECOND = Pair(PAIR.user_id, "luna")
GLOB_USER = Pair("u*[x]?", "c")
GLOB_NEIGHBOUR = Pair("u1[x]2", "c")  # what the unescaped pattern u*[x]? would match


async def _fill(kzg: KzgMemory, rng: np.random.Generator, pair: Pair, n: int = 3) -> list[str]:
    """Entries (the first queued for promotion and hash_dirty), two session turns, and the pipeline's
    state of the pair (its previous-turn cluster and its profile), written by the pipeline's own store."""
    keys = []
    for i in range(n):
        result = await kzg.store_entry(entry(
            0.8 if i == 0 else 0.5, (f"thema-{i}",), pair=pair, embedding=unit_vector(rng), turn_id=f"turn-{i}",
            inhalt=f"Erinnerung {i} von {pair.user_id}/{pair.character_id}",
        ))  # fmt: skip
        keys.append(result.kzg_key)
    for i, role in enumerate(("user", "assistant")):
        await kzg.append_session_turn(pair, SessionTurnRecord(role=role, text=f"Satz {i}", turn_id=f"turn-{i}"))
    pipeline = ClusterStore(kzg.store.redis)
    await pipeline.put(pair.to_proto(), "bier", turn_id="turn-1", as_of=datetime(2026, 12, 6, tzinfo=UTC))
    await pipeline.put_profile(pair.to_proto(), Profile(user_name=f"Eder {pair.user_id}", character_name="Nova", sprache="de"))
    return keys


async def _everything(redis: Redis) -> dict[str, str]:
    """Every key with its value as text (hash fields, list items, stream entries), for searching."""
    out: dict[str, str] = {}
    async for raw in redis.scan_iter(count=1000):
        key = raw.decode()
        kind = as_bytes(await redis.type(key)).decode()
        if kind == "hash":
            value = repr(await redis.hgetall(key))
        elif kind == "list":
            value = repr(await redis.lrange(key, 0, -1))
        elif kind == "stream":
            value = repr(await redis.xrange(key)) + repr(await redis.xinfo_groups(key))
        elif kind == "string":
            value = repr(await redis.get(key))
        elif kind == "zset":
            value = repr(await redis.zrange(key, 0, -1))
        else:
            value = kind
        out[key] = value
    return out


async def test_after_a_pairs_erasure_the_pipeline_finds_no_state_of_it(kzg: KzgMemory, rng: np.random.Generator) -> None:
    """The pipeline's cluster and profile (the speakers' names) live in the KZG's Redis: its erasure takes them."""
    await _fill(kzg, rng, PAIR)
    await _fill(kzg, rng, SECOND)
    pipeline = ClusterStore(kzg.store.redis)
    counts = await KzgRights(kzg).erase(PAIR, None)
    assert (counts.cluster_keys, counts.profile_keys) == (1, 1)
    assert await pipeline.get_with_profile(PAIR.to_proto()) == (None, Profile())
    cluster, profile = await pipeline.get_with_profile(SECOND.to_proto())
    assert cluster is not None and profile.user_name == f"Eder {SECOND.user_id}"


async def test_erase_pair_leaves_no_key_or_value_of_the_pair_and_others_byte_identical(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    await _fill(kzg, rng, PAIR)
    await _fill(kzg, rng, SECOND)
    await _fill(kzg, rng, OTHER_PAIR)
    await kzg.read_promotion_jobs("pixie-a", 1)  # one job of the stream pending at a consumer
    redis = kzg.store.redis
    others = [k async for k in redis.scan_iter(count=1000) if b"luna" in k or b"example:" in k]
    before = {k: await redis.dump(k) for k in others}
    counts = await KzgRights(kzg).erase(PAIR, None)
    assert (counts.entries, counts.session_keys, counts.hash_dirty, counts.cluster_keys, counts.profile_keys,
            counts.queue_jobs) == (3, 2, 1, 1, 1, 1)  # fmt: skip  (session keys: the list and the taken set)
    assert counts.stream_cutoff != "0-0"
    everything = await _everything(redis)
    for needle in (f"{PAIR.user_id}:{PAIR.character_id}", pair_token(PAIR.user_id, PAIR.character_id),
                   f"{PAIR.character_id}/"):  # fmt: skip
        assert [k for k, v in everything.items() if needle in k or needle in v] == []
    assert {k: await redis.dump(k) for k in others} == before
    pending = await redis.xpending(PROMOTION_STREAM, PROMOTION_GROUP)
    assert pending["pending"] == 0  # the pending job of the pair was acked with the erasure
    assert (await KzgRights(kzg).erase(PAIR, None)).entries == 0  # idempotent
    # afterwards no read returns anything of the pair
    assert (await kzg.get_session(PAIR)).turns == ()
    found = await kzg.retrieve(RetrieveQuery(pair=PAIR, query_text="Erinnerung"))
    assert found.hits == ()


async def test_erase_user_walks_the_keyspace_once_and_takes_only_that_users_keys(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    await _fill(kzg, rng, GLOB_USER)
    await _fill(kzg, rng, Pair(GLOB_USER.user_id, "d"))
    await _fill(kzg, rng, GLOB_NEIGHBOUR)
    redis = kzg.store.redis
    neighbour = {k: await redis.dump(k) async for k in redis.scan_iter(match=f"*{glob_escape('u1[x]2')}*")}
    assert len(neighbour) == 8  # 3 entries, session list and taken set, hash_dirty, cluster, profile
    counts = await KzgRights(kzg).erase(None, GLOB_USER.user_id)
    assert (counts.entries, counts.session_keys, counts.cluster_keys, counts.profile_keys, len(counts.characters)) == (
        6, 4, 2, 2, 2,
    )  # fmt: skip
    everything = await _everything(redis)
    assert [k for k, v in everything.items() if "u*[x]?" in k or "u*[x]?" in v] == []
    assert [k for k, v in everything.items() if user_token(GLOB_USER.user_id) in v] == []
    assert {k: await redis.dump(k) for k in neighbour} == neighbour
    with pytest.raises(InvalidArgument):
        await KzgRights(kzg).erase(PAIR, PAIR.user_id)


async def test_export_then_import_restores_entries_session_queue_and_profile(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    keys = await _fill(kzg, rng, PAIR)
    rights = KzgRights(kzg)
    chunks = [chunk async for chunk in rights.export(PAIR)]
    exported = [e for chunk in chunks for e in chunk.entries]
    session, profile = chunks[0].session, chunks[0].profile
    assert session is not None and all(c.session is None and c.profile is None for c in chunks[1:])
    assert profile == Profile(user_name=f"Eder {PAIR.user_id}", character_name="Nova", sprache="de")
    assert sorted(e.kzg_key for e in exported) == sorted(keys)
    await rights.erase(PAIR, None)
    counts = await rights.import_pair(PAIR, exported, list(session.turns), session.summary, profile)
    assert (counts.entries, counts.queued, counts.session_turns, counts.profile) == (3, 1, 2, 1)
    restored = [e async for chunk in rights.export(PAIR) for e in chunk.entries]
    # the pipeline reads the names back as it keeps them
    assert await ClusterStore(kzg.store.redis).profile(PAIR.to_proto()) == profile

    def content(e: KzgEntry) -> tuple[object, ...]:
        return (e.kzg_key, e.inhalt, e.themen, e.salienz, e.salienz_eingang, e.haeufigkeit, e.beobachter, e.turn_id,
                e.erstellt_am.replace(microsecond=e.erstellt_am.microsecond // 1000 * 1000), e.promotion_queued)  # fmt: skip

    assert sorted(map(content, restored)) == sorted(map(content, exported))
    assert all(0 < e.ttl_seconds <= x.ttl_seconds + 1 for e, x in zip(
        sorted(restored, key=lambda e: e.kzg_key), sorted(exported, key=lambda e: e.kzg_key), strict=True))  # fmt: skip
    assert [t.text for t in (await kzg.get_session(PAIR)).turns] == ["Satz 0", "Satz 1"]
    jobs = await kzg.read_promotion_jobs("pixie-b", 10)
    assert [j.kzg_key for j in jobs if j.pair == PAIR] == [keys[0]]
    # the vectors are made again: retrieval finds the entry by its text
    found = await kzg.retrieve(RetrieveQuery(pair=PAIR, query_text=f"Erinnerung 1 von {PAIR.user_id}/{PAIR.character_id}"))
    assert keys[1] in [h.entry.kzg_key for h in found.hits]
    with pytest.raises(FailedPrecondition):
        await rights.import_pair(PAIR, exported, [], "")
    narrator = [dataclasses.replace(exported[0], beobachter="narrator")]
    with pytest.raises(InvalidArgument, match=r"entries\[0\]\.beobachter must be one of user, assistant, got 'narrator'"):
        await rights.import_pair(PAIR, narrator, [], "", check_empty=False, validate_only=True)
    # What the LZG would refuse to promote is refused at the import (no poison job waits in the queue).
    for change, refusal in (
        ({"magnets": Magnets.of([], 0)}, r"entries\[0\]\.magnets\.timeline_id must be a positive id"),
        ({"magnets": Magnets.of([-2], None)}, r"entries\[0\]\.magnets\.entitaet_ids must be positive ids"),
        ({"ei": Ei(arousal=float("nan"))}, r"entries\[0\]\.ei\.arousal must be"),
    ):
        bad = [dataclasses.replace(exported[0], **change)]
        with pytest.raises(InvalidArgument, match=refusal):
            await rights.import_pair(PAIR, bad, [], "", check_empty=False, validate_only=True)


async def test_a_pair_without_a_profile_exports_none_and_its_import_writes_none(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    stored = await kzg.store_entry(entry(0.5, ("tee",), pair=SECOND, embedding=unit_vector(rng), turn_id="turn-0"))
    rights = KzgRights(kzg)
    (chunk,) = [chunk async for chunk in rights.export(SECOND)]
    assert [e.kzg_key for e in chunk.entries] == [stored.kzg_key] and chunk.profile is None
    await rights.erase(SECOND, None)
    counts = await rights.import_pair(SECOND, chunk.entries, [], "")
    assert (counts.entries, counts.profile) == (1, 0)
    assert await kzg.store.redis.exists(pipeline_profile_key(SECOND)) == 0


async def test_forget_by_key_and_by_source_turn_takes_entries_and_session_turns(
    kzg: KzgMemory, rng: np.random.Generator
) -> None:
    keys = await _fill(kzg, rng, PAIR)
    rights = KzgRights(kzg)
    deleted, session = await rights.forget(PAIR, [keys[0]], "")
    assert (deleted, session) == ([keys[0]], 0)
    deleted, session = await rights.forget(PAIR, [], "turn-1")
    assert (deleted, session) == ([keys[1]], 1)
    assert [t.turn_id for t in (await kzg.get_session(PAIR)).turns] == ["turn-0"]
    assert await kzg.store.exists(keys[2])
    assert await rights.forget(PAIR, [keys[0]], "") == ([], 0)  # idempotent
    with pytest.raises(InvalidArgument):
        await rights.forget(PAIR, [keys[2].replace(PAIR.character_id, "luna")], "")


async def test_correct_re_embeds_the_entry_with_its_themes(kzg: KzgMemory, rng: np.random.Generator) -> None:
    keys = await _fill(kzg, rng, PAIR)
    rights = KzgRights(kzg)
    previous = await rights.correct(PAIR, keys[2], "Der Hund heißt Bello und bellt laut.")
    assert previous.startswith("Erinnerung 2")
    got = await kzg.get_entry(PAIR, keys[2], include_embedding=True)
    assert got.inhalt == "Der Hund heißt Bello und bellt laut." and got.haeufigkeit == 1
    expected = await kzg.provider.embed_one("Thema: thema-2. Aussage: Der Hund heißt Bello und bellt laut.")
    assert got.embedding is not None and np.allclose(got.embedding, expected, atol=1e-6)
    with pytest.raises(NotFound):
        await rights.correct(PAIR, keys[2] + "x", "neu")


async def test_enqueue_queues_existing_entries_and_reports_gone_ones(kzg: KzgMemory, rng: np.random.Generator) -> None:
    keys = await _fill(kzg, rng, PAIR)
    await kzg.delete_entry(PAIR, keys[1])
    ids = await KzgRights(kzg).enqueue([(PAIR, keys[2], "turn-x"), (PAIR, keys[1], "")])
    assert ids[0] and ids[1] == ""
    jobs = [j for j in await kzg.read_promotion_jobs("pixie-c", 10) if j.kzg_key == keys[2]]
    assert [(j.job_id, j.ausloeser_turn_id) for j in jobs] == [(ids[0], "turn-x")]
    assert (await kzg.get_entry(PAIR, keys[2])).promotion_queued
