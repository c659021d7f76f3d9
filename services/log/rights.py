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

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from novaberg_core.contract import pair_token, user_token
from novaberg_core.rights import check_erasure_target, kzg_key_prefix
from services.log.domain import NewRow

if TYPE_CHECKING:
    from services.log.store import LogStore

__all__ = ["TOMBSTONE_WINDOW", "EraseCounts", "IngestGuard", "LogRights", "erasure_target"]

TOMBSTONE_WINDOW: Final = timedelta(days=1)
"""How long records of an erased target dated up to its erasure are dropped at ingest (a writer's
buffer waits out a log outage of up to this long without bringing an erased pair back)."""

_KZG_KEY: Final = re.compile(r'kzg:([^:"\\]+):([^:"\\]+):')
"""A KZG key (its pair part) inside the JSON text of a maintenance record."""


@dataclass(frozen=True)
class EraseCounts:
    rows: int
    turn_roh: int
    unpaired_rows: int


def key_prefix_in_json(user_id: str, character_id: str | None) -> str:
    """The target's KZG key prefix as it appears inside JSON text (``kzg:<u>:<c>:`` or ``kzg:<u>:``)."""
    return json.dumps(kzg_key_prefix(user_id, character_id), ensure_ascii=False)[1:-1]


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
