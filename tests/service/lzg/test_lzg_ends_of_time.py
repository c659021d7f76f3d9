"""A read and a decay as of the latest instant the requests accept (SPEC §5.7, §11, §10): memories decayed to
nothing are no memories, and the answer is OK, not INTERNAL (PostgreSQL's exp() underflowed there, migration 012;
found by tests/e2e/test_attacks.py).
"""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.contract import TIME_MAX
from novaberg_core.timeutil import to_timestamp
from tests.service.lzg.memories import PAIR, T0, Stub, pair_with_memories

LATEST = Timestamp(seconds=to_timestamp(TIME_MAX).seconds, nanos=999_999_999)
"""The last instant a request's ``as_of`` may name."""


def _read(as_of: Timestamp) -> lzg_pb2.SpreadingReadRequest:
    return lzg_pb2.SpreadingReadRequest(
        pair=PAIR, query_text="Erzähl mir von Annas Schokolade", lexical_text="Annas Schokolade", cluster="bier",
        turn=common_pb2.TurnContext(turn_id="turn-late"), as_of=as_of, recall_k=10,
    )  # fmt: skip


async def test_a_read_and_a_decay_as_of_the_last_instant(lzg_stub: Stub) -> None:
    ids = await pair_with_memories(lzg_stub)
    now = await lzg_stub.SpreadingRead(_read(to_timestamp(T0)))
    assert now.lzg_resonanz.erinnerungen[0].knoten_id == ids[0]

    late = await lzg_stub.SpreadingRead(_read(LATEST))
    assert list(late.lzg_resonanz.erinnerungen) == [] and list(late.recall) == []

    decay = await lzg_stub.RunDecay(lzg_pb2.RunDecayRequest(as_of=LATEST, pairs=[PAIR]))
    assert decay.nodes_decayed == 3 and decay.nodes_deactivated == 3
    nodes = [(await lzg_stub.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=i))).node for i in ids]
    assert [(n.aktiv, n.gewicht_decay) for n in nodes] == [(False, 0.0)] * 3
