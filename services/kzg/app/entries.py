"""One entry by its key (SPEC §4.1, §5.3 step 6): read it, delete it, mark the pair hash-dirty."""

from __future__ import annotations

from datetime import datetime

from novaberg_core.errors import NotFound
from services.kzg.app.checks import check_key
from services.kzg.app.context import READ_NODE, WRITE_NODE, KzgContext, log_scope
from services.kzg.types import KzgEntry, Pair

__all__ = ["Entries"]


class Entries:
    """GetEntry, DeleteEntry and MarkHashDirty over the shared context."""

    def __init__(self, ctx: KzgContext) -> None:
        self.ctx = ctx
        self.store = ctx.store

    async def get_entry(
        self, pair: Pair, key: str, *, include_embedding: bool = False, turn_id: str = "", span_id: str = "",
        as_of: datetime | None = None,
    ) -> KzgEntry:
        """The entry, read fresh (SPEC §5.3 step 1); the read is logged here, under the caller's turn."""
        check_key(pair, key)
        entry = await self.store.get_entry(key, with_embedding=include_embedding)
        self.ctx.log.db_read(
            **log_scope(pair, turn_id, span_id, as_of), node=READ_NODE, tabelle="kzg",
            treffer=int(entry is not None), kzg_key=key,
        )
        if entry is None:
            raise NotFound(f"KZG entry {key} does not exist (expired, deleted or never written)")
        return entry

    async def delete_entry(
        self, pair: Pair, key: str, *, turn_id: str = "", span_id: str = "", hash_dirty_reason: str = "",
        as_of: datetime | None = None,
    ) -> tuple[bool, bool]:
        """DEL, then EXISTS to verify (SPEC §5.3 step 6); a missing key is reported, not an error.

        With ``hash_dirty_reason`` the pair's marker is set first, as :meth:`mark_hash_dirty` would.
        """
        check_key(pair, key)
        marker = None
        if hash_dirty_reason:
            marker = (pair, hash_dirty_reason, self.ctx.now(as_of))
        deleted, gone = await self.store.delete_entry(key, hash_dirty=marker)
        if hash_dirty_reason:
            self.ctx.log.db_write(
                **log_scope(pair, turn_id, span_id, as_of), node=WRITE_NODE, tabelle="hash_dirty",
                operation="hset", grund=hash_dirty_reason,
            )
        self.ctx.log.db_write(
            **log_scope(pair, turn_id, span_id, as_of), node=WRITE_NODE, tabelle="kzg", operation="del",
            kzg_key=key, geloescht=deleted, verifiziert_weg=gone,
        )
        return deleted, gone

    async def mark_hash_dirty(self, pair: Pair, reason: str, *, as_of: datetime | None = None) -> None:
        pair.check()
        await self.store.mark_hash_dirty(pair, reason or "unbenannt", self.ctx.now(as_of))
        self.ctx.log.db_write(
            **log_scope(pair), node=WRITE_NODE, tabelle="hash_dirty", operation="hset", grund=reason
        )
