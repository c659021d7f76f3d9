"""Request checks of the pipeline RPCs and the perspective weights of the dossier (SPEC §7, §10)."""

from __future__ import annotations

from typing import Any

import pytest

from novaberg.common.v1 import common_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.clusters import default_clusters
from novaberg_core.contract import check_request
from novaberg_core.errors import InvalidArgument
from services.pipeline.dossier import PerspectiveWeights, weigh_hits
from services.pipeline.validation import check_build_dossier, check_dispatch, check_observe

PAIR = common_pb2.Pair(user_id="meister", character_id="nova")
USER, ASSISTANT = common_pb2.BEOBACHTER_USER, common_pb2.BEOBACHTER_ASSISTANT


def observe(**fields: Any) -> pipeline_pb2.ObserveTurnRequest:
    base: dict[str, Any] = {"pair": PAIR, "turn_id": "t1", "beobachter": USER, "text": "Hallo Nova"}
    return pipeline_pb2.ObserveTurnRequest(**{**base, **fields})


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (pipeline_pb2.ObserveTurnRequest(turn_id="t", beobachter=USER, text="x"), "pair is required"),
        (observe(pair=common_pb2.Pair(user_id="", character_id="nova")), "pair.user_id must not be empty"),
        (observe(pair=common_pb2.Pair(user_id="a:b", character_id="nova")), "pair.user_id must not contain ':'"),
        (observe(pair=common_pb2.Pair(user_id="meister", character_id=" nova")), "must not start or end"),
        (observe(pair=common_pb2.Pair(user_id="m" * 51, character_id="nova")), "at most 50 characters"),
        (observe(turn_id=""), "turn_id must not be empty"),
        (observe(turn_id="t" * 101), "turn_id must be at most 100"),
        (observe(beobachter=common_pb2.BEOBACHTER_UNSPECIFIED), "beobachter must be"),
        (observe(text="   "), "text must not be empty"),
        (observe(analysis=pipeline_pb2.TurnAnalysis()), "analysis.salience is required"),
        (observe(analysis=pipeline_pb2.TurnAnalysis(salience=common_pb2.SalienceResult(salienz=1.2))),
         r"analysis.salience.salienz must lie within 0..1"),
        (observe(analysis=pipeline_pb2.TurnAnalysis(salience=common_pb2.SalienceResult(salienz=float("nan")))),
         "analysis.salience.salienz"),
        (observe(analysis=pipeline_pb2.TurnAnalysis(
            salience=common_pb2.SalienceResult(salienz=0.5, themen=["a|b"]))), r"themen\[0\]"),
        (observe(analysis=pipeline_pb2.TurnAnalysis(
            salience=common_pb2.SalienceResult(salienz=0.5, dimension="alltag"), ei=common_pb2.EiFields(arousal=-0.1))),
         "ei.arousal"),
        (observe(analysis=pipeline_pb2.TurnAnalysis(salience=common_pb2.SalienceResult(salienz=0.5))),
         "analysis.salience.dimension must not be empty"),
        (observe(analysis=pipeline_pb2.TurnAnalysis(
            salience=common_pb2.SalienceResult(salienz=0.5, dimension="x", gedaechtnistyp="autobiographisch-episodisch"))),
         "gedaechtnistyp must be at most 20 characters"),
        (observe(analysis=pipeline_pb2.TurnAnalysis(
            salience=common_pb2.SalienceResult(salienz=0.5, dimension="x"), magnets=common_pb2.Magnets(entitaet_ids=[3, 0]))),
         "entitaet_ids must be positive"),
        (observe(analysis=pipeline_pb2.TurnAnalysis(
            salience=common_pb2.SalienceResult(salienz=0.5, dimension="x"), magnets=common_pb2.Magnets(timeline_id=-2))),
         "timeline_id must not be negative"),
        (observe(text="Hallo\x00Nova"), "text must not contain a control character U.0000"),
        (observe(pair=common_pb2.Pair(user_id="u\x07", character_id="nova")), "pair.user_id must not contain a control"),
        (observe(profile=common_pb2.PairProfile(sprache="fr")), "profile.sprache must be one of de, en or empty, got 'fr'"),
        (observe(profile=common_pb2.PairProfile(user_name="Maria\nEder")), "profile.user_name must not contain a control"),
        (observe(profile=common_pb2.PairProfile(zeitzone="Europe/Berlni")),
         "profile.zeitzone: 'Europe/Berlni' is no IANA time zone"),
    ],
)
def test_observe_refusals(request_: pipeline_pb2.ObserveTurnRequest, message: str) -> None:
    """The shared contract (run by every server before its handler) and then the pipeline's own rules."""
    with pytest.raises(InvalidArgument, match=message):
        check_request(request_)
        check_observe(request_)


