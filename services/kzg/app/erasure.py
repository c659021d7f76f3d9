"""Erasure of a pair or of every pair of a user from the KZG's Redis (docs/decisions.md "Erasure").

The record of an erasure in the pipeline log never names the erased pair: a maintenance row
(no ids) with its counts only.
"""

from __future__ import annotations

import uuid

from novaberg_core.errors import InvalidArgument
from services.kzg.app.context import RIGHTS_NODE, KzgContext
from services.kzg.domain import check_pair
from services.kzg.models import EraseCounts, Pair

__all__ = ["Erasure"]


class Erasure:
    """Erase over the shared context."""

    def __init__(self, ctx: KzgContext) -> None:
        self.ctx = ctx
        self.store = ctx.store

    async def erase(self, pair: Pair | None, user_id: str | None) -> EraseCounts:
        """Every key of a pair (``pair``) or of every pair of ``user_id``; idempotent."""
        if (pair is None) == (user_id is None):
            raise InvalidArgument("target must name either a pair or a user_id")
        if pair is not None:
            check_pair(pair.user_id, pair.character_id)
            user = pair.user_id
        else:
            assert user_id is not None
            check_pair(user_id, "-")
            user = user_id
        counts = EraseCounts(stream_cutoff=await self.store.stream_cutoff())
        if pair is not None:
            await self.store.erase_pair_keys(pair, counts)
            if counts.entries or counts.session_keys or counts.hash_dirty or counts.cluster_keys:
                counts.characters.add(pair.character_id)
        else:
            await self.store.erase_user_keys(user, counts)
        counts.queue_jobs = await self.store.erase_jobs(
            user, pair.character_id if pair is not None else None, counts.characters
        )
        self.ctx.log.db_write(
            turn_id=f"loeschung-{uuid.uuid4()}",
            node=RIGHTS_NODE,
            tabelle="kzg",
            operation="erase",
            umfang="paar" if pair is not None else "nutzer",
            eintraege=counts.entries,
            session_schluessel=counts.session_keys,
            hash_dirty=counts.hash_dirty,
            cluster_schluessel=counts.cluster_keys,
            queue_jobs=counts.queue_jobs,
        )
        return counts
