"""The ends of the time the requests accept (SPEC §5.4, §5.7, §11, §10): a read and a decay as of the latest
instant, memories decayed to nothing being no memories (PostgreSQL's exp() underflowed there, migration 012;
found by tests/e2e/test_attacks.py); and memories whose timeline refs lie in year 1 or 9999, whose tolerance
window reaches past what a datetime holds. Each answers OK, not INTERNAL.
"""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.contract import TIME_MAX, ZEITPUNKT_MIN
from novaberg_core.timeutil import to_timestamp
from tests.service.lzg.memories import PAIR, T0, Stub, kzg_entry, pair_with_memories

LATEST = to_timestamp(TIME_MAX)  # the last instant the contract accepts (a fraction after it is refused)
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


async def test_memories_dated_in_the_first_and_the_last_year(lzg_stub: Stub) -> None:
    """Two memories a year's timeline apart in year 9999 (and two in year 1) are joined by the timeline layer;
    the window around their refs is held at the ends of time (``timeutil.shifted``), where it overflowed."""
    for year, instants in (
        (TIME_MAX.year, (datetime(9999, 6, 1, tzinfo=UTC), TIME_MAX)),
        (1, (ZEITPUNKT_MIN, datetime(1, 3, 1, tzinfo=UTC))),
    ):
        ids = []
        for number, at in enumerate(instants):
            timeline = (await lzg_stub.UpsertTimeline(lzg_pb2.UpsertTimelineRequest(
                pair=PAIR, timeline=lzg_pb2.Timeline(zeitpunkt=to_timestamp(at), praezision="jahr", titel=f"Jahr {year}"),
            ))).timeline  # fmt: skip
            entry = kzg_entry(f"y{year}-{number}", f"Im Jahr {year} geschah etwas Neues, Nummer {number}.", themen=("Jahr",))
            entry.magnets.timeline_id = timeline.id
            promoted = await lzg_stub.Promote(lzg_pb2.PromoteRequest(
                entry=entry, turn=common_pb2.TurnContext(turn_id="job"), ausloeser_turn_id="job", as_of=to_timestamp(T0),
            ))  # fmt: skip
            ids.append(promoted.node_id)
        edges = await lzg_stub.ListEdges(lzg_pb2.ListEdgesRequest(pair=PAIR, node_id=ids[1]))
        joined = [e for e in edges.edges if {e.knoten_a_id, e.knoten_b_id} == set(ids)]
        assert joined and all("timeline" in e.verbindungs_gruende for e in joined), year
