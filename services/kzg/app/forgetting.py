"""Forgetting and correcting single memories of a pair (the person's rights over what the KZG holds)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from novaberg_core.embedding import kzg_embed_text
from novaberg_core.errors import InvalidArgument, NotFound
from novaberg_core.rights import rights_write
from services.kzg.app.checks import check_key
from services.kzg.app.context import KzgContext, log_scope
from services.kzg.domain import check_pair
from services.kzg.types import Pair

__all__ = ["Forgetting"]


class Forgetting:
    """ForgetEntries and CorrectEntry over the shared context."""

    def __init__(self, ctx: KzgContext) -> None:
        self.ctx = ctx
        self.store = ctx.store

    def _log(self, operation: str, pair: Pair, turn_id: str, span_id: str, **fields: Any) -> None:
        where = log_scope(pair, turn_id, span_id)
        rights_write(self.ctx.log, **where, operation=operation, tabelle="kzg", **fields)

    async def forget(
        self,
        pair: Pair,
        kzg_keys: Sequence[str],
        source_turn_id: str,
        *,
        turn_id: str = "",
        span_id: str = "",
    ) -> tuple[list[str], int]:
        """Deletes the named entries and those of ``source_turn_id`` → (deleted keys, session turns)."""
        check_pair(pair.user_id, pair.character_id)
        if not kzg_keys and not source_turn_id:
            raise InvalidArgument("name kzg_keys or a source_turn_id to forget")
        for key in kzg_keys:
            check_key(pair, key)
        keys = list(dict.fromkeys(kzg_keys))
        removed_session = 0
        if source_turn_id:
            keys += [k for k in await self.store.entries_of_turn(pair, source_turn_id) if k not in keys]
        deleted = await self.store.delete_each(keys)
        if source_turn_id:
            removed_session = await self.store.forget_session_turn(pair, source_turn_id)
            if removed_session == 0 and deleted:
                # The turn's entry was here but the turn has left the list: it may have been folded
                # into the running summary (SPEC §3), which goes too.
                removed_session = await self.store.delete_session_summary(pair)
        if not deleted and not removed_session:
            return [], 0
        self._log(
            "forget", pair, turn_id, span_id,
            kzg_keys=deleted, quell_turn_id=source_turn_id or None, session_eintraege=removed_session,
        )  # fmt: skip
        return deleted, removed_session

    async def correct(
        self, pair: Pair, kzg_key: str, inhalt: str, *, turn_id: str = "", span_id: str = ""
    ) -> str:
        """New content for one entry, re-embedded with its themes (SPEC §2) and searchable by its new words
        only (SPEC §11); returns the old content."""
        check_key(pair, kzg_key)
        if not inhalt.strip():
            raise InvalidArgument("inhalt must not be empty")
        entry = await self.store.get_entry(kzg_key, with_embedding=False)
        if entry is None:
            raise NotFound(f"KZG entry {kzg_key} does not exist (expired, deleted or never written)")
        vector = await self.ctx.provider.embed_one(kzg_embed_text(list(entry.themen), inhalt, entry.sprecher))
        previous = await self.store.correct_entry(
            kzg_key, inhalt, vector, sprecher=entry.sprecher, sprache=entry.sprache, antwort_auf=entry.antwort_auf
        )
        if previous is None:
            raise NotFound(f"KZG entry {kzg_key} vanished during the correction")
        self._log("correct", pair, turn_id, span_id, kzg_key=kzg_key)
        return previous
