"""A person's erasure in the pipeline log (SPEC §8): every row of a pair or user, turn_roh included.

``turn_roh`` is never purged by retention (SPEC §8), but an erasure is the person's right and takes
it too. Rows without a pair (maintenance: queue reads, Pixie's runs) that name the target's KZG
keys go as well.

Writers buffer records for seconds (longer while the log is down), so rows of an erased pair can
arrive after its erasure. The erasure therefore leaves a tombstone — a one-way key
(:func:`~novaberg_core.contract.pair_token` / :func:`~novaberg_core.contract.user_token`) and the
time, no id — and the ingest drops records of a tombstoned target dated up to the erasure. Ingest and
erasure serialise on one advisory lock (ingest shared, erasure exclusive), so a batch is either
written before the erasure (and erased by it) or filtered after it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

import asyncpg

from novaberg_core.contract import check_pair, pair_token, user_token
from novaberg_core.errors import InvalidArgument
from novaberg_core.migrations import load_queries
from services.log.domain import NewRow

__all__ = ["TOMBSTONE_WINDOW", "EraseCounts", "IngestGuard", "LogRights", "ingest_guard"]

QUERIES: Final = load_queries(Path(__file__).resolve().parent / "sql" / "rights.sql")

TOMBSTONE_WINDOW: Final = timedelta(days=1)
"""How long records of an erased target dated up to its erasure are dropped at ingest (a writer's
buffer waits out a log outage of up to this long without bringing an erased pair back)."""

_LOCK_KEY: Final = int.from_bytes(hashlib.sha256(b"log:loeschung").digest()[:8], "big", signed=True)
"""Advisory lock between ingest (shared) and erasure (exclusive)."""

_KZG_KEY: Final = re.compile(r'kzg:([^:"\\]+):([^:"\\]+):')
"""A KZG key (its pair part) inside the JSON text of a maintenance record."""



@dataclass(frozen=True)
class EraseCounts:
    rows: int
    turn_roh: int
    unpaired_rows: int


def key_prefix_in_json(user_id: str, character_id: str | None) -> str:
    """The target's KZG key prefix as it appears inside JSON text (``kzg:<u>:<c>:`` or ``kzg:<u>:``)."""
    prefix = f"kzg:{user_id}:" if character_id is None else f"kzg:{user_id}:{character_id}:"
    return json.dumps(prefix, ensure_ascii=False)[1:-1]


class IngestGuard:
    """The tombstones in force while one batch is ingested; decides which records are dropped."""

    def __init__(self, tombstones: dict[str, datetime]) -> None:
        self.tombstones = tombstones
        self.dropped = 0

    def _erased(self, user_id: str, character_id: str, erstellt_am: datetime) -> bool:
        for key in (pair_token(user_id, character_id), user_token(user_id)):
            erased_at = self.tombstones.get(key)
            if erased_at is not None and erstellt_am <= erased_at:
                return True
        return False

    def keep(self, row: NewRow) -> bool:
        """False for a record of an erased pair (or a maintenance record naming its keys) dated before it."""
        erstellt_am, _, _, _, _, _, inhalt, user_id, character_id, _ = row  # COPY_COLUMNS order
        if user_id is not None and character_id is not None:
            erased = self._erased(user_id, character_id, erstellt_am)
        else:
            erased = any(self._erased(u, c, erstellt_am) for u, c in _KZG_KEY.findall(inhalt))
        if erased:
            self.dropped += 1
        return not erased

    def filter(self, rows: Iterable[NewRow]) -> list[NewRow]:
        return [row for row in rows if self.keep(row)]


async def ingest_guard(conn: asyncpg.Connection) -> IngestGuard | None:
    """Inside the ingest's transaction: the shared lock, then the tombstones in force (None: none)."""
    await conn.execute("SELECT pg_advisory_xact_lock_shared($1)", _LOCK_KEY)
    rows = await conn.fetch(QUERIES["active_tombstones"], TOMBSTONE_WINDOW)
    if not rows:
        return None
    return IngestGuard({r["schluessel"]: r["geloescht_am"] for r in rows})


class LogRights:
    """The erasure of the log service over its pool."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def erase(self, pair: tuple[str, str] | None, user_id: str | None) -> EraseCounts:
        """Every row of the target and the maintenance rows naming its keys; then the tombstone."""
        if (pair is None) == (user_id is None):
            raise InvalidArgument("target must name either a pair or a user_id")
        if pair is not None:
            check_pair(*pair, "target.pair")
            user, character = pair[0], pair[1]
            key = pair_token(user, character)
        else:
            assert user_id is not None
            check_pair(user_id, "-", "target")
            user, character, key = user_id, None, user_token(user_id)
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
            counts: Any = await conn.fetchrow(QUERIES["erase_rows"], user, character)
            unpaired = int(
                await conn.fetchval(QUERIES["erase_unpaired_rows"], key_prefix_in_json(user, character))
            )
            await conn.execute(QUERIES["expire_tombstones"], TOMBSTONE_WINDOW)
            await conn.execute(QUERIES["record_tombstone"], key)
        return EraseCounts(rows=int(counts["rows"]), turn_roh=int(counts["turn_roh"]), unpaired_rows=unpaired)
