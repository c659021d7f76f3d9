"""Per-model similarity thresholds (SPEC §2): thresholds are properties of a model, not constants.

The numbers live in ``profiles.json`` next to this module, each with the rule or measurement
that produced it; ``bench/embedding_quality.py`` re-measures the local models' numbers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from functools import cache
from importlib import resources
from typing import Any

THRESHOLDS = ("kzg_retrieval", "anchor", "match", "embedding_layer", "usage")
"""The five thresholds every profile carries, in SPEC §2's order."""


class UnknownModelError(LookupError):
    """No profile exists for a model: its thresholds were never measured."""


@dataclass(frozen=True)
class ThresholdSources:
    """Where each threshold came from: the rule, the data and the measured value behind it."""

    kzg_retrieval: str
    anchor: str
    match: str
    embedding_layer: str
    usage: str


@dataclass(frozen=True)
class ModelProfile:
    """The thresholds of one embedding model (SPEC §2); cosine similarities of L2-normalised vectors."""

    model_id: str
    """Provider ``model_id`` this profile belongs to."""
    dimension: int
    """Vector length; stores size their vector columns by it (SPEC §5.1)."""
    kzg_retrieval: float
    """KZG hits below this are dropped, an empty result is valid (SPEC §4.5; nomic-v2 0.72)."""
    anchor: float
    """Spreading-read anchors need at least this cosine to the query (SPEC §5.8; nomic-v2 0.40)."""
    match: float
    """Promotion treats a node at least this close as the same memory (SPEC §5.3; nomic-v2 0.82)."""
    embedding_layer: float
    """The embedding layer of an edge fires above this cosine (SPEC §5.4; nomic-v2 0.55)."""
    usage: float
    """An answer this close to a served node counts as using it (SPEC §5.6; nomic-v2 0.55)."""
    sources: ThresholdSources
    """Per threshold, how it was obtained."""
    measurement: str
    """The measurement run (command, data, date) the numbers come from."""


def _profile_from_json(model_id: str, entry: dict[str, Any]) -> ModelProfile:
    expected = {field.name for field in fields(ModelProfile)} - {"model_id"}
    if set(entry) != expected:
        raise ValueError(
            f"profile {model_id!r} in profiles.json has fields {sorted(entry)}, expected {sorted(expected)}"
        )
    for name in THRESHOLDS:
        value = entry[name]
        if not isinstance(value, int | float) or not 0.0 < value < 1.0:
            raise ValueError(f"profile {model_id!r}: {name} = {value!r} is not a cosine in (0, 1)")
    if not isinstance(entry["dimension"], int) or entry["dimension"] <= 0:
        raise ValueError(f"profile {model_id!r}: dimension {entry['dimension']!r} is not a positive integer")
    return ModelProfile(
        model_id=model_id,
        dimension=entry["dimension"],
        sources=ThresholdSources(**entry["sources"]),
        measurement=entry["measurement"],
        **{name: float(entry[name]) for name in THRESHOLDS},
    )


@cache
def load_profiles() -> dict[str, ModelProfile]:
    """Every shipped profile by ``model_id``, read once from ``profiles.json``."""
    raw = json.loads(resources.files(__package__).joinpath("profiles.json").read_text(encoding="utf-8"))
    return {model_id: _profile_from_json(model_id, entry) for model_id, entry in raw["profiles"].items()}


def profile_for(model_id: str) -> ModelProfile:
    """The profile of ``model_id``; an unmeasured model is an error, never a fallback to another's numbers."""
    profiles = load_profiles()
    try:
        return profiles[model_id]
    except KeyError:
        raise UnknownModelError(
            f"no threshold profile for embedding model {model_id!r} (known: {', '.join(sorted(profiles))}); "
            "measure one with bench/embedding_quality.py and add it to "
            "libs/novaberg_core/embedding/profiles.json"
        ) from None
