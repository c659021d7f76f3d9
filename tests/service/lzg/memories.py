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
OTHER = common_pb2.Pair(user_id="tom@example.org", character_id="nova")
T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
Stub = lzg_pb2_grpc.LzgServiceStub


def kzg_entry(
    entry_id: str,
    inhalt: str,
    *,
    pair: common_pb2.Pair = PAIR,
    themen: tuple[str, ...] = (),
    entitaet_ids: tuple[int, ...] = (),
    beobachter: common_pb2.Beobachter = common_pb2.BEOBACHTER_USER,
    emotion: str = "freude",
    salienz: float = 0.9,
) -> common_pb2.KzgEntry:
    """A KZG entry as the promotion worker hands it to ``Promote``, made ten days before ``T0``."""
    return common_pb2.KzgEntry(
        kzg_key=f"kzg:{pair.user_id}:{pair.character_id}:{entry_id}",
        entry_id=entry_id,
        pair=pair,
        beobachter=beobachter,
        inhalt=inhalt,
        themen=list(themen),
        salienz=salienz,
        salienz_eingang=0.85,
        haeufigkeit=1,
        gedaechtnistyp="episodisch",
        dimension="beziehungen",
        ei=common_pb2.EiFields(emotion=emotion, modus="alltag", arousal=0.4, intentionen=["planung"]),
        magnets=common_pb2.Magnets(entitaet_ids=list(entitaet_ids)),
        erstellt_am=to_timestamp(T0 - timedelta(days=10)),
        turn_id=f"turn-{entry_id}",
    )


async def promote(stub: Stub, entry: common_pb2.KzgEntry, as_of: datetime = T0) -> lzg_pb2.PromoteResponse:
    """``entry`` promoted as a job of the turn ``job-turn`` would, at ``as_of``."""
    return await stub.Promote(
        lzg_pb2.PromoteRequest(
            entry=entry,
            turn=common_pb2.TurnContext(turn_id="job-turn"),
            ausloeser_turn_id="job-turn",
            as_of=to_timestamp(as_of),
        )
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
        beobachter = common_pb2.BEOBACHTER_ASSISTANT if entry_id == "a2" else common_pb2.BEOBACHTER_USER
        anchors = (anna,) if "Anna" in themen else ()
        entry = kzg_entry(entry_id, text, themen=themen, entitaet_ids=anchors, beobachter=beobachter)
        promoted = await promote(stub, entry)
        ids.append(promoted.node_id)
    return ids
