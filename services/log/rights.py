"""A person's erasure in the pipeline log (SPEC §8): every row of a pair or user, turn_roh included.

``turn_roh`` is never purged by retention (SPEC §8), but an erasure is the person's right and takes
it too. Rows without a pair (maintenance: queue reads, Pixie's runs) that name the target's KZG
keys go as well.

The erasure leaves a tombstone, so that records still buffered by a writer do not bring the pair
back (:mod:`services.log.tombstones`).
"""

from __future__ import annotations

import json

from novaberg_core.contract import pair_token, user_token
from novaberg_core.rights import check_erasure_target, kzg_key_prefix
from services.log.store import LogStore
from services.log.tombstones import EraseCounts

__all__ = ["LogRights", "erasure_target", "key_prefix_in_json"]


def key_prefix_in_json(user_id: str, character_id: str | None) -> str:
    """The target's KZG key prefix as it appears inside JSON text (``kzg:<u>:<c>:`` or ``kzg:<u>:``)."""
    return json.dumps(kzg_key_prefix(user_id, character_id), ensure_ascii=False)[1:-1]


def erasure_target(pair: tuple[str, str] | None, user_id: str | None) -> tuple[str, str | None, str]:
    """The checked target of an erasure: its user, its character (None: every character) and its
    one-way key (the tombstone)."""
    user, character = check_erasure_target(pair, user_id)
    return user, character, user_token(user) if character is None else pair_token(user, character)


class LogRights:
    """The erasure of the log service over its store."""

    def __init__(self, store: LogStore) -> None:
        self.store = store

    async def erase(self, pair: tuple[str, str] | None, user_id: str | None) -> EraseCounts:
        """Every row of the target and the maintenance rows naming its keys; then the tombstone."""
        user, character, key = erasure_target(pair, user_id)
        return await self.store.erase(user, character, key, key_prefix_in_json(user, character))
