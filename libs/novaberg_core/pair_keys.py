"""The pipeline's per-pair keys in Redis, named once (SPEC §1, §11).

The pipeline keeps its one piece of state per pair there; the KZG, which shares that Redis, deletes
these keys with the rest of a person's keys (docs/decisions.md "Erasure"), so both must spell them alike.
"""

from __future__ import annotations

from typing import Final

from novaberg_core.contract import NamesPair

__all__ = ["PIPELINE_CLUSTER_KEY", "PIPELINE_PROFILE_KEY", "pipeline_cluster_key", "pipeline_profile_key"]

PIPELINE_CLUSTER_KEY: Final = "pipeline:cluster:{user_id}:{character_id}"
"""A pair's previous-turn cluster (a JSON object, no TTL)."""
PIPELINE_PROFILE_KEY: Final = "pipeline:profile:{user_id}:{character_id}"
"""A pair's profile: how its two speakers are named, and its language (SPEC §11; a JSON object, no TTL)."""


def pipeline_cluster_key(pair: NamesPair) -> str:
    """The key of ``pair``'s previous-turn cluster."""
    return PIPELINE_CLUSTER_KEY.format(user_id=pair.user_id, character_id=pair.character_id)


def pipeline_profile_key(pair: NamesPair) -> str:
    """The key of ``pair``'s profile."""
    return PIPELINE_PROFILE_KEY.format(user_id=pair.user_id, character_id=pair.character_id)
