"""SpreadingRead renders the memory blocks of its readers; ReinforceUsed takes the caller's answer vector.

Both over a real gRPC channel with the offline model (SPEC §5.6, §5.9, §10).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import grpc
import numpy as np
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.embedding import EmbeddingProvider, query_embed_text
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from novaberg_core.timeutil import to_timestamp

PAIR = common_pb2.Pair(user_id="mara@example.org", character_id="nova")
T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
Stub = lzg_pb2_grpc.LzgServiceStub
ANSWER = "Anna hat dir früher immer Schokolade mitgebracht, das weiß ich noch."


def _entry(
    entry_id: str, inhalt: str, themen: tuple[str, ...], entitaet_ids: tuple[int, ...]
) -> common_pb2.KzgEntry:
    return common_pb2.KzgEntry(
        kzg_key=f"kzg:{PAIR.user_id}:{PAIR.character_id}:{entry_id}",
        entry_id=entry_id,
        pair=PAIR,
        beobachter=common_pb2.BEOBACHTER_USER if entry_id != "a2" else common_pb2.BEOBACHTER_ASSISTANT,
        inhalt=inhalt,
        themen=list(themen),
        salienz=0.9,
        salienz_eingang=0.85,
        haeufigkeit=1,
        gedaechtnistyp="episodisch",
        dimension="beziehungen",
        ei=common_pb2.EiFields(emotion="freude", modus="alltag", arousal=0.4, intentionen=["planung"]),
        magnets=common_pb2.Magnets(entitaet_ids=list(entitaet_ids)),
        erstellt_am=to_timestamp(T0 - timedelta(days=10)),
        turn_id=f"turn-{entry_id}",
    )


async def _pair_with_memories(stub: Stub) -> list[int]:
    """Three nodes; the two about Anna share her entity, so "Schokolade" anchors one and reaches the other."""
    anna = (
        await stub.UpsertEntity(
            lzg_pb2.UpsertEntityRequest(pair=PAIR, entity=lzg_pb2.Entity(name="Anna", typ="person"))
        )
    ).entity.id
    ids = []
    for entry_id, text, themen in (
        ("a1", "Anna hat mir früher immer Schokolade mitgebracht.", ("Anna", "Schokolade")),
        ("a2", "Anna ist meine ältere Schwester.", ("Anna", "Familie")),
        ("a3", "Im Urlaub waren wir in Norwegen wandern.", ("Urlaub",)),
    ):
        entry = _entry(entry_id, text, themen, (anna,) if "Anna" in themen else ())
        promoted = await stub.Promote(
            lzg_pb2.PromoteRequest(
                entry=entry,
                turn=common_pb2.TurnContext(turn_id="job"),
                ausloeser_turn_id="job",
                as_of=to_timestamp(T0),
            )
        )
        ids.append(promoted.node_id)
    return ids


READ_AS_OF = to_timestamp(datetime.now(UTC) + timedelta(minutes=5))


def _read(
    readers: Sequence[str] = (), *, names: tuple[str, str] = ("", ""), turn_id: str = ""
) -> lzg_pb2.SpreadingReadRequest:
    # One fixed as_of: weights are read as of it (SPEC §11), so two reads compare equal.
    return lzg_pb2.SpreadingReadRequest(
        pair=PAIR, query_text="Schokolade", cluster="bier", nova_emotion="freude", readers=list(readers),
        user_name=names[0], character_name=names[1], turn=common_pb2.TurnContext(turn_id=turn_id), as_of=READ_AS_OF,
    )  # fmt: skip


async def _node(stub: Stub, node_id: int) -> bytes:
    node = await stub.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=node_id, include_embedding=True))
    return node.SerializeToString(deterministic=True)


async def test_spreading_read_renders_the_blocks_render_memory_block_renders(lzg_stub: Stub) -> None:
    ids = await _pair_with_memories(lzg_stub)
    read = await lzg_stub.SpreadingRead(_read(["analysis", "composer", "analysis"], names=("Mara", "Nova")))
    resonanz = read.lzg_resonanz
    assert {ids[0], ids[1]} <= {e.knoten_id for e in resonanz.erinnerungen}
    assert any(e.schale > 0 for e in resonanz.erinnerungen)  # a path with reasons is rendered too
    assert set(read.memory_blocks) == {"analysis", "composer"}
    for reader in ("analysis", "composer"):
        alone = await lzg_stub.RenderMemoryBlock(
            lzg_pb2.RenderMemoryBlockRequest(
                pair=PAIR, lzg_resonanz=resonanz, reader=reader, user_name="Mara", character_name="Nova"
            )
        )
        assert read.memory_blocks[reader] == alone.text
    analysis, composer = read.memory_blocks["analysis"], read.memory_blocks["composer"]
    assert '"Anna hat mir früher immer Schokolade mitgebracht."' in analysis
    assert "Sprecher: Mara" in analysis and "Sprecher: Nova" in analysis and "Anna" in analysis
    assert "Sprecher: Person B" in composer and "Sprecher: Person A" in composer and "Mara" not in composer

    plain = await lzg_stub.SpreadingRead(_read())
    assert dict(plain.memory_blocks) == {}
    assert plain.lzg_resonanz == resonanz and plain.pool_size == read.pool_size


async def test_unknown_reader_is_refused_before_anything_is_read(
    lzg_stub: Stub, sink: InMemorySink, plog: PipelineLog
) -> None:
    await _pair_with_memories(lzg_stub)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await lzg_stub.SpreadingRead(_read(["analysis", "poet"], turn_id="turn-poet"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unknown reader 'poet'" in (caught.value.details() or "")
    await lzg_stub.SpreadingRead(_read(["composer"], turn_id="turn-ok"))
    await plog.flush()
    reads = {r.turn_id for r in sink.records if r.node == "enricher"}
    assert reads == {"turn-ok"}  # the refused call read nothing (no db_read record of the enricher)


async def test_answer_vector_of_wrong_size_or_not_finite_changes_nothing(
    lzg_stub: Stub, provider: EmbeddingProvider, sink: InMemorySink, plog: PipelineLog
) -> None:
    ids = await _pair_with_memories(lzg_stub)
    before = {i: await _node(lzg_stub, i) for i in ids}
    good = (await provider.embed_one(query_embed_text(ANSWER))).tolist()
    for values, message in (
        ([*good, 0.0], f"answer_vector has {provider.dimension + 1} values"),
        (good[:-1], f"answer_vector has {provider.dimension - 1} values"),
        ([float("nan"), *good[1:]], "answer_vector.values must hold finite numbers only"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await lzg_stub.ReinforceUsed(
                lzg_pb2.ReinforceUsedRequest(
                    pair=PAIR, answer_text=ANSWER, served_node_ids=ids, answer_vector=lzg_pb2.QueryVector(values=values),
                    turn=common_pb2.TurnContext(turn_id="turn-bad"), as_of=to_timestamp(T0 + timedelta(hours=1)),
                )
            )  # fmt: skip
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert message in (caught.value.details() or "")
        assert {i: await _node(lzg_stub, i) for i in ids} == before
    await plog.flush()
    assert not [r for r in sink.records if r.turn_id == "turn-bad"]  # not even a protocol record


async def test_answer_vector_gives_the_protocol_of_the_text_path(
    lzg_stub: Stub, provider: EmbeddingProvider
) -> None:
    ids = await _pair_with_memories(lzg_stub)

    async def reinforce(vector: list[float] | None, hours: int) -> lzg_pb2.VerwendungsProtokoll:
        request = lzg_pb2.ReinforceUsedRequest(
            pair=PAIR,
            answer_text=ANSWER,
            served_node_ids=ids,
            as_of=to_timestamp(T0 + timedelta(hours=hours)),
        )
        if vector is not None:
            request.answer_vector.values.extend(vector)
        protokoll = (await lzg_stub.ReinforceUsed(request)).protokoll
        protokoll.kanten_dauer_ms = 0.0  # wall time, the only field that may differ
        return protokoll

    by_text = await reinforce(None, 1)
    assert by_text.ausgang == lzg_pb2.VERWENDUNG_AUSGANG_GERECHNET and by_text.verwendet[0] == ids[0]
    assert by_text.kanten_neu > 0
    vector = await provider.embed_one(query_embed_text(ANSWER))
    by_vector = await reinforce(vector.tolist(), 2)
    assert by_vector == by_text
    node = (await lzg_stub.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=ids[0]))).node
    assert node.haeufigkeit == 3  # reinforced by both calls

    # A vector of another length is scaled to norm 1 first: the same nearness, to float32 precision.
    scaled = await reinforce((vector * 3.0).tolist(), 3)
    assert list(scaled.verwendet) == list(by_text.verwendet)
    assert [n.naehe for n in scaled.naehen_alle] == pytest.approx(
        [n.naehe for n in by_text.naehen_alle], abs=1e-6
    )
    # An all-zero vector is an empty answer vector, recorded as such (SPEC §5.6), not a call error.
    empty = await reinforce(np.zeros(provider.dimension).tolist(), 4)
    assert empty.ausgang == lzg_pb2.VERWENDUNG_AUSGANG_VEKTOR_LEER and list(empty.verwendet) == []
