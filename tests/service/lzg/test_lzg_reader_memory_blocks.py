"""SpreadingRead renders the memory blocks of its readers, as RenderMemoryBlock renders them, and refuses
an unknown reader before reading anything (SPEC §5.9, §10), over a real gRPC channel.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.pipeline_log import InMemorySink, PipelineLog
from novaberg_core.timeutil import to_timestamp
from tests.service.lzg.memories import PAIR, Stub, pair_with_memories

READ_AS_OF = to_timestamp(datetime.now(UTC) + timedelta(minutes=5))


def _read(
    readers: Sequence[str] = (), *, names: tuple[str, str] = ("", ""), turn_id: str = ""
) -> lzg_pb2.SpreadingReadRequest:
    # One fixed as_of: weights are read as of it (SPEC §11), so two reads compare equal.
    return lzg_pb2.SpreadingReadRequest(
        pair=PAIR, query_text="Schokolade", cluster="bier", nova_emotion="freude", readers=list(readers),
        user_name=names[0], character_name=names[1], turn=common_pb2.TurnContext(turn_id=turn_id), as_of=READ_AS_OF,
    )  # fmt: skip


async def test_spreading_read_renders_the_blocks_render_memory_block_renders(lzg_stub: Stub) -> None:
    ids = await pair_with_memories(lzg_stub)
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
    await pair_with_memories(lzg_stub)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await lzg_stub.SpreadingRead(_read(["analysis", "poet"], turn_id="turn-poet"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unknown reader 'poet'" in (caught.value.details() or "")
    await lzg_stub.SpreadingRead(_read(["composer"], turn_id="turn-ok"))
    await plog.flush()
    reads = {r.turn_id for r in sink.records if r.node == "enricher"}
    assert reads == {"turn-ok"}  # the refused call read nothing (no db_read record of the enricher)