def test_observe_accepts_a_plain_turn() -> None:
    check_observe(observe())


def dossier(**fields: Any) -> pipeline_pb2.BuildDossierRequest:
    base: dict[str, Any] = {"pair": PAIR, "turn_id": "t1", "query_text": "Wann hat Anna Geburtstag?"}
    return pipeline_pb2.BuildDossierRequest(**{**base, **fields})


def test_dossier_readers_default_both_and_dedupe() -> None:
    assert check_build_dossier(dossier(), 4) == ["analysis", "composer"]
    assert check_build_dossier(dossier(readers=["composer", "composer"]), 4) == ["composer"]


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (dossier(readers=["analysis", "responder"]), "unknown reader 'responder'"),
        (dossier(query_text=""), "query_text must not be empty"),
        (dossier(goals=[pipeline_pb2.ActivatedGoal(embedding=[1, 0, 0], aktivierungs_staerke=1)]),
         r"goals\[0\].embedding has 3 values; the embedding model needs 4"),
        (dossier(goals=[pipeline_pb2.ActivatedGoal(embedding=[1, 0, 0, float("inf")], aktivierungs_staerke=1)]),
         r"goals\[0\].embedding holds a value that is not finite"),
        (dossier(goals=[pipeline_pb2.ActivatedGoal(embedding=[1, 0, 0, 0], aktivierungs_staerke=-0.5)]),
         "aktivierungs_staerke must be a finite number >= 0"),
    ],
)
def test_dossier_refusals(request_: pipeline_pb2.BuildDossierRequest, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        check_build_dossier(request_, 4)


def dispatch(**fields: Any) -> pipeline_pb2.DispatchRequest:
    base: dict[str, Any] = {"pair": PAIR, "turn_id": "t1", "answer_text": "Am 12. März!", "cluster": "bier"}
    return pipeline_pb2.DispatchRequest(**{**base, **fields})


def test_dispatch_returns_the_canonical_cluster() -> None:
    assert check_dispatch(dispatch(cluster=" Glut "), default_clusters()) == "glut"


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (dispatch(cluster="disco"), "unknown cluster 'disco'"),
        (dispatch(cluster=""), "unknown cluster ''"),
        (dispatch(answer_text=""), "answer_text must not be empty"),
        (dispatch(served_node_ids=[4, -1]), "served_node_ids must be positive"),
        (dispatch(user_emotion_json="{nope"), "user_emotion_json is not JSON"),
        (dispatch(nova_emotion_json="[1]"), "nova_emotion_json must be a JSON object"),
        (dispatch(answer_analysis=pipeline_pb2.TurnAnalysis(salience=common_pb2.SalienceResult(salienz=-1))),
         "answer_analysis.salience.salienz"),
    ],
)
def test_dispatch_refusals(request_: pipeline_pb2.DispatchRequest, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        check_dispatch(request_, default_clusters())


def test_perspective_weights_user_1_assistant_0_7() -> None:
    # similarities: assistant 0.90 → 0.63, user 0.70 → 0.70, user 0.65 → 0.65, assistant 0.95 → 0.665
    hits = [(ASSISTANT, 0.90), (USER, 0.70), (USER, 0.65), (ASSISTANT, 0.95)]
    ranked = weigh_hits(hits, PerspectiveWeights())
    assert [w.index for w in ranked] == [1, 3, 2, 0]
    assert [w.score for w in ranked] == pytest.approx([0.70, 0.665, 0.65, 0.63])
    assert [w.weight for w in ranked] == [1.0, 0.7, 1.0, 0.7]


def test_equal_scores_keep_retrieval_order() -> None:
    ranked = weigh_hits([(USER, 0.7), (ASSISTANT, 1.0), (USER, 0.7)], PerspectiveWeights())
    assert [w.index for w in ranked] == [0, 1, 2]
