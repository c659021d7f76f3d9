"""Perception gravitation (SPEC §6, mem §11.4, syn §8.5) with worked numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from novaberg_core.clusters import default_clusters
from novaberg_core.errors import FailedPrecondition, InvalidArgument
from services.pipeline.gravitation import Goal, gravitation_factor, shift_query

TABLE = default_clusters().gravitation_faktor_by_cluster

SPEC_FACTORS = {
    "werkstatt": 0.05, "foyer": 0.05, "schlachtfeld": 0.05, "wartezimmer": 0.10, "beichte": 0.10,
    "regen": 0.10, "schmollen": 0.10, "nebel": 0.10, "gewitter": 0.10, "paradox": 0.10, "bier": 0.20,
    "kissenschlacht": 0.25, "glut": 0.30, "feuerwerk": 0.30,
}


@pytest.mark.parametrize(("cluster", "expected"), sorted(SPEC_FACTORS.items()))
def test_factor_is_the_cluster_table_value(cluster: str, expected: float) -> None:
    decision = gravitation_factor(cluster, ["information_teilen"], TABLE)
    assert decision.faktor == pytest.approx(expected)
    assert not decision.override


def test_no_stored_cluster_means_paradox_at_0_10() -> None:
    assert default_clusters().default_cluster == "paradox"
    assert gravitation_factor(default_clusters().default_cluster, [], TABLE).faktor == pytest.approx(0.10)


@pytest.mark.parametrize("cluster", ["glut", "werkstatt", "paradox"])
def test_anweisung_overrides_to_exactly_zero(cluster: str) -> None:
    decision = gravitation_factor(cluster, ["planung", "anweisung"], TABLE)
    assert decision.faktor == 0.0
    assert decision.override
    assert decision.cluster_faktor == pytest.approx(SPEC_FACTORS[cluster])


def test_softer_intentions_keep_the_cluster_factor() -> None:
    for intention in ("feedback_geben", "widerspruch", "bestaetigung", "planung"):
        assert gravitation_factor("glut", [intention], TABLE).faktor == pytest.approx(0.30)


def test_cluster_outside_the_table_is_an_error_not_paradox() -> None:
    with pytest.raises(FailedPrecondition, match="'disco' is not in the cluster table"):
        gravitation_factor("disco", [], TABLE)


def test_shift_worked_example_bier() -> None:
    # e_query = (1, 0), one goal (0, 1) with strength 0.5, f = 0.20:
    # e_nova = (1,0)·0.8 + (0,1)·0.5·0.2 = (0.8, 0.1) → unit length (0.99228, 0.12403)
    query = np.array([1.0, 0.0], dtype=np.float32)
    shifted = shift_query(query, [Goal(np.array([0.0, 1.0], dtype=np.float32), 0.5)], 0.20)
    norm = math.hypot(0.8, 0.1)
    assert shifted.dtype == np.float32
    assert shifted == pytest.approx([0.8 / norm, 0.1 / norm], abs=1e-7)
    assert float(np.linalg.norm(shifted)) == pytest.approx(1.0, abs=1e-6)
    angle = math.degrees(math.acos(float(shifted[0])))
    assert angle == pytest.approx(7.125, abs=1e-3)


def test_two_goals_are_summed_with_their_strengths() -> None:
    # f = 0.30: (1,0,0)·0.7 + [(0,1,0)·0.4 + (0,0,1)·0.2]·0.3 = (0.7, 0.12, 0.06)
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    goals = [Goal(np.array([0, 1, 0], dtype=np.float32), 0.4), Goal(np.array([0, 0, 1], dtype=np.float32), 0.2)]
    shifted = shift_query(query, goals, 0.30)
    raw = np.array([0.7, 0.12, 0.06])
    assert shifted == pytest.approx(raw / np.linalg.norm(raw), abs=1e-7)


def test_zero_factor_returns_the_raw_vector_bit_identical() -> None:
    rng = np.random.default_rng(7)
    query = rng.normal(size=384).astype(np.float32)
    query /= np.linalg.norm(query)
    goal = Goal(rng.normal(size=384).astype(np.float32), 0.9)
    shifted = shift_query(query, [goal], 0.0)
    assert shifted.tobytes() == query.tobytes()
    assert shifted is not query


def test_without_goals_the_direction_stays_the_query() -> None:
    query = np.array([0.6, 0.8], dtype=np.float32)
    shifted = shift_query(query, [], 0.25)
    assert shifted == pytest.approx([0.6, 0.8], abs=1e-7)


def test_cancelling_goal_is_refused() -> None:
    query = np.array([1.0, 0.0], dtype=np.float32)
    with pytest.raises(InvalidArgument, match="zero vector"):
        shift_query(query, [Goal(np.array([-1.0, 0.0], dtype=np.float32), 1.0)], 0.5)


def test_an_overflowing_goal_is_refused_as_such() -> None:
    query = np.array([1.0, 0.0], dtype=np.float32)
    with pytest.raises(InvalidArgument, match="overflowed"):
        shift_query(query, [Goal(np.array([0.9, 0.1], dtype=np.float32), 1e308)] * 2, 0.5)


def test_factor_outside_unit_interval_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        shift_query(np.array([1.0, 0.0], dtype=np.float32), [], 1.5)
