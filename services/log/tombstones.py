"""Tombstones: what the ingest drops after an erasure of the pipeline log (SPEC §8).

Writers buffer records for seconds (longer while the log is down), so rows of an erased pair can
arrive after its erasure. The erasure therefore leaves a tombstone — a one-way key
(:func:`~novaberg_core.contract.pair_token` / :func:`~novaberg_core.contract.user_token`) and the
time, no id — and the ingest drops records of a tombstoned target dated up to the erasure. Ingest and
erasure serialise on one advisory lock (ingest shared, erasure exclusive), so a batch is either
written before the erasure (and erased by it) or filtered after it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from novaberg_core.contract import pair_token, user_token
from services.log.domain import NewRow

__all__ = ["TOMBSTONE_WINDOW", "EraseCounts", "IngestGuard"]

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
