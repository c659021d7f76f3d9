"""Three memories of one pair promoted over the real channel: where the SpreadingRead and ReinforceUsed
tests of the LZG service start (two about Anna share her entity, so "Schokolade" anchors one and
reaches the other).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.timeutil import to_timestamp

PAIR = common_pb2.Pair(user_id="mara@example.org", character_id="nova")
T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
Stub = lzg_pb2_grpc.LzgServiceStub


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


async def pair_with_memories(stub: Stub) -> list[int]:
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

