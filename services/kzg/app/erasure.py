"""Erasure of a pair or of every pair of a user from the KZG's Redis (docs/decisions.md "Erasure").

The record of an erasure in the pipeline log never names the erased pair: a maintenance row
(no ids) with its counts only.
"""

from __future__ import annotations

import uuid
from typing import Final

from novaberg_core.pipeline_log import count_fields, count_names
from novaberg_core.rights import check_erasure_target, erasure_written
from services.kzg.app.context import KzgContext
from services.kzg.types import EraseCounts, Pair

__all__ = ["Erasure"]

_ERASED_COUNTS: Final = count_names(
    EraseCounts, eintraege="entries", session_schluessel="session_keys", hash_dirty="hash_dirty",
    cluster_schluessel="cluster_keys", profil_schluessel="profile_keys", queue_jobs="queue_jobs",
)  # fmt: skip
"""What an erasure's :class:`EraseCounts` are called in its record (log name → attribute)."""


class Erasure:
    """Erase over the shared context."""

    def __init__(self, ctx: KzgContext) -> None:
        self.ctx = ctx
        self.store = ctx.store

    async def erase(self, pair: Pair | None, user_id: str | None) -> EraseCounts:
        """Every key of a pair (``pair``) or of every pair of ``user_id``; idempotent."""
        user, _ = check_erasure_target(
            (pair.user_id, pair.character_id) if pair is not None else None,
            user_id,
            pair_field="pair",
            user_field="pair",
        )
        counts = EraseCounts(stream_cutoff=await self.store.stream_cutoff())
        if pair is not None:
            await self.store.erase_pair_keys(pair, counts)
            if any((counts.entries, counts.session_keys, counts.hash_dirty, counts.cluster_keys, counts.profile_keys)):
                counts.characters.add(pair.character_id)
        else:
            await self.store.erase_user_keys(user, counts)
        character = pair.character_id if pair is not None else None
        counts.queue_jobs = await self.store.erase_jobs(user, character, counts.characters)
        counted = count_fields(counts, _ERASED_COUNTS)
        turn = f"loeschung-{uuid.uuid4()}"
        erasure_written(self.ctx.log, turn_id=turn, tabelle="kzg", character_id=character, **counted)
        return counts
