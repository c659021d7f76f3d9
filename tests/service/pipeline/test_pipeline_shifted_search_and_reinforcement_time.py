"""Both searches of a dossier use the gravitation-shifted vector, and Dispatch's ``as_of`` is the
reinforcement's time (SPEC §5.6, §6, §7).

Similarities noted below were measured with the offline model (all-MiniLM-L6-v2 int8) whose
thresholds apply here (``profiles.json``: KZG retrieval 0.39, LZG anchor 0.42, usage 0.71).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
import grpc.aio
import numpy as np
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.embedding import EmbeddingProvider, profile_for
from novaberg_core.timeutil import from_timestamp, to_timestamp
from services.lzg.weights import decayed
from tests.service.pipeline.conftest import PipelineUnderTest

PAIR = common_pb2.Pair(user_id="luecke", character_id="nova")
MINILM = profile_for("all-minilm-l6-v2-int8")
USER, ASSISTANT = common_pb2.BEOBACHTER_USER, common_pb2.BEOBACHTER_ASSISTANT
T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)

# cos(QUERY, GOAL_TEXT) = 0.14: below the KZG threshold (0.39) and the anchor threshold (0.42).
# Shifted with f = 0.30 towards GOAL_TEXT: cos = 0.50, above both. cos(QUERY, HIKE_TEXT) = 0.70
# raw, 0.66 shifted: an anchor either way.
GOAL_TEXT = "I am learning to play the cello and practise every evening."
HIKE_TEXT = "We went hiking in the Alps last summer."
QUERY = "Tell me about our hiking trip in the mountains."
GLUT_FAKTOR = 0.30  # SPEC §6: glut, feuerwerk 0.30


def _entry(entry_id: str, inhalt: str) -> common_pb2.KzgEntry:
    """A KZG entry as the promotion worker hands it to the LZG (no shared themes, entities or timeline)."""
    return common_pb2.KzgEntry(
        kzg_key=f"kzg:{PAIR.user_id}:{PAIR.character_id}:{entry_id}", entry_id=entry_id, pair=PAIR, beobachter=USER,
        inhalt=inhalt, themen=[entry_id], salienz=0.9, salienz_eingang=0.85, haeufigkeit=1,
        gedaechtnistyp="episodisch", dimension="interessen", ei=common_pb2.EiFields(modus="alltag"),
        erstellt_am=to_timestamp(T0 - timedelta(days=3)), turn_id=f"turn-{entry_id}",
    )  # fmt: skip


async def _node(service: PipelineUnderTest, entry_id: str, inhalt: str) -> lzg_pb2.Node:
    """Promotes ``inhalt`` into a new LZG node and reads it back with its embedding."""
    promoted = await service.lzg.Promote(
        lzg_pb2.PromoteRequest(
            entry=_entry(entry_id, inhalt), turn=common_pb2.TurnContext(turn_id=f"job-{entry_id}"),
            ausloeser_turn_id=f"job-{entry_id}", as_of=to_timestamp(T0),
        )
    )  # fmt: skip
    assert promoted.outcome == common_pb2.PROMOTION_OUTCOME_NEW_NODE
    request = lzg_pb2.GetNodeRequest(pair=PAIR, node_id=promoted.node_id, include_embedding=True)
    return (await service.lzg.GetNode(request)).node


def _quiet_answer() -> pipeline_pb2.TurnAnalysis:
    """An answer analysis below the KZG gate: Dispatch stores no entry that could become a hit."""
    return pipeline_pb2.TurnAnalysis(
        salience=common_pb2.SalienceResult(salienz=0.1, gedaechtnistyp="episodisch", dimension="interessen")
    )


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


async def test_both_searches_use_the_gravitation_shifted_vector(service: PipelineUnderTest) -> None:
    goal_node = await _node(service, "cello", GOAL_TEXT)
    hike_node = await _node(service, "hike", HIKE_TEXT)
    goal = np.asarray(goal_node.embedding, dtype=np.float32)
    # The KZG entry carries exactly the goal's vector.
    stored = await service.kzg.StoreEntry(
        kzg_pb2.StoreEntryRequest(
            pair=PAIR, beobachter=USER, inhalt=GOAL_TEXT, embedding=goal.tolist(), as_of=to_timestamp(T0),
            salience=common_pb2.SalienceResult(
                salienz=0.6, themen=["cello"], gedaechtnistyp="episodisch", dimension="interessen"
            ),
            turn=common_pb2.TurnContext(turn_id="turn-cello-kzg"), writer="test",
        )
    )  # fmt: skip
    assert stored.outcome == kzg_pb2.STORE_OUTCOME_STORED
    # The previous turn's cluster is glut (f = 0.30), persisted through Dispatch.
    dispatched = await service.pipeline.Dispatch(
        pipeline_pb2.DispatchRequest(
            pair=PAIR, turn_id="turn-glut", user_prompt="Play something!", answer_text="Gladly.",
            cluster="glut", answer_analysis=_quiet_answer(),
        )
    )  # fmt: skip
    assert dispatched.cluster_persisted == "glut"
    goals = [pipeline_pb2.ActivatedGoal(embedding=goal.tolist(), aktivierungs_staerke=1.0)]

    # Asked an hour after the entry was written (SPEC §11: a read at a later as_of skips expired entries).
    shifted = await service.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(
            pair=PAIR, turn_id="turn-shifted", query_text=QUERY, goals=goals, include_vectors=True,
            as_of=to_timestamp(T0 + timedelta(hours=1)),
        )
    )  # fmt: skip
    assert shifted.cluster == "glut" and shifted.gravitation_faktor == pytest.approx(GLUT_FAKTOR)
    query = np.asarray(shifted.query_vector, dtype=np.float32)
    search = np.asarray(shifted.search_vector, dtype=np.float32)
    mixed = query.astype(np.float64) * (1 - GLUT_FAKTOR) + goal.astype(np.float64) * GLUT_FAKTOR
    assert search == pytest.approx(mixed / np.linalg.norm(mixed), abs=1e-6)
    # KZG: the entry's similarity is the cosine to the search vector, not to the query vector.
    assert [h.hit.entry.kzg_key for h in shifted.kzg_hits] == [stored.kzg_key]
    similarity = shifted.kzg_hits[0].hit.similarity
    assert similarity == pytest.approx(_cos(search, goal), abs=1e-5)
    assert _cos(query, goal) < MINILM.kzg_retrieval < similarity  # found only because of the shift
    assert abs(similarity - _cos(query, goal)) > 0.3
    # LZG: the goal's node is an anchor (shell 0) next to the hiking memory.
    anchors = {e.knoten_id: e.schale for e in shifted.lzg_resonanz.erinnerungen}
    assert anchors == {goal_node.id: 0, hike_node.id: 0} and shifted.lzg_resonanz.anker_anzahl == 2

    # The same query under the imperative override (f = 0): the raw vector searches.
    raw = await service.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(
            pair=PAIR, turn_id="turn-raw", query_text=QUERY, goals=goals, intentionen=["anweisung"],
            include_vectors=True, as_of=to_timestamp(T0 + timedelta(hours=1)),
        )
    )  # fmt: skip
    assert raw.cluster == "glut" and raw.gravitation_faktor == 0.0
    assert list(raw.search_vector) == list(raw.query_vector) == list(shifted.query_vector)
    assert list(raw.kzg_hits) == []
    assert {e.knoten_id: e.schale for e in raw.lzg_resonanz.erinnerungen} == {hike_node.id: 0}
    assert raw.lzg_resonanz.anker_anzahl == 1
    hike_raw = next(e for e in raw.lzg_resonanz.erinnerungen if e.knoten_id == hike_node.id)
    # Read an hour after its promotion: the weight as of then (SPEC §11, the decay of §5.7 carried to as_of).
    assert hike_raw.sortier_gewicht == pytest.approx(decayed(hike_node.gewicht_decay, 1 / 24))


async def test_dispatch_as_of_is_the_reinforcement_time(service: PipelineUnderTest) -> None:
    node = await _node(service, "hike", HIKE_TEXT)
    dossier = await service.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(pair=PAIR, turn_id="turn-ask", query_text=QUERY)
    )
    assert list(dossier.served_node_ids) == [node.id]
    as_of = T0 + timedelta(days=40, hours=3, minutes=17, seconds=5)
    response = await service.pipeline.Dispatch(
        pipeline_pb2.DispatchRequest(
            pair=PAIR, turn_id="turn-answer", user_prompt=QUERY, cluster="werkstatt",
            answer_text="We went hiking in the Alps last summer, do you remember the view?",
            served_node_ids=dossier.served_node_ids, answer_analysis=_quiet_answer(), as_of=to_timestamp(as_of),
        )
    )  # fmt: skip
    assert response.protokoll.ausgang == lzg_pb2.VERWENDUNG_AUSGANG_GERECHNET
    assert list(response.protokoll.verwendet) == [node.id]
    after = (await service.lzg.GetNode(lzg_pb2.GetNodeRequest(pair=PAIR, node_id=node.id))).node
    assert from_timestamp(node.verstaerkt_am) == T0
    assert from_timestamp(after.verstaerkt_am) == as_of
    assert from_timestamp(after.decay_am) == as_of
    assert after.haeufigkeit == node.haeufigkeit + 1


async def test_a_shift_that_overflows_is_refused_before_anything_is_logged(
    service: PipelineUnderTest, provider: EmbeddingProvider
) -> None:
    """Goals of a strength whose sum no float holds (SPEC §6's e_nova overflows): INVALID_ARGUMENT naming the
    overflow, and — a refused call changes nothing — not one log record of the turn (the attack fuzz found the
    dossier's input and gravitation records written before the shift was refused)."""
    dispatched = await service.pipeline.Dispatch(pipeline_pb2.DispatchRequest(
        pair=PAIR, turn_id="turn-glut", user_prompt="Play something!", answer_text="Gladly.", cluster="glut",
        answer_analysis=_quiet_answer(),
    ))  # fmt: skip
    assert dispatched.cluster_persisted == "glut"  # the next dossier shifts with f = 0.30
    goal = [0.9, 0.1] + [0.0] * (provider.dimension - 2)
    goals = [pipeline_pb2.ActivatedGoal(embedding=goal, aktivierungs_staerke=1e308)] * 2
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await service.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
            pair=PAIR, turn_id="turn-overflow", query_text=QUERY, goals=goals,
        ))  # fmt: skip
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "overflowed" in (refused.value.details() or "")
    await service.log.flush()
    assert [r.art for r in service.sink.records if r.turn_id == "turn-overflow"] == []
    assert await service.peers.records("turn-overflow") == []
