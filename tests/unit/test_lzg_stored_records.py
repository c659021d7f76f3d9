"""A stored node and edge travel through export and import unchanged (``services.lzg.convert``):
the message of a record reads back as the same record, and a row reads as the record of its columns."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
from pgvector import Vector

from novaberg_core.model import Ei, Magnets, Pair
from services.lzg.convert import edge_from_proto, edge_to_proto, node_from_proto, node_to_proto
from services.lzg.rows import StoredEdge, StoredNode

PAIR = Pair("anna", "nova")
T0 = datetime(2026, 3, 4, 5, 6, 7, 891_011, tzinfo=UTC)
NODE = StoredNode(
    id=7, kzg_quell_key="kzg:anna:nova:e1", pair=PAIR, beobachter="assistant", inhalt="Anna gießt die Kräuter.",
    dimension="interessen", gewicht_roh=0.673, gewicht_absolut=3.248, gewicht_decay=2.5, haeufigkeit=3, aktiv=False,
    erstellt_am=T0, verstaerkt_am=T0 + timedelta(days=2), decay_am=T0 + timedelta(days=9),
    kzg_erstellt_am=T0 - timedelta(hours=1), themen=("Garten", "Kräuter"), gedaechtnistyp="episodisch",
    magnets=Magnets(entitaet_ids=(5, 2), timeline_id=9),
    ei=Ei(emotion="freude", modus="alltag", arousal=0.6, intentionen=("planung", "information_teilen")),
    sprecher="Anna", sprache="de", quell_turn_id="turn-1",
)  # fmt: skip
EDGE = StoredEdge(
    id=11, knoten_a_id=7, knoten_b_id=8, gewicht_roh=0.4, gewicht_absolut=0.31, erstellt_am=T0,
    verbindungs_gruende=("themen", "timeline"), geteilte_entitaet_ids=(), geteilte_themen=("Garten",),
    timeline_naehe_tage=4, embedding_cosine_initial=None, anzahl_schichten=2,
)  # fmt: skip


def test_an_exported_node_imports_as_the_same_node() -> None:
    message = node_to_proto(NODE)
    assert not message.embedding  # the export carries no vector
    assert node_from_proto(PAIR, message) == NODE


def test_a_node_message_carries_its_vector_only_when_asked() -> None:
    with_vector = StoredNode(**{**NODE.__dict__, "embedding": np.array([0.6, 0.8], dtype=np.float32)})
    assert list(node_to_proto(with_vector, include_embedding=True).embedding) == [
        np.float32(0.6), np.float32(0.8)
    ]
    assert not node_to_proto(with_vector).embedding


def test_an_exported_edge_imports_as_the_same_edge() -> None:
    message = edge_to_proto(EDGE)
    assert not message.HasField("embedding_cosine_initial")  # NULL stays unset
    assert edge_from_proto(message) == EDGE


def test_a_node_row_reads_as_the_node_of_its_columns() -> None:
    row = {
        **{name: value for name, value in NODE.__dict__.items() if name not in {"pair", "magnets", "ei", "timeline"}},
        "user_id": "anna", "character_id": "nova", "themen": ["Garten", "Kräuter"],
        "entitaet_ids": [5, 2], "timeline_id": 9, "embedding": Vector([0.6, 0.8]),
        **{name: getattr(NODE.ei, name) for name in ("emotion", "modus", "arousal", "emotions_vektor", "sprach_stil",
                                                        "beziehungs_dynamik", "tone")},
        "intentionen": json.dumps(["planung", "information_teilen"]),
    }  # fmt: skip
    node = StoredNode.from_row(row)
    assert node.embedding is not None and node.embedding.tolist() == [np.float32(0.6), np.float32(0.8)]
    assert StoredNode(**{**node.__dict__, "embedding": None}) == NODE
    assert StoredNode.from_row({**row, "intentionen": "not json"}).ei.intentionen == ()
