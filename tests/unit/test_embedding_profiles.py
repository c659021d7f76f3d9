"""Per-model threshold profiles (SPEC §2)."""

from __future__ import annotations

import dataclasses

import pytest

from novaberg_core.embedding import THRESHOLDS, UnknownModelError, load_profiles, make_provider, profile_for


def test_nomic_profile_is_the_seeds_values() -> None:
    profile = profile_for("ollama:nomic-embed-text-v2-moe")
    assert profile.dimension == 768
    assert (profile.kzg_retrieval, profile.anchor, profile.match, profile.embedding_layer, profile.usage) == (
        0.72,
        0.40,
        0.82,
        0.55,
        0.55,
    )


@pytest.mark.parametrize("name", ["minilm", "use"])
def test_every_local_model_has_a_measured_profile(name: str) -> None:
    provider = make_provider(name)
    profile = profile_for(provider.model_id)
    assert profile.dimension == provider.dimension
    for threshold in THRESHOLDS:
        assert 0.0 < getattr(profile, threshold) < 1.0
        assert getattr(profile.sources, threshold), f"{threshold} has no source"
    assert "bench/embedding_quality.py" in profile.measurement


def test_thresholds_are_ordered_as_their_meaning_requires() -> None:
    """A duplicate (match) must be closer than an edge-worthy neighbour or a used memory."""
    for profile in load_profiles().values():
        assert profile.match > profile.embedding_layer
        assert profile.match > profile.usage


def test_profiles_are_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile_for("use-multilingual-v3").match = 0.5  # type: ignore[misc]


def test_unknown_model_is_an_error_naming_the_model_and_the_fix() -> None:
    with pytest.raises(UnknownModelError, match=r"'ollama:mxbai-embed-large'.*bench/embedding_quality.py"):
        profile_for("ollama:mxbai-embed-large")
